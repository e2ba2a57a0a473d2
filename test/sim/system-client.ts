// A client of the whole-system simulation, with the SDK's semantics
// (src/client): Begin, then Commit with the same txnId — or, as the SDK's
// transaction() does, a Commit that begins — each retried at the node a
// redirect names (or the next one), and Commit asked again after an
// undecided answer, until the cluster says COMMITTED or ABORTED (R7). What
// is retried and whether a Commit still carries begin (R2) is the SDK's own
// rule (src/client/retry-policy.ts), fed the failures as the gRPC service
// would answer them (failedAttempt); a mutant of the rule is injected here
// (test/sim/protocol-mutants.ts). Like an application that must know, it never
// gives up; the world checks after healing that every client got its answer.
// Some clients, once answered, send the same id again as a new transaction
// (an application that reuses ids): the cluster must refuse it as already
// decided, with the outcome it answered, or answer that same outcome.

import { BeginRule, classifyFailure, retryable, type AttemptFailure } from '../../src/client/retry-policy.ts';
import { EngineError, type OutcomeAnswer } from '../../src/commit/engine.ts';
import { memoryPayload } from '../../src/participant/memory.ts';
import type { Outcome } from '../../src/participant/types.ts';
import type { Rng } from '../../src/raft/rng.ts';
import type { EventQueue } from './event-queue.ts';
import { keyOf, valueOf } from './system-checker.ts';
import { ALWAYS, failedAttempt, redirect, type CallCoordinator, type RpcError } from './system-rpc.ts';
import type { TxnPlan } from './system-scenario.ts';

const BEGIN_DEADLINE_MS = 1_000;
/** The SDK's room for the decision after the prepare timeout (src/client/transaction.ts). */
const COMMIT_GRACE_MS = 2_000;

export interface ClientEnv {
  readonly q: EventQueue;
  readonly rng: Rng;
  readonly nodeIds: readonly string[];
  call: CallCoordinator;
  answered(txnId: string, outcome: Outcome): void;
  /** The cluster refused to begin the id again: it is decided, `recorded` says how. */
  refusedAsDecided(txnId: string, recorded: Outcome | undefined): void;
  /** The cluster refused a request of a correct client: nothing in this simulation should. */
  refused(txnId: string, call: string, err: RpcError): void;
  log(line: () => string): void;
  /** The SDK's begin rule (src/client/retry-policy.ts), or a mutant of it. */
  beginRule(begun: boolean): BeginRule;
  /** The decision group of a transaction id (groupOf); absent: the one group, 0. */
  groupOf?(txnId: string): number;
}

/** What an attempt's reply says, as the SDK classifies it. */
function attemptResult(err: RpcError | null): 'answered' | AttemptFailure {
  return err === null ? 'answered' : classifyFailure(failedAttempt(err));
}

export class SimClient {
  began = false;
  done = false;
  /** Sending the id again after the answer, until the cluster refuses or answers it. */
  resending = false;

  /** The node it believes leads (its transaction's group). */
  private hint: number;
  /** Its transaction's decision group: every call goes to that group's replica. */
  private readonly group: number;
  /** Whether the next Commit carries begin (R2). */
  private readonly rule: BeginRule;

  constructor(
    private readonly env: ClientEnv,
    readonly id: string,
    readonly txnId: string,
    readonly plan: TxnPlan,
    readonly participants: string[],
    /** The participant told to vote NO, if any. */
    readonly noVoter: string | null,
    /** Begin with the Commit (CommitRequest.begin) rather than with a Begin call. */
    private readonly beginWithCommit = false,
    /** When, after its answer, it sends its id again; null: never. */
    private readonly resendAfterMs: number | null = null,
  ) {
    this.hint = env.rng.int(env.nodeIds.length);
    this.rule = env.beginRule(!beginWithCommit);
    this.group = env.groupOf?.(txnId) ?? 0;
  }

  start(): void {
    if (this.beginWithCommit) this.commit();
    else this.begin();
  }

  private retry(err: RpcError | null, then: () => void): void {
    if (err) this.hint = redirect(this.hint, err, this.env.nodeIds);
    this.env.q.after(50 + this.env.rng.int(100), then);
  }

  private begin(): void {
    this.env.call<number>(
      this.id,
      ALWAYS,
      this.hint,
      BEGIN_DEADLINE_MS,
      (c) => {
        try {
          c.ok(c.engine.begin(this.txnId, this.plan.timeoutMs).deadlineAtMs);
        } catch (err) {
          if (!(err instanceof EngineError)) throw err;
          c.fail(err);
        }
      },
      (err) => {
        if (!err) {
          this.began = true;
          return this.commit();
        }
        // An earlier Begin whose answer was lost began it, and it is decided since (the deadline): that is its answer.
        if (err.code === 'exists') return this.answer(err.recorded);
        if (!retryable(classifyFailure(failedAttempt(err)))) return this.refuse('Begin', err);
        this.retry(err, () => this.begin());
      },
      this.group,
    );
  }

