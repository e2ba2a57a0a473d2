// Resolving in-doubt transactions (R4, R3): for each prepared transaction
// whose DECISION does not come, ask the cluster (GetOutcome with our
// participant id, so a leader that decided nothing logs ABORT) until it gives
// a final outcome, and hand that outcome to the engine to apply. Never guess:
// an error, IN_PROGRESS or UNKNOWN means "ask again later", with capped
// exponential backoff, forever. Pure, like the engine that owns it.
import { assert } from '../util/assert.ts';
import { type AskOutcome, type ClusterOutcome, type EngineLog, type Outcome, type Schedule, type TxnId } from './types.ts';

export interface InDoubtOptions {
  askOutcome: AskOutcome;
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

/** queued: waits for an ask slot; asking: a question in flight; waiting: backing off; applying: outcome learned. */
interface Resolver {
  state: 'queued' | 'asking' | 'waiting' | 'applying';
  attempts: number;
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
  questions = 0;

  constructor(o: InDoubtOptions) {
    assert(0 < o.askBackoffMinMs && o.askBackoffMinMs <= o.askBackoffMaxMs, '0 < askBackoffMinMs <= askBackoffMaxMs');
    assert(o.asksInFlightMax > 0, 'asksInFlightMax > 0');
    this.o = o;
  }

  get size(): number {
    return this.resolvers.size;
  }

  /** Starts asking about T, unless already asking. */
  resolve(txnId: TxnId): void {
    if (this.stopped || this.resolvers.has(txnId)) return;
    this.resolvers.set(txnId, { state: 'queued', attempts: 0, cancel: null });
    this.queue.push(txnId);
    this.pump();
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
    for (const r of this.resolvers.values()) r.cancel?.();
    this.resolvers.clear();
    this.queue.length = 0;
  }

  private pump(): void {
    while (!this.stopped && this.inFlight < this.o.asksInFlightMax && this.queue.length > 0) {
      const txnId = this.queue.shift() as TxnId;
      const r = this.resolvers.get(txnId);
      if (r === undefined || r.state !== 'queued') continue;
      if (!this.o.isPrepared(txnId)) {
        this.resolvers.delete(txnId);
        continue;
      }
      r.state = 'asking';
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

  private onAnswer(txnId: TxnId, r: Resolver, err: Error | null, outcome: ClusterOutcome): void {
    if (this.resolvers.get(txnId) !== r) return; // stopped, or settled meanwhile by a DECISION
    if (!this.o.isPrepared(txnId)) return this.finish(txnId);
    if (err !== null || (outcome !== 'committed' && outcome !== 'aborted')) {
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
    // Capped exponential backoff; the cap keeps an in-doubt participant asking at a steady rate forever.
    const delayMs = Math.min(this.o.askBackoffMaxMs, this.o.askBackoffMinMs * 2 ** Math.min(r.attempts - 1, 30));
    if (r.attempts === 1 || r.attempts % 10 === 0) this.o.log.warn({ txnId, attempts: r.attempts, delayMs, why }, 'in doubt: outcome not known yet; asking again');
    r.state = 'waiting';
    r.cancel = this.o.schedule(delayMs, () => {
      r.cancel = null;
      if (this.resolvers.get(txnId) !== r || this.stopped) return;
      r.state = 'queued';
      this.queue.push(txnId);
      this.pump();
    });
  }
}
