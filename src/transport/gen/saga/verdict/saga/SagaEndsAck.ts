// Original file: proto/saga.proto


export interface SagaEndsAck {
  'ended'?: (string)[];
  'problem'?: (string);
}

export interface SagaEndsAck__Output {
  'ended': (string)[];
  'problem': (string);
}
