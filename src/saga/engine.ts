// The saga orchestrator: the leader's side of sagas on the Raft log.
//
//   Start(S) → log saga.start (step 0 running) → call step 0's action
//     DONE    → log saga.result done (step 1 running) → call step 1 …
//     FAILED  → (at or before the pivot) log it; compensations run highest first
//     error   → log saga.attempt (the failed attempt, counted in the table),
//               then retry with capped exponential backoff and jitter; an
//               action at or before the pivot is abandoned (and compensated)
//               once it failed actionAttemptsMax times and actionAbandonAfterMs
//               passed since its first failure; compensations and post-pivot
//               actions retry forever, and are flagged stuck after
//               stuckAfterAttempts
//   finished or compensated → tell every step service the saga ended (so their
//   inboxes may drop its keys) until each acknowledges → log saga.ended, batched
//
// End notices wait endNoticeDelayMs and go out from tick(), the notices of
// every saga that ended meanwhile together: sent at once, they (and the
// status confirmation each step service makes before it takes one) met the
// next saga's start and first call, on the same cores and the same inbox
// journal, and made it wait. A saga's keys are only kept a little longer.
// Together means one call per step service (EndSagas): every saga due for it,
// at most endNoticeBatchMax, with one such call in flight per service; what
// came due meanwhile goes in the next call as the answer arrives. The step
// service confirms the batch with one status call and records it with one
// synced write. A step service that answers that it does not serve EndSagas
// (EndSagasUnsupported: one from before it) is sent End one saga at a time,
// and remembered so for END_BATCH_REPROBE_MS.
//
// Persist before send: every call goes out for a step that the applied table
// says is running or compensating (currentCall), never from this engine's
// memory alone; so a new leader finds every call there is to make, and a call
// is made again only with the same key (stepKey), which the step service's
// inbox answers from what it stored.
//
// Bounds a client meets at a start (R9), before anything is logged: the
// definition's fields (sagaDefProblem), the newness of its id (the rule
// transaction ids follow, src/domain/id-newness.ts: an id whose saga was
// forgotten is refused, never run again), the sagas its starter has running
// (clientRunningMax), and all running sagas' count and bytes.
//
// Pure: time, randomness and I/O come in through SagaEngineIO, with
// callbacks, so the whole-system simulator runs this code on a seeded
// schedule. Only the leader's engine is active; a node that loses leadership
// drops its in-memory state and the next leader resumes from the table.
//
// Every change of a run's state asserts the state it leaves (src/util/assert.ts),
// as the commit protocol's transitions do: a call goes out only from an idle
// run, an answer comes back only to a run with a call in flight, a result or
// a failed attempt is logged only while no call is in flight, and leadership
// only moves to a later term. A failure is a bug in this engine, never a
// step service's or a client's doing (those are checked and refused first).
//
// Attempts count across leaders. A call's failed attempts are in the table
// (saga.attempt), and a leader makes the next call only once the failure
// before it is applied: so every call but the last one each leader makes
// is counted, and an action that always fails is called at most
// actionAttemptsMax times plus one per leader that called it after the
// first (its call in flight, or its failure not yet logged, when it stopped
// leading), before it is abandoned (with actionAbandonAfterMs 0; otherwise
// the calls that fit in that time). The attempt number on the wire is the
// count in the table plus one, the same on every leader.

import type { ParticipantRecord } from '../commit/state.ts';
import { DEFAULT_NEWNESS_RULES, newnessRefusal, type NewnessRules } from '../domain/id-newness.ts';
import { SAGA_IDS_PER_CALL_MAX } from '../domain/saga-id.ts';
import { assert } from '../util/assert.ts';
import {
  currentCall,
  isTerminal,
  outputBytes,
  SAGA_TEXT_BYTES_MAX,
  sagaBytes,
  sagaDefProblem,
  sagaTagsProblem,
  STEP_TEXT_BYTES_MAX,
  stepKey,
  triesOf,
  type SagaApplyResult,
  type SagaCommand,
  type SagaLabels,
  type SagaRecord,
  type SagaStepDef,
  type SagaTable,
  type StepKind,
} from './state.ts';

export interface StepRequest {
  sagaId: string;
  step: number;
  kind: StepKind;
  /** Stable across retries, redeliveries and leaders: one key per effect. */
  key: string;
  name: string;
  input: string;
  /** Outputs of the steps before this one (null for a step that did not answer DONE). */
  outputs: (string | null)[];
  attempt: number;
}

/** A step service's answer; anything else (an error, garbage) is transient and retried. */
export interface StepAnswer {
  status: 'done' | 'failed';
  output: string;
  reason: string;
}

