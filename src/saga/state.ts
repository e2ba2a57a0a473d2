// The replicated saga table: saga records applied from the same Raft log as
// the commit decisions. A product table (src/commit/product-table.ts): the
// node's state machine holds it beside the decision table and routes
// `saga.*` commands here (src/node/products.ts wires it in). Pure and
// deterministic, like the decision table: time comes inside the commands.
//
// A saga is an ordered list of steps, each an action with a compensation,
// served by a step service. Every transition the orchestrator makes is a
// command applied here before the call it leads to goes out (persist before
// send, as R6 for the log): the entry that records step k DONE also records
// that step k+1 is now running, so the orchestrator calls step k+1 only once
// that entry is applied, and a new leader finds the call to make in this table.
//
// Steps at or before the pivot may fail (a business refusal, or the
// orchestrator giving up on a step that keeps erroring): then every step
// whose action may have run is compensated, highest first. Steps after the
// pivot are never compensated: they are retried forward until DONE.
//
// Nothing a client starts here is unbounded or immortal (R9): every field of
// a definition is bounded (sagaDefProblem), a saga's outputs together are
// bounded, timeline texts are cut, ended sagas are kept up to a count and a
// byte total, and an evicted saga leaves a tombstone (its id and how it
// ended), and an evicted tombstone raises the retention horizon, as
// transaction decisions do (src/domain/id-newness.ts): a start with a
// forgotten id is refused, never run again.

import type { ProductApplyResult, ProductTable } from '../commit/product-table.ts';
import { beyondHorizon, iso } from '../domain/id-newness.ts';
import { txnIdAtMs } from '../domain/txn-id.ts';
import { OldestFirst } from '../util/oldest-first.ts';
import { assert } from '../util/assert.ts';
import {
  SAGA_COMMAND_KINDS,
  sagaCommandProblem,
  sagaDefProblem,
  sagaOwnerProblem,
  sagaTagsProblem,
  type SagaCommand,
  type SagaCommandKind,
  type SagaLabels,
  type SagaStepDef,
  type StepKind,
} from './commands.ts';

// The command vocabulary (./commands.ts), for the saga table's importers.
export {
  isSagaCommand,
  SAGA_COMMAND_KINDS,
  SAGA_ID_BYTES_MAX,
  SAGA_LABEL_KEY,
  SAGA_LABEL_VALUE_BYTES_MAX,
  SAGA_LABELS_MAX,
  SAGA_OWNER_CHARS_MAX,
  SAGA_TYPE,
  SAGA_TYPE_CHARS_MAX,
  SAGA_TEXT_BYTES_MAX,
  sagaCommandProblem,
  sagaDefProblem,
  sagaOwnerProblem,
  sagaTagsProblem,
  STEP_NAME_CHARS_MAX,
  STEP_SERVICE,
  STEP_TEXT_BYTES_MAX,
  STEPS_MAX,
  type SagaCommand,
  type SagaCommandKind,
  type SagaLabels,
  type SagaStepDef,
  type StepKind,
} from './commands.ts';

/**
 * A step's place in its saga:
 *   pending       not reached yet
 *   running       its action is the saga's current call (logged before the call goes out)
 *   done          its action answered DONE
 *   failed        its action answered FAILED: nothing of it ran, it needs no compensation
 *   compensating  its compensation is the saga's current call
 *   compensated   its compensation answered DONE (or the step service recorded an empty one)
 */
export type StepStatus = 'pending' | 'running' | 'done' | 'failed' | 'compensating' | 'compensated';
export type SagaState = 'running' | 'compensating' | 'finished' | 'compensated';
export const SAGA_STATES: readonly SagaState[] = ['running', 'compensating', 'finished', 'compensated'];

/**
 * The legal moves of a step, and of a saga: every change the table makes
 * goes through stepTo or sagaTo, which assert it is one of these. A command
 * that asks for anything else was refused before (not the current call, a
 * failed compensation, a step after the pivot), so a failed assertion is a
 * bug in the table, never a bad command.
 */
