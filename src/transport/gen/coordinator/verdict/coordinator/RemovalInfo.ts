// Original file: proto/coordinator.proto

import type { Long } from '@grpc/proto-loader';

export interface RemovalInfo {
  'participantId'?: (string);
  'operator'?: (string);
  'reason'?: (string);
  'atMs'?: (number | string | Long);
  'index'?: (number | string | Long);
}

export interface RemovalInfo__Output {
  'participantId': (string);
  'operator': (string);
  'reason': (string);
  'atMs': (number);
  'index': (number);
}
