// Original file: proto/raft.proto

import type { Member as _verdict_raft_Member, Member__Output as _verdict_raft_Member__Output } from '../../verdict/raft/Member.ts';
import type { Long } from '@grpc/proto-loader';

export interface Members {
  'members'?: (_verdict_raft_Member)[];
  'leaderId'?: (string);
  'term'?: (number | string | Long);
  'confIndex'?: (number | string | Long);
}

export interface Members__Output {
  'members': (_verdict_raft_Member__Output)[];
  'leaderId': (string);
  'term': (number);
  'confIndex': (number);
}