export const STEP_TRANSITIONS: Readonly<Record<StepStatus, readonly StepStatus[]>> = {
  pending: ['running'],
  // DONE, FAILED (a refusal), or ABANDONED (compensated first, since it may have run).
  running: ['done', 'failed', 'compensating'],
  done: ['compensating'],
  failed: [],
  compensating: ['compensated'],
  compensated: [],
};
export const SAGA_TRANSITIONS: Readonly<Record<SagaState, readonly SagaState[]>> = {
  running: ['compensating', 'finished'],
  compensating: ['compensated'],
  finished: [],
  compensated: [],
};

/** Why a saga waits for someone: the call it keeps retrying, how often, and its last error. */
export interface StuckMark {
  step: number;
  kind: StepKind;
  attempts: number;
  lastError: string;
  atMs: number;
}

/**
 * The failed attempts of one call (a step's action or its compensation), as
 * the log recorded them (saga.attempt): what abandonment and the stuck flag
 * count, on every leader. `saga retry` sets attempts back to 0.
 */
export interface CallTries {
  step: number;
  kind: StepKind;
  /** Failed calls since the call became current (or since the operator's last retry). */
  attempts: number;
  /** The first of those failures, by the clock of the leader that logged it; null after a retry. */
  firstFailureAtMs: number | null;
  lastFailureAtMs: number;
  lastError: string;
}

/** One line of a saga's history (`verdict saga show`): a transition as the log applied it. */
export interface TimelineEntry {
  atMs: number;
  index: number;
  what: string;
  step?: number;
  kind?: StepKind;
  detail?: string;
  operator?: string;
}

/**
 * A timeline entry with every field present (-1 and '' for the absent ones), as the wire, console and history show it.
 */
export function timelineRow(e: TimelineEntry): Required<Omit<TimelineEntry, 'kind'>> & { kind: StepKind | '' } {
  return {
    atMs: e.atMs,
    index: e.index,
    what: e.what,
    step: e.step ?? -1,
    kind: e.kind ?? '',
    detail: e.detail ?? '',
    operator: e.operator ?? '',
  };
}

export interface SagaRecord {
  id: string;
  /**
   * Who started it (src/node/limits.ts clientOf): `CN=<name>` of the
   * client certificate under TLS, the connection's address without; '' in
   * sagas logged before starters were recorded. Reads and the per-client
   * quota go by it.
   */
  owner: string;
  steps: SagaStepDef[];
  /** Index of the pivot step, or null: without a pivot every step may be compensated. */
  pivot: number | null;
  state: SagaState;
  status: StepStatus[];
  /** Each DONE action's output, which later steps may read. */
  outputs: (string | null)[];
  startedAtMs: number;
  endedAtMs: number | null;
  /** Set when a call was retried stuckAfterAttempts times; cleared by the next transition or `saga retry`. */
  stuck: StuckMark | null;
  /** Every step service acknowledged the end: their inboxes may drop this saga's keys. */
  ended: boolean;
  timeline: TimelineEntry[];
  /** Log index of the start. */
  index: number;
  /** The saga's type, as its starter gave it (a metric label); absent when none was given. */
  type?: string;
  /** Business labels from the start (`order` → `ORD-7731`); absent when none were given. */
  labels?: SagaLabels;
  /**
   * Failed attempts per call that failed at least once (saga.attempt);
   * absent until one does, so a saga that never failed is written as before.
   */
  tries?: CallTries[];
}

/** The failed attempts of step `step`'s `kind` so far, or null when none were logged. */
export function triesOf(s: Pick<SagaRecord, 'tries'>, step: number, kind: StepKind): CallTries | null {
  return s.tries?.find((t) => t.step === step && t.kind === kind) ?? null;
}

/**
 * What applying a saga command did. `changed` false: a repeat (R7) or a
 * refusal, and then `problem` says why; the saga is as it was.
 */
