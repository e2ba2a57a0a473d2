// A participant without I/O: the engine over a resource and a journal,
// recovered from the journal's records, asking the cluster through two
// callbacks, and for a TCC participant the reserve watcher beside it. The
// process (src/participant/runtime.ts) gives it files, a database, real
// time and the ClusterLink; the whole-system simulator
// (test/sim/system-participant.ts) gives it a simulated disk, virtual time
// and the simulated network. Both run this wiring, so what the simulator
// checks is the participant that ships.
import type { TccReserves } from './tcc/barrier.ts';
import { ReserveWatcher, type AskAbort, type ReserveWatcherOptions } from './tcc/expiry.ts';
import { ParticipantEngine, type EngineOptions } from './engine.ts';
import type { AskOutcome, AskOutcomes, Clock, EngineLog, Journal, Resource, Schedule, TxnRecord } from './types.ts';

/** The engine's bounds and timings (inDoubtAfterMs, askBackoffMinMs, ...), everything but its wiring. */
export type EngineTuning = Partial<
  Omit<
    EngineOptions,
    'clusterId' | 'participantId' | 'resource' | 'journal' | 'clock' | 'schedule' | 'askOutcome' | 'askOutcomes' | 'log'
  >
>;

/** The reserve watcher's timings, everything but its wiring. */
export type WatcherTuning = Partial<
  Pick<
    ReserveWatcherOptions,
    'sweepIntervalMs' | 'askBackoffMinMs' | 'askBackoffMaxMs' | 'asksInFlightMax' | 'orphanAfterMs'
  >
>;

/**
 * How the participant asks the cluster (R3, R4): the outcome of T, and for an expired TCC reserve, ABORT unless
 * decided.
 */
export interface ClusterQuestions {
  askOutcome: AskOutcome;
  /** The outcomes of many transactions in one question (Coordinator.GetOutcomes); without it, one question each. */
  askOutcomes?: AskOutcomes;
  askAbort: AskAbort;
}

export interface ParticipantParts {
  clusterId: string;
  participantId: string;
  resource: Resource;
  journal: Journal;
  /** What recovery replays: the journal's records (and the prepared transactions a database adopted). */
  records: readonly TxnRecord[];
  clock: Clock;
  schedule: Schedule;
  cluster: ClusterQuestions;
  log?: EngineLog;
  engine?: EngineTuning;
  /** A TCC participant's held reserves: the watcher asks the cluster to ABORT an expired one. */
  tcc?: { reserves: TccReserves; watcher?: WatcherTuning };
  /** Builds the engine; the simulator's mutants replace it (test/sim/protocol-mutants.ts). */
  newEngine?: (o: EngineOptions) => ParticipantEngine;
}

export interface ComposedParticipant {
  engine: ParticipantEngine;
  /** The TCC reserve watcher; null for other resources. */
  watcher: ReserveWatcher | null;
  /** Starts the engine's in-doubt sweep and the watcher, once the participant can be reached. */
  start(): void;
  stop(): void;
}

/** The engine recovered from `records` (not yet started) and, for TCC, its watcher. */
export function composeParticipant(p: ParticipantParts): ComposedParticipant {
  const options: EngineOptions = {
    ...p.engine,
    clusterId: p.clusterId,
    participantId: p.participantId,
    resource: p.resource,
    journal: p.journal,
    clock: p.clock,
    schedule: p.schedule,
    askOutcome: p.cluster.askOutcome,
    ...(p.cluster.askOutcomes ? { askOutcomes: p.cluster.askOutcomes } : {}),
    log: p.log,
  };
  const engine = p.newEngine ? p.newEngine(options) : new ParticipantEngine(options);
  engine.recover(p.records);
  const watcher =
    p.tcc === undefined
      ? null
      : new ReserveWatcher({
          ...p.tcc.watcher,
          clusterId: p.clusterId,
          participantId: p.participantId,
          reserves: p.tcc.reserves,
          resource: p.resource,
          engine,
          askAbort: p.cluster.askAbort,
          clock: p.clock,
          schedule: p.schedule,
          log: p.log,
        });
  return {
    engine,
    watcher,
    start() {
      engine.start();
      watcher?.start();
    },
    stop() {
      watcher?.stop();
      engine.stop();
    },
  };
}