export interface SagaEngineIO {
  nowMs(): number;
  random(): number;
  propose(cmd: SagaCommand, cb: (err: Error | null, result?: SagaApplyResult) => void): void;
  callStep(
    to: ParticipantRecord,
    req: StepRequest,
    timeoutMs: number,
    cb: (err: Error | null, answer?: StepAnswer) => void,
  ): void;
  /** Tells a step service that a saga ended: it may drop the saga's keys. */
  endSaga(to: ParticipantRecord, sagaId: string, timeoutMs: number, cb: (err: Error | null) => void): void;
  /**
   * Tells a step service that these sagas ended, in one call; answers the ids it took (the others are sent again
   * later). A step service that does not serve the call answers EndSagasUnsupported.
   */
  endSagas(
    to: ParticipantRecord,
    sagaIds: readonly string[],
    timeoutMs: number,
    cb: (err: Error | null, ended?: readonly string[]) => void,
  ): void;
}

/** A step service that does not serve EndSagas (one from before it): it is sent End, one saga at a time. */
export class EndSagasUnsupported extends Error {
  override name = 'EndSagasUnsupported';
}

/** How long a step service that answered EndSagasUnsupported is sent single Ends before EndSagas is tried again. */
export const END_BATCH_REPROBE_MS = 10 * 60_000;

export interface SagaEngineConfig extends NewnessRules {
  retryMinMs: number;
  retryMaxMs: number;
  rpcTimeoutMs: number;
  /**
   * An action at or before the pivot that errored this many times is abandoned and compensated (once
   * actionAbandonAfterMs passed too).
   */
  actionAttemptsMax: number;
  /** ... and not before this long after its first failure: long enough to ride out a step service's restart. */
  actionAbandonAfterMs: number;
  /** A call retried this many times flags its saga stuck (it keeps retrying). */
  stuckAfterAttempts: number;
  /** Sagas running at once on this leader. */
  runningMax: number;
  /** Sagas one client (its certificate's CN; without TLS, its connection) has running at once. */
  clientRunningMax: number;
  /** Bytes of every running saga's definition and outputs together (sagaBytes). */
  runningBytesMax: number;
  /** A saga's end notices go out at the first tick this long after its end (0: at once). */
  endNoticeDelayMs: number;
  /** Sagas in one EndSagas call at most (1..SAGA_IDS_PER_CALL_MAX, src/domain/saga-id.ts). */
  endNoticeBatchMax: number;
  /** saga.ended waits at most this long, or until endedBatchMax are pending. */
  endedDelayMs: number;
  endedBatchMax: number;
}

export const defaultSagaEngineConfig: SagaEngineConfig = {
  retryMinMs: 100,
  retryMaxMs: 10_000,
  rpcTimeoutMs: 10_000,
  actionAttemptsMax: 5,
  actionAbandonAfterMs: 30_000,
  stuckAfterAttempts: 10,
  runningMax: 10_000,
  clientRunningMax: 1_000,
  runningBytesMax: 256 * 1024 * 1024,
  ...DEFAULT_NEWNESS_RULES,
  endNoticeDelayMs: 50,
  endNoticeBatchMax: 256,
  endedDelayMs: 200,
  endedBatchMax: 512,
};

export type SagaErrorCode = 'not-leader' | 'invalid' | 'precondition' | 'not-found' | 'exhausted' | 'outcome-unknown';

export class SagaError extends Error {
  constructor(
    readonly code: SagaErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'SagaError';
  }
}

export type SagaCallback = (err: SagaError | null, saga?: SagaRecord) => void;

/**
 * The leader's working state for one saga: the call in flight and its retries. Volatile; the table holds the truth
 * (attempts included).
 */
interface Run {
  id: string;
  /** The call this run is making, as the table named it when the run last looked. */
  step: number;
  kind: StepKind;
  nextAtMs: number;
  inFlight: boolean;
  /** A result is being logged: no new call until it is applied or fails. */
  proposing: boolean;
  /**
   * A failed attempt not yet in the table (saga.attempt): no new call until it is, so that every call but this leader's
   * last is counted.
   */
  unlogged: { error: string; atMs: number } | null;
  /**
   * A result being logged, or whose proposal failed: it is proposed again at logAgainAtMs (no call goes out meanwhile).
   */
  unloggedResult: { outcome: 'done' | 'failed' | 'abandoned'; output: string; reason: string } | null;
  /** saga.attempt for `unlogged` is proposed; when it fails, it is proposed again at logAgainAtMs. */
  logging: boolean;
  logAgainAtMs: number;
  lastError: string;
  stuckLogged: boolean;
}

/** End notices owed to step services for one finished or compensated saga. */
interface Ending {
  id: string;
  pending: Set<string>;
  inFlight: Set<string>;
  attempts: number;
  nextAtMs: number;
}

/** Monotonic counts of what this engine did while it led; for metrics. */
export interface SagaCounters {
  started: number;
  stepAttempts: number;
  stepErrors: number;
  stuck: number;
  /** Sum and count of step call latencies, for an average (histograms are the node's business). */
  stepLatencyMsSum: number;
  stepLatencyCount: number;
}

