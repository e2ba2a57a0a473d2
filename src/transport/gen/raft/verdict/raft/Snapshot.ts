// Original file: proto/raft.proto

import type { SnapshotMetadata as _verdict_raft_SnapshotMetadata, SnapshotMetadata__Output as _verdict_raft_SnapshotMetadata__Output } from '../../verdict/raft/SnapshotMetadata.ts';

export interface Snapshot {
  'metadata'?: (_verdict_raft_SnapshotMetadata | null);
  'data'?: (Buffer | Uint8Array | string);
}

export interface Snapshot__Output {
  'metadata': (_verdict_raft_SnapshotMetadata__Output | null);
  'data': (Buffer);
}