  private commit(): void {
    if (this.done) return;
    const at = this.env.nodeIds[this.hint];
    const enlist = this.participants.map((pid) => ({
      participantId: pid,
      payload:
        pid === this.noVoter
          ? memoryPayload({}, 'told to vote NO')
          : memoryPayload({ [keyOf(this.txnId)]: valueOf(this.txnId, pid) }),
    }));
    const begin = this.rule.begins ? { timeoutMs: this.plan.timeoutMs } : undefined;
    this.env.call<OutcomeAnswer>(
      this.id,
      ALWAYS,
      this.hint,
      this.plan.timeoutMs + COMMIT_GRACE_MS,
      (c) => c.engine.commit(this.txnId, enlist, (err, a) => (err || !a ? c.fail(err) : c.ok(a)), begin),
      (err, a) => {
        if (this.done) return;
        const result = attemptResult(err);
        this.rule.attempted(result);
        // For AC3 (a fault-free run must commit): unless the attempt certainly did nothing, the cluster may have begun
        // it.
        if (begin !== undefined && result !== 'not-acted-on') this.began = true;
        this.env.log(
          () =>
            `${this.id} Commit(${this.txnId}) at ${at}: ${err ? `${err.code} ${err.message}` : `${a?.outcome} ${a?.reason}`}`,
        );
        if (a && (a.outcome === 'COMMITTED' || a.outcome === 'ABORTED')) return this.answer(a.outcome);
        if (err?.code === 'exists') return this.answer(err.recorded);
        // A new leader serves Commit only after applying an entry of its term (Driver
        // onLeadership), so a registered participant is never refused as unknown.
        if (err && result !== 'answered' && !retryable(result)) return this.refuse('Commit', err);
        this.retry(err, () => this.commit());
      },
      this.group,
    );
  }

  private answer(outcome: Outcome | undefined): void {
    this.done = true;
    if (outcome === undefined)
      return this.env.refused(this.txnId, 'Commit', {
        code: 'exists',
        message: 'refused as decided without the recorded outcome',
      });
    this.env.answered(this.txnId, outcome);
    if (this.resendAfterMs !== null) {
      this.resending = true;
      this.env.q.after(this.resendAfterMs, () => this.resend(this.env.beginRule(false)));
    }
  }

  /**
   * The same id and enlistment as a new transaction (a Commit that begins, as the SDK's first attempt), under its own
   * begin rule.
   */
  private resend(rule: BeginRule): void {
    const begin = rule.begins;
    const enlist = this.participants.map((pid) => ({
      participantId: pid,
      payload:
        pid === this.noVoter
          ? memoryPayload({}, 'told to vote NO')
          : memoryPayload({ [keyOf(this.txnId)]: valueOf(this.txnId, pid) }),
    }));
    const timeoutMs = this.plan.timeoutMs;
    this.env.call<OutcomeAnswer>(
      this.id,
      ALWAYS,
      this.hint,
      timeoutMs + COMMIT_GRACE_MS,
      (c) =>
        c.engine.commit(
          this.txnId,
          enlist,
          (err, a) => (err || !a ? c.fail(err) : c.ok(a)),
          begin ? { timeoutMs } : undefined,
        ),
      (err, a) => {
        this.env.log(
          () =>
            `${this.id} sends ${this.txnId} again${begin ? ' (begin)' : ''}: ${err ? `${err.code} ${err.message}` : `${a?.outcome} ${a?.reason}`}`,
        );
        const result = attemptResult(err);
        rule.attempted(result);
        if (a && (a.outcome === 'COMMITTED' || a.outcome === 'ABORTED')) {
          this.resending = false;
          return this.env.answered(this.txnId, a.outcome);
        }
        if (err?.code === 'exists') {
          this.resending = false;
          return this.env.refusedAsDecided(this.txnId, err.recorded);
        }
        if (err && result !== 'answered' && !retryable(result)) {
          this.resending = false;
          return this.env.refused(this.txnId, 'Commit (sent again)', err);
        }
        this.retry(err, () => this.resend(rule));
      },
      this.group,
    );
  }

  private refuse(call: string, err: RpcError): void {
    this.done = true;
    this.env.refused(this.txnId, call, err);
  }
}
