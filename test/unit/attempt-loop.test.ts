// The SDK's attempt loop as a pure step (src/client/attempt-loop.ts), which
// the SDK's connection and the whole-system simulator's client both drive:
// where the next attempt goes, with what bound, when to pause and how long,
// and when the call is done or given up.
import { describe, expect, it } from 'vitest';
import { AttemptLoop, type AttemptAction, type AttemptFailedWith } from '../../src/client/attempt-loop.ts';
import { DEFAULT_BACKOFF } from '../../src/client/retry-policy.ts';
import { LeaderFinder } from '../../src/transport/leader-finder.ts';

const A = 'a:1';
const B = 'b:2';
const C = 'c:3';
const half = (): number => 0.5;
const notLeader = (hint?: string): AttemptFailedWith => ({
  code: 'UNAVAILABLE',
  reason: 'NOT_LEADER',
  why: 'UNAVAILABLE NOT_LEADER',
  hint,
});
const down: AttemptFailedWith = { code: 'UNAVAILABLE', neverConnected: true, why: 'UNAVAILABLE (connection refused)' };
const silent: AttemptFailedWith = { code: 'DEADLINE_EXCEEDED', why: 'DEADLINE_EXCEEDED' };

function loop(o: { deadlineAtMs?: number; attemptTimeoutMs?: number; finder?: LeaderFinder } = {}): AttemptLoop {
  const finder = o.finder ?? new LeaderFinder([A, B, C], { redirectsMax: 3 });
  return new AttemptLoop(finder, {
    deadlineAtMs: o.deadlineAtMs ?? 10_000,
    attemptTimeoutMs: o.attemptTimeoutMs ?? 1_000,
    backoff: DEFAULT_BACKOFF,
  });
}

function at(a: AttemptAction): string {
  return a.t === 'attempt' ? a.address : a.t;
}

describe('the attempt loop', () => {
  it('asks the first address, then the leader a follower names, at once, and is done when it answers', () => {
    const l = loop();
    const first = l.start(0, half);
    expect(first).toEqual({ t: 'attempt', address: A, timeoutMs: 1_000, clipped: false });
    const { failure, next } = l.failed(A, notLeader(C), 10, half);
    expect(failure).toBe('not-acted-on');
    expect(at(next)).toBe(C);
    expect(l.answered(C)).toEqual({ t: 'done', address: C });
  });

  it('remembers the node that answered: the next call on the same finder asks it first', () => {
    const finder = new LeaderFinder([A, B, C], { redirectsMax: 3 });
    const l1 = loop({ finder });
    l1.start(0, half);
    l1.failed(A, down, 0, half);
    l1.answered(B);
    expect(at(loop({ finder }).start(0, half))).toBe(B);
  });

  it('skips a node that is down or silent to the next one not tried, then pauses a jittered backoff after the round', () => {
    const l = loop();
    l.start(0, half);
    expect(l.failed(A, down, 0, half).next).toMatchObject({ t: 'attempt', address: B });
    const silentB = l.failed(B, silent, 1_000, half);
    expect(silentB.failure).toBe('maybe-acted-on');
    expect(at(silentB.next)).toBe(C);
    const end = l.failed(C, down, 1_000, half).next;
    // Round 1's pause: initialMs (50) halved plus half of the rest at random 0.5.
    expect(end).toEqual({ t: 'pause', pauseMs: 37.5 });
    expect(at(l.paused(1_100, half))).toBe(A);
    expect(l.round).toBe(2);
  });

  it('draws its jitter only for a pause, and the pauses grow round by round up to maxMs', () => {
    const l = loop({ deadlineAtMs: 1_000_000, finder: new LeaderFinder([A], { redirectsMax: 3 }) });
    let draws = 0;
    const random = (): number => {
      draws++;
      return 0;
    };
    let a = l.start(0, random);
    const pauses: number[] = [];
    for (let round = 0; round < 8; round++) {
      a = l.failed(A, down, 0, random).next;
      if (a.t !== 'pause') throw new Error(`expected a pause, got ${a.t}`);
      pauses.push(a.pauseMs);
      a = l.paused(0, random);
    }
    expect(draws).toBe(8);
    expect(pauses).toEqual([25, 50, 100, 200, 400, 500, 500, 500]);
  });

  it('clips the last attempt to the call’s deadline, and gives up once it passed, naming the telling failure', () => {
    const l = loop({ deadlineAtMs: 1_500 });
    l.start(0, half);
    const next = l.failed(A, down, 1_000, half).next;
    expect(next).toEqual({ t: 'attempt', address: B, timeoutMs: 500, clipped: true });
    // A clipped attempt's own deadline says nothing about B: the earlier failure stays the one reported.
    expect(l.failed(B, silent, 1_500, half).next).toEqual({
      t: 'give-up',
      failure: 'exhausted',
      code: 'UNAVAILABLE',
      last: `${A}: ${down.why}`,
    });
  });

  it('the pause never runs past the deadline, and a call whose time is up after a pause gives up', () => {
    const l = loop({ deadlineAtMs: 1_010, finder: new LeaderFinder([A], { redirectsMax: 3 }) });
    l.start(0, half);
    expect(l.failed(A, down, 1_000, () => 0.99).next).toEqual({ t: 'pause', pauseMs: 10 });
    expect(l.paused(1_010, half)).toMatchObject({ t: 'give-up', failure: 'exhausted' });
    // A timer that fires a millisecond early (the clock reads 1,009) ends the call too: no 1 ms attempt.
    const early = loop({ deadlineAtMs: 1_010, finder: new LeaderFinder([A], { redirectsMax: 3 }) });
    early.start(0, half);
    expect(early.failed(A, down, 1_000, () => 0.99).next).toEqual({ t: 'pause', pauseMs: 10 });
    expect(early.paused(1_009, half)).toMatchObject({ t: 'give-up', failure: 'exhausted' });
  });

  it('gives up at once on the cluster’s refusal or a failure that is not retried, and asks no other node', () => {
    for (const [f, want] of [
      [{ code: 'INVALID_ARGUMENT', why: 'INVALID_ARGUMENT' }, 'refused'],
      [{ code: 'ALREADY_EXISTS', reason: 'ALREADY_DECIDED', why: 'ALREADY_EXISTS' }, 'refused'],
      [{ code: 'INTERNAL', why: 'INTERNAL' }, 'failed'],
    ] as const) {
      const l = loop();
      l.start(0, half);
      const { failure, next } = l.failed(A, f, 0, half);
      expect(failure).toBe(want);
      expect(next).toMatchObject({ t: 'give-up', failure: want, code: f.code });
    }
  });

  it('follows at most redirectsMax hints a round: two stale followers cannot bounce a call forever', () => {
    const l = loop({ finder: new LeaderFinder([A, B], { redirectsMax: 2 }) });
    let a = l.start(0, half);
    const asked: string[] = [];
    for (let i = 0; i < 6 && a.t === 'attempt'; i++) {
      asked.push(a.address);
      a = l.failed(a.address, notLeader(a.address === A ? B : A), 0, half).next;
    }
    expect(asked).toEqual([A, B, A]);
    expect(a.t).toBe('pause');
  });

  it('takes the answer or failure only of the attempt in flight', () => {
    const l = loop();
    l.start(0, half);
    expect(() => l.answered(B)).toThrow(/attempt in flight/);
    expect(() => l.paused(0, half)).toThrow(/pause ends only after one began/);
  });
});
