// Original file: proto/participant.proto


export interface Ack {
  'txnId'?: (string);
  'participantId'?: (string);
}

export interface Ack__Output {
  'txnId': (string);
  'participantId': (string);
}
