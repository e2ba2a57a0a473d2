// Original file: proto/coordinator.proto

import type { Long } from '@grpc/proto-loader';

export interface BeginResponse {
  'txnId'?: (string);
  'deadlineAtMs'?: (number | string | Long);
  'leaderId'?: (string);
}

export interface BeginResponse__Output {
  'txnId': (string);
  'deadlineAtMs': (number);
  'leaderId': (string);
}
