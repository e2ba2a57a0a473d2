// Original file: proto/coordinator.proto

import type { TxnInfo as _verdict_coordinator_TxnInfo, TxnInfo__Output as _verdict_coordinator_TxnInfo__Output } from '../../verdict/coordinator/TxnInfo.ts';

export interface ListTransactionsResponse {
  'transactions'?: (_verdict_coordinator_TxnInfo)[];
}

export interface ListTransactionsResponse__Output {
  'transactions': (_verdict_coordinator_TxnInfo__Output)[];
}
