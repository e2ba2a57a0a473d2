// The SDK's attempt loop as one pure step: the state of one call (the
// leader search's round, what failed last, the call's deadline) in, what an
// attempt came to in, the next action out — attempt at which node with what
// bound, pause how long, done, or give up. No I/O: time and randomness come
// in as arguments, so the SDK (src/client/connection.ts) drives it with the
// wall clock, gRPC and sleep, and the whole-system simulator's client
// (test/sim/system-client.ts) with the virtual clock, the simulated network
// and its seeded generator: the simulator checks the loop that ships.
//
// The loop: ask the presumed leader first (else the first address); a node
// that refused as a follower names the leader, who is asked at once; a node
// that is down, slow, leaderless, or may have acted without answering is
// skipped for the next address not yet tried (src/transport/leader-finder.ts);
// after a full round, pause (capped exponential, jittered: retry-policy.ts
// pauseMs) and start another. No attempt starts at or after the deadline,
// and the last one is clipped to it. What is retried at all, and what a
// failure says about the request (R2), is retry-policy.ts classifyFailure.

import type { LeaderFinder, LeaderSearch } from '../transport/leader-finder.ts';
import { assert } from '../util/assert.ts';
import type { StatusName } from './errors.ts';
import {
  classifyFailure,
  pauseMs,
  retryable,
  type AttemptFailure,
  type BackoffOptions,
  type FailedAttempt,
} from './retry-policy.ts';

export interface AttemptLoopOptions {
  /** No attempt starts at or after this instant (the caller's clock). */
  deadlineAtMs: number;
  /** Bound on one attempt at one node, so a silent node leaves time for the others. */
  attemptTimeoutMs: number;
  backoff: BackoffOptions;
}

/** A failed attempt as the caller saw it: the status, and what the loop needs to go on. */
export interface AttemptFailedWith extends FailedAttempt {
  /** Why, in a few words, for the error that ends an exhausted call ("UNAVAILABLE (connection refused)"). */
  why: string;
  /** The leader the refusing node named, if any. */
  hint?: string;
}

/** What to do next. */
export type AttemptAction =
  /** Send the request to `address`, bounded by `timeoutMs`; `clipped`: the bound is the call's remaining time. */
  | { t: 'attempt'; address: string; timeoutMs: number; clipped: boolean }
  /** Every address of this round failed: wait `pauseMs`, then call paused(). */
  | { t: 'pause'; pauseMs: number }
  /** `address` answered: the call is done. */
  | { t: 'done'; address: string }
  /**
   * The call ends without an answer: the cluster's own refusal or a failure
   * that is not retried (`failure`: the last attempt's), or the deadline
   * passed ('exhausted': `code` and `last` are the telling failure seen).
   */
  | {
      t: 'give-up';
      failure: Exclude<AttemptFailure, 'not-acted-on' | 'maybe-acted-on'> | 'exhausted';
      code: StatusName;
      last: string | undefined;
    };

export class AttemptLoop {
  private readonly search: LeaderSearch;
  /** The attempt in flight: the only one whose answer or failure is taken. */
  private current: Extract<AttemptAction, { t: 'attempt' }> | null = null;
  private paused_ = false;
  /** The pause under way runs to the call's deadline: when it ends, the call's time is up. */
  private pausedToDeadline = false;
  /** The last telling failure: "address: why", and its status. */
  private last: string | undefined;
  private lastCode: StatusName = 'UNAVAILABLE';

  constructor(
    finder: LeaderFinder,
    private readonly o: AttemptLoopOptions,
  ) {
    assert(o.attemptTimeoutMs > 0, 'an attempt has a positive bound');
    this.search = finder.search();
  }

  /** Rounds started so far, this one included. */
  get round(): number {
    return this.search.round;
  }

  /** The first action of the call. */
  start(nowMs: number, random: () => number): AttemptAction {
    assert(
      this.current === null && !this.paused_ && this.search.round === 1 && this.search.failures.size === 0,
      'a call starts once',
    );
    return this.next(nowMs, random);
  }

  /** The attempt answered: the call is done, and `address` is the presumed leader for the next call. */
  answered(address: string): AttemptAction {
    assert(this.current?.address === address, `an answer comes from the attempt in flight (${address})`);
    this.current = null;
    this.search.answered(address);
    return { t: 'done', address };
  }

  /**
   * The attempt failed: what it says about the request (`failure`, for the
   * caller's own rules such as R2's BeginRule), and the next action.
   */
  failed(
    address: string,
    f: AttemptFailedWith,
    nowMs: number,
    random: () => number,
  ): { failure: AttemptFailure; next: AttemptAction } {
    const attempt = this.current;
    assert(attempt?.address === address, `a failure comes from the attempt in flight (${address})`);
    this.current = null;
    const failure = classifyFailure(f);
    if (!retryable(failure))
      return {
        failure,
        next: { t: 'give-up', failure: failure as 'refused' | 'failed', code: f.code, last: `${address}: ${f.why}` },
      };
    // An attempt cut short by the call's own deadline says nothing about the node; keep the earlier, telling error.
    if (!(attempt.clipped && f.code === 'DEADLINE_EXCEEDED' && this.last !== undefined)) {
      this.last = `${address}: ${f.why}`;
      this.lastCode = f.code;
    }
    this.search.failed(address, f.why, f.hint);
    return { failure, next: this.next(nowMs, random) };
  }

  /** The pause between rounds is over: the next round starts from the presumed leader. */
  paused(nowMs: number, random: () => number): AttemptAction {
    assert(this.paused_, 'a pause ends only after one began');
    this.paused_ = false;
    // A timer may fire a millisecond before the clock reads the deadline; no sliver of an attempt is made then.
    if (this.pausedToDeadline) return { t: 'give-up', failure: 'exhausted', code: this.lastCode, last: this.last };
    this.search.nextRound();
    return this.next(nowMs, random);
  }

  private next(nowMs: number, random: () => number): AttemptAction {
    const remainingMs = this.o.deadlineAtMs - nowMs;
    const address = this.search.next();
    if (address !== undefined && remainingMs > 0) {
      const clipped = remainingMs < this.o.attemptTimeoutMs;
      this.current = { t: 'attempt', address, timeoutMs: clipped ? remainingMs : this.o.attemptTimeoutMs, clipped };
      return this.current;
    }
    if (remainingMs <= 0) return { t: 'give-up', failure: 'exhausted', code: this.lastCode, last: this.last };
    this.paused_ = true;
    const backoffMs = pauseMs(this.search.round - 1, this.o.backoff, random());
    this.pausedToDeadline = backoffMs >= remainingMs;
    return { t: 'pause', pauseMs: Math.min(remainingMs, backoffMs) };
  }
}
