// The participant's durable side in the whole-system simulation: a journal
// whose appends become durable after a simulated disk delay (a crash loses
// the appends still in flight, except a random prefix the disk may already
// have written), and a resource wrapper that reports every decision the
// participant applies to its data, so the checker sees decisions across
// crashes. startSimParticipant wires the production ParticipantEngine over
// them, as src/participant/runtime.ts does, for every world that runs it.

import type { EngineOptions, ParticipantEngine } from '../../src/participant/engine.ts';
import { participantEngine, type ParticipantMutant } from './protocol-mutants.ts';
import { MemoryResource } from '../../src/participant/memory.ts';
import { MemoryState } from '../../src/participant/memory-state.ts';
import type { Rng } from '../../src/raft/rng.ts';
import type { ClusterOutcome, EngineLog, Journal, Outcome, Resource, ResourceVote, TxnId, TxnRecord } from '../../src/participant/types.ts';
import type { EventQueue } from './event-queue.ts';
import type { SystemChecker } from './system-checker.ts';
import type { Inc } from './system-rpc.ts';

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

  /** `deferred`: the record waits for company before its sync (FileJournal's deferred records), so it reaches the disk up to 10 ms later. */
  append(record: R, cb: (err: Error | null) => void, deferred = false): void {
    const epoch = this.epoch;
    this.inFlight.push(record);
    // FIFO like a log file: an append never completes before an earlier one.
    const doneAt = Math.max(this.q.now + 1 + this.rng.int(3) + this.slowMs + (deferred ? this.rng.int(11) : 0), this.lastDoneAt);
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

/** A simulated participant process: the production engine over its simulated journal, while it is up. */
export interface SimParticipant {
  id: string;
  journal: SimJournal;
  up: boolean;
  /** The running incarnation: a crash ends it, and its timers and callbacks then do nothing. */
  inc: Inc;
  engine: ParticipantEngine | null;
  resource: MemoryResource | null;
}

/** What a world plugs into a participant it starts. */
export interface ParticipantWiring {
  clusterId: string;
  q: EventQueue;
  checker: SystemChecker;
  /** Told of each commit or abort the participant applies to its data, before the checker. */
  applied: (txnId: TxnId, outcome: Outcome) => void;
  /** The in-doubt participant's question, from incarnation `inc`. */
  askOutcome: (inc: Inc, txnId: TxnId, cb: (err: Error | null, o: ClusterOutcome) => void) => void;
  /** The engine's log for incarnation `inc` (default: silent). */
  log?: (inc: Inc) => EngineLog;
  mutant?: ParticipantMutant;
  /** The participant drops its state on ABORT (EngineOptions.forgetAborts). */
  forgetAborts?: boolean;
  /** How long a prepared transaction waits for its DECISION before the participant asks (default 1 s). */
  inDoubtAfterMs?: number;
}

/** What every simulated participant's engine gets from the world, for incarnation `inc`: ids, time, the cluster, the usual timings. */
export function simEngineOptions(p: SimParticipant, w: ParticipantWiring, inc: Inc): Omit<EngineOptions, 'resource' | 'journal'> {
  return {
    clusterId: w.clusterId,
    participantId: p.id,
    clock: { nowMs: () => w.q.now },
    schedule: (delayMs, fn) => {
      let cancelled = false;
      w.q.after(delayMs, () => !cancelled && inc.alive && fn());
      return () => (cancelled = true);
    },
    askOutcome: (txnId, cb) => w.askOutcome(inc, txnId, cb),
    log: w.log?.(inc),
    inDoubtAfterMs: w.inDoubtAfterMs ?? 1_000,
    sweepIntervalMs: 500,
    askBackoffMinMs: 100,
    askBackoffMaxMs: 1_000,
    forgetAborts: w.forgetAborts,
  };
}

/**
 * Starts a new incarnation of `p`: recovery replays what its journal made
 * durable, as the runtime does with its file, into a MemoryResource and the
 * production engine, which then runs on the world's clock.
 */
export function startSimParticipant(p: SimParticipant, w: ParticipantWiring): void {
  const inc: Inc = { alive: true };
  p.inc = inc;
  const state = new MemoryState();
  for (const r of p.journal.durable) state.add(r);
  const resource = MemoryResource.restore(state.data, state.preparedWrites());
  const engine = participantEngine(
    {
      ...simEngineOptions(p, w, inc),
      resource: new RecordingResource(resource, (txnId, outcome) => {
        if (!inc.alive) return;
        w.applied(txnId, outcome);
        w.checker.participantApplied(p.id, txnId, outcome);
      }),
      journal: { append: (r, cb) => inc.alive && p.journal.append(r, cb) },
    },
    w.mutant,
  );
  engine.recover(state.txnRecords());
  engine.start();
  p.engine = engine;
  p.resource = resource;
  p.up = true;
  w.checker.participantRecovered(p.id, (txnId) => engine.stateOf(txnId));
}

/** Power loss at `p`: the incarnation ends and the journal keeps only what its disk had written. */
export function crashSimParticipant(p: SimParticipant): void {
  p.up = false;
  p.inc.alive = false;
  p.journal.crash();
  p.engine = null;
  p.resource = null;
}