export interface SagaApplyResult extends ProductApplyResult {
  t: 'product';
  product: 'saga';
  op: SagaCommandKind;
  sagaId: string;
  saga: SagaRecord | null;
  changed: boolean;
  problem: string | null;
}

/** Whether an applied result is a saga table's (the node routes it to the saga engine). */
export function isSagaResult(r: { t: string; product?: string }): r is SagaApplyResult {
  return r.t === 'product' && r.product === 'saga';
}

/** Finished or compensated sagas kept for `saga show`; beyond it the oldest ended ones go. */
export const SAGAS_DONE_MAX = 10_000;
/** The same, in bytes of inputs, outputs and names (sagaBytes). */
export const SAGAS_DONE_BYTES_MAX = 256 * 1024 * 1024;
/** Ids of evicted sagas remembered (with how they ended); beyond it the oldest go and the horizon moves. */
export const SAGA_TOMBSTONES_MAX = 100_000;
const TIMELINE_MAX = 256;
/** A timeline entry's detail (a step service's reason, a call's last error) is cut to this. */
export const TIMELINE_DETAIL_CHARS_MAX = 1_000;

export const isTerminal = (s: SagaState): boolean => s === 'finished' || s === 'compensated';

/** The stable key of one effect: retries, redeliveries after failover and operator retries all reuse it. */
export function stepKey(sagaId: string, step: number, kind: StepKind): string {
  return `${sagaId}/${step}/${kind}`;
}

/** The call a saga waits on, read from the table: what the orchestrator must send (again). */
export function currentCall(s: SagaRecord): { step: number; kind: StepKind } | null {
  if (isTerminal(s.state)) return null;
  const running = s.status.indexOf('running');
  if (running >= 0) return { step: running, kind: 'action' };
  const comp = s.status.indexOf('compensating');
  return comp >= 0 ? { step: comp, kind: 'compensate' } : null;
}

/** The bytes a saga holds in the table: its id, its definition and its outputs (what the bounds count). */
export function sagaBytes(s: Pick<SagaRecord, 'id' | 'steps' | 'outputs' | 'type' | 'labels'>): number {
  let n = Buffer.byteLength(s.id) + (s.type?.length ?? 0);
  for (const [k, v] of Object.entries(s.labels ?? {})) n += k.length + Buffer.byteLength(v);
  for (const d of s.steps) n += Buffer.byteLength(d.service) + Buffer.byteLength(d.name) + Buffer.byteLength(d.input);
  for (const o of s.outputs) if (o !== null) n += Buffer.byteLength(o);
  return n;
}

/** The bytes of a saga's outputs together. */
export function outputBytes(s: Pick<SagaRecord, 'outputs'>): number {
  let n = 0;
  for (const o of s.outputs) if (o !== null) n += Buffer.byteLength(o);
  return n;
}

/** How an evicted saga ended: all that is left of it. */
export type SagaTombstone = 'finished' | 'compensated';

/**
 * The saga table: a product table beside the decision table under the
 * node's state machine (src/commit/product-table.ts), its section `sg` in
 * the snapshot's table object.
 */
export class SagaTable implements ProductTable {
  readonly product = 'saga';
  readonly kinds = SAGA_COMMAND_KINDS;
  readonly section = 'sg';
  /** Running and kept sagas, oldest start first. */
  readonly sagas = new Map<string, SagaRecord>();
  /** Evicted sagas: how each ended, oldest eviction first, bounded. */
  readonly tombstones = new Map<string, SagaTombstone>();
  /**
   * The retention horizon of saga ids: the latest creation time of a timed
   * id whose tombstone was evicted; null while none was. A timed id at or
   * before it may have run and been forgotten: it is never started. Only grows.
   */
  horizonAtMs: number | null = null;
  /** Sagas not yet finished or compensated, per starter (for the per-client quota), and their bytes together. */
  private readonly runningByOwner = new Map<string, number>();
  runningBytes = 0;
  /** Bytes of the finished and compensated sagas kept (sagaBytes). */
  endedBytes = 0;
  private readonly oldestTombstone = new OldestFirst(this.tombstones);

