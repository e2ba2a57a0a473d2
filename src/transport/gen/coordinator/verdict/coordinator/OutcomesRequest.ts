// Original file: proto/coordinator.proto


export interface OutcomesRequest {
  'txnIds'?: (string)[];
  'participantId'?: (string);
}

export interface OutcomesRequest__Output {
  'txnIds': (string)[];
  'participantId': (string);
}