export class SagaEngine {
  private readonly cfg: SagaEngineConfig;
  private leaderTerm = 0;
  private readonly runs = new Map<string, Run>();
  private readonly endings = new Map<string, Ending>();
  /** Step services with an EndSagas call in flight (at most one each), by id: the call's token. */
  private readonly endCalls = new Map<string, object>();
  /** Step services (id and endpoint) sent single Ends, until when: they answered EndSagasUnsupported. */
  private readonly singleEnds = new Map<string, number>();
  private endedQueue: string[] = [];
  private endedSinceMs = 0;
  private endedInFlight = false;
  /** Starts proposed and not yet applied, per starter: they count toward its quota. */
  private readonly starting = new Map<string, number>();
  private startingBytes = 0;
  private readonly stats: SagaCounters = {
    started: 0,
    stepAttempts: 0,
    stepErrors: 0,
    stuck: 0,
    stepLatencyMsSum: 0,
    stepLatencyCount: 0,
  };

  constructor(
    private readonly table: SagaTable,
    /** The registry of participants and step services (DecisionTable.participants). */
    private readonly services: ReadonlyMap<string, ParticipantRecord>,
    private readonly io: SagaEngineIO,
    cfg: Partial<SagaEngineConfig> = {},
  ) {
    this.cfg = { ...defaultSagaEngineConfig, ...cfg };
    const n = this.cfg.endNoticeBatchMax;
    assert(
      Number.isSafeInteger(n) && n >= 1 && n <= SAGA_IDS_PER_CALL_MAX,
      `endNoticeBatchMax ${n} is 1..${SAGA_IDS_PER_CALL_MAX}, what a step service takes in one EndSagas call`,
    );
  }

  isLeader(): boolean {
    return this.leaderTerm > 0;
  }

  counters(): SagaCounters {
    return { ...this.stats };
  }

  /** Called when this node becomes leader of `term` (once it applied an entry of its term), or stops leading (0). */
  setLeadership(term: number): void {
    assert(Number.isSafeInteger(term) && term >= 0, `saga leadership term ${term} is a non-negative integer`);
    if (term === this.leaderTerm) return;
    const was = this.leaderTerm;
    assert(term === 0 || was === 0 || term > was, `saga leadership moves from term ${was} to a later one, not ${term}`);
    this.leaderTerm = term;
    if (was > 0) {
      this.runs.clear();
      this.endings.clear();
      this.endCalls.clear();
      this.singleEnds.clear();
      this.endedQueue = [];
      this.endedInFlight = false;
    }
    // Resume every saga from the log: the call each waits on, or the end notices still owed.
    if (term > 0) for (const s of this.table.sagas.values()) this.follow(s);
  }

  // ---- client and operator API -------------------------------------------

  /**
   * Starts a saga (or answers a repeated start with the saga as it is, R7)
   * once saga.start is applied. `owner` is who asks (src/node/limits.ts
   * clientOf); the caller has checked that a repeated start comes from
   * whoever may read the saga.
   */
  start(
    sagaId: string,
    steps: SagaStepDef[],
    pivot: number | null,
    cb: SagaCallback,
    owner = '',
    tags: { type?: string; labels?: SagaLabels } = {},
  ): void {
    if (!this.isLeader()) return cb(new SagaError('not-leader', 'not the leader'));
    const existing = this.table.sagas.get(sagaId);
    if (existing) {
      if (JSON.stringify(existing.steps) !== JSON.stringify(steps) || existing.pivot !== pivot)
        return cb(new SagaError('precondition', `saga ${sagaId} already exists with other steps; use a new id`));
      if (
        (existing.type ?? '') !== (tags.type ?? '') ||
        JSON.stringify(sortedLabels(existing.labels)) !== JSON.stringify(sortedLabels(tags.labels))
      )
        return cb(
          new SagaError(
            'precondition',
            `saga ${sagaId} already exists with another type or other labels; use a new id`,
          ),
        );
      return cb(null, existing);
    }
    const problem = sagaDefProblem(sagaId, steps, pivot) ?? sagaTagsProblem(sagaId, tags.type, tags.labels);
    if (problem !== null) return cb(new SagaError('invalid', problem));
    const forgotten = this.table.forgottenProblem(sagaId);
    if (forgotten !== null) return cb(new SagaError('precondition', forgotten));
    const stale = newnessRefusal('saga', sagaId, this.table.horizonAtMs, this.io.nowMs(), this.cfg);
    if (stale !== null) return cb(new SagaError(stale.code, stale.message));
    for (const [k, s] of steps.entries())
      if (!this.services.has(s.service))
        return cb(
          new SagaError(
            'precondition',
            `saga ${sagaId} step ${k}: step service ${s.service} is not registered with this cluster`,
          ),
        );
    const bytes = sagaBytes({ id: sagaId, steps, outputs: [], type: tags.type, labels: tags.labels });
    const full = this.fullFor(owner, bytes);
    if (full !== null) return cb(new SagaError('exhausted', full));
    this.starting.set(owner, (this.starting.get(owner) ?? 0) + 1);
    this.startingBytes += bytes;
    const cmd: SagaCommand = { t: 'saga.start', sagaId, steps, pivot, atMs: this.io.nowMs(), owner };
    if (tags.type !== undefined && tags.type !== '') cmd.type = tags.type;
    if (tags.labels !== undefined && Object.keys(tags.labels).length > 0) cmd.labels = sortedLabels(tags.labels);
    this.io.propose(cmd, (err, r) => {
      const n = (this.starting.get(owner) ?? 0) - 1;
      assert(n >= 0 && this.startingBytes >= bytes, `the start of saga ${sagaId} was counted as starting`);
      if (n > 0) this.starting.set(owner, n);
      else this.starting.delete(owner);
      this.startingBytes -= bytes;
      if (err || !r)
        return cb(
          new SagaError(
            'outcome-unknown',
            `the start of saga ${sagaId} could not be confirmed (${err?.message ?? 'no result'}); start it again with the same id`,
          ),
        );
      if (r.problem !== null && !r.saga)
        return cb(new SagaError(this.table.forgottenProblem(sagaId) !== null ? 'precondition' : 'invalid', r.problem));
      if (r.changed) this.stats.started++;
      cb(null, r.saga ?? undefined);
    });
  }