  constructor(
    private readonly doneMax = SAGAS_DONE_MAX,
    private readonly tombstonesMax = SAGA_TOMBSTONES_MAX,
    private readonly doneBytesMax = SAGAS_DONE_BYTES_MAX,
  ) {}

  /** Why a decoded saga command is not well formed, or null. */
  commandProblem(c: Readonly<Record<string, unknown>>): string | null {
    return sagaCommandProblem(c);
  }

  empty(): SagaTable {
    return new SagaTable(this.doneMax, this.tombstonesMax, this.doneBytesMax);
  }

  /** Sagas started by `owner` that have not ended. */
  runningOf(owner: string): number {
    return this.runningByOwner.get(owner) ?? 0;
  }

  /**
   * Why a start of `sagaId`, which names no saga in the table, would run a
   * forgotten saga again, or null: a tombstone remembers it, or its timed id
   * is at or before the horizon. Deterministic (the table alone), so it is
   * checked again where the start applies.
   */
  forgottenProblem(sagaId: string): string | null {
    const ended = this.tombstones.get(sagaId);
    if (ended !== undefined) return `saga ${sagaId} ${ended} and was forgotten; a saga id runs once: use a new id`;
    if (beyondHorizon(sagaId, this.horizonAtMs))
      return `saga id ${sagaId} was created at ${iso(txnIdAtMs(sagaId) ?? 0)}, at or before the retention horizon ${iso(this.horizonAtMs ?? 0)}: a saga with this id may have run and been forgotten, so it cannot be proved new; use a new id`;
    return null;
  }

  /**
   * Whether step k of s may be compensated: at or before the pivot (every
   * step when there is none). The one place the pivot rule lives.
   */
  compensatable(s: SagaRecord, k: number): boolean {
    return s.pivot === null || k <= s.pivot;
  }

  apply(cmd: SagaCommand, index: number): SagaApplyResult {
    if (cmd.t === 'saga.ended') return this.ended(cmd);
    if (cmd.t === 'saga.start') return this.start(cmd, index);
    const s = this.sagas.get(cmd.sagaId) ?? null;
    const out = (changed: boolean, problem: string | null = null): SagaApplyResult => ({
      t: 'product',
      product: 'saga',
      op: cmd.t,
      sagaId: cmd.sagaId,
      saga: s,
      changed,
      problem,
    });
    if (!s) return out(false, `no saga ${cmd.sagaId}`);
    switch (cmd.t) {
      case 'saga.stuck': {
        const call = currentCall(s);
        if (!call || call.step !== cmd.step || call.kind !== cmd.kind)
          return out(false, `saga ${s.id} is not waiting on step ${cmd.step} ${cmd.kind}`);
        s.stuck = {
          step: cmd.step,
          kind: cmd.kind,
          attempts: cmd.attempts,
          lastError: cut(cmd.lastError),
          atMs: cmd.atMs,
        };
        note(s, {
          atMs: cmd.atMs,
          index,
          what: 'stuck',
          step: cmd.step,
          kind: cmd.kind,
          detail: `${cmd.attempts} attempts; last error: ${cmd.lastError}`,
        });
        return out(true);
      }
      case 'saga.attempt': {
        const call = currentCall(s);
        if (!call || call.step !== cmd.step || call.kind !== cmd.kind)
          return out(false, `saga ${s.id} is not waiting on step ${cmd.step} ${cmd.kind}`);
        countAttempt(s, cmd);
        return out(true);
      }
      case 'saga.retry': {
        if (!s.stuck) return out(false, `saga ${s.id} is not stuck (${s.state})`);
        const st = s.stuck;
        s.stuck = null;
        // The operator's retry counts the call's attempts afresh (its last error stays to be read).
        const t = triesOf(s, st.step, st.kind);
        if (t !== null) {
          t.attempts = 0;
          t.firstFailureAtMs = null;
        }
        note(s, {
          atMs: cmd.atMs,
          index,
          what: 'retry',
          step: st.step,
          kind: st.kind,
          detail: cmd.reason,
          operator: cmd.operator,
        });
        return out(true);
      }
      case 'saga.result':
        return this.result(s, cmd, index, out);
    }
  }

