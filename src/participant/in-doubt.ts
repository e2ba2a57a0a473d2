// Resolving in-doubt transactions (R4, R3): for each prepared transaction
// whose DECISION does not come, ask the cluster (GetOutcome with our
// participant id, so a leader that decided nothing logs ABORT) until it gives
// a final outcome, and hand that outcome to the engine to apply. Never guess:
// an error, IN_PROGRESS or UNKNOWN means "ask again later", with capped
// exponential backoff, forever. Pure, like the engine that owns it.
//
// An urgent question (the leader that sent the PREPARE is gone: its stream
// broke) is asked at once and, while it fails, again every
// URGENT_ASK_INTERVAL_MS for URGENT_ASKS_MAX tries before the backoff takes
// over: a new leader is usually elected within a few hundred milliseconds,
// and the question should reach it then, not at the next doubling.
//
// With askOutcomes (Coordinator.GetOutcomes) the questions due at the same
// moment go out as one: a participant with thousands of transactions in
// doubt after a leader dies asks one question per round, not thousands
// (up to askBatchMax ids each, asksInFlightMax questions at once).
import { isFinal } from '../domain/protocol.ts';
import { assert } from '../util/assert.ts';
import {
  type AskOutcome,
  type AskOutcomes,
  type ClusterOutcome,
  type EngineLog,
  type Outcome,
  type Schedule,
  type TxnId,
} from './types.ts';

export interface InDoubtOptions {
  askOutcome: AskOutcome;
  /** Batched questions; absent, each transaction is asked about on its own. */
  askOutcomes?: AskOutcomes;
  /** Ids per batched question. */
  askBatchMax?: number;
  schedule: Schedule;
  log: EngineLog;
  askBackoffMinMs: number;
  askBackoffMaxMs: number;
  /** Questions in flight at once, so a restart with many in-doubt transactions does not flood the cluster. */
  asksInFlightMax: number;
  /** Whether T is still prepared (a DECISION may have settled it meanwhile). */
  isPrepared: (txnId: TxnId) => boolean;
  /** Applies a final outcome; cb(err) when it could not, and the resolver asks again later. */
  apply: (txnId: TxnId, outcome: Outcome, cb: (err: Error | null) => void) => void;
}

/** Retry interval of an urgent question while it fails (no leader yet, a follower's redirect to the dead one). */
export const URGENT_ASK_INTERVAL_MS = 100;
/**
 * Urgent retries before the capped exponential backoff takes over (15 s of
 * them): an election on a loaded machine can take seconds, and a backoff
 * that has doubled to several seconds by then would add as much again.
 */
export const URGENT_ASKS_MAX = 150;

/** Ids per batched question by default (the cluster takes up to 1,024: src/node/limits.ts). */
export const ASK_BATCH_MAX = 512;

/** queued: waits for an ask slot; asking: a question in flight; waiting: backing off; applying: outcome learned. */
interface Resolver {
  state: 'queued' | 'asking' | 'waiting' | 'applying';
  attempts: number;
  /** Retries left at URGENT_ASK_INTERVAL_MS before the backoff. */
  urgentLeft: number;
  /** Backoff delays taken so far: the next one is askBackoffMinMs * 2^backoffs (capped). */
  backoffs: number;
  cancel: (() => void) | null;
}

export class InDoubtResolver {
  private readonly o: InDoubtOptions;
  /** One per transaction being resolved; bounded by the engine's prepared transactions. */
  private readonly resolvers = new Map<TxnId, Resolver>();
  /** Waiting for an ask slot; entries whose resolver is no longer 'queued' are skipped. */
  private readonly queue: TxnId[] = [];
  private inFlight = 0;
  private stopped = false;
  /** A pump on the next turn, so retries that fall due together leave as one batched question. */
  private pumpSoon: (() => void) | null = null;
  questions = 0;

  constructor(o: InDoubtOptions) {
    assert(0 < o.askBackoffMinMs && o.askBackoffMinMs <= o.askBackoffMaxMs, '0 < askBackoffMinMs <= askBackoffMaxMs');
    assert(o.asksInFlightMax > 0, 'asksInFlightMax > 0');
    this.o = o;
  }

  get size(): number {
    return this.resolvers.size;
  }

  /**
   * Starts asking about T, unless already asking. `urgent`: ask now even if
   * a retry is waiting, and retry at URGENT_ASK_INTERVAL_MS for a while.
   */
  resolve(txnId: TxnId, urgent = false): void {
    if (this.stopped) return;
    const urgentLeft = urgent ? URGENT_ASKS_MAX : 0;
    const r = this.resolvers.get(txnId);
    if (r !== undefined) {
      if (!urgent) return;
      r.urgentLeft = urgentLeft;
      if (r.state !== 'waiting') return;
      r.cancel?.();
      r.cancel = null;
      r.state = 'queued';
    } else {
      this.resolvers.set(txnId, { state: 'queued', attempts: 0, urgentLeft, backoffs: 0, cancel: null });
    }
    this.requeue(txnId);
  }

