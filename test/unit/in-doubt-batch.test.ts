// Batched in-doubt questions (src/participant/in-doubt.ts with askOutcomes):
// after the leader that prepared thousands of transactions dies, a
// participant asks one question per round (up to askBatchMax ids), not one
// per transaction, and still resolves every transaction and nothing else.
import { describe, expect, it } from 'vitest';
import { ASK_BATCH_MAX, InDoubtResolver, URGENT_ASK_INTERVAL_MS } from '../../src/participant/in-doubt.ts';
import type { AskedOutcome, ClusterOutcome, Outcome } from '../../src/participant/types.ts';

/** Timers on virtual time, fired in order of due time, then of scheduling. */
class Clock {
  nowMs = 0;
  private seq = 0;
  private timers: { atMs: number; seq: number; fn: () => void }[] = [];
  schedule = (delayMs: number, fn: () => void): (() => void) => {
    const t = { atMs: this.nowMs + delayMs, seq: this.seq++, fn };
    this.timers.push(t);
    return () => {
      this.timers = this.timers.filter((x) => x !== t);
    };
  };
  runUntil(endMs: number): void {
    for (;;) {
      this.timers.sort((a, b) => a.atMs - b.atMs || a.seq - b.seq);
      const t = this.timers[0];
      if (t === undefined || t.atMs > endMs) break;
      this.timers.shift();
      this.nowMs = t.atMs;
      t.fn();
    }
    this.nowMs = endMs;
  }
}

const silent = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * `leaderAtMs`: questions before it fail as a follower with no leader would; after it every id is answered
 * `outcome(id)`.
 */
function world(n: number, leaderAtMs: number, outcome: (txnId: string) => ClusterOutcome | Error, batched: boolean) {
  const clock = new Clock();
  const prepared = new Set(Array.from({ length: n }, (_, i) => `t${i}`));
  const applied = new Map<string, Outcome>();
  const questions: string[][] = [];
  const answerOne = (txnId: string): AskedOutcome => {
    const o = outcome(txnId);
    return o instanceof Error ? { err: o, outcome: 'UNKNOWN' } : { err: null, outcome: o };
  };
  const r = new InDoubtResolver({
    schedule: clock.schedule,
    log: silent,
    askBackoffMinMs: 100,
    askBackoffMaxMs: 10_000,
    asksInFlightMax: 64,
    isPrepared: (id) => prepared.has(id),
    apply: (id, o, cb) => {
      prepared.delete(id);
      applied.set(id, o);
      cb(null);
    },
    askOutcome: (id, cb) => {
      questions.push([id]);
      // Answers come back a millisecond later, as from a socket.
      clock.schedule(1, () => {
        if (clock.nowMs < leaderAtMs) return cb(new Error('UNAVAILABLE: no leader is known yet'), 'UNKNOWN');
        const a = answerOne(id);
        cb(a.err, a.outcome);
      });
    },
    ...(batched
      ? {
          askOutcomes: (ids: string[], cb: (err: Error | null, answers: Map<string, AskedOutcome>) => void) => {
            questions.push(ids);
            clock.schedule(1, () => {
              if (clock.nowMs < leaderAtMs) return cb(new Error('UNAVAILABLE: no leader is known yet'), new Map());
              cb(null, new Map(ids.map((id) => [id, answerOne(id)])));
            });
          },
        }
      : {}),
  });
  return { clock, prepared, applied, questions, r };
}

describe('in-doubt questions, batched (GetOutcomes)', () => {
  it('2,000 transactions in doubt for 600 ms: one question per round of at most ASK_BATCH_MAX ids, every transaction resolved', () => {
    const w = world(2_000, 600, () => 'ABORTED', true);
    for (const id of [...w.prepared]) w.r.resolve(id, true);
    w.clock.runUntil(2_000);
    expect(w.applied.size).toBe(2_000);
    expect([...w.applied.values()].every((o) => o === 'ABORTED')).toBe(true);
    for (const q of w.questions) expect(q.length).toBeLessThanOrEqual(ASK_BATCH_MAX);
    // About 600 / URGENT_ASK_INTERVAL_MS rounds of ceil(2,000 / ASK_BATCH_MAX) questions, plus the answered round.
    const perRound = Math.ceil(2_000 / ASK_BATCH_MAX);
    expect(w.questions.length).toBeLessThanOrEqual((Math.ceil(600 / URGENT_ASK_INTERVAL_MS) + 2) * perRound);
    expect(w.r.size).toBe(0);
  });

  it('asked one by one, the same doubt costs a question per transaction per round (what the batch saves)', () => {
    const w = world(2_000, 600, () => 'ABORTED', false);
    for (const id of [...w.prepared]) w.r.resolve(id, true);
    w.clock.runUntil(2_000);
    expect(w.applied.size).toBe(2_000);
    expect(w.questions.length).toBeGreaterThan(10 * Math.ceil(2_000 / ASK_BATCH_MAX) * 7);
  });

  it('an id answered with an error or "in progress" is asked again in a later question; the decided ones are not', () => {
    let refusals = 3;
    const w = world(
      10,
      0,
      (id) => {
        if (id === 't3' && refusals-- > 0) return new Error('UNAVAILABLE: not the leader');
        if (id === 't7' && refusals > 0) return 'IN_PROGRESS';
        return id === 't5' ? 'COMMITTED' : 'ABORTED';
      },
      true,
    );
    for (const id of [...w.prepared]) w.r.resolve(id, true);
    w.clock.runUntil(5_000);
    expect(w.applied.size).toBe(10);
    expect(w.applied.get('t5')).toBe('COMMITTED');
    const later = w.questions.slice(1).flat();
    expect(later).toContain('t3');
    expect(later).toContain('t7');
    expect(later).not.toContain('t0');
    expect(w.questions[0].length).toBe(10);
  });

  it('a transaction settled by a DECISION meanwhile is left out of the next question', () => {
    const w = world(3, 300, () => 'ABORTED', true);
    for (const id of [...w.prepared]) w.r.resolve(id, true);
    w.clock.runUntil(50);
    w.prepared.delete('t1');
    w.r.finish('t1');
    w.clock.runUntil(1_000);
    expect(w.questions.slice(1).flat()).not.toContain('t1');
    expect([...w.applied.keys()].sort()).toEqual(['t0', 't2']);
  });
});