  /** saga.ended: every step service acknowledged the end of these sagas; the table may now evict them. */
  private ended(cmd: Extract<SagaCommand, { t: 'saga.ended' }>): SagaApplyResult {
    let n = 0;
    for (const id of cmd.sagaIds) {
      const s = this.sagas.get(id);
      if (!s || s.ended || !isTerminal(s.state)) continue;
      s.ended = true;
      n++;
    }
    this.evict();
    return {
      t: 'product',
      product: 'saga',
      op: cmd.t,
      sagaId: cmd.sagaIds[0] ?? '',
      saga: null,
      changed: n > 0,
      problem: null,
    };
  }

  /** saga.start: the saga's record, with step 0 running, in the same entry (its call goes out once this applies). */
  private start(cmd: Extract<SagaCommand, { t: 'saga.start' }>, index: number): SagaApplyResult {
    const answer = (saga: SagaRecord | null, changed: boolean, problem: string | null): SagaApplyResult => ({
      t: 'product',
      product: 'saga',
      op: cmd.t,
      sagaId: cmd.sagaId,
      saga,
      changed,
      problem,
    });
    const existing = this.sagas.get(cmd.sagaId);
    // R7: a repeated start returns the saga as it is.
    if (existing) return answer(existing, false, null);
    // R9: a forgotten saga is never run again.
    const problem =
      this.forgottenProblem(cmd.sagaId) ??
      sagaDefProblem(cmd.sagaId, cmd.steps, cmd.pivot) ??
      sagaTagsProblem(cmd.sagaId, cmd.type, cmd.labels);
    if (problem !== null) return answer(null, false, problem);
    const fresh: SagaRecord = {
      id: cmd.sagaId,
      owner: cmd.owner ?? '',
      steps: cmd.steps,
      pivot: cmd.pivot,
      state: 'running',
      status: cmd.steps.map(() => 'pending'),
      outputs: cmd.steps.map(() => null),
      startedAtMs: cmd.atMs,
      endedAtMs: null,
      stuck: null,
      ended: false,
      timeline: [],
      index,
    };
    // Written only when given, so that a saga without them is the same bytes in a snapshot as before.
    if (cmd.type !== undefined) fresh.type = cmd.type;
    if (cmd.labels !== undefined && Object.keys(cmd.labels).length > 0) fresh.labels = { ...cmd.labels };
    this.sagas.set(cmd.sagaId, fresh);
    this.runningByOwner.set(fresh.owner, this.runningOf(fresh.owner) + 1);
    this.runningBytes += sagaBytes(fresh);
    note(fresh, {
      atMs: cmd.atMs,
      index,
      what: 'started',
      detail: `${cmd.steps.length} steps, pivot ${cmd.pivot ?? 'none'}`,
    });
    stepTo(fresh, 0, 'running');
    note(fresh, { atMs: cmd.atMs, index, what: 'sent', step: 0, kind: 'action' });
    assertOneCall(fresh);
    return answer(fresh, true, null);
  }

