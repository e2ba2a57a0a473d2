// The replicated saga table: saga records applied from the same Raft log as
// the commit decisions (src/commit/state.ts holds one and routes `saga.*`
// commands here). Pure and deterministic, like the decision table: time comes
// inside the commands.
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

import type { OperatorAct } from '../commit/state.ts';

export type StepKind = 'action' | 'compensate';
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

export interface SagaStepDef {
  /** The registered step service that serves this step (a participant id). */
  service: string;
  /** What the step service runs, by name (its handler). */
  name: string;
  /** Opaque to Verdict: the step's input, as the application wrote it. */
  input: string;
}

/** Why a saga waits for someone: the call it keeps retrying, how often, and its last error. */
export interface StuckMark {
  step: number;
  kind: StepKind;
  attempts: number;
  lastError: string;
  atMs: number;
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

export interface SagaRecord {
  id: string;
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
}

export type SagaCommand =
  | { t: 'saga.start'; sagaId: string; steps: SagaStepDef[]; pivot: number | null; atMs: number }
  // An answer to the saga's current call: DONE, FAILED (a refusal, action only), or
  // ABANDONED (the orchestrator gave up on an action that kept erroring: it may
  // have run, so it is compensated too). `operator` is set by `verdict saga resolve`.
  | { t: 'saga.result'; sagaId: string; step: number; kind: StepKind; outcome: 'done' | 'failed' | 'abandoned'; output: string; reason: string; atMs: number; operator?: OperatorAct }
  | { t: 'saga.stuck'; sagaId: string; step: number; kind: StepKind; attempts: number; lastError: string; atMs: number }
  | { t: 'saga.retry'; sagaId: string; operator: string; reason: string; atMs: number }
  | { t: 'saga.ended'; sagaIds: string[] };

export type SagaCommandKind = SagaCommand['t'];
export const SAGA_COMMAND_KINDS: readonly SagaCommandKind[] = ['saga.start', 'saga.result', 'saga.stuck', 'saga.retry', 'saga.ended'];

/**
 * What applying a saga command did. `changed` false: a repeat (R7) or a
 * refusal, and then `problem` says why; the saga is as it was.
 */
export interface SagaApplyResult {
  t: 'saga';
  op: SagaCommandKind;
  sagaId: string;
  saga: SagaRecord | null;
  changed: boolean;
  problem: string | null;
}

export function isSagaCommand(c: { t: string }): c is SagaCommand {
  return c.t.startsWith('saga.');
}

export const STEPS_MAX = 64;
export const SAGA_ID_BYTES_MAX = 128;
export const STEP_TEXT_BYTES_MAX = 64 * 1024;
/** Finished or compensated sagas kept for `saga show`; beyond it the oldest ended ones go. */
export const SAGAS_DONE_MAX = 10_000;
const TIMELINE_MAX = 256;

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

/** Why a saga definition cannot start, naming the saga and the step, or null. */
export function sagaDefProblem(sagaId: string, steps: readonly SagaStepDef[], pivot: number | null): string | null {
  if (sagaId === '' || Buffer.byteLength(sagaId) > SAGA_ID_BYTES_MAX || !/^[\x21-\x7e]+$/.test(sagaId) || sagaId.includes('/'))
    return `saga id ${JSON.stringify(sagaId.slice(0, 40))} must be 1 to ${SAGA_ID_BYTES_MAX} printable ASCII characters without '/'`;
  if (steps.length === 0) return `saga ${sagaId} has no steps`;
  if (steps.length > STEPS_MAX) return `saga ${sagaId} has ${steps.length} steps (limit ${STEPS_MAX})`;
  if (pivot !== null && (!Number.isInteger(pivot) || pivot < 0 || pivot >= steps.length)) return `saga ${sagaId}: pivot ${pivot} is not one of its steps 0..${steps.length - 1}`;
  for (const [k, s] of steps.entries()) {
    if (s.service === '') return `saga ${sagaId} step ${k} names no step service`;
    if (s.name === '') return `saga ${sagaId} step ${k} has no name`;
    if (Buffer.byteLength(s.input) > STEP_TEXT_BYTES_MAX) return `saga ${sagaId} step ${k}: input of ${Buffer.byteLength(s.input)} bytes (limit ${STEP_TEXT_BYTES_MAX})`;
  }
  return null;
}

export class SagaTable {
  readonly sagas = new Map<string, SagaRecord>();

