// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface TransferLeaderRequest {
  'to'?: (string);
  'timeoutMs'?: (number | string | Long);
  'force'?: (boolean);
  'group'?: (number);
}

export interface TransferLeaderRequest__Output {
  'to': (string);
  'timeoutMs': (number);
  'force': (boolean);
  'group': (number);
}
