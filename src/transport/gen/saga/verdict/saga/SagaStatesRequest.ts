// Original file: proto/saga.proto


export interface SagaStatesRequest {
  'sagaIds'?: (string)[];
}

export interface SagaStatesRequest__Output {
  'sagaIds': (string)[];
}
