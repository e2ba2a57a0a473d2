// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface GetResponse {
  'found'?: (boolean);
  'value'?: (Buffer | Uint8Array | string);
  'appliedIndex'?: (number | string | Long);
  'leaderId'?: (string);
  'leaderAddress'?: (string);
}

export interface GetResponse__Output {
  'found': (boolean);
  'value': (Buffer);
  'appliedIndex': (number);
  'leaderId': (string);
  'leaderAddress': (string);
}
