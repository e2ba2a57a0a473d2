// Original file: proto/coordinator.proto

import type { Outcome as _verdict_coordinator_Outcome, Outcome__Output as _verdict_coordinator_Outcome__Output } from '../../verdict/coordinator/Outcome.ts';

export interface ResolveTransactionRequest {
  'txnId'?: (string);
  'outcome'?: (_verdict_coordinator_Outcome);
  'reason'?: (string);
  'forceUnknown'?: (boolean);
}

export interface ResolveTransactionRequest__Output {
  'txnId': (string);
  'outcome': (_verdict_coordinator_Outcome__Output);
  'reason': (string);
  'forceUnknown': (boolean);
}
