// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface HistorySagaCall {
  'step'?: (number);
  'kind'?: (string);
  'attempts'?: (number);
  'attemptsTotal'?: (number);
  'firstFailureAtMs'?: (number | string | Long);
  'lastFailureAtMs'?: (number | string | Long);
  'lastError'?: (string);
}

export interface HistorySagaCall__Output {
  'step': (number);
  'kind': (string);
  'attempts': (number);
  'attemptsTotal': (number);
  'firstFailureAtMs': (number);
  'lastFailureAtMs': (number);
  'lastError': (string);
}
