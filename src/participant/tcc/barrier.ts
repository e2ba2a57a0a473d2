// The TCC barrier: what one participant records, durably, about one branch
// (transaction, participant) of a Try / Confirm / Cancel resource, and the one
// rule that reads it. Every TCC store (the journaled memory store, the
// PostgreSQL table) asks barrierStep() before it runs a handler and writes the
// state it returns in the same durable act as the handler's effect, so the
// rule has one home:
//
//   state \ op     Try                  Confirm              Cancel
//   (none)         run → tried          refuse (never tried)  record empty-cancelled, no handler
//   tried          again: YES, no run   run → confirmed       run → cancelled
//   confirmed      again: YES, no run   again: done, no run   refuse (contradiction)
//   cancelled      refuse: hanging Try  refuse (contradiction) again: done, no run
//   empty-cancelled refuse: hanging Try refuse (contradiction) again: done, no run
//
// So Confirm and Cancel each run at most once, a Cancel that arrives before
// its Try succeeds and leaves a record (an empty rollback), and a Try that
// arrives after its Cancel is refused and votes NO (it would otherwise
// reserve forever: a hanging Try). A refusal of Confirm or Cancel is an
// error the engine does not acknowledge: the cluster redelivers, an operator
// sees it in `verdict txn list --unacked`. Pure.
import { RESERVE_TTL_MS_MAX } from '../../domain/protocol.ts';
import type { TxnId } from '../types.ts';

export type BranchState = 'tried' | 'confirmed' | 'cancelled' | 'empty-cancelled';
export type BarrierOp = 'try' | 'confirm' | 'cancel';

export type BarrierVerdict =
  /** Run the handler; write `next` with its effect. */
  | { kind: 'run'; next: BranchState }
  /** Write `next` without running a handler (an empty rollback). */
  | { kind: 'record'; next: BranchState }
  /** Already done: answer as the first time did, run nothing, write nothing. */
  | { kind: 'done' }
  /** Refuse with the reason: a Try votes NO, a Confirm or Cancel fails and is retried by the cluster. */
  | { kind: 'refuse'; reason: string; hanging: boolean };

export function barrierStep(txnId: TxnId, state: BranchState | undefined, op: BarrierOp): BarrierVerdict {
  switch (op) {
    case 'try':
      if (state === undefined) return { kind: 'run', next: 'tried' };
      if (state === 'tried' || state === 'confirmed') return { kind: 'done' };
      return {
        kind: 'refuse',
        reason: `Try for ${txnId} refused: its Cancel came first (${state}); a reserve now would never be released (hanging Try)`,
        hanging: true,
      };
    case 'confirm':
      if (state === 'tried') return { kind: 'run', next: 'confirmed' };
      if (state === 'confirmed') return { kind: 'done' };
      return {
        kind: 'refuse',
        reason:
          state === undefined
            ? `Confirm for ${txnId} refused: no Try is on record for it here`
            : `Confirm for ${txnId} refused: it was cancelled here (${state})`,
        hanging: false,
      };
    case 'cancel':
      if (state === 'tried') return { kind: 'run', next: 'cancelled' };
      if (state === undefined) return { kind: 'record', next: 'empty-cancelled' };
      if (state === 'confirmed')
        return { kind: 'refuse', reason: `Cancel for ${txnId} refused: it was confirmed here`, hanging: false };
      return { kind: 'done' };
  }
}

/** What a Try handler may answer besides its effect: how long the reserve may be held without a decision. */
export interface TccTryResult {
  /** Positive milliseconds; absent: held until the decision, however long. */
  ttlMs?: number;
}

/** One branch as the handlers see it. */
export interface TccBranch {
  txnId: TxnId;
  participantId: string;
  /** The bytes the application enlisted this participant with; Confirm and Cancel get the Try's. */
  payload: Uint8Array;
}

/** A Try handler throws this to vote NO with a reason (no seats left, funds short); any other throw votes NO too. */
export class TccRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TccRefusal';
  }
}

