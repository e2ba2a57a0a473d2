// A client of the whole-system simulation, with the SDK's semantics
// (src/client): Begin, then Commit with the same txnId — or, as the SDK's
// transaction() does, a Commit that begins — and Commit asked again after an
// undecided answer, until the cluster says COMMITTED or ABORTED (R7). Each
// call is the SDK's own attempt loop (src/client/attempt-loop.ts: which node
// next, redirects, pauses between rounds, the call's deadline), driven on the
// virtual clock and the simulated network, fed the failures as the gRPC
// service would answer them (failedAttempt); whether a Commit still carries
// begin (R2) is the SDK's BeginRule (src/client/retry-policy.ts), a mutant of
// which is injected here (test/sim/protocol-mutants.ts). Like an application
// that must know, it never gives up: a call that ran out of time is made
// again; the world checks after healing that every client got its answer.
// Some clients, once answered, send the same id again as a new transaction
// (an application that reuses ids): the cluster must refuse it as already
// decided, with the outcome it answered, or answer that same outcome.

import { AttemptLoop, type AttemptAction } from '../../src/client/attempt-loop.ts';
import { DEFAULT_CALL_TIMEOUT_MS } from '../../src/client/connection.ts';
import { BeginRule, DEFAULT_BACKOFF, retryable, type AttemptFailure } from '../../src/client/retry-policy.ts';
import { EngineError, type OutcomeAnswer } from '../../src/commit/engine.ts';
import { memoryPayload } from '../../src/participant/memory.ts';
import type { Outcome } from '../../src/participant/types.ts';
import type { Rng } from '../../src/raft/rng.ts';
import { LeaderFinder } from '../../src/transport/leader-finder.ts';
import type { EventQueue } from './event-queue.ts';
import { keyOf, valueOf } from './system-checker.ts';
import { ALWAYS, failedAttempt, type CallCoordinator, type CoordinatorCall, type RpcError } from './system-rpc.ts';
import type { TxnPlan } from './system-scenario.ts';

const BEGIN_DEADLINE_MS = 1_000;
/** The SDK's room for the decision after the prepare timeout (src/client/transaction.ts). */
const COMMIT_GRACE_MS = 2_000;
/** How long the application waits before it asks again after an SDK call that ended without a decision. */
const APP_RETRY_MS = 50;

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

/**
 * How one SDK call ended: answered, refused or failed for good (the last attempt's error), or out of time (null error,
 * no answer).
 */
type CallEnd<T> = { answer: T } | { err: RpcError; failure: AttemptFailure } | { exhausted: true };

export class SimClient {
  began = false;
  done = false;
  /** Sending the id again after the answer, until the cluster refuses or answers it. */
  resending = false;

