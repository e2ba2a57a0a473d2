// The participant's durable side in the whole-system simulation: a journal
// whose appends become durable after a simulated disk delay (a crash loses
// the appends still in flight, except a random prefix the disk may already
// have written), and a resource wrapper that reports every decision the
// participant applies to its data, so the checker sees decisions across
// crashes. Every simulated participant, memory or TCC
// (test/sim/system-tcc.ts), is composed by the production wiring
// (src/participant/compose.ts), as src/participant/runtime.ts composes the
// process, over these and the world's clock and network.

import { composeParticipant, type ComposedParticipant, type ParticipantParts } from '../../src/participant/compose.ts';
import type { EngineOptions, ParticipantEngine } from '../../src/participant/engine.ts';
import type { TccReserves } from '../../src/participant/tcc/barrier.ts';
import type { AskAbort } from '../../src/participant/tcc/expiry.ts';
import { participantEngine, type ParticipantMutant } from './protocol-mutants.ts';
import { MemoryResource } from '../../src/participant/memory.ts';
import { MemoryState } from '../../src/participant/memory-state.ts';
import type { Rng } from '../../src/raft/rng.ts';
import type {
  ClusterOutcome,
  EngineLog,
  Journal,
  Outcome,
  Resource,
  ResourceVote,
  Schedule,
  TxnId,
  TxnRecord,
} from '../../src/participant/types.ts';
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

  /**
   * `deferred`: the record waits for company before its sync (FileJournal's deferred records), so it reaches the disk
   * up to 10 ms later.
   */
  append(record: R, cb: (err: Error | null) => void, deferred = false): void {
    const epoch = this.epoch;
    this.inFlight.push(record);
    // FIFO like a log file: an append never completes before an earlier one.
    const doneAt = Math.max(
      this.q.now + 1 + this.rng.int(3) + this.slowMs + (deferred ? this.rng.int(11) : 0),
      this.lastDoneAt,
    );
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

/** A resource reporting each commit or abort of a prepared transaction as it is applied. */
export class RecordingResource implements Resource {
  /** Forwarded when the inner resource has it (TCC's Cancel of an unprepared Try). */
  readonly abortUnprepared?: (txnId: TxnId, cb: (err: Error | null) => void) => void;

  constructor(
    readonly inner: Resource,
    private readonly onApply: (txnId: TxnId, outcome: Outcome) => void,
  ) {
    if (inner.abortUnprepared !== undefined) this.abortUnprepared = (txnId, cb) => inner.abortUnprepared?.(txnId, cb);
  }

  prepare(txnId: TxnId, payload: Uint8Array, cb: (err: Error | null, vote: ResourceVote) => void): void {
    this.inner.prepare(txnId, payload, cb);
  }

  commit(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.onApply(txnId, 'COMMITTED');
    this.inner.commit(txnId, cb);
  }

  abort(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.onApply(txnId, 'ABORTED');
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

/**
 * What every simulated participant's engine gets from the world, for incarnation `inc`: ids, time, the cluster, the
 * usual timings.
 */
export function simEngineOptions(
  p: SimParticipant,
  w: ParticipantWiring,
  inc: Inc,
): Omit<EngineOptions, 'resource' | 'journal'> {
  return {
    clusterId: w.clusterId,
    participantId: p.id,
    clock: { nowMs: () => w.q.now },
    schedule: simSchedule(w.q, inc),
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
  const state = new MemoryState();
  for (const r of p.journal.durable) state.add(r);
  const resource = MemoryResource.restore(state.data, state.preparedWrites());
  p.resource = resource;
  startIncarnation(p, { alive: true }, w, {
    resource,
    records: state.txnRecords(),
    newEngine: (o) => participantEngine(o, w.mutant),
  });
}

/**
 * Incarnation `inc` of a simulated participant, composed as the process is
 * (src/participant/compose.ts): `resource` wrapped to report what it applies,
 * the journal, virtual time and the world's questions to the cluster, all
 * dead once the incarnation crashes.
 */
export function startIncarnation(
  p: SimParticipant,
  inc: Inc,
  w: ParticipantWiring,
  o: {
    resource: Resource;
    records: readonly TxnRecord[];
    newEngine?: ParticipantParts['newEngine'];
    tcc?: { reserves: TccReserves; askAbort: AskAbort };
  },
): ComposedParticipant {
  p.inc = inc;
  const parts = composeParticipant({
    clusterId: w.clusterId,
    participantId: p.id,
    resource: new RecordingResource(o.resource, (txnId, outcome) => {
      if (!inc.alive) return;
      w.applied(txnId, outcome);
      w.checker.participantApplied(p.id, txnId, outcome);
    }),
    journal: { append: (r, cb) => inc.alive && p.journal.append(r, cb) },
    records: o.records,
    clock: { nowMs: () => w.q.now },
    schedule: simSchedule(w.q, inc),
    cluster: {
      askOutcome: (txnId, cb) => w.askOutcome(inc, txnId, cb),
      askAbort:
        o.tcc?.askAbort ?? ((_txnId, _reason, cb) => cb(new Error('only a TCC participant asks to abort'), 'UNKNOWN')),
    },
    log: w.log?.(inc),
    engine: {
      inDoubtAfterMs: w.inDoubtAfterMs ?? 1_000,
      sweepIntervalMs: 500,
      askBackoffMinMs: 100,
      askBackoffMaxMs: 1_000,
      forgetAborts: w.forgetAborts,
    },
    newEngine: o.newEngine,
    tcc:
      o.tcc === undefined
        ? undefined
        : { reserves: o.tcc.reserves, watcher: { sweepIntervalMs: 200, askBackoffMinMs: 100, askBackoffMaxMs: 1_000 } },
  });
  parts.start();
  p.engine = parts.engine;
  p.up = true;
  w.checker.participantRecovered(p.id, (txnId) => parts.engine.stateOf(txnId));
  return parts;
}

/** The engine's Schedule on virtual time: a timer of a crashed incarnation never fires. */
export function simSchedule(q: EventQueue, inc: Inc): Schedule {
  return (delayMs, fn) => {
    let cancelled = false;
    q.after(delayMs, () => !cancelled && inc.alive && fn());
    return () => (cancelled = true);
  };
}

/** Power loss at `p`: the incarnation ends and the journal keeps only what its disk had written. */
export function crashSimParticipant(p: SimParticipant): void {
  p.up = false;
  p.inc.alive = false;
  p.journal.crash();
  p.engine = null;
  p.resource = null;
}
