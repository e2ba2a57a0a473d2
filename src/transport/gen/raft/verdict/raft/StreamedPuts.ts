// Original file: proto/raft.proto

import type { StreamedPut as _verdict_raft_StreamedPut, StreamedPut__Output as _verdict_raft_StreamedPut__Output } from '../../verdict/raft/StreamedPut.ts';

export interface StreamedPuts {
  'puts'?: (_verdict_raft_StreamedPut)[];
}

export interface StreamedPuts__Output {
  'puts': (_verdict_raft_StreamedPut__Output)[];
}
