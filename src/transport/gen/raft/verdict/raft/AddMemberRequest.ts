// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface AddMemberRequest {
  'nodeId'?: (string);
  'address'?: (string);
  'timeoutMs'?: (number | string | Long);
}

export interface AddMemberRequest__Output {
  'nodeId': (string);
  'address': (string);
  'timeoutMs': (number);
}
