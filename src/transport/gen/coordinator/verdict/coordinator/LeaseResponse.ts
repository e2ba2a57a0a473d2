// Original file: proto/coordinator.proto

import type { Lease as _verdict_coordinator_Lease, Lease__Output as _verdict_coordinator_Lease__Output } from '../../verdict/coordinator/Lease.ts';
import type { Long } from '@grpc/proto-loader';

export interface LeaseResponse {
  'granted'?: (boolean);
  'reason'?: (string);
  'lease'?: (_verdict_coordinator_Lease | null);
  'clockAtMs'?: (number | string | Long);
}

export interface LeaseResponse__Output {
  'granted': (boolean);
  'reason': (string);
  'lease': (_verdict_coordinator_Lease__Output | null);
  'clockAtMs': (number);
}
