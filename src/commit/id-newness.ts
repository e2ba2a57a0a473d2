// Whether a transaction id may be begun: the half of "an answered outcome
// never changes" that is about ids (docs/protocol-outcomes.md). An id the
// table has decided is never begun again; a timed id at or before the
// retention horizon cannot be proved new; a timed id from the future would
// push the horizon past every new id once forgotten. Pure: the leader's
// clock comes in as an argument.

import type { DecisionTable } from './state.ts';
import { txnIdAtMs } from '../domain/txn-id.ts';

export interface IdRefusal {
  code: 'exists' | 'precondition' | 'invalid';
  message: string;
  /** With 'exists': the outcome the log recorded. */
  recorded?: 'committed' | 'aborted';
}

export interface NewnessRules {
  /** How far a timed id's creation time may lie ahead of the leader's clock. */
  clockSkewMaxMs: number;
  /** 'trust': an untimed id is new on its client's word; 'refuse': only timed ids are begun. */
  untimedIds: 'trust' | 'refuse';
}

/** Why `txnId` may not be begun now, or null when it may. */
export function beginRefusal(table: DecisionTable, txnId: string, nowMs: number, rules: NewnessRules): IdRefusal | null {
  const d = table.lookup(txnId);
  if (d) {
    const recorded = d.outcome === 'commit' ? 'committed' : 'aborted';
    return {
      code: 'exists',
      recorded,
      message: `transaction ${txnId} is already decided ${recorded.toUpperCase()} (log index ${d.index}); an answered outcome never changes, so the id cannot be used for another transaction: use a new id`,
    };
  }
  const idAtMs = txnIdAtMs(txnId);
  if (idAtMs === null) {
    if (rules.untimedIds === 'trust') return null;
    return {
      code: 'invalid',
      message: `transaction id ${txnId} carries no creation time, and this cluster begins only ids it can prove new: end the id with a UUIDv7 (the SDK's generated ids are UUIDv7s)`,
    };
  }
  const future = futureIdRefusal(txnId, nowMs, rules.clockSkewMaxMs);
  if (future) return future;
  const horizon = table.horizonAtMs;
  if (horizon !== null && idAtMs <= horizon) {
    return {
      code: 'precondition',
      message: `transaction id ${txnId} was created at ${iso(idAtMs)}, at or before the retention horizon ${iso(horizon)}: a decision for it may have been forgotten, so it cannot be proved new; use a new id`,
    };
  }
  return null;
}

/** A timed id created more than clockSkewMaxMs after `nowMs` is refused wherever it could be decided. */
export function futureIdRefusal(txnId: string, nowMs: number, clockSkewMaxMs: number): IdRefusal | null {
  const idAtMs = txnIdAtMs(txnId);
  if (idAtMs === null || idAtMs <= nowMs + clockSkewMaxMs) return null;
  return { code: 'invalid', message: `transaction id ${txnId} was created at ${iso(idAtMs)}, more than ${clockSkewMaxMs} ms after this leader's clock (${iso(nowMs)}); check the client's clock` };
}

/** Why an undecided id beyond the horizon gets no outcome: it may have had one, and guessing could contradict it. */
export function forgottenReason(table: DecisionTable, txnId: string): string {
  return `transaction ${txnId} has no decision in the table and its id is at or before the retention horizon ${iso(table.horizonAtMs ?? 0)}: it was decided and forgotten, or never begun; its outcome can no longer be told`;
}

function iso(ms: number): string {
  return Number.isFinite(ms) && Math.abs(ms) < 8.64e15 ? new Date(ms).toISOString() : String(ms);
}
