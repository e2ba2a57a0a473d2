// The one leader finder (src/transport/leader-finder.ts): the policy without
// I/O, and the async loop every caller but the SDK runs it in.
import { describe, expect, it } from 'vitest';
import { callLeader, LeaderFinder, namedLeader, NoLeaderError } from '../../src/transport/leader-finder.ts';

/** A scripted cluster: each address answers, names a leader, or fails; records the order of attempts. */
function cluster(script: Record<string, 'ok' | 'down' | { leader: string } | 'refused'>) {
  const tried: string[] = [];
  const attempt = async (address: string): Promise<string> => {
    tried.push(address);
    const a = script[address] ?? 'down';
    if (a === 'ok') return `answer from ${address}`;
    if (a === 'refused') throw Object.assign(new Error('invalid argument'), { code: 3 });
    const md = new Map<string, string[]>(typeof a === 'object' ? [['verdict-leader-address', [a.leader]]] : []);
    throw Object.assign(new Error(typeof a === 'object' ? 'not the leader' : 'connection refused'), {
      code: 14,
      metadata: { get: (k: string) => md.get(k) ?? [] },
    });
  };
  const retryable = (err: unknown) =>
    (err as { code: number }).code === 14 ? { why: (err as Error).message, hint: namedLeader(err) } : null;
  return { tried, attempt, retryable };
}

const noPause = { pauseMs: () => 0, sleep: async () => {} };

describe('leader finder', () => {
  it('follows the leader a follower names, and asks it first on the next call', async () => {
    const c = cluster({ 'a:1': { leader: 'b:2' }, 'b:2': 'ok' });
    const f = new LeaderFinder(['a:1', 'c:3'], { redirectsMax: 3 });
    expect(await callLeader(f, c.attempt, { retryable: c.retryable, roundsMax: 1, ...noPause })).toBe(
      'answer from b:2',
    );
    expect(c.tried).toEqual(['a:1', 'b:2']);
    expect(f.leader).toBe('b:2');
    expect(f.addresses).toEqual(['a:1', 'c:3', 'b:2']);
    await callLeader(f, c.attempt, { retryable: c.retryable, roundsMax: 1, ...noPause });
    expect(c.tried).toEqual(['a:1', 'b:2', 'b:2']);
  });

  it('skips unreachable endpoints in order, and surfaces an answer that is not "try elsewhere" at once', async () => {
    const c = cluster({ 'a:1': 'down', 'b:2': 'down', 'c:3': 'ok' });
    const f = new LeaderFinder(['a:1', 'b:2', 'c:3'], { redirectsMax: 3 });
    expect(await callLeader(f, c.attempt, { retryable: c.retryable, roundsMax: 1, ...noPause })).toBe(
      'answer from c:3',
    );
    expect(c.tried).toEqual(['a:1', 'b:2', 'c:3']);
    const r = cluster({ 'a:1': 'down', 'b:2': 'refused' });
    await expect(
      callLeader(new LeaderFinder(['a:1', 'b:2'], { redirectsMax: 3 }), r.attempt, {
        retryable: r.retryable,
        roundsMax: 3,
        ...noPause,
      }),
    ).rejects.toThrow('invalid argument');
    expect(r.tried).toEqual(['a:1', 'b:2']);
  });

  it('bounds attempts: redirects per round, rounds per call, and hints that are not addresses', async () => {
    // Two followers naming each other: one round is the first address, three redirects, then no untried address.
    const c = cluster({ 'x:1': { leader: 'y:2' }, 'y:2': { leader: 'x:1' } });
    const pauses: number[] = [];
    const err = await callLeader(new LeaderFinder(['x:1'], { redirectsMax: 3 }), c.attempt, {
      retryable: c.retryable,
      roundsMax: 2,
      pauseMs: (round) => round * 10,
      sleep: async (ms) => void pauses.push(ms),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NoLeaderError);
    expect(c.tried).toEqual(['x:1', 'y:2', 'x:1', 'y:2', 'x:1', 'y:2', 'x:1', 'y:2']);
    expect(pauses).toEqual([10]);
    const bad = cluster({ 'a:1': { leader: 'not an address' } });
    const f = new LeaderFinder(['a:1'], { redirectsMax: 3 });
    await expect(
      callLeader(f, bad.attempt, { retryable: bad.retryable, roundsMax: 1, ...noPause }),
    ).rejects.toBeInstanceOf(NoLeaderError);
    expect(bad.tried).toEqual(['a:1']);
    expect(f.addresses).toEqual(['a:1']);
  });

  it('gives up with one line naming every endpoint tried and why, at the rounds or the instant given', async () => {
    const c = cluster({ 'a:1': 'down', 'b:2': { leader: 'a:1' } });
    const err = (await callLeader(new LeaderFinder(['a:1', 'b:2'], { redirectsMax: 0 }), c.attempt, {
      retryable: c.retryable,
      roundsMax: 1,
      ...noPause,
    }).catch((e: unknown) => e)) as NoLeaderError;
    expect(err.message).toBe('no node answered: tried a:1 (connection refused), b:2 (not the leader)');
    expect([...err.failures.keys()]).toEqual(['a:1', 'b:2']);
    expect((err.last as Error).message).toBe('not the leader');
    let nowMs = 0;
    const slow = cluster({});
    const timed = callLeader(
      new LeaderFinder(['a:1', 'b:2'], { redirectsMax: 3 }),
      async (a) => {
        nowMs += 60;
        return slow.attempt(a);
      },
      { retryable: slow.retryable, roundsMax: 1_000, giveUpAtMs: 100, nowMs: () => nowMs, ...noPause },
    );
    await expect(timed).rejects.toThrow(
      /^no node answered: tried a:1 \(connection refused\), b:2 \(connection refused\)$/,
    );
    expect(slow.tried).toEqual(['a:1', 'b:2']);
  });

  it('refuses an empty endpoint list', () => {
    expect(() => new LeaderFinder([], { redirectsMax: 3 })).toThrow(/at least one endpoint/);
  });
});
