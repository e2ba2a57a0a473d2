// The memory TCC resource: Try / Confirm / Cancel handlers over an
// application state held in memory, with the barrier (barrier.ts) and the
// effects made durable by one journal. Each event is one record, written after
// its handler ran and acknowledged only once synced; on start the state is
// rebuilt by running the handlers again over the records, in order, so
// handlers must be deterministic functions of the state and the payload, and
// must throw before they change anything. A crash can only lose a suffix of
// the records (the journal is a log), and with it exactly the effects that
// were never acknowledged.
//
// Compaction writes the state itself (handlers.encode) and the branches still
// worth remembering: every held reserve, and the most recent settled ones so
// that a late Try still finds its Cancel (settledKeptMax).
//
// Pure apart from the journal it is given: tests and the simulator run it.
import { assert } from '../../util/assert.ts';
import { OldestFirst } from '../../util/oldest-first.ts';
import {
  fromBase64,
  toBase64,
  type EngineLog,
  type Resource,
  type ResourceVote,
  type TxnId,
  SILENT_LOG,
  type Clock,
} from '../types.ts';
import {
  barrierStep,
  TccResourceBase,
  ttlProblem,
  type BranchState,
  type TccBranch,
  type TccTryResult,
} from './barrier.ts';

/**
 * The handlers of a memory TCC participant, over the application state S.
 *
 * They are folded, not called once: each event runs its handler twice (on
 * the live copy the participant answers from, then on the journal's copy
 * once the record is synced), and every record again at each start. So a
 * handler must be a deterministic function of the state and the payload,
 * with no side effect outside the state it is given (no call to another
 * service, no message, no file), and must throw before it changes anything.
 * An effect on the outside world belongs in a PostgreSQL TCC participant
 * (called once per event, in the barrier's local transaction) or after the
 * transaction's outcome is known.
 */
export interface TccMemoryHandlers<S> {
  /** The state before any record. */
  initial(): S;
  /** Reserves; throws (TccRefusal) to vote NO. May give a TTL. */
  try(state: S, branch: TccBranch): TccTryResult | undefined;
  /** Spends the reserve. A throw is retried (the cluster redelivers COMMIT), never turned into a Cancel. */
  confirm(state: S, branch: TccBranch): void;
  /** Releases the reserve. */
  cancel(state: S, branch: TccBranch): void;
  /** For compaction: the state as text, and back. */
  encode(state: S): string;
  decode(text: string): S;
}

/** An event: a handler ran (or, for empty-cancelled, a Cancel found no Try). Replay runs the handler again. */
export interface TccEventRecord {
  kind: 'tcc';
  txnId: TxnId;
  state: BranchState;
  atMs: number;
  /** The Try's payload (on 'tried'), base64. */
  payloadB64?: string;
  /** On 'tried': when the reserve's TTL runs out; null: no TTL. */
  expiresAtMs?: number | null;
}

/** A compaction's memory of a branch whose effect is already inside the state record. */
export interface TccBranchRecord {
  kind: 'tcc-branch';
  txnId: TxnId;
  state: BranchState;
  atMs: number;
  payloadB64: string;
  expiresAtMs: number | null;
}

export interface TccStateRecord {
  kind: 'tcc-state';
  state: string;
}

export type TccRecord = TccEventRecord | TccBranchRecord | TccStateRecord;

const STATES: readonly string[] = ['tried', 'confirmed', 'cancelled', 'empty-cancelled'];

export function isTccRecord(v: unknown): v is TccRecord {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  if (r.kind === 'tcc-state') return typeof r.state === 'string';
  if (r.kind !== 'tcc' && r.kind !== 'tcc-branch') return false;
  const expires = r.expiresAtMs === undefined || r.expiresAtMs === null || Number.isFinite(r.expiresAtMs);
  return (
    typeof r.txnId === 'string' &&
    r.txnId !== '' &&
    STATES.includes(r.state as string) &&
    Number.isFinite(r.atMs) &&
    (r.payloadB64 === undefined || typeof r.payloadB64 === 'string') &&
    expires
  );
}

interface Branch {
  state: BranchState;
  atMs: number;
  payloadB64: string;
  expiresAtMs: number | null;
}

/** Settled branches a compaction keeps, so a very late Try still meets its Cancel. */
export const SETTLED_KEPT_MAX = 100_000;

/** The state and the barrier as the records make them: the journal's fold, and the live copy the resource works on. */
export class TccMemoryState<S> {
  state: S;
  /** Held reserves: tried, neither confirmed nor cancelled. Invariant: disjoint from `settled`. */
  readonly held = new Map<TxnId, Branch>();
  /** Recently settled branches, oldest first; bounded by settledKeptMax. */
  readonly settled = new Map<TxnId, Branch>();
  private readonly oldestSettled = new OldestFirst(this.settled);

