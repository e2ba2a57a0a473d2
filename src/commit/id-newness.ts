// Whether a transaction id may be begun: the half of "an answered outcome
// never changes" that is about ids (docs/protocol-outcomes.md). An id the
// table has decided is never begun again; otherwise the newness rule that
// transaction and saga ids share (src/domain/id-newness.ts) says whether it
// can be proved new against the table's retention horizon. Pure: the
// leader's clock comes in as an argument.

import { outcomeOfDecision, type Outcome } from '../domain/protocol.ts';
import type { DecisionTable } from './state.ts';
import { futureIdRefusal as futureRefusal, iso, newnessRefusal, type NewnessRules } from '../domain/id-newness.ts';

export type { NewnessRules } from '../domain/id-newness.ts';

export interface IdRefusal {
  code: 'exists' | 'precondition' | 'invalid';
  message: string;
  /** With 'exists': the outcome the log recorded. */
  recorded?: Outcome;
}

/** Why `txnId` may not be begun now, or null when it may. */
export function beginRefusal(
  table: DecisionTable,
  txnId: string,
  nowMs: number,
  rules: NewnessRules,
): IdRefusal | null {
  const d = table.lookup(txnId);
  if (d) {
    const recorded = outcomeOfDecision(d.outcome);
    return {
      code: 'exists',
      recorded,
      message: `transaction ${txnId} is already decided ${recorded.toUpperCase()} (log index ${d.index}); an answered outcome never changes, so the id cannot be used for another transaction: use a new id`,
    };
  }
  return newnessRefusal('transaction', txnId, table.horizonAtMs, nowMs, rules);
}

/** A timed id created more than clockSkewMaxMs after `nowMs` is refused wherever it could be decided. */
export function futureIdRefusal(txnId: string, nowMs: number, clockSkewMaxMs: number): IdRefusal | null {
  return futureRefusal('transaction', txnId, nowMs, clockSkewMaxMs);
}

/** Why an undecided id beyond the horizon gets no outcome: it may have had one, and guessing could contradict it. */
export function forgottenReason(table: DecisionTable, txnId: string): string {
  return `transaction ${txnId} has no decision in the table and its id is at or before the retention horizon ${iso(table.horizonAtMs ?? 0)}: it was decided and forgotten, or never begun; its outcome can no longer be told`;
}
