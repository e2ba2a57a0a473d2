// Original file: proto/raft.proto

import type { PutRequest as _verdict_raft_PutRequest, PutRequest__Output as _verdict_raft_PutRequest__Output } from '../../verdict/raft/PutRequest.ts';
import type { Long } from '@grpc/proto-loader';

export interface StreamedPut {
  'id'?: (number | string | Long);
  'put'?: (_verdict_raft_PutRequest | null);
}

export interface StreamedPut__Output {
  'id': (number);
  'put': (_verdict_raft_PutRequest__Output | null);
}