  constructor(
    private readonly participantId: string,
    private readonly handlers: TccMemoryHandlers<S>,
    /** The barrier's rule; replaced only by the simulator's checker self-test (test/sim/system-tcc.ts). */
    private readonly barrier: BarrierRule = barrierStep,
    private readonly settledKeptMax = SETTLED_KEPT_MAX,
  ) {
    this.state = handlers.initial();
  }

  branchState(txnId: TxnId): BranchState | undefined {
    return (this.held.get(txnId) ?? this.settled.get(txnId))?.state;
  }

  payloadOf(txnId: TxnId): Uint8Array {
    return fromBase64((this.held.get(txnId) ?? this.settled.get(txnId))?.payloadB64 ?? '');
  }

  /** Runs the handler that moves txnId to `next` on the state; throws what the handler throws. */
  run(txnId: TxnId, next: BranchState, payload: Uint8Array): TccTryResult | undefined {
    const branch: TccBranch = { txnId, participantId: this.participantId, payload };
    if (next === 'tried') return this.handlers.try(this.state, branch) ?? undefined;
    if (next === 'confirmed') this.handlers.confirm(this.state, branch);
    else if (next === 'cancelled') this.handlers.cancel(this.state, branch);
    return undefined;
  }

  /** Records a branch's new state (its handler, if any, has run). */
  note(txnId: TxnId, state: BranchState, atMs: number, payloadB64?: string, expiresAtMs?: number | null): void {
    const prev = this.held.get(txnId) ?? this.settled.get(txnId);
    this.held.delete(txnId);
    this.settled.delete(txnId);
    const b: Branch = {
      state,
      atMs,
      payloadB64: payloadB64 ?? prev?.payloadB64 ?? '',
      expiresAtMs: expiresAtMs ?? prev?.expiresAtMs ?? null,
    };
    if (state === 'tried') {
      this.held.set(txnId, b);
      return;
    }
    this.settled.set(txnId, b);
    this.oldestSettled.trimTo(this.settledKeptMax);
  }

  /**
   * Replays one durable record (JournalFold). A record the rule or a handler rejects means the journal and the handlers
   * disagree.
   */
  add(r: TccRecord): void {
    switch (r.kind) {
      case 'tcc-state':
        this.state = this.handlers.decode(r.state);
        return;
      case 'tcc-branch':
        this.note(r.txnId, r.state, r.atMs, r.payloadB64, r.expiresAtMs);
        return;
      case 'tcc': {
        const op = r.state === 'tried' ? 'try' : r.state === 'confirmed' ? 'confirm' : 'cancel';
        const v = this.barrier(r.txnId, this.branchState(r.txnId), op);
        assert(
          v.kind === 'run' || v.kind === 'record',
          `TCC journal: ${r.state} of ${r.txnId} follows ${this.branchState(r.txnId) ?? 'nothing'}`,
        );
        const payload = r.state === 'tried' ? fromBase64(r.payloadB64 ?? '') : this.payloadOf(r.txnId);
        if (v.kind === 'run') {
          try {
            this.run(r.txnId, r.state, payload);
          } catch (err) {
            assert(
              false,
              `TCC journal: replaying ${r.state} of ${r.txnId} threw (${(err as Error).message}): the handlers are not deterministic`,
            );
          }
        }
        this.note(r.txnId, r.state, r.atMs, r.payloadB64, r.expiresAtMs);
        return;
      }
    }
  }

  snapshot(): TccRecord[] {
    const out: TccRecord[] = [{ kind: 'tcc-state', state: this.handlers.encode(this.state) }];
    for (const [txnId, b] of [...this.settled, ...this.held]) out.push({ kind: 'tcc-branch', txnId, ...b });
    return out;
  }
}

export interface MemoryTccOptions<S> {
  participantId: string;
  handlers: TccMemoryHandlers<S>;
  /** The live copy, rebuilt from the durable records. */
  live: TccMemoryState<S>;
  journal: { append(record: TccRecord, cb: (err: Error | null) => void): void };
  clock: Clock;
  log?: EngineLog;
  /** The barrier's rule; replaced only by the simulator's checker self-test (test/sim/system-tcc.ts). */
  barrier?: BarrierRule;
}

export type BarrierRule = typeof barrierStep;

/** A TCC participant's Resource: PREPARE runs Try, COMMIT Confirm, ABORT Cancel, each through the barrier. */
export class MemoryTccResource<S> extends TccResourceBase implements Resource {
  private readonly o: MemoryTccOptions<S>;
  private readonly log: EngineLog;
  /**
   * After a failed journal write the live state may hold an effect that is not durable: refuse everything until a
   * restart.
   */
  private failed: Error | null = null;
  private readonly barrier: BarrierRule;

  constructor(o: MemoryTccOptions<S>) {
    super();
    this.o = o;
    this.barrier = o.barrier ?? barrierStep;
    this.log = o.log ?? SILENT_LOG;
  }

  /** The application state, to read (never to change outside the handlers). */
  get state(): S {
    return this.o.live.state;
  }