  /** Why one more running saga of `owner`, of `bytes`, would break a bound, or null. */
  private fullFor(owner: string, bytes: number): string | null {
    if (this.runs.size >= this.cfg.runningMax)
      return `the leader runs ${this.runs.size} sagas (limit runningMax=${this.cfg.runningMax}); retry later`;
    const mine = this.table.runningOf(owner) + (this.starting.get(owner) ?? 0);
    if (mine >= this.cfg.clientRunningMax)
      return `client ${owner || '(unnamed)'} has ${mine} sagas running (limit sagaClientRunningMax=${this.cfg.clientRunningMax}); wait for some to end before starting more`;
    const all = this.table.runningBytes + this.startingBytes;
    if (all + bytes > this.cfg.runningBytesMax)
      return `running sagas hold ${all} bytes of definitions and outputs (limit ${this.cfg.runningBytesMax}); retry later`;
    return null;
  }

  /**
   * `verdict saga retry`: a stuck saga's call is made again now, attempts counted afresh; recorded with who and why.
   */
  retry(sagaId: string, operator: string, reason: string, cb: SagaCallback): void {
    if (!this.isLeader()) return cb(new SagaError('not-leader', 'not the leader'));
    const s = this.table.sagas.get(sagaId);
    if (!s) return cb(new SagaError('not-found', `no saga ${sagaId}`));
    if (!s.stuck)
      return cb(new SagaError('precondition', `saga ${sagaId} is not stuck (${s.state}); nothing to retry`));
    this.io.propose({ t: 'saga.retry', sagaId, operator, reason, atMs: this.io.nowMs() }, (err, r) => {
      if (err || !r)
        return cb(
          new SagaError(
            'outcome-unknown',
            `the retry of saga ${sagaId} could not be logged (${err?.message ?? 'no result'}); retry`,
          ),
        );
      if (!r.changed) return cb(new SagaError('precondition', r.problem ?? `saga ${sagaId} is not stuck`));
      const run = this.runs.get(sagaId);
      if (run) {
        run.stuckLogged = false;
        run.nextAtMs = 0;
        this.poke(run);
      }
      cb(null, r.saga ?? undefined);
    });
  }

  /**
   * `verdict saga resolve ID --step K --done|--compensated`: the operator
   * says the stuck call's effect happened by hand. Logged with who, when, why;
   * refused unless the saga is stuck on exactly that call.
   */
  resolve(
    sagaId: string,
    step: number,
    as: 'done' | 'compensated',
    operator: string,
    reason: string,
    cb: SagaCallback,
  ): void {
    if (!this.isLeader()) return cb(new SagaError('not-leader', 'not the leader'));
    const s = this.table.sagas.get(sagaId);
    if (!s) return cb(new SagaError('not-found', `no saga ${sagaId}`));
    const kind: StepKind = as === 'done' ? 'action' : 'compensate';
    if (!s.stuck || s.stuck.step !== step || s.stuck.kind !== kind)
      return cb(
        new SagaError(
          'precondition',
          `saga ${sagaId} step ${step} is not stuck on its ${kind}${s.stuck ? ` (the saga is stuck on step ${s.stuck.step} ${s.stuck.kind})` : ` (the saga is ${s.state}, not stuck)`}; nothing was changed`,
        ),
      );
    const atMs = this.io.nowMs();
    this.io.propose(
      {
        t: 'saga.result',
        sagaId,
        step,
        kind,
        outcome: 'done',
        output: '',
        reason,
        atMs,
        operator: { operator, reason, atMs },
      },
      (err, r) => {
        if (err || !r)
          return cb(
            new SagaError(
              'outcome-unknown',
              `the resolution of saga ${sagaId} could not be logged (${err?.message ?? 'no result'}); retry`,
            ),
          );
        if (!r.changed) return cb(new SagaError('precondition', r.problem ?? `saga ${sagaId} was not changed`));
        cb(null, r.saga ?? undefined);
      },
    );
  }

