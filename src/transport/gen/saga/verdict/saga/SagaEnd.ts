// Original file: proto/saga.proto


export interface SagaEnd {
  'clusterId'?: (string);
  'sagaId'?: (string);
}

export interface SagaEnd__Output {
  'clusterId': (string);
  'sagaId': (string);
}