/** TTLs longer than this are refused as a typo (30 days; a node refuses a vote that carries more). */
export const TTL_MS_MAX = RESERVE_TTL_MS_MAX;

/** null when ttlMs is acceptable (absent, or a positive integer up to TTL_MS_MAX), else why not. */
export function ttlProblem(ttlMs: unknown): string | null {
  if (ttlMs === undefined) return null;
  if (typeof ttlMs !== 'number' || !Number.isInteger(ttlMs) || ttlMs <= 0)
    return `the Try handler gave ttlMs ${String(ttlMs)}; a TTL must be a positive whole number of milliseconds`;
  if (ttlMs > TTL_MS_MAX) return `the Try handler gave ttlMs ${ttlMs}; at most ${TTL_MS_MAX} (30 days)`;
  return null;
}

/** A reserve held now (tried, neither confirmed nor cancelled). */
export interface HeldReserve {
  txnId: TxnId;
  /** When its TTL runs out; null: no TTL. */
  expiresAtMs: number | null;
}

/** The TCC counters every store keeps (exported as metrics). */
export interface TccCounts {
  /** Reserves held now. */
  held: number;
  tried: number;
  confirmed: number;
  cancelled: number;
  /** Cancels that found no Try on record (empty rollbacks). */
  emptyRollbacks: number;
  /** Trys refused because their Cancel came first (hanging Trys). */
  hangingRefused: number;
  /** Handler calls that threw (Try: voted NO; Confirm, Cancel: retried by the cluster). */
  handlerFailures: number;
}

export function zeroCounts(): TccCounts {
  return { held: 0, tried: 0, confirmed: 0, cancelled: 0, emptyRollbacks: 0, hangingRefused: 0, handlerFailures: 0 };
}

/** What the reserve watcher (expiry.ts) and the metrics need of a TCC resource. */
export interface TccReserves {
  heldReserves(): Iterable<HeldReserve>;
  tccCounts(): TccCounts;
}

/**
 * What every TCC resource does the same way, whatever keeps its barrier (a
 * journal file, a PostgreSQL table): COMMIT runs Confirm and ABORT Cancel,
 * through the resource's own `settle`; an ABORT before PREPARE is a Cancel
 * with no Try, recorded so that a late Try is refused; the counts and the
 * held reserves are read from the resource's own records.
 */
export abstract class TccResourceBase implements TccReserves {
  protected readonly counts = zeroCounts();

  /** Runs Confirm or Cancel for txnId through the barrier, durably, then calls cb. */
  protected abstract settle(txnId: TxnId, op: 'confirm' | 'cancel', cb: (err: Error | null) => void): void;

  /** The branches tried and not yet settled, each with when its TTL runs out (null: none). */
  protected abstract heldBranches(): ReadonlyMap<TxnId, { expiresAtMs: number | null }>;

  /** The clock the TTLs were set by. */
  protected abstract nowMs(): number;

  /** What is left of T's reserve's TTL, for its YES vote; undefined: none held, or held without a TTL. */
  reserveTtlMs(txnId: TxnId): number | undefined {
    const expiresAtMs = this.heldBranches().get(txnId)?.expiresAtMs ?? null;
    return expiresAtMs === null ? undefined : Math.min(TTL_MS_MAX, Math.max(1, expiresAtMs - this.nowMs()));
  }

  commit(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.settle(txnId, 'confirm', cb);
  }

  abort(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.settle(txnId, 'cancel', cb);
  }

  abortUnprepared(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.settle(txnId, 'cancel', cb);
  }

  /**
   * The engine refused a Try from its own memory of T's ABORT (or refusal): a hanging Try like any the barrier refuses.
   */
  latePrepareRefused(_txnId: TxnId): void {
    this.counts.hangingRefused += 1;
  }

  heldReserves(): HeldReserve[] {
    return [...this.heldBranches()].map(([txnId, h]) => ({ txnId, expiresAtMs: h.expiresAtMs }));
  }

  tccCounts(): TccCounts {
    return { ...this.counts, held: this.heldBranches().size };
  }
}