  branchState(txnId: TxnId): BranchState | undefined {
    return this.o.live.branchState(txnId);
  }

  prepare(txnId: TxnId, payload: Uint8Array, cb: (err: Error | null, vote: ResourceVote) => void): void {
    if (this.failed !== null)
      return cb(null, {
        yes: false,
        reason: `the TCC journal failed (${this.failed.message}); restart the participant`,
      });
    const v = this.barrier(txnId, this.o.live.branchState(txnId), 'try');
    if (v.kind === 'done') return cb(null, { yes: true, reason: '' });
    if (v.kind !== 'run') {
      this.counts.hangingRefused += 1;
      this.log.warn({ txnId }, 'TCC: Try refused, its Cancel came first (hanging Try)');
      return cb(null, { yes: false, reason: v.kind === 'refuse' ? v.reason : 'Try refused' });
    }
    let result: TccTryResult | undefined;
    try {
      result = this.o.live.run(txnId, 'tried', payload);
    } catch (err) {
      this.counts.handlerFailures += 1;
      return cb(null, { yes: false, reason: `Try failed: ${(err as Error).message}` });
    }
    const problem = ttlProblem(result?.ttlMs);
    if (problem !== null) {
      // The effect is in the state already; the branch's own Cancel undoes it, and nothing is recorded.
      try {
        this.o.live.run(txnId, 'cancelled', payload);
      } catch (err) {
        this.failed = new Error(`Cancel could not undo a Try with a bad TTL: ${(err as Error).message}`);
      }
      this.counts.handlerFailures += 1;
      this.log.error({ txnId, ttlMs: result?.ttlMs }, `TCC: ${problem}`);
      return cb(null, { yes: false, reason: problem });
    }
    const now = this.o.clock.nowMs();
    const expiresAtMs = result?.ttlMs === undefined ? null : now + result.ttlMs;
    const record: TccEventRecord = {
      kind: 'tcc',
      txnId,
      state: 'tried',
      atMs: now,
      payloadB64: toBase64(payload),
      expiresAtMs,
    };
    this.o.live.note(txnId, 'tried', now, record.payloadB64, expiresAtMs);
    this.write(record, (err) => {
      if (err !== null) return cb(null, { yes: false, reason: `TCC journal write failed: ${err.message}` });
      this.counts.tried += 1;
      cb(null, { yes: true, reason: '' });
    });
  }

  protected nowMs(): number {
    return this.o.clock.nowMs();
  }

  protected heldBranches(): ReadonlyMap<TxnId, { expiresAtMs: number | null }> {
    return this.o.live.held;
  }

  protected settle(txnId: TxnId, op: 'confirm' | 'cancel', cb: (err: Error | null) => void): void {
    if (this.failed !== null)
      return cb(new Error(`the TCC journal failed (${this.failed.message}); restart the participant`));
    const v = this.barrier(txnId, this.o.live.branchState(txnId), op);
    if (v.kind === 'done') return cb(null);
    if (v.kind === 'refuse') {
      this.log.error({ txnId, op }, `TCC: ${v.reason}`);
      return cb(new Error(v.reason));
    }
    const payload = this.o.live.payloadOf(txnId);
    if (v.kind === 'run') {
      try {
        this.o.live.run(txnId, v.next, payload);
      } catch (err) {
        this.counts.handlerFailures += 1;
        const name = op === 'confirm' ? 'Confirm' : 'Cancel';
        this.log.error(
          { txnId, err: (err as Error).message },
          `TCC: ${name} handler failed; the decision stays unacknowledged and is retried`,
        );
        return cb(new Error(`${name} handler failed for ${txnId}: ${(err as Error).message}`));
      }
    }
    const now = this.o.clock.nowMs();
    this.o.live.note(txnId, v.next, now);
    this.write({ kind: 'tcc', txnId, state: v.next, atMs: now }, (err) => {
      if (err !== null) return cb(err);
      if (v.next === 'confirmed') this.counts.confirmed += 1;
      else if (v.next === 'cancelled') this.counts.cancelled += 1;
      else {
        this.counts.emptyRollbacks += 1;
        this.log.info({ txnId }, 'TCC: Cancel with no Try on record (empty rollback) recorded');
      }
      cb(null);
    });
  }

  private write(record: TccEventRecord, cb: (err: Error | null) => void): void {
    this.o.journal.append(record, (err) => {
      if (err !== null && this.failed === null) {
        this.failed = err;
        this.log.error(
          { txnId: record.txnId, err: err.message },
          'TCC journal write failed; the participant must be restarted',
        );
      }
      cb(err);
    });
  }
}

/** The live copy of the state from the durable records (replayed in order). */
export function replayTcc<S>(
  participantId: string,
  handlers: TccMemoryHandlers<S>,
  records: Iterable<TccRecord>,
  barrier: BarrierRule = barrierStep,
): TccMemoryState<S> {
  const s = new TccMemoryState(participantId, handlers, barrier);
  for (const r of records) s.add(r);
  return s;
}