  // ---- the protocol ------------------------------------------------------

  /** Every node calls this for every applied command; only the leader acts on it. */
  onApplied(result: SagaApplyResult): void {
    assert(result.product === 'saga', 'the saga engine hears only the saga table');
    if (!this.isLeader()) return;
    if (result.op === 'saga.ended') {
      this.endedInFlight = false;
      return;
    }
    const s = result.saga ?? this.table.sagas.get(result.sagaId);
    if (s) this.follow(s, result.op === 'saga.result');
  }

  /** Brings this leader's working state in line with the saga's applied record. */
  private follow(s: SagaRecord, answered = false): void {
    const call = currentCall(s);
    if (!call) {
      this.runs.delete(s.id);
      if (isTerminal(s.state) && !s.ended && !this.endings.has(s.id)) this.beginEnding(s);
      return;
    }
    let run = this.runs.get(s.id);
    if (!run || run.step !== call.step || run.kind !== call.kind) {
      // A new call, or a new leader's first look: its failed attempts so far are in the table, and so is
      // when the last one failed, so the backoff carries on where it was (never longer than retryMaxMs from now).
      const t = triesOf(s, call.step, call.kind);
      const now = this.io.nowMs();
      const nextAtMs =
        t === null || t.attempts === 0
          ? 0
          : Math.min(now + this.cfg.retryMaxMs, t.lastFailureAtMs + this.backoffMs(t.attempts) / 2);
      run = {
        id: s.id,
        step: call.step,
        kind: call.kind,
        nextAtMs,
        inFlight: false,
        proposing: false,
        unlogged: null,
        unloggedResult: null,
        logging: false,
        logAgainAtMs: 0,
        lastError: t?.lastError ?? '',
        stuckLogged: s.stuck !== null,
      };
      this.runs.set(s.id, run);
    } else {
      // A result for this call was applied and changed nothing (a refusal): the call is made again. Any other
      // entry of the saga (a logged attempt, a stuck flag) leaves a result being logged as it is.
      if (answered) {
        run.proposing = false;
        run.unloggedResult = null;
      }
      if (s.stuck === null && run.stuckLogged) run.stuckLogged = false;
    }
    this.maybeStuck(run, s);
    this.poke(run);
  }

  /** The backoff before attempt `attempts + 1`: retryMinMs doubling up to retryMaxMs (jitter takes it down to half). */
  private backoffMs(attempts: number): number {
    return Math.min(this.cfg.retryMaxMs, this.cfg.retryMinMs * 2 ** Math.min(Math.max(attempts - 1, 0), 20));
  }

  /** Sends the run's call if nothing holds it back (in flight, a result being logged, backoff). */
  private poke(run: Run): void {
    if (
      run.inFlight ||
      run.proposing ||
      run.unlogged !== null ||
      run.unloggedResult !== null ||
      this.io.nowMs() < run.nextAtMs
    )
      return;
    const s = this.table.sagas.get(run.id);
    const call = s ? currentCall(s) : null;
    // Persist before send: only the call the applied table names goes out.
    if (!s || !call || call.step !== run.step || call.kind !== run.kind) return;
    const def = s.steps[run.step];
    const to = this.services.get(def.service);
    // The attempt number is the table's count of failed attempts plus one: the same on every leader.
    const attempt = (triesOf(s, run.step, run.kind)?.attempts ?? 0) + 1;
    this.stats.stepAttempts++;
    if (!to) return this.failed(run, s, `step service ${def.service} is not registered`, attempt);
    callSent(run);
    const req: StepRequest = {
      sagaId: s.id,
      step: run.step,
      kind: run.kind,
      key: stepKey(s.id, run.step, run.kind),
      name: def.name,
      input: def.input,
      outputs: s.outputs.slice(0, run.step),
      attempt,
    };
    const sentAtMs = this.io.nowMs();
    this.io.callStep(to, req, this.cfg.rpcTimeoutMs, (err, answer) => {
      callAnswered(run);
      if (this.runs.get(run.id) !== run) return;
      this.stats.stepLatencyMsSum += this.io.nowMs() - sentAtMs;
      this.stats.stepLatencyCount++;
      const bad = err ? err.message : answerProblem(answer, SAGA_TEXT_BYTES_MAX - outputBytes(s));
      if (bad !== null) return this.failed(run, s, bad, attempt);
      const a = answer as StepAnswer;
      if (a.status === 'done') return this.log(run, 'done', a.output, '');
      // FAILED: a refusal. Only an action at or before the pivot may fail; anything else is retried.
      if (run.kind === 'action' && this.table.compensatable(s, run.step)) return this.log(run, 'failed', '', a.reason);
      this.failed(
        run,
        s,
        `${run.kind === 'action' ? 'step after the pivot' : 'compensation'} answered FAILED (${a.reason || 'no reason'}); it is retried until done`,
        attempt,
      );
    });
  }

