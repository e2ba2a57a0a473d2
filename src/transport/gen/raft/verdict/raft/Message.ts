// Original file: proto/raft.proto

import type { MessageType as _verdict_raft_MessageType, MessageType__Output as _verdict_raft_MessageType__Output } from '../../verdict/raft/MessageType.ts';
import type { Entry as _verdict_raft_Entry, Entry__Output as _verdict_raft_Entry__Output } from '../../verdict/raft/Entry.ts';
import type { Snapshot as _verdict_raft_Snapshot, Snapshot__Output as _verdict_raft_Snapshot__Output } from '../../verdict/raft/Snapshot.ts';
import type { Long } from '@grpc/proto-loader';

export interface Message {
  'type'?: (_verdict_raft_MessageType);
  'from'?: (string);
  'to'?: (string);
  'term'?: (number | string | Long);
  'logTerm'?: (number | string | Long);
  'index'?: (number | string | Long);
  'entries'?: (_verdict_raft_Entry)[];
  'commit'?: (number | string | Long);
  'reject'?: (boolean);
  'rejectHint'?: (number | string | Long);
  'context'?: (Buffer | Uint8Array | string);
  'snapshot'?: (_verdict_raft_Snapshot | null);
  'group'?: (number);
}

export interface Message__Output {
  'type': (_verdict_raft_MessageType__Output);
  'from': (string);
  'to': (string);
  'term': (number);
  'logTerm': (number);
  'index': (number);
  'entries': (_verdict_raft_Entry__Output)[];
  'commit': (number);
  'reject': (boolean);
  'rejectHint': (number);
  'context': (Buffer);
  'snapshot': (_verdict_raft_Snapshot__Output | null);
  'group': (number);
}