  constructor(private readonly doneMax = SAGAS_DONE_MAX) {}

  /**
   * Whether step k of s may be compensated: at or before the pivot (every
   * step when there is none). The one place the pivot rule lives.
   */
  compensatable(s: SagaRecord, k: number): boolean {
    return s.pivot === null || k <= s.pivot;
  }

  apply(cmd: SagaCommand, index: number): SagaApplyResult {
    if (cmd.t === 'saga.ended') {
      let n = 0;
      for (const id of cmd.sagaIds) {
        const s = this.sagas.get(id);
        if (!s || s.ended || !isTerminal(s.state)) continue;
        s.ended = true;
        n++;
      }
      this.evict();
      return { t: 'saga', op: cmd.t, sagaId: cmd.sagaIds[0] ?? '', saga: null, changed: n > 0, problem: null };
    }
    const s = this.sagas.get(cmd.sagaId) ?? null;
    const out = (changed: boolean, problem: string | null = null): SagaApplyResult => ({ t: 'saga', op: cmd.t, sagaId: cmd.sagaId, saga: s, changed, problem });
    if (cmd.t === 'saga.start') {
      // R7: a repeated start returns the saga as it is.
      if (s) return out(false);
      const problem = sagaDefProblem(cmd.sagaId, cmd.steps, cmd.pivot);
      if (problem !== null) return { t: 'saga', op: cmd.t, sagaId: cmd.sagaId, saga: null, changed: false, problem };
      const fresh: SagaRecord = {
        id: cmd.sagaId,
        steps: cmd.steps,
        pivot: cmd.pivot,
        state: 'running',
        status: cmd.steps.map((_, k) => (k === 0 ? 'running' : 'pending')),
        outputs: cmd.steps.map(() => null),
        startedAtMs: cmd.atMs,
        endedAtMs: null,
        stuck: null,
        ended: false,
        timeline: [],
        index,
      };
      this.sagas.set(cmd.sagaId, fresh);
      note(fresh, { atMs: cmd.atMs, index, what: 'started', detail: `${cmd.steps.length} steps, pivot ${cmd.pivot ?? 'none'}` });
      note(fresh, { atMs: cmd.atMs, index, what: 'sent', step: 0, kind: 'action' });
      return { t: 'saga', op: cmd.t, sagaId: cmd.sagaId, saga: fresh, changed: true, problem: null };
    }
    if (!s) return out(false, `no saga ${cmd.sagaId}`);
    switch (cmd.t) {
      case 'saga.stuck': {
        const call = currentCall(s);
        if (!call || call.step !== cmd.step || call.kind !== cmd.kind) return out(false, `saga ${s.id} is not waiting on step ${cmd.step} ${cmd.kind}`);
        s.stuck = { step: cmd.step, kind: cmd.kind, attempts: cmd.attempts, lastError: cmd.lastError, atMs: cmd.atMs };
        note(s, { atMs: cmd.atMs, index, what: 'stuck', step: cmd.step, kind: cmd.kind, detail: `${cmd.attempts} attempts; last error: ${cmd.lastError}` });
        return out(true);
      }
      case 'saga.retry': {
        if (!s.stuck) return out(false, `saga ${s.id} is not stuck (${s.state})`);
        const st = s.stuck;
        s.stuck = null;
        note(s, { atMs: cmd.atMs, index, what: 'retry', step: st.step, kind: st.kind, detail: cmd.reason, operator: cmd.operator });
        return out(true);
      }
      case 'saga.result':
        return this.result(s, cmd, index, out);
    }
  }