  /** T is settled (by a DECISION or by our own apply): stop asking. A late answer is ignored. */
  finish(txnId: TxnId): void {
    const r = this.resolvers.get(txnId);
    if (r === undefined) return;
    r.cancel?.();
    this.resolvers.delete(txnId);
  }

  stop(): void {
    this.stopped = true;
    this.pumpSoon?.();
    this.pumpSoon = null;
    for (const r of this.resolvers.values()) r.cancel?.();
    this.resolvers.clear();
    this.queue.length = 0;
  }

  /** The next queued transaction still to be asked about, or null; marks it asking. */
  private takeQueued(): [TxnId, Resolver] | null {
    while (this.queue.length > 0) {
      const txnId = this.queue.shift() as TxnId;
      const r = this.resolvers.get(txnId);
      if (r === undefined || r.state !== 'queued') continue;
      if (!this.o.isPrepared(txnId)) {
        this.resolvers.delete(txnId);
        continue;
      }
      r.state = 'asking';
      return [txnId, r];
    }
    return null;
  }

  private pump(): void {
    if (this.o.askOutcomes !== undefined) return this.pumpBatched(this.o.askOutcomes);
    while (!this.stopped && this.inFlight < this.o.asksInFlightMax && this.queue.length > 0) {
      const next = this.takeQueued();
      if (next === null) return;
      const [txnId, r] = next;
      this.inFlight += 1;
      this.questions += 1;
      let answered = false;
      this.o.askOutcome(txnId, (err, outcome) => {
        assert(!answered, 'askOutcome calls back once');
        answered = true;
        this.inFlight -= 1;
        this.onAnswer(txnId, r, err, outcome);
        this.pump();
      });
    }
  }

  private pumpBatched(askOutcomes: AskOutcomes): void {
    const batchMax = this.o.askBatchMax ?? ASK_BATCH_MAX;
    while (!this.stopped && this.inFlight < this.o.asksInFlightMax && this.queue.length > 0) {
      const asked: [TxnId, Resolver][] = [];
      while (asked.length < batchMax) {
        const next = this.takeQueued();
        if (next === null) break;
        asked.push(next);
      }
      if (asked.length === 0) return;
      this.inFlight += 1;
      this.questions += 1;
      let answered = false;
      askOutcomes(
        asked.map(([id]) => id),
        (err, answers) => {
          assert(!answered, 'askOutcomes calls back once');
          answered = true;
          this.inFlight -= 1;
          for (const [txnId, r] of asked) {
            const a = err === null ? answers.get(txnId) : undefined;
            if (a !== undefined) this.onAnswer(txnId, r, a.err, a.outcome);
            else this.onAnswer(txnId, r, err ?? new Error(`the cluster's answer left out ${txnId}`), 'UNKNOWN');
          }
          this.pump();
        },
      );
    }
  }

  /**
   * Queues T; with batched questions the pump waits for the others due now (a broken stream's whole list, retries that
   * fall due together).
   */
  private requeue(txnId: TxnId): void {
    this.queue.push(txnId);
    if (this.o.askOutcomes === undefined) return this.pump();
    if (this.pumpSoon !== null) return;
    this.pumpSoon = this.o.schedule(0, () => {
      this.pumpSoon = null;
      this.pump();
    });
  }

  private onAnswer(txnId: TxnId, r: Resolver, err: Error | null, outcome: ClusterOutcome): void {
    if (this.resolvers.get(txnId) !== r) return; // stopped, or settled meanwhile by a DECISION
    if (!this.o.isPrepared(txnId)) return this.finish(txnId);
    if (err !== null || !isFinal(outcome)) {
      return this.retryLater(txnId, r, err !== null ? err.message : `cluster says ${outcome}`);
    }
    r.state = 'applying';
    this.o.apply(txnId, outcome, (aerr) => {
      if (aerr === null) this.finish(txnId);
      else if (this.resolvers.get(txnId) === r) this.retryLater(txnId, r, aerr.message);
    });
  }

  private retryLater(txnId: TxnId, r: Resolver, why: string): void {
    if (this.stopped) return;
    r.attempts += 1;
    let delayMs: number;
    if (r.urgentLeft > 0) {
      r.urgentLeft -= 1;
      delayMs = URGENT_ASK_INTERVAL_MS;
    } else {
      // Capped exponential backoff; the cap keeps an in-doubt participant asking at a steady rate forever.
      delayMs = Math.min(this.o.askBackoffMaxMs, this.o.askBackoffMinMs * 2 ** Math.min(r.backoffs, 30));
      r.backoffs += 1;
    }
    if (r.attempts === 1 || r.attempts % 10 === 0)
      this.o.log.warn({ txnId, attempts: r.attempts, delayMs, why }, 'in doubt: outcome not known yet; asking again');
    r.state = 'waiting';
    r.cancel = this.o.schedule(delayMs, () => {
      r.cancel = null;
      if (this.resolvers.get(txnId) !== r || this.stopped) return;
      r.state = 'queued';
      this.requeue(txnId);
    });
  }
}
