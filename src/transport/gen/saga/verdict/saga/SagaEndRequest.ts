// Original file: proto/saga.proto


export interface SagaEndRequest {
  'clusterId'?: (string);
  'sagaId'?: (string);
}

export interface SagaEndRequest__Output {
  'clusterId': (string);
  'sagaId': (string);
}
