// Reserves that expire without breaking agreement. A TCC Try may give a TTL;
// when it runs out and no decision has reached this participant, a bare
// timer that cancelled would break AC1: the cluster may have decided COMMIT a
// moment earlier (every participant voted YES), and the other participants
// confirm while this one has released the reserve. So the participant never
// cancels alone. It asks the cluster to decide ABORT if nothing is decided
// yet (Coordinator.Abort: the leader logs ABORT unless a decision is already
// logged or being logged, and answers what the log says, R1/R3) and applies
// the answer: Cancel on ABORT, Confirm on COMMIT. No answer (no leader, a
// partition) means ask again, with capped backoff, for as long as it takes:
// the reserve outlives its TTL only while the cluster cannot be reached.
//
// GetOutcome alone would not do: while the leader that sent PREPARE still
// works on T it answers IN_PROGRESS (rightly, for an ordinary in-doubt
// question), so a TTL shorter than the transaction's own timeout would mean
// nothing. Abort is the same log path, asked for explicitly.
//
// The answer is applied through the engine when it holds T as prepared (it
// journals the outcome, as for a DECISION), and straight to the resource
// when it does not (a Try whose YES never left: the journal's prepared record
// was lost in a crash; the cluster then can only have decided ABORT). Such an
// orphan reserve is asked about after orphanAfterMs even without a TTL:
// nobody else would ever release it.
//
// Pure: time, timers and the question come in as arguments.
import { assert } from '../../util/assert.ts';
import { decisionOfOutcome, isFinal, type Decide } from '../../domain/protocol.ts';
import {
  SILENT_LOG,
  type Clock,
  type ClusterOutcome,
  type EngineLog,
  type Outcome,
  type Resource,
  type Schedule,
  type TxnId,
  withDefaults,
} from '../types.ts';
import type { TccReserves } from './barrier.ts';

/** Asks the cluster to decide ABORT if T is undecided; answers the outcome the log holds. */
export type AskAbort = (txnId: TxnId, reason: string, cb: (err: Error | null, outcome: ClusterOutcome) => void) => void;

/** What the watcher needs of the engine: whether T is prepared there, and the DECISION entry. */
export interface WatchedEngine {
  stateOf(txnId: TxnId): 'prepared' | Outcome | undefined;
  decide(req: Decide, cb: (err: Error | null) => void): void;
}

export interface ReserveWatcherOptions {
  clusterId: string;
  participantId: string;
  reserves: TccReserves;
  resource: Resource;
  engine: WatchedEngine;
  askAbort: AskAbort;
  clock: Clock;
  schedule: Schedule;
  log?: EngineLog;
  sweepIntervalMs?: number;
  askBackoffMinMs?: number;
  askBackoffMaxMs?: number;
  /** Questions in flight at once. */
  asksInFlightMax?: number;
  /** A held reserve the engine does not hold as prepared is due this long after it was first seen so. */
  orphanAfterMs?: number;
}

interface Asking {
  attempts: number;
  /** Not before this may it be asked again. */
  nextAtMs: number;
  inFlight: boolean;
}

export class ReserveWatcher {
  private readonly o: Required<Omit<ReserveWatcherOptions, 'log'>>;
  private readonly log: EngineLog;
  /** Expired reserves being resolved; bounded by the reserves held. */
  private readonly asking = new Map<TxnId, Asking>();
  /** Held reserves the engine does not hold, and since when; bounded by the reserves held. */
  private readonly orphans = new Map<TxnId, number>();
  private inFlight = 0;
  private cancelSweep: (() => void) | null = null;
  private stopped = false;
  /** Reserves whose TTL ran out, counted once each. */
  expired = 0;
  questions = 0;

  constructor(o: ReserveWatcherOptions) {
    this.o = withDefaults(
      {
        sweepIntervalMs: 500,
        askBackoffMinMs: 100,
        askBackoffMaxMs: 10_000,
        asksInFlightMax: 16,
        orphanAfterMs: 60_000,
      },
      o,
    );
    assert(
      0 < this.o.askBackoffMinMs && this.o.askBackoffMinMs <= this.o.askBackoffMaxMs && this.o.asksInFlightMax > 0,
      'reserve watcher bounds are positive',
    );
    this.log = o.log ?? SILENT_LOG;
  }

  start(): void {
    this.sweep();
  }

  stop(): void {
    this.stopped = true;
    this.cancelSweep?.();
    this.cancelSweep = null;
  }

