// Original file: proto/raft.proto

import type { ConfState as _verdict_raft_ConfState, ConfState__Output as _verdict_raft_ConfState__Output } from '../../verdict/raft/ConfState.ts';
import type { Long } from '@grpc/proto-loader';

export interface SnapshotMetadata {
  'index'?: (number | string | Long);
  'term'?: (number | string | Long);
  'confState'?: (_verdict_raft_ConfState | null);
}

export interface SnapshotMetadata__Output {
  'index': (number);
  'term': (number);
  'confState': (_verdict_raft_ConfState__Output | null);
}
