// The console's charts keep 15 minutes of samples taken every 5 s: rates
// from counter deltas, p50/p99 from bounded latency buckets, a bounded ring.
import { describe, expect, it } from 'vitest';
import { CHART_EVERY_MS, CHART_WINDOW_MS, CommitCharts } from '../../src/console/charts.ts';

const counters = (committed: number, aborted: Record<string, number> = {}) => ({
  committed,
  aborted,
  inDoubt: 1,
  unacked: 2,
  leader: true,
});

describe('console charts', () => {
  it('turns counter deltas into rates per second, and aborts by reason per interval', () => {
    const c = new CommitCharts();
    c.sample(0, counters(100, { timeout: 3 }));
    expect(c.list()).toEqual([]);
    c.sample(5_000, counters(150, { timeout: 5, participant_no: 1 }));
    const [s] = c.list();
    expect(s).toMatchObject({
      atMs: 5_000,
      commitsPerS: 10,
      aborts: { timeout: 2, participant_no: 1 },
      inDoubt: 1,
      unacked: 2,
      leader: true,
      p50Ms: null,
      p99Ms: null,
    });
  });

  it('begun at zero, counts in the first sample what happened before it', () => {
    const c = new CommitCharts();
    c.begin(0);
    c.observeLatency(3);
    c.sample(5_000, counters(20, { timeout: 1 }));
    expect(c.list()[0]).toMatchObject({ commitsPerS: 4, aborts: { timeout: 1 } });
    expect(c.list()[0]?.p50Ms).not.toBeNull();
  });

  it('reads p50 and p99 from the interval latencies, each within one bucket (25 %) above the true value', () => {
    const c = new CommitCharts();
    c.sample(0, counters(0));
    for (let i = 1; i <= 100; i++) c.observeLatency(i);
    c.sample(5_000, counters(100));
    const [s] = c.list();
    expect(s?.p50Ms).toBeGreaterThanOrEqual(50);
    expect(s?.p50Ms).toBeLessThanOrEqual(50 * 1.25);
    expect(s?.p99Ms).toBeGreaterThanOrEqual(99);
    expect(s?.p99Ms).toBeLessThanOrEqual(99 * 1.25);
    // The next interval starts empty.
    c.sample(10_000, counters(100));
    expect(c.list()[1]?.p50Ms).toBeNull();
  });

  it('keeps 15 minutes of samples, the oldest leaving first; a counter that went back counts from zero', () => {
    const c = new CommitCharts();
    const n = CHART_WINDOW_MS / CHART_EVERY_MS;
    for (let i = 0; i <= n + 20; i++) c.sample(i * CHART_EVERY_MS, counters(i));
    const all = c.list();
    expect(all.length).toBe(n);
    expect(all[0]?.atMs).toBe(21 * CHART_EVERY_MS);
    c.sample((n + 21) * CHART_EVERY_MS, counters(5));
    expect(c.list().at(-1)?.commitsPerS).toBe(1);
  });
});
