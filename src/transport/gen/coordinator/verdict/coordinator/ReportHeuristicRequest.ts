// Original file: proto/coordinator.proto

import type { Outcome as _verdict_coordinator_Outcome, Outcome__Output as _verdict_coordinator_Outcome__Output } from '../../verdict/coordinator/Outcome.ts';
import type { Long } from '@grpc/proto-loader';

export interface ReportHeuristicRequest {
  'clusterId'?: (string);
  'participantId'?: (string);
  'txnId'?: (string);
  'outcome'?: (_verdict_coordinator_Outcome);
  'gid'?: (string);
  'operator'?: (string);
  'reason'?: (string);
  'atMs'?: (number | string | Long);
}

export interface ReportHeuristicRequest__Output {
  'clusterId': (string);
  'participantId': (string);
  'txnId': (string);
  'outcome': (_verdict_coordinator_Outcome__Output);
  'gid': (string);
  'operator': (string);
  'reason': (string);
  'atMs': (number);
}