  private result(s: SagaRecord, cmd: Extract<SagaCommand, { t: 'saga.result' }>, index: number, out: (changed: boolean, problem?: string | null) => SagaApplyResult): SagaApplyResult {
    const call = currentCall(s);
    const k = cmd.step;
    const where = `saga ${s.id} step ${k} ${cmd.kind}`;
    // A repeated or late answer (a redelivery, a duplicate, an earlier leader's) changes nothing.
    if (!call || call.step !== k || call.kind !== cmd.kind) return out(false, `${where}: not the saga's current call (${call ? `step ${call.step} ${call.kind}` : s.state})`);
    if (cmd.operator && (s.stuck === null || s.stuck.step !== k || s.stuck.kind !== cmd.kind))
      return out(false, `${where} is not stuck${s.stuck ? ` (stuck: step ${s.stuck.step} ${s.stuck.kind})` : ''}; only a stuck step is resolved by hand`);
    const by = cmd.operator ? { operator: cmd.operator.operator, detail: cmd.operator.reason } : {};
    if (cmd.kind === 'compensate') {
      if (cmd.outcome !== 'done') return out(false, `${where}: a compensation never fails; it is retried`);
      s.status[k] = 'compensated';
      s.stuck = null;
      note(s, { atMs: cmd.atMs, index, what: cmd.operator ? 'resolved compensated' : 'compensated', step: k, kind: 'compensate', ...by });
      this.compensateNext(s, k, cmd.atMs, index);
      return out(true);
    }
    if (cmd.outcome === 'done') {
      s.status[k] = 'done';
      s.outputs[k] = cmd.output;
      s.stuck = null;
      note(s, { atMs: cmd.atMs, index, what: cmd.operator ? 'resolved done' : 'done', step: k, kind: 'action', ...by });
      if (k + 1 < s.steps.length) {
        s.status[k + 1] = 'running';
        note(s, { atMs: cmd.atMs, index, what: 'sent', step: k + 1, kind: 'action' });
      } else this.end(s, 'finished', cmd.atMs, index);
      return out(true);
    }
    if (!this.compensatable(s, k)) return out(false, `${where} is after the pivot (step ${s.pivot}): it is retried until done, never compensated`);
    s.stuck = null;
    s.state = 'compensating';
    if (cmd.outcome === 'failed') {
      s.status[k] = 'failed';
      note(s, { atMs: cmd.atMs, index, what: 'failed', step: k, kind: 'action', detail: cmd.reason });
      this.compensateNext(s, k, cmd.atMs, index);
    } else {
      // Abandoned: the action may have run, so its own compensation comes first.
      s.status[k] = 'compensating';
      note(s, { atMs: cmd.atMs, index, what: 'abandoned', step: k, kind: 'action', detail: cmd.reason });
      note(s, { atMs: cmd.atMs, index, what: 'sent', step: k, kind: 'compensate' });
    }
    return out(true);
  }

  /** The highest done step below `below` becomes the current compensation; with none left the saga is compensated. */
  private compensateNext(s: SagaRecord, below: number, atMs: number, index: number): void {
    for (let j = below - 1; j >= 0; j--) {
      if (s.status[j] !== 'done') continue;
      s.status[j] = 'compensating';
      note(s, { atMs, index, what: 'sent', step: j, kind: 'compensate' });
      return;
    }
    this.end(s, 'compensated', atMs, index);
  }

  private end(s: SagaRecord, state: 'finished' | 'compensated', atMs: number, index: number): void {
    s.state = state;
    s.endedAtMs = atMs;
    s.stuck = null;
    note(s, { atMs, index, what: state });
  }

  /** Ended sagas beyond doneMax leave, oldest first (a running one never does). */
  private evict(): void {
    let over = this.sagas.size - this.doneMax;
    if (over <= 0) return;
    for (const [id, s] of this.sagas) {
      if (over <= 0) break;
      if (!s.ended) continue;
      this.sagas.delete(id);
      over--;
    }
  }

  toJSON(): unknown {
    return [...this.sagas.values()];
  }

  restoreFrom(json: unknown): void {
    this.sagas.clear();
    if (!Array.isArray(json)) throw new Error('saga table in the snapshot is not a list');
    for (const s of json as SagaRecord[]) {
      if (s === null || typeof s !== 'object' || typeof s.id !== 'string' || !Array.isArray(s.steps) || !Array.isArray(s.status)) throw new Error('a saga record in the snapshot is malformed');
      this.sagas.set(s.id, s);
    }
  }
}

function note(s: SagaRecord, e: TimelineEntry): void {
  s.timeline.push(e);
  if (s.timeline.length > TIMELINE_MAX) s.timeline.splice(1, s.timeline.length - TIMELINE_MAX);
}
