// Original file: proto/saga.proto


export interface SagaStatusRequest {
  'sagaId'?: (string);
  'waitMs'?: (number);
}

export interface SagaStatusRequest__Output {
  'sagaId': (string);
  'waitMs': (number);
}
