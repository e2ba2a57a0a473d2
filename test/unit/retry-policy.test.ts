// The SDK's retry rule (src/client/retry-policy.ts), which the real SDK and
// the whole-system simulator's client both follow.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BeginRule,
  classifyFailure,
  DEFAULT_BACKOFF,
  pauseMs,
  retryable,
  type AttemptFailure,
} from '../../src/client/retry-policy.ts';

describe('classifyFailure: what one failed attempt says', () => {
  it.each<[string, Parameters<typeof classifyFailure>[0], AttemptFailure]>([
    ['a follower (NOT_LEADER)', { code: 'UNAVAILABLE', reason: 'NOT_LEADER' }, 'not-acted-on'],
    ['no leader yet (NO_LEADER)', { code: 'UNAVAILABLE', reason: 'NO_LEADER' }, 'not-acted-on'],
    ['a connection never made', { code: 'UNAVAILABLE', neverConnected: true }, 'not-acted-on'],
    ['a stream cut mid-way', { code: 'UNAVAILABLE' }, 'maybe-acted-on'],
    [
      'a leader that lost its leadership (UNKNOWN_OUTCOME)',
      { code: 'DEADLINE_EXCEEDED', reason: 'UNKNOWN_OUTCOME' },
      'maybe-acted-on',
    ],
    ['a silent node (deadline)', { code: 'DEADLINE_EXCEEDED' }, 'maybe-acted-on'],
    ['an unregistered participant', { code: 'INVALID_ARGUMENT' }, 'refused'],
    ['a decided id begun again', { code: 'ALREADY_EXISTS', reason: 'ALREADY_DECIDED' }, 'refused'],
    ['a full queue', { code: 'RESOURCE_EXHAUSTED' }, 'refused'],
    ['an internal error', { code: 'INTERNAL' }, 'failed'],
    ['a cancelled call', { code: 'CANCELLED' }, 'failed'],
  ])('%s', (_what, attempt, want) => {
    expect(classifyFailure(attempt)).toBe(want);
  });

  it('only what another node may still answer is retried', () => {
    expect((['refused', 'not-acted-on', 'maybe-acted-on', 'failed'] as const).filter(retryable)).toEqual([
      'not-acted-on',
      'maybe-acted-on',
    ]);
  });
});

describe('BeginRule: begin rides along only while no attempt may have reached a leader', () => {
  it('R2: a transaction begun with Begin never sends begin', () => {
    const r = new BeginRule(true);
    expect(r.begins).toBe(false);
    r.attempted('not-acted-on');
    expect(r.begins).toBe(false);
  });

  it('R2: redirects and refusals keep begin; an attempt of unknown fate or an answer drops it for good', () => {
    const r = new BeginRule(false);
    r.attempted('not-acted-on');
    r.attempted('refused');
    expect(r.begins).toBe(true);
    r.attempted('maybe-acted-on');
    expect(r.begins).toBe(false);
    // A refusal after an attempt that may have begun it does not bring begin back.
    r.attempted('refused');
    r.attempted('not-acted-on');
    expect(r.begins).toBe(false);
  });

  it('R2: against a reference, for any sequence of attempts', () => {
    const results = fc.constantFrom<'answered' | AttemptFailure>(
      'answered',
      'refused',
      'not-acted-on',
      'maybe-acted-on',
      'failed',
    );
    fc.assert(
      fc.property(fc.array(results, { maxLength: 12 }), (seq) => {
        const r = new BeginRule(false);
        for (const x of seq) r.attempted(x);
        expect(r.begins).toBe(seq.every((x) => x === 'refused' || x === 'not-acted-on'));
      }),
    );
  });
});

describe('pauseMs: capped exponential backoff with equal jitter', () => {
  it('is at least half the cap and at most the cap, which doubles up to maxMs', () => {
    fc.assert(
      fc.property(fc.nat(40), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (round, random) => {
        const capMs = Math.min(DEFAULT_BACKOFF.maxMs, DEFAULT_BACKOFF.initialMs * 2 ** round);
        const p = pauseMs(round, DEFAULT_BACKOFF, random);
        expect(p).toBeGreaterThanOrEqual(capMs / 2);
        expect(p).toBeLessThanOrEqual(capMs);
      }),
    );
    expect(pauseMs(0, DEFAULT_BACKOFF, 0)).toBe(25);
    expect(pauseMs(10, DEFAULT_BACKOFF, 0)).toBe(500);
  });
});
