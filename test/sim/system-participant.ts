// The participant's durable side in the whole-system simulation: a journal
// whose appends become durable after a simulated disk delay (a crash loses
// the appends still in flight, except a random prefix the disk may already
// have written), and a resource wrapper that reports every decision the
// participant applies to its data, so the checker sees decisions across
// crashes.

import type { Rng } from '../../src/raft/rng.ts';
import type { MemoryResource } from '../../src/participant/memory.ts';
import type { Journal, Outcome, Resource, ResourceVote, TxnId, TxnRecord } from '../../src/participant/types.ts';
import type { EventQueue } from './event-queue.ts';

/**
 * Generic in the record so that other simulated processes with a synced local
 * log (the 2PC baseline's coordinator) use the same disk model; with the
 * default it is a participant Journal.
 */
export class SimJournal<R = TxnRecord> {
  /** What survives a crash, in append order. */
  readonly durable: R[] = [];
  private inFlight: R[] = [];
  private epoch = 0;
  private lastDoneAt = 0;
  /** Extra latency while a slow-disk fault is on. */
  slowMs = 0;

  constructor(
    private readonly q: EventQueue,
    private readonly rng: Rng,
  ) {}

  append(record: R, cb: (err: Error | null) => void): void {
    const epoch = this.epoch;
    this.inFlight.push(record);
    // FIFO like a log file: an append never completes before an earlier one.
    const doneAt = Math.max(this.q.now + 1 + this.rng.int(3) + this.slowMs, this.lastDoneAt);
    this.lastDoneAt = doneAt;
    this.q.at(doneAt, () => {
      if (epoch !== this.epoch) return;
      this.durable.push(this.inFlight.shift() as R);
      cb(null);
    });
  }

  /** Power loss: appends in flight are lost, but for a random prefix the disk had already written. */
  crash(): void {
    const survive = this.rng.int(this.inFlight.length + 1);
    for (let i = 0; i < survive; i++) this.durable.push(this.inFlight[i]);
    this.inFlight = [];
    this.epoch++;
    this.lastDoneAt = 0;
  }
}

// With its default record a SimJournal is a participant Journal; the compiler checks it here.
const journalShape: (j: SimJournal) => Journal = (j) => j;
void journalShape;

/** The memory resource, reporting each commit or abort of a prepared transaction as it is applied. */
export class RecordingResource implements Resource {
  constructor(
    readonly inner: MemoryResource,
    private readonly onApply: (txnId: TxnId, outcome: Outcome) => void,
  ) {}

  prepare(txnId: TxnId, payload: Uint8Array, cb: (err: Error | null, vote: ResourceVote) => void): void {
    this.inner.prepare(txnId, payload, cb);
  }

  commit(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.onApply(txnId, 'committed');
    this.inner.commit(txnId, cb);
  }

  abort(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.onApply(txnId, 'aborted');
    this.inner.abort(txnId, cb);
  }
}
