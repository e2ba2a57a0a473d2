// The newness rule for client-chosen ids, in one place: whether an id that
// no record in a table names may be taken as new now. Transaction ids
// (src/commit/id-newness.ts) and saga ids (src/saga/engine.ts) both follow
// it, so an id whose record was forgotten is refused, never taken for a new
// one (R9).
//
// A table that forgets records keeps a retention horizon: the latest
// creation time of a timed id (src/domain/txn-id.ts) whose record it
// dropped for good. A timed id at or before the horizon may have been used
// and forgotten, so it cannot be proved new; a timed id from the future
// would push the horizon past every new id once forgotten; an untimed id is
// new on its client's word (`untimedIds: 'trust'`) or refused. Pure: the
// leader's clock comes in as an argument.

import { txnIdAtMs } from './txn-id.ts';

export interface NewnessRules {
  /** How far a timed id's creation time may lie ahead of the leader's clock. */
  clockSkewMaxMs: number;
  /** 'trust': an untimed id is new on its client's word; 'refuse': only timed ids are taken. */
  untimedIds: 'trust' | 'refuse';
}

export const DEFAULT_NEWNESS_RULES: NewnessRules = { clockSkewMaxMs: 60_000, untimedIds: 'trust' };

/** The kinds of id the rule guards, as messages name them. */
export type IdKind = 'transaction' | 'saga';

export interface NewnessRefusal {
  code: 'precondition' | 'invalid';
  message: string;
}

const TAKES: Record<IdKind, string> = { transaction: 'begins', saga: 'starts' };
const FORGOTTEN: Record<IdKind, string> = {
  transaction: 'a decision for it may have been forgotten',
  saga: 'a saga with this id may have run and been forgotten',
};

/**
 * Why `id`, which no record of the table names, may not be taken as new at
 * `nowMs`, or null when it may. `horizonAtMs` is the table's retention
 * horizon (null while it has forgotten no timed id).
 */
export function newnessRefusal(
  kind: IdKind,
  id: string,
  horizonAtMs: number | null,
  nowMs: number,
  rules: NewnessRules,
): NewnessRefusal | null {
  const idAtMs = txnIdAtMs(id);
  if (idAtMs === null) {
    if (rules.untimedIds === 'trust') return null;
    return {
      code: 'invalid',
      message: `${kind} id ${id} carries no creation time, and this cluster ${TAKES[kind]} only ids it can prove new: end the id with a UUIDv7 (the SDK's generated ids are UUIDv7s)`,
    };
  }
  const future = futureIdRefusal(kind, id, nowMs, rules.clockSkewMaxMs);
  if (future) return future;
  if (horizonAtMs !== null && idAtMs <= horizonAtMs) {
    return {
      code: 'precondition',
      message: `${kind} id ${id} was created at ${iso(idAtMs)}, at or before the retention horizon ${iso(horizonAtMs)}: ${FORGOTTEN[kind]}, so it cannot be proved new; use a new id`,
    };
  }
  return null;
}

/** A timed id created more than clockSkewMaxMs after `nowMs` is refused wherever it could be taken. */
export function futureIdRefusal(
  kind: IdKind,
  id: string,
  nowMs: number,
  clockSkewMaxMs: number,
): NewnessRefusal | null {
  const idAtMs = txnIdAtMs(id);
  if (idAtMs === null || idAtMs <= nowMs + clockSkewMaxMs) return null;
  return {
    code: 'invalid',
    message: `${kind} id ${id} was created at ${iso(idAtMs)}, more than ${clockSkewMaxMs} ms after this leader's clock (${iso(nowMs)}); check the client's clock`,
  };
}

/** True when `id` is timed and created at or before `horizonAtMs`: it may have been used and forgotten. */
export function beyondHorizon(id: string, horizonAtMs: number | null): boolean {
  if (horizonAtMs === null) return false;
  const idAtMs = txnIdAtMs(id);
  return idAtMs !== null && idAtMs <= horizonAtMs;
}

/** A time as messages show it. */
export function iso(ms: number): string {
  return Number.isFinite(ms) && Math.abs(ms) < 8.64e15 ? new Date(ms).toISOString() : String(ms);
}
