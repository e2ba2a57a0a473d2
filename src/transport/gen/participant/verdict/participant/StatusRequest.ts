// Original file: proto/participant.proto


export interface StatusRequest {
  'clusterId'?: (string);
  'txnId'?: (string);
  'participantId'?: (string);
}

export interface StatusRequest__Output {
  'clusterId': (string);
  'txnId': (string);
  'participantId': (string);
}
