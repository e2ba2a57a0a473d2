// Original file: proto/coordinator.proto

import type { TxnOutcome as _verdict_coordinator_TxnOutcome, TxnOutcome__Output as _verdict_coordinator_TxnOutcome__Output } from '../../verdict/coordinator/TxnOutcome.ts';

export interface ResolveTransactionResponse {
  'outcome'?: (_verdict_coordinator_TxnOutcome | null);
  'decided'?: (boolean);
  'operator'?: (string);
}

export interface ResolveTransactionResponse__Output {
  'outcome': (_verdict_coordinator_TxnOutcome__Output | null);
  'decided': (boolean);
  'operator': (string);
}
