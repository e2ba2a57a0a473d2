// Original file: proto/saga.proto


export interface SagaEndsRequest {
  'clusterId'?: (string);
  'sagaIds'?: (string)[];
}

export interface SagaEndsRequest__Output {
  'clusterId': (string);
  'sagaIds': (string)[];
}
