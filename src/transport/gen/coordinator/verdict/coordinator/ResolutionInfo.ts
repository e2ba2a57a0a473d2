// Original file: proto/coordinator.proto

import type { Outcome as _verdict_coordinator_Outcome, Outcome__Output as _verdict_coordinator_Outcome__Output } from '../../verdict/coordinator/Outcome.ts';
import type { Long } from '@grpc/proto-loader';

export interface ResolutionInfo {
  'outcome'?: (_verdict_coordinator_Outcome);
  'operator'?: (string);
  'reason'?: (string);
  'atMs'?: (number | string | Long);
  'decided'?: (boolean);
  'index'?: (number | string | Long);
}

export interface ResolutionInfo__Output {
  'outcome': (_verdict_coordinator_Outcome__Output);
  'operator': (string);
  'reason': (string);
  'atMs': (number);
  'decided': (boolean);
  'index': (number);
}
