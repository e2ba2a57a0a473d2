// Original file: proto/coordinator.proto

import type { GroupStatus as _verdict_coordinator_GroupStatus, GroupStatus__Output as _verdict_coordinator_GroupStatus__Output } from '../../verdict/coordinator/GroupStatus.ts';
import type { Long } from '@grpc/proto-loader';

export interface ClusterStatusResponse {
  'clusterId'?: (string);
  'nodeId'?: (string);
  'leaderId'?: (string);
  'leaderAddress'?: (string);
  'term'?: (number | string | Long);
  'commitIndex'?: (number | string | Long);
  'appliedIndex'?: (number | string | Long);
  'participants'?: (number);
  'inFlight'?: (number);
  'decided'?: (number);
  'groupCount'?: (number);
  'groups'?: (_verdict_coordinator_GroupStatus)[];
}

export interface ClusterStatusResponse__Output {
  'clusterId': (string);
  'nodeId': (string);
  'leaderId': (string);
  'leaderAddress': (string);
  'term': (number);
  'commitIndex': (number);
  'appliedIndex': (number);
  'participants': (number);
  'inFlight': (number);
  'decided': (number);
  'groupCount': (number);
  'groups': (_verdict_coordinator_GroupStatus__Output)[];
}
