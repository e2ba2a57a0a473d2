// Original file: proto/saga.proto

import type { Long } from '@grpc/proto-loader';

export interface CallAttempts {
  'step'?: (number);
  'kind'?: (string);
  'attempts'?: (number);
  'firstFailureAtMs'?: (number | string | Long);
  'lastFailureAtMs'?: (number | string | Long);
  'lastError'?: (string);
}

export interface CallAttempts__Output {
  'step': (number);
  'kind': (string);
  'attempts': (number);
  'firstFailureAtMs': (number);
  'lastFailureAtMs': (number);
  'lastError': (string);
}
