// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface Member {
  'nodeId'?: (string);
  'address'?: (string);
  'voter'?: (boolean);
  'matchIndex'?: (number | string | Long);
  'state'?: (string);
}

export interface Member__Output {
  'nodeId': (string);
  'address': (string);
  'voter': (boolean);
  'matchIndex': (number);
  'state': (string);
}