  /** The nodes it knows and the one it presumes leads (its transaction's group), as the SDK's connection keeps them. */
  private readonly finder: LeaderFinder;
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
    // The application's endpoint list, from a node of its own choosing first.
    const first = env.rng.int(env.nodeIds.length);
    this.finder = new LeaderFinder([...env.nodeIds.slice(first), ...env.nodeIds.slice(0, first)], { redirectsMax: 3 });
    this.rule = env.beginRule(!beginWithCommit);
    this.group = env.groupOf?.(txnId) ?? 0;
  }

  start(): void {
    if (this.beginWithCommit) this.commit();
    else this.begin();
  }

  /**
   * One call as the SDK makes it: the SDK's attempt loop (src/client/attempt-loop.ts)
   * driven on the virtual clock and the simulated network. `serve` gives each
   * attempt's request (a Commit's begin may change between attempts, R2);
   * `attempted` hears every attempt's reply first.
   */
  private sdkCall<T>(
    what: string,
    attemptTimeoutMs: number,
    serve: () => (c: CoordinatorCall<T>) => void,
    attempted: (err: RpcError | null, v: T | undefined, result: 'answered' | AttemptFailure, at: string) => void,
    end: (e: CallEnd<T>) => void,
  ): void {
    const loop = new AttemptLoop(this.finder, {
      deadlineAtMs: this.env.q.now + Math.max(DEFAULT_CALL_TIMEOUT_MS, attemptTimeoutMs),
      attemptTimeoutMs,
      backoff: DEFAULT_BACKOFF,
    });
    const random = (): number => this.env.rng.float();
    const act = (a: AttemptAction): void => {
      if (a.t === 'pause') return void this.env.q.after(a.pauseMs, () => act(loop.paused(this.env.q.now, random)));
      if (a.t === 'give-up') return end({ exhausted: true });
      if (a.t === 'done') throw new Error(`sim client ${this.id}: ${what} done without its answer`);
      const at = a.address;
      this.env.call<T>(
        this.id,
        ALWAYS,
        this.env.nodeIds.indexOf(at),
        a.timeoutMs,
        serve(),
        (err, v) => {
          if (!err) {
            loop.answered(at);
            attempted(null, v, 'answered', at);
            return end({ answer: v as T });
          }
          const { failure, next } = loop.failed(
            at,
            { ...failedAttempt(err), why: `${err.code} ${err.message}`, hint: err.leader },
            this.env.q.now,
            random,
          );
          attempted(err, undefined, failure, at);
          if (!retryable(failure)) return end({ err, failure });
          act(next);
        },
        this.group,
      );
    };
    act(loop.start(this.env.q.now, random));
  }

  /** The application asks again a little later, as one that must know does. */
  private again(then: () => void): void {
    this.env.q.after(APP_RETRY_MS + this.env.rng.int(100), then);
  }

  private begin(): void {
    this.sdkCall<number>(
      'Begin',
      BEGIN_DEADLINE_MS,
      () => (c) => {
        try {
          c.ok(c.engine.begin(this.txnId, this.plan.timeoutMs).deadlineAtMs);
        } catch (err) {
          if (!(err instanceof EngineError)) throw err;
          c.fail(err);
        }
      },
      () => {},
      (e) => {
        if ('answer' in e) {
          this.began = true;
          return this.commit();
        }
        if ('exhausted' in e) return this.again(() => this.begin());
        // An earlier Begin whose answer was lost began it, and it is decided since (the deadline): that is its answer.
        if (e.err.code === 'exists') return this.answer(e.err.recorded);
        this.refuse('Begin', e.err);
      },
    );
  }

  private commit(): void {
    if (this.done) return;
    const enlist = this.enlistment();
    let begin: { timeoutMs: number } | undefined;
    this.sdkCall<OutcomeAnswer>(
      'Commit',
      this.plan.timeoutMs + COMMIT_GRACE_MS,
      () => {
        begin = this.rule.begins ? { timeoutMs: this.plan.timeoutMs } : undefined;
        const sent = begin;
        return (c) => c.engine.commit(this.txnId, enlist, (err, a) => (err || !a ? c.fail(err) : c.ok(a)), sent);
      },
      (err, a, result, at) => {
        this.rule.attempted(result);
        // For AC3 (a fault-free run must commit): unless the attempt certainly did nothing, the cluster may have begun
        // it.
        if (begin !== undefined && result !== 'not-acted-on') this.began = true;
        this.env.log(
          () =>
            `${this.id} Commit(${this.txnId}) at ${at}: ${err ? `${err.code} ${err.message}` : `${a?.outcome} ${a?.reason}`}`,
        );
      },
      (e) => {
        if (this.done) return;
        if ('answer' in e && (e.answer.outcome === 'COMMITTED' || e.answer.outcome === 'ABORTED'))
          return this.answer(e.answer.outcome);
        if ('err' in e) {
          if (e.err.code === 'exists') return this.answer(e.err.recorded);
          // A new leader serves Commit only after applying an entry of its term (Driver
          // onLeadership), so a registered participant is never refused as unknown.
          return this.refuse('Commit', e.err);
        }
        // Answered without a decision, or out of time: ask again with the same id (R7).
        this.again(() => this.commit());
      },
    );
  }

  private enlistment(): { participantId: string; payload: Uint8Array }[] {
    return this.participants.map((pid) => ({
      participantId: pid,
      payload:
        pid === this.noVoter
          ? memoryPayload({}, 'told to vote NO')
          : memoryPayload({ [keyOf(this.txnId)]: valueOf(this.txnId, pid) }),
    }));
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
    const enlist = this.enlistment();
    const timeoutMs = this.plan.timeoutMs;
    this.sdkCall<OutcomeAnswer>(
      'Commit (sent again)',
      timeoutMs + COMMIT_GRACE_MS,
      () => {
        const begin = rule.begins;
        return (c) =>
          c.engine.commit(
            this.txnId,
            enlist,
            (err, a) => (err || !a ? c.fail(err) : c.ok(a)),
            begin ? { timeoutMs } : undefined,
          );
      },
      (err, a, result) => {
        this.env.log(
          () =>
            `${this.id} sends ${this.txnId} again: ${err ? `${err.code} ${err.message}` : `${a?.outcome} ${a?.reason}`}`,
        );
        rule.attempted(result);
      },
      (e) => {
        if ('answer' in e && (e.answer.outcome === 'COMMITTED' || e.answer.outcome === 'ABORTED')) {
          this.resending = false;
          return this.env.answered(this.txnId, e.answer.outcome);
        }
        if ('err' in e) {
          this.resending = false;
          if (e.err.code === 'exists') return this.env.refusedAsDecided(this.txnId, e.err.recorded);
          return this.env.refused(this.txnId, 'Commit (sent again)', e.err);
        }
        this.again(() => this.resend(rule));
      },
    );
  }

  private refuse(call: string, err: RpcError): void {
    this.done = true;
    this.env.refused(this.txnId, call, err);
  }
}
