// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface HistorySagaEvent {
  'atMs'?: (number | string | Long);
  'index'?: (number | string | Long);
  'what'?: (string);
  'step'?: (number);
  'kind'?: (string);
  'detail'?: (string);
  'operator'?: (string);
}

export interface HistorySagaEvent__Output {
  'atMs': (number);
  'index': (number);
  'what': (string);
  'step': (number);
  'kind': (string);
  'detail': (string);
  'operator': (string);
}
