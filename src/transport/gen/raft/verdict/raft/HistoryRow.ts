// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface HistoryRow {
  'atMs'?: (number | string | Long);
  'lastAtMs'?: (number | string | Long);
  'kind'?: (string);
  'participantId'?: (string);
  'detail'?: (string);
  'count'?: (number);
}

export interface HistoryRow__Output {
  'atMs': (number);
  'lastAtMs': (number);
  'kind': (string);
  'participantId': (string);
  'detail': (string);
  'count': (number);
}
