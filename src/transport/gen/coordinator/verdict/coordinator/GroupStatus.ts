// Original file: proto/coordinator.proto

import type { Long } from '@grpc/proto-loader';

export interface GroupStatus {
  'group'?: (number);
  'leaderId'?: (string);
  'leaderAddress'?: (string);
  'term'?: (number | string | Long);
  'commitIndex'?: (number | string | Long);
  'appliedIndex'?: (number | string | Long);
  'inFlight'?: (number);
}

export interface GroupStatus__Output {
  'group': (number);
  'leaderId': (string);
  'leaderAddress': (string);
  'term': (number);
  'commitIndex': (number);
  'appliedIndex': (number);
  'inFlight': (number);
}
