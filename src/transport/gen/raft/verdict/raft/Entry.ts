// Original file: proto/raft.proto

import type { EntryType as _verdict_raft_EntryType, EntryType__Output as _verdict_raft_EntryType__Output } from '../../verdict/raft/EntryType.ts';
import type { Long } from '@grpc/proto-loader';

export interface Entry {
  'term'?: (number | string | Long);
  'index'?: (number | string | Long);
  'type'?: (_verdict_raft_EntryType);
  'data'?: (Buffer | Uint8Array | string);
}

export interface Entry__Output {
  'term': (number);
  'index': (number);
  'type': (_verdict_raft_EntryType__Output);
  'data': (Buffer);
}
