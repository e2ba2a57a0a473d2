// Original file: proto/coordinator.proto


export interface OutcomeRequest {
  'txnId'?: (string);
  'participantId'?: (string);
}

export interface OutcomeRequest__Output {
  'txnId': (string);
  'participantId': (string);
}