  /**
   * A transient failure of attempt `attempt`: an action before the pivot is
   * abandoned once it failed actionAttemptsMax times over at least
   * actionAbandonAfterMs; otherwise the failure is logged (saga.attempt) and
   * the call made again after a backoff, once the log has it.
   */
  private failed(run: Run, s: SagaRecord, why: string, attempt: number): void {
    assertIdle(run, 'a failed attempt is handled');
    this.stats.stepErrors++;
    run.lastError = why;
    const now = this.io.nowMs();
    const base = this.backoffMs(attempt);
    run.nextAtMs = now + base / 2 + this.io.random() * (base / 2);
    if (run.kind === 'action' && this.table.compensatable(s, run.step) && attempt >= this.cfg.actionAttemptsMax) {
      const firstAtMs = triesOf(s, run.step, run.kind)?.firstFailureAtMs ?? now;
      if (now - firstAtMs >= this.cfg.actionAbandonAfterMs)
        return this.log(
          run,
          'abandoned',
          '',
          `gave up after ${attempt} attempts over ${((now - firstAtMs) / 1000).toFixed(1)} s: ${why}`,
        );
    }
    run.unlogged = { error: why, atMs: now };
    this.logAttempt(run);
  }

  /** Logs the run's failed attempt; once applied, the next call may go out (and the saga may be flagged stuck). */
  private logAttempt(run: Run): void {
    const u = run.unlogged;
    assert(
      u !== null && !run.inFlight && run.unloggedResult === null,
      `saga ${run.id}: only a failed attempt is logged, with no call in flight and no result to log`,
    );
    if (run.logging) return;
    run.logging = true;
    this.io.propose(
      { t: 'saga.attempt', sagaId: run.id, step: run.step, kind: run.kind, error: u.error, atMs: u.atMs },
      (err, r) => {
        run.logging = false;
        if (this.runs.get(run.id) !== run) return;
        if (err || !r) {
          // Not logged, or not known to be: log it again, never call again before it is (a repeat counts it twice,
          // which only abandons sooner).
          run.logAgainAtMs = this.io.nowMs() + this.cfg.retryMinMs;
          return;
        }
        run.unlogged = null;
        const s = this.table.sagas.get(run.id);
        if (!s) return;
        this.maybeStuck(run, s);
        this.poke(run);
      },
    );
  }

  /**
   * Flags the saga stuck once its current call failed stuckAfterAttempts
   * times by the table's count. An action at or before the pivot is never
   * flagged: it ends on its own, abandoned and compensated.
   */
  private maybeStuck(run: Run, s: SagaRecord): void {
    if (run.stuckLogged || s.stuck !== null) return;
    if (run.kind === 'action' && this.table.compensatable(s, run.step)) return;
    const t = triesOf(s, run.step, run.kind);
    if (t === null || t.attempts < this.cfg.stuckAfterAttempts) return;
    run.stuckLogged = true;
    this.stats.stuck++;
    this.io.propose(
      {
        t: 'saga.stuck',
        sagaId: run.id,
        step: run.step,
        kind: run.kind,
        attempts: t.attempts,
        lastError: t.lastError,
        atMs: this.io.nowMs(),
      },
      (err) => {
        if (err && this.runs.get(run.id) === run) run.stuckLogged = false;
      },
    );
  }

  private log(run: Run, outcome: 'done' | 'failed' | 'abandoned', output: string, reason: string): void {
    assert(
      !run.inFlight && !run.proposing && run.unlogged === null,
      `saga ${run.id} step ${run.step} ${run.kind}: a result is logged once at a time, with no call in flight and no attempt to log`,
    );
    assert(
      run.unloggedResult === null || run.unloggedResult.outcome === outcome,
      `saga ${run.id} step ${run.step} ${run.kind}: the result logged again is the one logged before`,
    );
    run.proposing = true;
    run.unloggedResult = { outcome, output, reason };
    this.io.propose(
      {
        t: 'saga.result',
        sagaId: run.id,
        step: run.step,
        kind: run.kind,
        outcome,
        output,
        reason,
        atMs: this.io.nowMs(),
      },
      (err) => {
        // Success is handled in onApplied, where every node sees it.
        if (!err || this.runs.get(run.id) !== run) return;
        // Not logged (or not known to be): log the same answer again later, never call again for it (a repeated
        // result changes nothing once one is applied), so that a leader's calls stay counted.
        run.proposing = false;
        run.logAgainAtMs = this.io.nowMs() + this.cfg.retryMinMs;
      },
    );
  }

