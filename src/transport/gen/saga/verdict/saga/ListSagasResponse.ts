// Original file: proto/saga.proto

import type { SagaInfo as _verdict_saga_SagaInfo, SagaInfo__Output as _verdict_saga_SagaInfo__Output } from '../../verdict/saga/SagaInfo.ts';

export interface ListSagasResponse {
  'sagas'?: (_verdict_saga_SagaInfo)[];
  'nextPageToken'?: (string);
}

export interface ListSagasResponse__Output {
  'sagas': (_verdict_saga_SagaInfo__Output)[];
  'nextPageToken': (string);
}
