// Original file: proto/raft.proto

import type { PeerStatus as _verdict_raft_PeerStatus, PeerStatus__Output as _verdict_raft_PeerStatus__Output } from '../../verdict/raft/PeerStatus.ts';
import type { Long } from '@grpc/proto-loader';

export interface NodeStatus {
  'clusterId'?: (string);
  'nodeId'?: (string);
  'address'?: (string);
  'role'?: (string);
  'term'?: (number | string | Long);
  'leaderId'?: (string);
  'commitIndex'?: (number | string | Long);
  'appliedIndex'?: (number | string | Long);
  'lastIndex'?: (number | string | Long);
  'firstIndex'?: (number | string | Long);
  'peers'?: (_verdict_raft_PeerStatus)[];
  'pid'?: (number);
  'version'?: (string);
  'consoleUrl'?: (string);
}

export interface NodeStatus__Output {
  'clusterId': (string);
  'nodeId': (string);
  'address': (string);
  'role': (string);
  'term': (number);
  'leaderId': (string);
  'commitIndex': (number);
  'appliedIndex': (number);
  'lastIndex': (number);
  'firstIndex': (number);
  'peers': (_verdict_raft_PeerStatus__Output)[];
  'pid': (number);
  'version': (string);
  'consoleUrl': (string);
}
