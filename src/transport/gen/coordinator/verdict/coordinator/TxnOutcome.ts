// Original file: proto/coordinator.proto

import type { Outcome as _verdict_coordinator_Outcome, Outcome__Output as _verdict_coordinator_Outcome__Output } from '../../verdict/coordinator/Outcome.ts';
import type { Long } from '@grpc/proto-loader';

export interface TxnOutcome {
  'txnId'?: (string);
  'outcome'?: (_verdict_coordinator_Outcome);
  'reason'?: (string);
  'decisionIndex'?: (number | string | Long);
}

export interface TxnOutcome__Output {
  'txnId': (string);
  'outcome': (_verdict_coordinator_Outcome__Output);
  'reason': (string);
  'decisionIndex': (number);
}
