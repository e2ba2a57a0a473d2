// The saga product's core on a node: the orchestrator (./engine.ts) with
// what rides beside it on the same log — StartSaga's callers waiting for a
// saga's end, and the stuck saga's warn line a person can act on — as one
// extension of the node core (src/node/core.ts CoreExtension: leadership,
// applied results, ticks), attached by the node's composition
// (src/node/products.ts).
//
// Pure, as the commit engine is: time, randomness, timers, the log's
// proposals, the step service calls and the log lines come in as arguments
// (SagaCoreIO). The node process hands in the wall clock, gRPC
// (src/node/saga-service.ts) and pino; the whole-system simulator
// (test/sim/system-saga.ts) its virtual clock, seeded generator and
// simulated network. Both run this code through the same composition, so
// what the simulator checks is what ships.
//
// A stuck saga waits for a person: when the leader applies its stuck flag it
// logs one warn line with everything needed to act (the saga, its type and
// business labels, the step, its service and handler, attempts, last error)
// and repeats it every stuckLogIntervalMs while the saga stays stuck, at
// most STUCK_LINES_PER_SCAN lines a scan (the rest are counted in one line).

import type { ParticipantRecord } from '../commit/state.ts';
import type { ProductApplyResult } from '../commit/product-table.ts';
import { assert } from '../util/assert.ts';
import { SagaEngine, type SagaCallback, type SagaEngineConfig, type SagaEngineIO } from './engine.ts';
import {
  isSagaResult,
  isTerminal,
  triesOf,
  type SagaLabels,
  type SagaRecord,
  type SagaStepDef,
  type SagaTable,
} from './state.ts';

/** SagaStatus calls waiting for an end at once; beyond it they are answered at once. */
export const WAITERS_MAX = 10_000;
/** The longest one status call waits for an end. */
export const WAIT_MS_MAX = 60_000;
/** How often the leader looks for stuck sagas whose warn line is due, and how many lines one look writes at most. */
export const STUCK_SCAN_MS = 1_000;
export const STUCK_LINES_PER_SCAN = 20;
export const STUCK_LOG_INTERVAL_MS_DEFAULT = 60_000;

/** What the saga core needs from the world: the engine's I/O, and a timer for status calls that wait. */
export interface SagaCoreIO extends SagaEngineIO {
  /** Runs `fn` after `delayMs`; the returned function cancels it. */
  after(delayMs: number, fn: () => void): () => void;
}

/** Where the stuck sagas' warn lines go (pino's shape: fields, then the message). */
export interface SagaLog {
  warn(fields: Record<string, unknown>, msg: string): void;
}

/** Builds the orchestrator; test code hands in a broken one (test/sim/system-saga.ts), as for the commit engine. */
export type SagaEngineFactory = (
  table: SagaTable,
  services: ReadonlyMap<string, ParticipantRecord>,
  io: SagaEngineIO,
  cfg: Partial<SagaEngineConfig>,
) => SagaEngine;

/** Watchers of what the saga core does; none of them changes it. */
export interface SagaCoreObserver {
  /** A stuck flag this node applied while it leads, by the saga's type (metrics: src/node/saga-metrics.ts). */
  stuckFlagged?(type: string | undefined): void;
  /** The core is told it leads `term` (0: it stops leading), before its engine acts on it. */
  leadership?(term: number): void;
}

export interface SagaCoreOptions {
  /** The saga table beside the decision table in the node's state machine. */
  table: SagaTable;
  /** The registry of participants and step services (DecisionTable.participants). */
  services: ReadonlyMap<string, ParticipantRecord>;
  io: SagaCoreIO;
  log: SagaLog;
  engine?: Partial<SagaEngineConfig>;
  /** How often a stuck saga's warn line is repeated while it stays stuck. */
  stuckLogIntervalMs?: number;
  observe?: SagaCoreObserver;
  newEngine?: SagaEngineFactory;
}

export class SagaCore {
  readonly engine: SagaEngine;
  readonly table: SagaTable;
  private readonly io: SagaCoreIO;
  private readonly log: SagaLog;
  private readonly observe: SagaCoreObserver;
  private readonly stuckLogIntervalMs: number;
  /** Status calls waiting for their saga to end, by saga id; `waiting` counts them all. */
  private readonly waiters = new Map<string, (() => void)[]>();
  private waiting = 0;
  /** Stuck sagas this leader knows, with when it last logged each. */
  private readonly stuckSeen = new Map<string, number>();
  private lastScanAtMs = 0;

  constructor(o: SagaCoreOptions) {
    this.table = o.table;
    this.io = o.io;
    this.log = o.log;
    this.observe = o.observe ?? {};
    this.stuckLogIntervalMs = o.stuckLogIntervalMs ?? STUCK_LOG_INTERVAL_MS_DEFAULT;
    const engineIO: SagaEngineIO = {
      nowMs: o.io.nowMs,
      random: o.io.random,
      propose: o.io.propose,
      callStep: o.io.callStep,
      endSaga: o.io.endSaga,
      endSagas: o.io.endSagas,
    };
    const cfg = o.engine ?? {};
    this.engine = o.newEngine
      ? o.newEngine(o.table, o.services, engineIO, cfg)
      : new SagaEngine(o.table, o.services, engineIO, cfg);
  }

  isLeader(): boolean {
    return this.engine.isLeader();
  }

  // ---- the node core's extension (src/node/core.ts CoreExtension) ----------

  setLeadership(term: number): void {
    // Watchers hear it first: a new leader's engine makes its first calls at once, within setLeadership.
    this.observe.leadership?.(term);
    this.engine.setLeadership(term);
    this.takeOverStuck(term);
  }