  private result(
    s: SagaRecord,
    cmd: Extract<SagaCommand, { t: 'saga.result' }>,
    index: number,
    out: (changed: boolean, problem?: string | null) => SagaApplyResult,
  ): SagaApplyResult {
    const call = currentCall(s);
    const k = cmd.step;
    const where = `saga ${s.id} step ${k} ${cmd.kind}`;
    // A repeated or late answer (a redelivery, a duplicate, an earlier leader's) changes nothing.
    if (!call || call.step !== k || call.kind !== cmd.kind)
      return out(false, `${where}: not the saga's current call (${call ? `step ${call.step} ${call.kind}` : s.state})`);
    if (cmd.operator && (s.stuck === null || s.stuck.step !== k || s.stuck.kind !== cmd.kind))
      return out(
        false,
        `${where} is not stuck${s.stuck ? ` (stuck: step ${s.stuck.step} ${s.stuck.kind})` : ''}; only a stuck step is resolved by hand`,
      );
    if (cmd.kind === 'compensate' && cmd.outcome !== 'done')
      return out(false, `${where}: a compensation never fails; it is retried`);
    if (cmd.kind === 'action' && cmd.outcome !== 'done' && !this.compensatable(s, k))
      return out(false, `${where} is after the pivot (step ${s.pivot}): it is retried until done, never compensated`);
    s.stuck = null;
    if (cmd.kind === 'compensate') this.compensated(s, cmd, index);
    else if (cmd.outcome === 'done') this.done(s, cmd, index);
    else this.refused(s, cmd, index);
    assertOneCall(s);
    return out(true);
  }

  /**
   * A compensation answered DONE (or was resolved by hand): the next lower done step is compensated, or the saga is.
   */
  private compensated(s: SagaRecord, cmd: Extract<SagaCommand, { t: 'saga.result' }>, index: number): void {
    stepTo(s, cmd.step, 'compensated');
    note(s, {
      atMs: cmd.atMs,
      index,
      what: cmd.operator ? 'resolved compensated' : 'compensated',
      step: cmd.step,
      kind: 'compensate',
      ...byOperator(cmd),
    });
    this.compensateNext(s, cmd.step, cmd.atMs, index);
  }

  /**
   * Step k's action answered DONE (or was resolved by hand). In the same
   * entry step k+1 becomes running, its call the saga's current one: one
   * replicated write per step, and the call goes out once this applies.
   */
  private done(s: SagaRecord, cmd: Extract<SagaCommand, { t: 'saga.result' }>, index: number): void {
    const k = cmd.step;
    stepTo(s, k, 'done');
    s.outputs[k] = cmd.output;
    this.runningBytes += Buffer.byteLength(cmd.output);
    note(s, {
      atMs: cmd.atMs,
      index,
      what: cmd.operator ? 'resolved done' : 'done',
      step: k,
      kind: 'action',
      ...byOperator(cmd),
    });
    if (k + 1 < s.steps.length) {
      stepTo(s, k + 1, 'running');
      note(s, { atMs: cmd.atMs, index, what: 'sent', step: k + 1, kind: 'action' });
    } else this.end(s, 'finished', cmd.atMs, index);
  }

  /** Step k's action, at or before the pivot, answered FAILED or was abandoned: the saga compensates. */
  private refused(s: SagaRecord, cmd: Extract<SagaCommand, { t: 'saga.result' }>, index: number): void {
    const k = cmd.step;
    sagaTo(s, 'compensating');
    if (cmd.outcome === 'failed') {
      stepTo(s, k, 'failed');
      note(s, { atMs: cmd.atMs, index, what: 'failed', step: k, kind: 'action', detail: cmd.reason });
      this.compensateNext(s, k, cmd.atMs, index);
    } else {
      // Abandoned: the action may have run, so its own compensation comes first.
      stepTo(s, k, 'compensating');
      note(s, { atMs: cmd.atMs, index, what: 'abandoned', step: k, kind: 'action', detail: cmd.reason });
      note(s, { atMs: cmd.atMs, index, what: 'sent', step: k, kind: 'compensate' });
    }
  }

  /** The highest done step below `below` becomes the current compensation; with none left the saga is compensated. */
  private compensateNext(s: SagaRecord, below: number, atMs: number, index: number): void {
    for (let j = below - 1; j >= 0; j--) {
      if (s.status[j] !== 'done') continue;
      stepTo(s, j, 'compensating');
      note(s, { atMs, index, what: 'sent', step: j, kind: 'compensate' });
      return;
    }
    this.end(s, 'compensated', atMs, index);
  }

