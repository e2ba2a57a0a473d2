// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface HistoryQuery {
  'txnId'?: (string);
  'sinceAtMs'?: (number | string | Long);
  'untilAtMs'?: (number | string | Long);
  'participantId'?: (string);
  'outcome'?: (string);
  'limit'?: (number);
  'kind'?: (string);
  'sagaId'?: (string);
}

export interface HistoryQuery__Output {
  'txnId': (string);
  'sinceAtMs': (number);
  'untilAtMs': (number);
  'participantId': (string);
  'outcome': (string);
  'limit': (number);
  'kind': (string);
  'sagaId': (string);
}
