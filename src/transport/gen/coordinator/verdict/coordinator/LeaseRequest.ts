// Original file: proto/coordinator.proto

import type { Long } from '@grpc/proto-loader';

export interface LeaseRequest {
  'name'?: (string);
  'holder'?: (string);
  'epoch'?: (number | string | Long);
  'ttlMs'?: (number);
}

export interface LeaseRequest__Output {
  'name': (string);
  'holder': (string);
  'epoch': (number);
  'ttlMs': (number);
}
