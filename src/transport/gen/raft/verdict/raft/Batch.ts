// Original file: proto/raft.proto

import type { Message as _verdict_raft_Message, Message__Output as _verdict_raft_Message__Output } from '../../verdict/raft/Message.ts';

export interface Batch {
  'clusterId'?: (string);
  'from'?: (string);
  'to'?: (string);
  'messages'?: (_verdict_raft_Message)[];
  'quiescedGroups'?: (number)[];
}

export interface Batch__Output {
  'clusterId': (string);
  'from': (string);
  'to': (string);
  'messages': (_verdict_raft_Message__Output)[];
  'quiescedGroups': (number)[];
}