  // ---- the end of a saga ---------------------------------------------------

  private beginEnding(s: SagaRecord): void {
    const services = new Set(s.steps.map((d) => d.service));
    const delayMs = this.cfg.endNoticeDelayMs;
    const e: Ending = {
      id: s.id,
      pending: services,
      inFlight: new Set(),
      attempts: 0,
      nextAtMs: delayMs > 0 ? this.io.nowMs() + delayMs : 0,
    };
    this.endings.set(s.id, e);
    if (delayMs <= 0) this.sendEnds();
  }

  /**
   * Sends every end notice that is due (of step service `only`, when given):
   * one EndSagas call per step service with none in flight, of at most
   * endNoticeBatchMax sagas, or single Ends to a step service that does not
   * serve EndSagas.
   */
  private sendEnds(only?: string): void {
    const now = this.io.nowMs();
    const batches = new Map<string, { to: ParticipantRecord; items: Ending[] }>();
    for (const e of this.endings.values()) {
      if (now < e.nextAtMs) continue;
      for (const id of e.pending) {
        if (e.inFlight.has(id) || (only !== undefined && id !== only)) continue;
        const to = this.services.get(id);
        if (!to) {
          // A step service removed from the registry keeps nothing we can reach.
          e.pending.delete(id);
          continue;
        }
        if (this.sendsSingleEnds(to, now)) {
          this.sendEnd(e, to);
          continue;
        }
        if (this.endCalls.has(id)) continue;
        let b = batches.get(id);
        if (!b) {
          b = { to, items: [] };
          batches.set(id, b);
        }
        if (b.items.length >= this.cfg.endNoticeBatchMax) continue;
        b.items.push(e);
        e.inFlight.add(id);
      }
      this.maybeEnded(e);
    }
    for (const b of batches.values()) this.sendEndBatch(b.to, b.items);
  }

  /** True while step service `to` (at its endpoint) is sent single Ends: it answered EndSagasUnsupported. */
  private sendsSingleEnds(to: ParticipantRecord, now: number): boolean {
    const key = `${to.id}\u0000${to.endpoint}`;
    const until = this.singleEnds.get(key);
    if (until === undefined) return false;
    if (now < until) return true;
    this.singleEnds.delete(key);
    return false;
  }

  /** One EndSagas call: the sagas it takes are done with here; the others back off and go again. */
  private sendEndBatch(to: ParticipantRecord, items: Ending[]): void {
    assert(
      !this.endCalls.has(to.id) && items.length > 0 && items.length <= this.cfg.endNoticeBatchMax,
      `step service ${to.id}: one EndSagas call in flight at a time, of 1..${this.cfg.endNoticeBatchMax} sagas`,
    );
    const token = {};
    this.endCalls.set(to.id, token);
    this.io.endSagas(
      to,
      items.map((e) => e.id),
      this.cfg.rpcTimeoutMs,
      (err, ended) => {
        if (this.endCalls.get(to.id) !== token) return;
        this.endCalls.delete(to.id);
        const unsupported = err instanceof EndSagasUnsupported;
        if (unsupported) this.singleEnds.set(`${to.id}\u0000${to.endpoint}`, this.io.nowMs() + END_BATCH_REPROBE_MS);
        const taken = new Set(err ? [] : (ended ?? []));
        for (const e of items) {
          if (this.endings.get(e.id) !== e) continue;
          e.inFlight.delete(to.id);
          if (taken.has(e.id)) {
            e.pending.delete(to.id);
            this.maybeEnded(e);
          } else if (!unsupported) this.endFailed(e);
        }
        // What came due while the call was out goes now (single Ends, to a step service before EndSagas).
        this.sendEnds(to.id);
      },
    );
  }

  /** One End call, for a step service that does not serve EndSagas. */
  private sendEnd(e: Ending, to: ParticipantRecord): void {
    e.inFlight.add(to.id);
    this.io.endSaga(to, e.id, this.cfg.rpcTimeoutMs, (err) => {
      if (this.endings.get(e.id) !== e) return;
      e.inFlight.delete(to.id);
      if (err) return this.endFailed(e);
      e.pending.delete(to.id);
      this.maybeEnded(e);
    });
  }

  /** A notice of the saga's end was not taken: its notices go again after a backoff. */
  private endFailed(e: Ending): void {
    e.attempts++;
    const base = Math.min(this.cfg.retryMaxMs, this.cfg.retryMinMs * 2 ** Math.min(e.attempts - 1, 20));
    e.nextAtMs = this.io.nowMs() + base / 2 + this.io.random() * (base / 2);
  }

