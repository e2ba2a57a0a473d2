// Original file: proto/saga.proto


export interface RetrySagaRequest {
  'sagaId'?: (string);
  'reason'?: (string);
}

export interface RetrySagaRequest__Output {
  'sagaId': (string);
  'reason': (string);
}
