// Original file: proto/raft.proto

import type { StreamedPutAnswer as _verdict_raft_StreamedPutAnswer, StreamedPutAnswer__Output as _verdict_raft_StreamedPutAnswer__Output } from '../../verdict/raft/StreamedPutAnswer.ts';

export interface StreamedPutAnswers {
  'answers'?: (_verdict_raft_StreamedPutAnswer)[];
}

export interface StreamedPutAnswers__Output {
  'answers': (_verdict_raft_StreamedPutAnswer__Output)[];
}
