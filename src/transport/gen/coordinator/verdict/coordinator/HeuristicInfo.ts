// Original file: proto/coordinator.proto

import type { Outcome as _verdict_coordinator_Outcome, Outcome__Output as _verdict_coordinator_Outcome__Output } from '../../verdict/coordinator/Outcome.ts';
import type { Long } from '@grpc/proto-loader';

export interface HeuristicInfo {
  'participantId'?: (string);
  'outcome'?: (_verdict_coordinator_Outcome);
  'kind'?: (string);
  'operator'?: (string);
  'reason'?: (string);
  'atMs'?: (number | string | Long);
  'gid'?: (string);
  'decision'?: (_verdict_coordinator_Outcome);
  'index'?: (number | string | Long);
}

export interface HeuristicInfo__Output {
  'participantId': (string);
  'outcome': (_verdict_coordinator_Outcome__Output);
  'kind': (string);
  'operator': (string);
  'reason': (string);
  'atMs': (number);
  'gid': (string);
  'decision': (_verdict_coordinator_Outcome__Output);
  'index': (number);
}