  private maybeEnded(e: Ending): void {
    if (e.pending.size > 0 || this.endings.get(e.id) !== e) return;
    this.endings.delete(e.id);
    if (this.endedQueue.length === 0) this.endedSinceMs = this.io.nowMs();
    this.endedQueue.push(e.id);
    if (this.endedQueue.length >= this.cfg.endedBatchMax) this.flushEnded();
  }

  private flushEnded(): void {
    if (this.endedQueue.length === 0 || this.endedInFlight) return;
    const batch = this.endedQueue.splice(0, this.cfg.endedBatchMax);
    this.endedInFlight = true;
    this.io.propose({ t: 'saga.ended', sagaIds: batch }, (err) => {
      if (!err) return;
      this.endedInFlight = false;
      if (this.isLeader()) this.endedQueue.unshift(...batch);
    });
  }

  /** Retries, end notices and ended batching; call every few tens of ms. */
  tick(): void {
    if (!this.isLeader()) return;
    const now = this.io.nowMs();
    for (const run of this.runs.values()) {
      if (run.unloggedResult !== null) {
        const r = run.unloggedResult;
        if (!run.proposing && now >= run.logAgainAtMs) this.log(run, r.outcome, r.output, r.reason);
      } else if (run.unlogged !== null) {
        if (!run.logging && now >= run.logAgainAtMs) this.logAttempt(run);
      } else if (!run.inFlight && !run.proposing && now >= run.nextAtMs) this.poke(run);
    }
    if (this.endings.size > 0) this.sendEnds();
    if (this.endedQueue.length > 0 && now - this.endedSinceMs >= this.cfg.endedDelayMs) this.flushEnded();
  }

  /** Running sagas on this leader, by the call they wait on; for `saga list` and metrics. */
  running(): { id: string; step: number; kind: StepKind; attempts: number; lastError: string }[] {
    return [...this.runs.values()].map((r) => {
      const s = this.table.sagas.get(r.id);
      return {
        id: r.id,
        step: r.step,
        kind: r.kind,
        attempts: s ? (triesOf(s, r.step, r.kind)?.attempts ?? 0) : 0,
        lastError: r.lastError,
      };
    });
  }
}

/** A run's call goes out: only from a run that waits on nothing (no call, result or attempt pending). */
function callSent(run: Run): void {
  assertIdle(run, 'a call goes out');
  run.inFlight = true;
}

/** A run's call answered (or failed, or timed out): it had one in flight. */
function callAnswered(run: Run): void {
  assert(run.inFlight, `saga ${run.id} step ${run.step} ${run.kind}: an answer comes to a call in flight`);
  run.inFlight = false;
}

function assertIdle(run: Run, what: string): void {
  assert(
    !run.inFlight && !run.proposing && run.unlogged === null && run.unloggedResult === null,
    `saga ${run.id} step ${run.step} ${run.kind}: ${what} only when no call is in flight and nothing is being logged`,
  );
}

/** Labels in name order: one spelling of a set of labels, for the log and for comparing a repeated start. */
export function sortedLabels(labels: SagaLabels | undefined): SagaLabels {
  const out: SagaLabels = {};
  for (const k of Object.keys(labels ?? {}).sort()) out[k] = (labels as SagaLabels)[k];
  return out;
}

/**
 * Why a step service's answer is not one (garbage is a transient error,
 * never a FAILED), or null. `outputBytesLeft`: what the saga's outputs may
 * still grow by (SAGA_TEXT_BYTES_MAX together).
 */
export function answerProblem(a: StepAnswer | undefined, outputBytesLeft = SAGA_TEXT_BYTES_MAX): string | null {
  if (a === undefined || a === null || typeof a !== 'object') return 'the step service gave no answer';
  if (a.status !== 'done' && a.status !== 'failed')
    return `the step service answered an unknown status ${JSON.stringify(String(a.status)).slice(0, 40)}`;
  if (typeof a.output !== 'string' || typeof a.reason !== 'string')
    return 'the step service answered without output or reason';
  // The output is logged and handed to every later step: bounded as an input is.
  for (const [what, text] of [
    ['output', a.output],
    ['reason', a.reason],
  ] as const)
    if (Buffer.byteLength(text) > STEP_TEXT_BYTES_MAX)
      return `the step service answered an ${what} of ${Buffer.byteLength(text)} bytes (limit ${STEP_TEXT_BYTES_MAX})`;
  if (a.status === 'done' && Buffer.byteLength(a.output) > outputBytesLeft)
    return `the step service answered an output of ${Buffer.byteLength(a.output)} bytes, past what the saga's outputs may still hold (${Math.max(0, outputBytesLeft)} of ${SAGA_TEXT_BYTES_MAX} bytes together)`;
  return null;
}
