// Original file: proto/coordinator.proto

import type { Long } from '@grpc/proto-loader';

export interface BeginRequest {
  'txnId'?: (string);
  'timeoutMs'?: (number | string | Long);
}

export interface BeginRequest__Output {
  'txnId': (string);
  'timeoutMs': (number);
}
