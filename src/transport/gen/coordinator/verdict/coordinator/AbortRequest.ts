// Original file: proto/coordinator.proto


export interface AbortRequest {
  'txnId'?: (string);
  'reason'?: (string);
}

export interface AbortRequest__Output {
  'txnId': (string);
  'reason': (string);
}