  private end(s: SagaRecord, state: 'finished' | 'compensated', atMs: number, index: number): void {
    const bytes = sagaBytes(s);
    this.runningBytes -= bytes;
    this.endedBytes += bytes;
    const n = this.runningOf(s.owner) - 1;
    assert(n >= 0, `saga ${s.id}: its starter had it counted as running`);
    if (n > 0) this.runningByOwner.set(s.owner, n);
    else this.runningByOwner.delete(s.owner);
    sagaTo(s, state);
    s.endedAtMs = atMs;
    s.stuck = null;
    note(s, { atMs, index, what: state });
  }

  /**
   * Ended sagas beyond doneMax, or beyond doneBytesMax together, leave,
   * oldest first (a running one never does); each leaves a tombstone, and
   * each tombstone beyond tombstonesMax moves the horizon.
   */
  private evict(): void {
    let over = this.sagas.size - this.doneMax;
    if (over <= 0 && this.endedBytes <= this.doneBytesMax) return;
    for (const [id, s] of this.sagas) {
      if (over <= 0 && this.endedBytes <= this.doneBytesMax) break;
      if (!s.ended) continue;
      this.sagas.delete(id);
      this.endedBytes -= sagaBytes(s);
      this.tombstones.set(id, s.state === 'compensated' ? 'compensated' : 'finished');
      over--;
    }
    this.oldestTombstone.trimTo(this.tombstonesMax, (oldest) => {
      const idAtMs = txnIdAtMs(oldest);
      if (idAtMs !== null && (this.horizonAtMs === null || idAtMs > this.horizonAtMs)) this.horizonAtMs = idAtMs;
    });
  }

  toJSON(): unknown {
    return { s: [...this.sagas.values()], t: [...this.tombstones], hz: this.horizonAtMs };
  }

  /**
   * Restores the table from a snapshot. A snapshot written before sagas had
   * starters, tombstones and a horizon (a bare list of sagas) is read too:
   * its sagas have no starter ('') and nothing was forgotten yet. A saga
   * record written before types, labels and logged attempts has none of
   * them (they are optional fields, written only when set), and reads as a
   * saga without type or labels whose calls have not failed yet.
   */
  restoreFrom(json: unknown): void {
    this.sagas.clear();
    this.tombstones.clear();
    this.runningByOwner.clear();
    this.horizonAtMs = null;
    this.runningBytes = 0;
    this.endedBytes = 0;
    const o = (Array.isArray(json) ? { s: json, t: [], hz: null } : json) as {
      s?: unknown;
      t?: unknown;
      hz?: unknown;
    } | null;
    if (
      o === null ||
      typeof o !== 'object' ||
      !Array.isArray(o.s) ||
      !Array.isArray(o.t) ||
      !(o.hz === null || (typeof o.hz === 'number' && Number.isFinite(o.hz)))
    )
      throw new Error('saga table in the snapshot is malformed');
    for (const s of o.s as SagaRecord[]) {
      if (
        s === null ||
        typeof s !== 'object' ||
        typeof s.id !== 'string' ||
        !Array.isArray(s.steps) ||
        !Array.isArray(s.status) ||
        !Array.isArray(s.outputs)
      )
        throw new Error('a saga record in the snapshot is malformed');
      const rec: SagaRecord = { ...s, owner: s.owner ?? '' };
      if (sagaOwnerProblem(rec.owner) !== null)
        throw new Error('a saga record in the snapshot is malformed: its starter');
      if (sagaTagsProblem(rec.id, rec.type, rec.labels) !== null)
        throw new Error('a saga record in the snapshot is malformed: its type or labels');
      if (rec.tries !== undefined && (!Array.isArray(rec.tries) || !rec.tries.every(isCallTries)))
        throw new Error('a saga record in the snapshot is malformed: its attempts');
      this.sagas.set(rec.id, rec);
      if (isTerminal(rec.state)) this.endedBytes += sagaBytes(rec);
      else {
        this.runningBytes += sagaBytes(rec);
        this.runningByOwner.set(rec.owner, this.runningOf(rec.owner) + 1);
      }
    }
    for (const e of o.t as unknown[]) {
      if (!Array.isArray(e) || typeof e[0] !== 'string' || (e[1] !== 'finished' && e[1] !== 'compensated'))
        throw new Error('a saga tombstone in the snapshot is malformed');
      this.tombstones.set(e[0], e[1]);
    }
    this.horizonAtMs = o.hz as number | null;
  }
}

