// Original file: proto/coordinator.proto

import type { CommitRequest as _verdict_coordinator_CommitRequest, CommitRequest__Output as _verdict_coordinator_CommitRequest__Output } from '../../verdict/coordinator/CommitRequest.ts';
import type { Long } from '@grpc/proto-loader';

export interface StreamedCommit {
  'id'?: (number | string | Long);
  'commit'?: (_verdict_coordinator_CommitRequest | null);
}

export interface StreamedCommit__Output {
  'id': (number);
  'commit': (_verdict_coordinator_CommitRequest__Output | null);
}
