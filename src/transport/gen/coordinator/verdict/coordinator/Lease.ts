// Original file: proto/coordinator.proto

import type { Long } from '@grpc/proto-loader';

export interface Lease {
  'name'?: (string);
  'holder'?: (string);
  'epoch'?: (number | string | Long);
  'expiresAtMs'?: (number | string | Long);
}

export interface Lease__Output {
  'name': (string);
  'holder': (string);
  'epoch': (number);
  'expiresAtMs': (number);
}
