// Original file: proto/coordinator.proto

import type { Long } from '@grpc/proto-loader';

export interface BeginResponse {
  'txnId'?: (string);
  'deadlineMs'?: (number | string | Long);
  'leaderId'?: (string);
}

export interface BeginResponse__Output {
  'txnId': (string);
  'deadlineMs': (number);
  'leaderId': (string);
}
