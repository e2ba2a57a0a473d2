// The PostgreSQL figures of the benchmark: the shop/ledger statements both
// drivers send, ratios.pg_through_verdict_over_direct, and the report's
// PostgreSQL section (bench/harness/pg-workload.ts, bench/report/results.ts, bench/report/report.ts).
import { describe, expect, it } from 'vitest';
import type { PgDirectFloor } from '../../bench/floors/pg.ts';
import { accountOf, ACCOUNTS_PER_CLIENT, ledgerStatement, shopStatement } from '../../bench/harness/pg-workload.ts';
import { markdown } from '../../bench/report/report.ts';
import { commitId, pgCommitId, summaryKeys, type Results, type Scenario } from '../../bench/report/results.ts';
import { benchScenario, lat } from './bench-fixture.ts';

const scenario = (id: string, resource: Scenario['resource'], clients: number, tps: number): Scenario =>
  benchScenario(id, { resource, clients, tps, txn_p50_us: 12_000, txn_p99_us: 30_000 });

function direct(connections: number, tps: number): PgDirectFloor {
  return {
    ...lat(2_000),
    connections,
    tps,
    ok: 10,
    errors: {},
    measure_ms: 1_000,
    leftover_prepared: 0,
    histogram: '',
  };
}

const machineFloors = {
  fsync_200B: lat(1_000),
  grpc_unary_rtt: lat(200),
  grpc_bidi_rtt: lat(150),
  grpc_client_streams_rtt: lat(180),
};

describe('bench PostgreSQL workload', () => {
  it('gives every client accounts of its own, cycled in turn', () => {
    const a0 = new Set(Array.from({ length: 8 }, (_, seq) => accountOf(0, seq)));
    const a1 = new Set(Array.from({ length: 8 }, (_, seq) => accountOf(1, seq)));
    expect(a0.size).toBe(ACCOUNTS_PER_CLIENT);
    expect([...a0].filter((a) => a1.has(a))).toEqual([]);
    expect(() => accountOf(-1, 0)).toThrow(/outside/);
  });

  it('builds the order insert and the balance debit, refusing text it would have to quote', () => {
    expect(shopStatement('r1-s0-w3-7', 'acct-12')).toBe(
      "INSERT INTO orders (id, account, amount_cents) VALUES ('r1-s0-w3-7', 'acct-12', 1)",
    );
    expect(ledgerStatement('acct-12')).toBe(
      "UPDATE accounts SET balance_cents = balance_cents - 1 WHERE id = 'acct-12'",
    );
    expect(() => shopStatement("x'; DROP TABLE orders; --", 'acct-1')).toThrow(/characters/);
  });
});

describe('bench summary keys with PostgreSQL', () => {
  const scenarios = [
    scenario(commitId(3, 2, 16), 'memory', 16, 300),
    scenario(pgCommitId(3, 1), 'postgres', 1, 50),
    scenario(pgCommitId(3, 16), 'postgres', 16, 700),
  ];

  it('ratios.pg_through_verdict_over_direct is throughput through Verdict at 16 clients over the direct floor at 16 connections', () => {
    const k = summaryKeys(scenarios, {
      ...machineFloors,
      pg_direct_1: direct(1, 500),
      pg_direct_16: direct(16, 1_000),
    });
    expect(k.ratios.pg_through_verdict_over_direct).toBe(0.7);
    expect(k.peak_tps.nodes3_pg2_c16).toBe(700);
    expect(k.peak_tps.pg_direct_16).toBe(1_000);
    // PostgreSQL scenarios are not memory ones: the memory peak ignores them.
    expect(k.peak_tps.nodes3_memory2).toBe(300);
  });

  it('is null when PostgreSQL was not measured', () => {
    const k = summaryKeys(scenarios.slice(0, 1), { ...machineFloors, pg_direct_1: null, pg_direct_16: null });
    expect(k.ratios.pg_through_verdict_over_direct).toBeNull();
  });
});

describe('bench report with PostgreSQL', () => {
  const base = (pg: boolean): Results => {
    const floors = {
      ...machineFloors,
      pg_direct_1: pg ? direct(1, 500) : null,
      pg_direct_16: pg ? direct(16, 1_000) : null,
    };
    const scenarios = pg
      ? [scenario(commitId(3, 2, 1), 'memory', 1, 40), scenario(pgCommitId(3, 16), 'postgres', 16, 700)]
      : [scenario(commitId(3, 2, 1), 'memory', 1, 40)];
    return {
      schema: 1,
      started_at: '2026-01-01T00:00:00.000Z',
      finished_at: '2026-01-01T00:01:00.000Z',
      elapsed_s: 60,
      machine: {
        cpu: 'cpu',
        cores: 2,
        memoryGiB: 4,
        os: 'Linux',
        node: 'v20',
        disk: 'ext4',
        commit: 'abc',
        load_avg_start: 0,
        load_avg_end: 0,
      },
      settings: {
        mode: 'quick',
        warmup_ms: 1,
        measure_ms: 1,
        raw_measure_ms: 1,
        cluster_sizes: [3],
        concurrency: [1, 16],
        participant_sweep: [1],
        participant_sweep_clients: [1],
        raw_sizes: [],
        failover_runs: 0,
        node_timing: { tickMs: 100, electionTicks: 10, heartbeatTicks: 1, snapshotEntries: 10_000 },
        payload: 'p',
      },
      floors,
      pg: pg ? null : { skipped: 'no PostgreSQL here' },
      scenarios,
      failover: {
        method: 'm',
        runs: [],
        in_doubt_pairs: 0,
        in_doubt_p50_ms: null,
        in_doubt_p99_ms: null,
        in_doubt_max_ms: null,
        in_doubt_window_ms_per_run: [],
        cluster_in_doubt_window_ms_per_run: [],
        client_gap_ms_per_run: [],
        election_ms_per_run: [],
        still_in_doubt: 0,
        decided_rolled_back: 0,
      },
      ...summaryKeys(scenarios, floors),
    };
  };

  it('puts the direct floor and the through-Verdict figures side by side, with the ratio', () => {
    const md = markdown(base(true), 'x.json');
    expect(md).toContain('## PostgreSQL: through Verdict and driven directly');
    expect(md).toMatch(/\| direct, 16 connections per database \| 1000 \| 2\.00 \|/);
    expect(md).toMatch(/\| through Verdict, 3 nodes, 16 clients \| 700 \| 10\.00 \|/);
    expect(md).toContain('(`ratios.pg_through_verdict_over_direct`): **0.7×**');
    expect(md).toContain('`floors.pg_direct_16`, 1000 tx/s');
    // The memory tables keep to memory scenarios.
    const memoryTable = md.slice(
      md.indexOf('## Commit latency and throughput'),
      md.indexOf('## Participants per transaction'),
    );
    expect(memoryTable).not.toContain('| 700 |');
  });

  it('says why when PostgreSQL was skipped', () => {
    const md = markdown(base(false), 'x.json');
    expect(md).toContain('Not measured in this run: no PostgreSQL here.');
    expect(md).toContain('– (no PostgreSQL here)');
  });
});
