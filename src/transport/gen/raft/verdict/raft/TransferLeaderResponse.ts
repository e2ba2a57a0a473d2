// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface TransferLeaderResponse {
  'leaderId'?: (string);
  'term'?: (number | string | Long);
  'inFlight'?: (number);
}

export interface TransferLeaderResponse__Output {
  'leaderId': (string);
  'term': (number);
  'inFlight': (number);
}
