// Original file: proto/coordinator.proto

import type { StreamedCommit as _verdict_coordinator_StreamedCommit, StreamedCommit__Output as _verdict_coordinator_StreamedCommit__Output } from '../../verdict/coordinator/StreamedCommit.ts';

export interface StreamedCommits {
  'commits'?: (_verdict_coordinator_StreamedCommit)[];
}

export interface StreamedCommits__Output {
  'commits': (_verdict_coordinator_StreamedCommit__Output)[];
}
