// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface LogRange {
  'firstIndex'?: (number | string | Long);
  'lastIndex'?: (number | string | Long);
  'group'?: (number);
}

export interface LogRange__Output {
  'firstIndex': (number);
  'lastIndex': (number);
  'group': (number);
}
