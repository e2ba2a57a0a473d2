// Original file: proto/saga.proto

import type { SagaState as _verdict_saga_SagaState, SagaState__Output as _verdict_saga_SagaState__Output } from '../../verdict/saga/SagaState.ts';

export interface SagaStatesResponse {
  'sagas'?: (_verdict_saga_SagaState)[];
}

export interface SagaStatesResponse__Output {
  'sagas': (_verdict_saga_SagaState__Output)[];
}
