// Original file: proto/saga.proto


export interface ResolveSagaRequest {
  'sagaId'?: (string);
  'step'?: (number);
  'done'?: (boolean);
  'reason'?: (string);
}

export interface ResolveSagaRequest__Output {
  'sagaId': (string);
  'step': (number);
  'done': (boolean);
  'reason': (string);
}
