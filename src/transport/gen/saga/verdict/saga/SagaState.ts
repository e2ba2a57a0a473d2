// Original file: proto/saga.proto


export interface SagaState {
  'sagaId'?: (string);
  'state'?: (string);
  'refused'?: (string);
}

export interface SagaState__Output {
  'sagaId': (string);
  'state': (string);
  'refused': (string);
}