  /** A product table's applied result; the saga table's reach the engine, any other product's are not for it. */
  onApplied(r: ProductApplyResult): void {
    if (!isSagaResult(r)) return;
    this.engine.onApplied(r);
    if (r.op === 'saga.stuck' && r.changed && r.saga && this.engine.isLeader()) {
      this.observe.stuckFlagged?.(r.saga.type);
      this.warnStuck(r.saga, this.io.nowMs());
    }
    const s = r.saga;
    if (!s || !isTerminal(s.state)) return;
    const list = this.waiters.get(s.id);
    if (!list) return;
    this.waiters.delete(s.id);
    for (const f of list) f();
  }

  tick(): void {
    this.engine.tick();
    if (this.engine.isLeader()) this.scanStuck();
  }

  /** The node stops: the engine stops leading and every waiting status call is answered. */
  close(): void {
    this.engine.setLeadership(0);
    for (const list of this.waiters.values()) for (const f of list) f();
    this.waiters.clear();
  }

  // ---- what clients and operators ask (the node's gRPC service, the console, the simulator's clients) ----

  /** Starts a saga for `owner` (or answers a repeated start, R7): see SagaEngine.start. */
  start(
    sagaId: string,
    steps: SagaStepDef[],
    pivot: number | null,
    cb: SagaCallback,
    owner = '',
    tags: { type?: string; labels?: SagaLabels } = {},
  ): void {
    this.engine.start(sagaId, steps, pivot, cb, owner, tags);
  }

  retry(sagaId: string, operator: string, reason: string, cb: SagaCallback): void {
    this.engine.retry(sagaId, operator, reason, cb);
  }

  resolve(
    sagaId: string,
    step: number,
    as: 'done' | 'compensated',
    operator: string,
    reason: string,
    cb: SagaCallback,
  ): void {
    this.engine.resolve(sagaId, step, as, operator, reason, cb);
  }

  /**
   * Calls `done` once saga `sagaId` has ended (as this node applied it), or
   * after `waitMs` (at most WAIT_MS_MAX), or at once when it has ended, is
   * unknown here, `waitMs` is 0 or WAITERS_MAX calls wait already.
   */
  whenEnded(sagaId: string, waitMs: number, done: () => void): void {
    const s = this.table.sagas.get(sagaId);
    if (!s || isTerminal(s.state) || waitMs <= 0 || this.waiting >= WAITERS_MAX) return done();
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      this.waiting--;
      assert(this.waiting >= 0, 'a status call waits once');
      cancel();
      done();
    };
    const cancel = this.io.after(Math.min(waitMs, WAIT_MS_MAX), finish);
    this.waiting++;
    const list = this.waiters.get(sagaId) ?? [];
    list.push(finish);
    this.waiters.set(sagaId, list);
  }

  // ---- stuck sagas: a warn line a person can act on ------------------------

  private warnStuck(s: SagaRecord, atMs: number): void {
    this.stuckSeen.set(s.id, atMs);
    const st = s.stuck;
    if (!st) return;
    const def = s.steps[st.step];
    const t = triesOf(s, st.step, st.kind);
    const labels = s.labels ?? {};
    const shownLabels = Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    this.log.warn(
      {
        sagaId: s.id,
        sagaType: s.type ?? '',
        labels,
        step: st.step,
        kind: st.kind,
        service: def?.service,
        handler: def?.name,
        attempts: t?.attempts ?? st.attempts,
        lastError: t?.lastError ?? st.lastError,
        stuckSinceAtMs: st.atMs,
      },
      `saga ${s.id}${s.type ? ` (${s.type}${shownLabels ? ` ${shownLabels}` : ''})` : shownLabels ? ` (${shownLabels})` : ''} is stuck and needs a person: step ${st.step} ${st.kind} at ${def?.service}/${def?.name} failed ${t?.attempts ?? st.attempts} times, last error: ${t?.lastError ?? st.lastError}; it keeps retrying. Fix the step service, or act by hand and record it: verdict saga show ${s.id}, then verdict saga retry or verdict saga resolve`,
    );
  }

  /** Every stuck saga whose line is due, at most STUCK_LINES_PER_SCAN of them; the rest in one line. */
  private scanStuck(): void {
    const now = this.io.nowMs();
    if (now - this.lastScanAtMs < STUCK_SCAN_MS) return;
    this.lastScanAtMs = now;
    let due = 0;
    for (const [id, lastAtMs] of this.stuckSeen) {
      const s = this.table.sagas.get(id);
      if (!s || s.stuck === null) {
        this.stuckSeen.delete(id);
        continue;
      }
      if (now - lastAtMs < this.stuckLogIntervalMs) continue;
      if (++due <= STUCK_LINES_PER_SCAN) this.warnStuck(s, now);
    }
    if (due > STUCK_LINES_PER_SCAN)
      this.log.warn(
        { stuckSagas: this.stuckSeen.size, notLogged: due - STUCK_LINES_PER_SCAN },
        `${due - STUCK_LINES_PER_SCAN} more stuck sagas are due a warn line; verdict saga list --stuck lists them all`,
      );
  }

  /** A new leader takes over the stuck sagas in its table: each is logged at its first scan. */
  private takeOverStuck(term: number): void {
    this.stuckSeen.clear();
    if (term > 0)
      for (const s of this.table.sagas.values())
        if (s.stuck !== null) this.stuckSeen.set(s.id, Number.NEGATIVE_INFINITY);
  }
}
