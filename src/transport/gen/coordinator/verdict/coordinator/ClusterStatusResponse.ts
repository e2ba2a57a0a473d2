// Original file: proto/coordinator.proto

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
}
