// Results-file pieces for the benchmark's summary and report tests: a latency
// summary from its p50, and a scenario with every field set.
import type { LatencySummary } from '../../bench/harness/hist.ts';
import type { Scenario } from '../../bench/report/results.ts';

/** A latency summary whose percentiles are multiples of its p50 (µs). */
export const lat = (p50: number): LatencySummary => ({
  count: 100,
  p50_us: p50,
  p90_us: p50 * 2,
  p99_us: p50 * 3,
  p999_us: p50 * 4,
  max_us: p50 * 5,
  mean_us: p50,
});

/**
 * A 3-node, 2-participant commit scenario (a raw-log one when the id starts with "raw"), p50 10 ms unless `p50` says
 * otherwise; `o` overrides any field.
 */
export function benchScenario(id: string, o: Partial<Scenario> & { p50?: number } = {}): Scenario {
  const { p50 = 10_000, ...fields } = o;
  const { count: _count, ...l } = lat(p50);
  return {
    id,
    kind: id.startsWith('raw') ? 'raw' : 'commit',
    nodes: 3,
    participants: 2,
    resource: 'memory',
    clients: 1,
    warmup_ms: 1,
    measure_ms: 1,
    tps: 100,
    ok: 1,
    aborted: 0,
    errors: {},
    ...l,
    txn_p50_us: null,
    txn_p99_us: null,
    leader_changes: 0,
    histogram: '',
    ...fields,
  };
}
