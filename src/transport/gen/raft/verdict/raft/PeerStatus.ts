// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface PeerStatus {
  'nodeId'?: (string);
  'address'?: (string);
  'matchIndex'?: (number | string | Long);
  'nextIndex'?: (number | string | Long);
  'state'?: (string);
}

export interface PeerStatus__Output {
  'nodeId': (string);
  'address': (string);
  'matchIndex': (number);
  'nextIndex': (number);
  'state': (string);
}