  /** Looks at every held reserve now (the sweep does it every sweepIntervalMs). */
  sweep(): void {
    if (this.stopped) return;
    this.cancelSweep?.();
    const now = this.o.clock.nowMs();
    const held = new Set<TxnId>();
    for (const r of this.o.reserves.heldReserves()) {
      held.add(r.txnId);
      let dueAtMs = r.expiresAtMs ?? Number.POSITIVE_INFINITY;
      if (this.o.engine.stateOf(r.txnId) !== 'prepared') {
        const sinceAtMs = this.orphans.get(r.txnId) ?? now;
        this.orphans.set(r.txnId, sinceAtMs);
        dueAtMs = Math.min(dueAtMs, sinceAtMs + this.o.orphanAfterMs);
      } else this.orphans.delete(r.txnId);
      if (now < dueAtMs) continue;
      let a = this.asking.get(r.txnId);
      if (a === undefined) {
        const ttl = r.expiresAtMs !== null && now >= r.expiresAtMs;
        if (ttl) this.expired += 1;
        this.log.warn(
          { txnId: r.txnId, overdueMs: now - dueAtMs },
          ttl
            ? 'TCC reserve expired with no decision here; asking the cluster to decide ABORT if nothing is decided'
            : 'TCC reserve held with no prepared transaction in the journal (its YES never left); asking the cluster to decide ABORT if nothing is decided',
        );
        a = { attempts: 0, nextAtMs: now, inFlight: false };
        this.asking.set(r.txnId, a);
      }
      if (!a.inFlight && now >= a.nextAtMs && this.inFlight < this.o.asksInFlightMax) this.ask(r.txnId, a);
    }
    // Settled meanwhile (a DECISION came): forget them, so the map stays bounded by what is held.
    for (const [txnId, a] of this.asking) if (!held.has(txnId) && !a.inFlight) this.asking.delete(txnId);
    for (const txnId of this.orphans.keys()) if (!held.has(txnId)) this.orphans.delete(txnId);
    this.cancelSweep = this.o.schedule(this.o.sweepIntervalMs, () => this.sweep());
  }

  get resolving(): number {
    return this.asking.size;
  }

  private ask(txnId: TxnId, a: Asking): void {
    a.inFlight = true;
    this.inFlight += 1;
    this.questions += 1;
    let answered = false;
    this.o.askAbort(txnId, `the TCC reserve of participant ${this.o.participantId} expired`, (err, outcome) => {
      assert(!answered, 'askAbort calls back once');
      answered = true;
      this.inFlight -= 1;
      if (this.stopped) return;
      if (err !== null || !isFinal(outcome))
        return this.later(txnId, a, err !== null ? err.message : `cluster says ${outcome}`);
      this.apply(txnId, outcome, (aerr) => {
        if (aerr !== null) return this.later(txnId, a, aerr.message);
        a.inFlight = false;
        this.asking.delete(txnId);
        this.log.info(
          { txnId, outcome },
          `expired TCC reserve settled with the cluster's answer (${outcome === 'COMMITTED' ? 'Confirm' : 'Cancel'})`,
        );
      });
    });
  }

  private apply(txnId: TxnId, outcome: Outcome, cb: (err: Error | null) => void): void {
    if (this.o.engine.stateOf(txnId) === 'prepared') {
      this.o.engine.decide(
        {
          clusterId: this.o.clusterId,
          participantId: this.o.participantId,
          txnId,
          outcome: decisionOfOutcome(outcome),
          reason: 'answer to an expired TCC reserve',
        },
        cb,
      );
      return;
    }
    if (outcome === 'COMMITTED') this.o.resource.commit(txnId, cb);
    else this.o.resource.abort(txnId, cb);
  }

  private later(txnId: TxnId, a: Asking, why: string): void {
    a.inFlight = false;
    a.attempts += 1;
    const delayMs = Math.min(this.o.askBackoffMaxMs, this.o.askBackoffMinMs * 2 ** Math.min(a.attempts - 1, 30));
    a.nextAtMs = this.o.clock.nowMs() + delayMs;
    if (a.attempts === 1 || a.attempts % 10 === 0)
      this.log.warn(
        { txnId, attempts: a.attempts, delayMs, why },
        'expired TCC reserve: no final answer from the cluster yet; asking again',
      );
    if (!this.stopped) this.o.schedule(delayMs, () => this.sweep());
  }
}
