// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface HistoryAct {
  'kind'?: (string);
  'operator'?: (string);
  'reason'?: (string);
  'atMs'?: (number | string | Long);
  'outcome'?: (string);
  'effect'?: (string);
  'participantId'?: (string);
  'gid'?: (string);
  'index'?: (number | string | Long);
}

export interface HistoryAct__Output {
  'kind': (string);
  'operator': (string);
  'reason': (string);
  'atMs': (number);
  'outcome': (string);
  'effect': (string);
  'participantId': (string);
  'gid': (string);
  'index': (number);
}