function isCallTries(t: unknown): t is CallTries {
  const c = t as CallTries | null;
  return (
    c !== null &&
    typeof c === 'object' &&
    Number.isInteger(c.step) &&
    (c.kind === 'action' || c.kind === 'compensate') &&
    Number.isInteger(c.attempts) &&
    c.attempts >= 0 &&
    (c.firstFailureAtMs === null || Number.isFinite(c.firstFailureAtMs)) &&
    Number.isFinite(c.lastFailureAtMs) &&
    typeof c.lastError === 'string'
  );
}

/** A reason or an error text is for a person, and bounded: cut the same way on every replica. */
function cut(text: string): string {
  return text.length > TIMELINE_DETAIL_CHARS_MAX
    ? `${text.slice(0, TIMELINE_DETAIL_CHARS_MAX)}… (${text.length} characters)`
    : text;
}

function note(s: SagaRecord, e: TimelineEntry): void {
  if (e.detail !== undefined) e.detail = cut(e.detail);
  s.timeline.push(e);
  if (s.timeline.length > TIMELINE_MAX) s.timeline.splice(1, s.timeline.length - TIMELINE_MAX);
}

/** Step k of s moves to `to`: asserted to be one of STEP_TRANSITIONS. */
function stepTo(s: SagaRecord, k: number, to: StepStatus): void {
  const from = s.status[k];
  assert(from !== undefined, `saga ${s.id} has a step ${k}`);
  assert(STEP_TRANSITIONS[from].includes(to), `saga ${s.id} step ${k}: ${from} → ${to} is not a step transition`);
  s.status[k] = to;
}

/** The saga moves to `to`: asserted to be one of SAGA_TRANSITIONS. */
function sagaTo(s: SagaRecord, to: SagaState): void {
  assert(SAGA_TRANSITIONS[s.state].includes(to), `saga ${s.id}: ${s.state} → ${to} is not a saga transition`);
  s.state = to;
}

/** After every transition: a saga that has not ended waits on exactly one call, an ended one on none. */
function assertOneCall(s: SagaRecord): void {
  let calls = 0;
  for (const st of s.status) if (st === 'running' || st === 'compensating') calls++;
  assert(
    calls === (isTerminal(s.state) ? 0 : 1),
    `saga ${s.id} (${s.state}) waits on ${calls} calls: ${s.status.join(' ')}`,
  );
  assert(
    s.state !== 'running' || !s.status.includes('compensating'),
    `saga ${s.id}: a running saga compensates nothing`,
  );
}

/**
 * saga.attempt: one more failed call of the current call, counted in the table (what abandonment and the stuck flag
 * read).
 */
function countAttempt(s: SagaRecord, cmd: Extract<SagaCommand, { t: 'saga.attempt' }>): void {
  let t = triesOf(s, cmd.step, cmd.kind);
  if (t === null) {
    t = {
      step: cmd.step,
      kind: cmd.kind,
      attempts: 0,
      firstFailureAtMs: null,
      lastFailureAtMs: cmd.atMs,
      lastError: '',
    };
    s.tries = [...(s.tries ?? []), t];
  }
  t.attempts++;
  t.firstFailureAtMs ??= cmd.atMs;
  t.lastFailureAtMs = cmd.atMs;
  t.lastError = cut(cmd.error);
}

/** Who resolved a call by hand, for its timeline line; nothing for an answer of the step service. */
function byOperator(cmd: Extract<SagaCommand, { t: 'saga.result' }>): { operator?: string; detail?: string } {
  return cmd.operator ? { operator: cmd.operator.operator, detail: cmd.operator.reason } : {};
}
