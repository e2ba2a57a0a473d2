// Original file: proto/coordinator.proto

import type { TxnOutcome as _verdict_coordinator_TxnOutcome, TxnOutcome__Output as _verdict_coordinator_TxnOutcome__Output } from '../../verdict/coordinator/TxnOutcome.ts';

export interface OutcomeAnswer {
  'outcome'?: (_verdict_coordinator_TxnOutcome | null);
  'code'?: (number);
  'details'?: (string);
}

export interface OutcomeAnswer__Output {
  'outcome': (_verdict_coordinator_TxnOutcome__Output | null);
  'code': (number);
  'details': (string);
}
