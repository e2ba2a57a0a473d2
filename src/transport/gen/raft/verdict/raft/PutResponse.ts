// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface PutResponse {
  'index'?: (number | string | Long);
  'leaderId'?: (string);
  'leaderAddress'?: (string);
}

export interface PutResponse__Output {
  'index': (number);
  'leaderId': (string);
  'leaderAddress': (string);
}
