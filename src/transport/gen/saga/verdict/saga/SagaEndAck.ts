// Original file: proto/saga.proto


export interface SagaEndAck {
}

export interface SagaEndAck__Output {
}
