// The MySQL/MariaDB part of the benchmark's summary (bench/report/results.ts,
// bench/report/report.ts): ratios.mysql_through_verdict_over_direct and the report's
// line for it, measured or skipped.
import { describe, expect, it } from 'vitest';
import type { PgDirectFloor } from '../../bench/floors/pg.ts';
import { markdown } from '../../bench/report/report.ts';
import { mysqlCommitId, pgCommitId, summaryKeys, type Results, type Scenario } from '../../bench/report/results.ts';
import { benchScenario, lat } from './bench-fixture.ts';

const machineFloors = {
  fsync_200B: lat(1_000),
  grpc_unary_rtt: lat(200),
  grpc_bidi_rtt: lat(150),
  grpc_client_streams_rtt: lat(180),
};

const scenario = (id: string, resource: Scenario['resource'], tps: number): Scenario =>
  benchScenario(id, { resource, clients: 16, tps });

const direct = (tps: number): PgDirectFloor => ({
  ...lat(2_000),
  connections: 16,
  tps,
  ok: 10,
  errors: {},
  measure_ms: 1_000,
  leftover_prepared: 0,
  histogram: '',
});

describe('bench summary keys with MySQL/MariaDB', () => {
  const scenarios = [
    scenario(pgCommitId(3, 16), 'postgres', 700),
    scenario(mysqlCommitId(3, 16), 'postgres+mysql', 450),
  ];

  it('ratios.mysql_through_verdict_over_direct is the pgmysql scenario at 16 clients over floors.mysql_direct_16, apart from the PostgreSQL ratio', () => {
    const k = summaryKeys(scenarios, {
      ...machineFloors,
      pg_direct_1: null,
      pg_direct_16: direct(1_000),
      mysql_direct_16: direct(600),
    });
    expect(k.ratios.mysql_through_verdict_over_direct).toBe(0.75);
    expect(k.ratios.pg_through_verdict_over_direct).toBe(0.7);
    expect(k.peak_tps).toMatchObject({ nodes3_pgmysql_c16: 450, mysql_direct_16: 600 });
  });

  it('is null when MariaDB was not measured (no floor, or an older results file without the key)', () => {
    expect(
      summaryKeys(scenarios, { ...machineFloors, pg_direct_1: null, pg_direct_16: null, mysql_direct_16: null }).ratios
        .mysql_through_verdict_over_direct,
    ).toBeNull();
    expect(
      summaryKeys(scenarios, { ...machineFloors, pg_direct_1: null, pg_direct_16: null }).ratios
        .mysql_through_verdict_over_direct,
    ).toBeNull();
  });

  it('the report shows the ratio, or why MariaDB was skipped', () => {
    const floors = { ...machineFloors, pg_direct_1: null, pg_direct_16: direct(1_000), mysql_direct_16: direct(600) };
    const results = (mysql: Results['mysql']): Results =>
      ({
        schema: 1,
        started_at: '2026-11-30T00:00:00Z',
        finished_at: '2026-11-30T00:10:00Z',
        elapsed_s: 600,
        machine: {
          cpu: 'x',
          cores: 2,
          memoryGiB: 4,
          os: 'linux',
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
          concurrency: [16],
          participant_sweep: [2],
          participant_sweep_clients: [1],
          raw_sizes: [3],
          failover_runs: 1,
          node_timing: { tickMs: 1, electionTicks: 1, heartbeatTicks: 1, snapshotEntries: 1 },
          payload: '',
        },
        floors,
        pg: null,
        mysql,
        scenarios,
        failover: {
          method: '',
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
        ...summaryKeys(scenarios, mysql === null ? floors : { ...floors, mysql_direct_16: null }),
      }) as Results;
    expect(markdown(results(null), 'latest.json')).toMatch(
      /\(`ratios\.mysql_through_verdict_over_direct`\): \*\*0\.75×\*\*/,
    );
    expect(markdown(results({ skipped: 'no MariaDB server binary' }), 'latest.json')).toMatch(
      /\(`ratios\.mysql_through_verdict_over_direct`\): \*\*– \(no MariaDB server binary\)\*\*/,
    );
  });
});
