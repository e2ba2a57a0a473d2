// CPU per transaction in the benchmark: the window sampler (bench/harness/cpu-sample.ts),
// the bounds computed from it (bench/report/results.ts cpuBounds) and the report's
// targets table (bench/report/report.ts boundsSection).
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CpuWindow, cpuMsOf, type CpuFigures } from '../../bench/harness/cpu-sample.ts';
import type { Child } from '../../bench/harness/procs.ts';
import { boundsSection } from '../../bench/report/report.ts';
import { commitId, cpuBounds, mysqlCommitId, pgCommitId, rawId, type Results } from '../../bench/report/results.ts';
import { benchScenario, lat } from './bench-fixture.ts';

function cpu(msPerTxn: number, byKind: CpuFigures['by_kind'] = {}): CpuFigures {
  return {
    ms_per_txn: msPerTxn,
    sys_ms_per_txn: 0,
    by_kind: byKind,
    by_process: [],
    cores: 2,
    ceiling_tps: Math.round(2_000 / msPerTxn),
    busy: 0.9,
  };
}

const scenario = benchScenario;

const floors = {
  fsync_200B: lat(300),
  fsync_200B_x3: { p50_us: 400, p50_us_each: [400, 400, 400], p99_us_each: [900, 900, 900] },
  grpc_unary_rtt: lat(200),
  grpc_bidi_rtt: lat(50),
  grpc_client_streams_rtt: lat(60),
  flush_pattern: {
    classic1: lat(1_000),
    classic3: lat(1_300),
    parallel3: lat(900),
    parallel3_one_sync: lat(550),
    participants1: lat(300),
    participants16: lat(4_500),
  },
  fanout: {
    participants1: lat(1_000),
    participantsN: lat(5_000),
    n: 16,
    classic1: lat(2_000),
    classic3: lat(2_600),
    parallel3: lat(2_100),
    raft3: lat(2_200),
    raft3_one_sync: lat(1_700),
    raft3_client: lat(2_600),
    participant_cpu_us_per_txn: 500,
    coordinator_cpu_us_per_message: 80,
  },
};

describe('CpuWindow', () => {
  it('samples a busy process over exactly the window the marks bound, per committed transaction', async () => {
    // A real child that spins until it is killed: its CPU must show up between the marks.
    const proc = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    try {
      const pid = proc.pid ?? 0;
      expect(cpuMsOf(pid)).not.toBeNull();
      const child = { label: 'spinner', proc, exited: new Promise(() => {}), logFile: '' } as unknown as Child;
      const w = new CpuWindow(() => []);
      expect(w.figures(10)).toBeNull(); // never opened
      w.onLine('window open', child);
      // Until the spinner has had 60 ms of CPU inside the window (bounded: a busy machine may give it little).
      const cpuMs = (): number => {
        const s = cpuMsOf(pid);
        return s === null ? 0 : s.user + s.sys;
      };
      const openedAt = cpuMs();
      for (let i = 0; i < 200 && cpuMs() - openedAt < 60; i++) await new Promise((r) => setTimeout(r, 100));
      w.onLine('window closed', child);
      expect(w.figures(0)).toBeNull(); // nothing committed: no per-transaction figure
      const f = w.figures(10);
      expect(f).not.toBeNull();
      // The spinner had at least 60 ms of CPU inside the window, over 10 "transactions".
      expect(f?.by_kind.loadgen ?? 0).toBeGreaterThan(5);
      expect(f?.busy ?? 0).toBeGreaterThan(0);
      expect(f?.ms_per_txn).toBe(f?.by_kind.loadgen);
      expect(f?.by_process.map((p) => p.label)).toEqual(['loadgen']);
      expect(f?.ceiling_tps).toBe(Math.round(((f?.cores ?? 0) * 1000) / (f?.ms_per_txn ?? 1)));
    } finally {
      proc.kill('SIGKILL');
    }
  });

  it('ignores a close before any open and a second open', () => {
    const w = new CpuWindow(() => [{ kind: 'leader', label: 'self', pid: process.pid }]);
    const child = { label: 'x', proc: { pid: process.ppid } } as unknown as Child;
    w.onLine('window closed', child);
    expect(w.figures(1)).toBeNull();
    w.onLine('window open', child);
    w.onLine('window open', child);
    w.onLine('window closed', child);
    expect(w.figures(1)?.by_process.map((p) => p.kind)).toEqual(['leader', 'loadgen']);
  });
});

describe('cpuBounds', () => {
  const scenarios = [
    scenario(commitId(1, 2, 1), { nodes: 1, p50: 3_000, cpu: cpu(2) }),
    scenario(commitId(3, 2, 1), { p50: 5_000, cpu: cpu(4) }),
    scenario(commitId(3, 2, 64), { p50: 20_000, clients: 64, tps: 2_000, cpu: cpu(0.8) }),
    scenario(commitId(3, 2, 256), { p50: 90_000, clients: 256, tps: 1_900, cpu: cpu(0.5) }),
    scenario(commitId(3, 2, 1, true), { p50: 4_000, cpu: cpu(4.5) }),
    scenario(commitId(3, 1, 1), { participants: 1, p50: 4_000, cpu: cpu(3) }),
    scenario(commitId(3, 16, 1), { participants: 16, p50: 20_000, cpu: cpu(24, { participant: 16 }) }),
    scenario(pgCommitId(3, 16), {
      resource: 'postgres',
      clients: 16,
      tps: 400,
      cpu: cpu(4, { database: 1.5 }),
      p50: 30_000,
    }),
    scenario(mysqlCommitId(3, 16), {
      resource: 'postgres+mysql',
      clients: 16,
      tps: 300,
      cpu: cpu(5, { database: 2 }),
      p50: 40_000,
    }),
    scenario(rawId(3, 1), { p50: 3_000, participants: 0, resource: 'raw-log', cpu: cpu(1.1) }),
  ];
  const b = cpuBounds(
    scenarios,
    {
      ...floors,
      pg_direct_1: null,
      pg_direct_16: {
        ...lat(10_000),
        connections: 16,
        tps: 1_000,
        ok: 1,
        errors: {},
        measure_ms: 1,
        leftover_prepared: 0,
        histogram: '',
      },
      pg_direct_16_marked: {
        ...lat(11_000),
        connections: 16,
        tps: 920,
        ok: 1,
        errors: {},
        measure_ms: 1,
        leftover_prepared: 0,
        histogram: '',
      },
      pg_minimal_16: {
        ...lat(20_000),
        connections: 16,
        tps: 500,
        ok: 1,
        errors: {},
        measure_ms: 1,
        leftover_prepared: 0,
        histogram: '',
      },
      pg_direct_16_after: {
        ...lat(12_000),
        connections: 16,
        tps: 800,
        ok: 1,
        errors: {},
        measure_ms: 1,
        leftover_prepared: 0,
        histogram: '',
      },
      mysql_direct_16: {
        ...lat(12_000),
        connections: 16,
        tps: 800,
        ok: 1,
        errors: {},
        measure_ms: 1,
        leftover_prepared: 0,
        histogram: '',
      },
      mysql_minimal_16: {
        ...lat(25_000),
        connections: 16,
        tps: 480,
        ok: 1,
        errors: {},
        measure_ms: 1,
        leftover_prepared: 0,
        histogram: '',
      },
    },
    2_500,
  );

  it('takes the throughput ceiling from the leanest classic 3-node scenario, and names the peak beside it', () => {
    expect(b.nodes3_memory2_peak_clients).toBe(64);
    expect(b.nodes3_memory2_peak_cpu_ms_per_txn).toBe(0.8);
    expect(b.nodes3_memory2_leanest_clients).toBe(256);
    expect(b.nodes3_memory2_leanest_cpu_ms_per_txn).toBe(0.5);
    expect(b.nodes3_memory2_cpu_ceiling_tps).toBe(4_000);
  });

  it('bounds the 3-node latency at one client by its CPU over the cores', () => {
    // 4 ms of CPU on 2 cores: 2 ms per transaction at least, over the 1-node p50 of 3 ms; parallel 4.5 ms → 0.75.
    expect(b.latency_p50_3_over_1_cpu_floor).toBe(0.67);
    expect(b.latency_p50_3_parallel_over_1_cpu_floor).toBe(0.75);
  });

  it('adds two contended syncs and one round trip to the 1-node latency for the disk-and-network floor', () => {
    // (3000 + 2 × (400 − 300) + 60) / 3000
    expect(b.latency_p50_3_over_1_disk_network_floor).toBe(1.09);
    expect(b.raft_seq_two_syncs_us).toBe(800);
  });

  it("takes the mark's contended sync out of the raw log's p50 for the ratio to etcd without it", () => {
    // (3000 − 400) / 2500
    expect(b.raft_seq_over_etcd_without_mark_sync).toBe(1.04);
  });

  it("swaps the 1-node transaction's flushes for the 3-node pattern's for the disk-alone floors", () => {
    // Classic: (3000 − 1000 + 1300 + 60) / 3000; parallel: (3000 − 1000 + 900) / 3000.
    expect(b.latency_p50_3_over_1_flush_floor).toBe(1.12);
    expect(b.latency_p50_3_parallel_over_1_flush_floor).toBe(0.97);
    expect(b.flush_pattern_parallel3_one_sync_us).toBe(550);
  });

  it("swaps one participant's journal flush for sixteen at once for the participant sweep's disk-alone floor", () => {
    // (4000 − 300 + 4500) / 4000, over the 1-participant p50
    expect(b.latency_p50_16p_over_1p_flush_floor).toBe(2.05);
    expect(b.flush_pattern_participants16_us).toBe(4_500);
  });

  // The machine floors from minimal processes (floors.fanout), each over the same run's p50 it replaces a pattern of.
  it.each([
    [
      "sixteen participant processes' prepare phase for one's: (4000 − 1000 + 5000) / 4000",
      {
        latency_p50_16p_over_1p_fanout_floor: 2,
        fanout_participants16_us: 5_000,
        fanout_participant_cpu_us_per_txn: 500,
      },
    ],
    [
      'the 3-node classic pattern for the 1-node one: (3000 − 2000 + 2600) / 3000',
      { latency_p50_3_over_1_fanout_floor: 1.2, fanout_classic3_us: 2_600 },
    ],
    [
      'the 3-node parallel pattern for the 1-node classic one: (3000 − 2000 + 2100) / 3000',
      { latency_p50_3_parallel_over_1_fanout_floor: 1.03, fanout_parallel3_us: 2_100 },
    ],
    [
      "a raw log write plus a client round trip, over etcd's p50: (2200 + 50) / 2500, and with one sync per node (1700 + 50) / 2500",
      {
        raft_seq_over_etcd_fanout_floor: 0.9,
        raft_seq_over_etcd_fanout_floor_one_sync: 0.7,
        fanout_raft3_one_sync_us: 1_700,
      },
    ],
    [
      "the same write with the client in a process of its own, timed there, over etcd's p50: 2600 / 2500",
      { raft_seq_over_etcd_fanout_floor_client: 1.04, fanout_raft3_client_us: 2_600 },
    ],
  ])('machine floor from minimal processes: %s', (_what, want) => {
    expect(b).toMatchObject(want);
  });

  it('bounds the 16-participant latency by its CPU over the cores', () => {
    // 24 ms of CPU on 2 cores = 12 ms per transaction at least, over the 1-participant p50 of 4 ms.
    expect(b.latency_p50_16p_over_1p_cpu_floor).toBe(3);
    expect(b.participants16_c1_participant_cpu_ms_per_txn).toBe(16);
  });

  it('relates the PostgreSQL ceiling to the direct floor', () => {
    expect(b.pg_c16_cpu_ceiling_tps).toBe(500);
    expect(b.pg_c16_cpu_ceiling_over_direct).toBe(0.5);
    // The marker row alone, driven directly: 920 over 1,000 tx/s.
    expect(b.pg_direct_marked_over_direct).toBe(0.92);
    expect(b.pg_c16_database_cpu_ms_per_txn).toBe(1.5);
    // Through the least possible processes: 500 over 1,000 tx/s; Verdict's 400 tx/s over that floor's 500.
    expect(b.pg_minimal_over_direct).toBe(0.5);
    expect(b.pg_through_verdict_over_minimal).toBe(0.8);
    // The direct floor again after the PostgreSQL scenarios: 800 over the first 1,000 tx/s; Verdict's 400 over it.
    expect(b.pg_direct_after_over_before).toBe(0.8);
    expect(b.pg_through_verdict_over_direct_after).toBe(0.5);
  });

  it('gives the MariaDB path the same two bounds: its CPU ceiling and the least-process floor, each against its direct floor', () => {
    // 5 ms of CPU on 2 cores: 400 tx/s, over the direct 800; the least processes 480 over 800; Verdict's 300 over 480.
    expect(b.mysql_c16_cpu_ms_per_txn).toBe(5);
    expect(b.mysql_c16_database_cpu_ms_per_txn).toBe(2);
    expect(b.mysql_c16_cpu_ceiling_tps).toBe(400);
    expect(b.mysql_c16_cpu_ceiling_over_direct).toBe(0.5);
    expect(b.mysql_minimal_over_direct).toBe(0.6);
    expect(b.mysql_through_verdict_over_minimal).toBe(0.63);
  });

  it('puts every target beside its bound in the report', () => {
    const r = {
      machine: { cores: 2 },
      ratios: {
        latency_p50_3_over_1: 1.67,
        raft_seq_p50_over_etcd: 1.2,
        latency_p50_3_parallel_over_1: 0.95,
        mysql_through_verdict_over_direct: 0.38,
      },
      peak_tps: { nodes3_memory2: 2_000 },
      failover: { in_doubt_p99_ms: 800, decided_rolled_back: 0, election_ms_per_run: [300, 400] },
      bounds: b,
      anchors: { etcd: { skipped: null, seq_cpu_ms_per_put: 0.7, inflight64_cpu_ms_per_put: 0.2 } },
    } as unknown as Results;
    const text = boundsSection(r).join('\n');
    expect(text).toContain(
      '| `ratios.latency_p50_3_over_1` | 1.67× | ≤ 1.15 | no | CPU floor 0.67×: at 1 client a 3-node transaction costs 4 ms of CPU',
    );
    expect(text).toContain('would allow 1.09×');
    expect(text).toContain('CPU ceiling 4000 tx/s: no concurrency cost less than 0.5 ms');
    expect(text).toContain('| `failover.in_doubt_p99_ms` | 800 ms | ≤ 1,000, 0 rolled back | yes |');
    expect(text).toContain('| `ratios.latency_p50_3_parallel_over_1` | 0.95× | ≤ 1.0 | yes |');
    expect(text).toContain(
      "the disk alone would allow 0.97× (one transaction's flushes on the one disk: 0.90 ms for 3 nodes in parallel",
    );
    expect(text).toContain('and one round trip, 1.12×');
    expect(text).toContain('Verdict 1.1 ms, etcd 0.7 ms');
    expect(text).toContain('; with the client in a process of its own, 1.04× (2.60 ms); CPU per Put');
    expect(text).toContain(
      '(two participants, a leader and two followers: the machine floor) reaches 0.5× of it, and Verdict 0.8× of that floor',
    );
    expect(text).toContain(
      "the direct floor measured again after Verdict's PostgreSQL scenarios, on the same server, was 0.8× of the first, and Verdict 0.5× of it",
    );
    expect(text).toContain(
      '| `ratios.mysql_through_verdict_over_direct` | 0.38× | ≥ 0.6 | no | CPU ceiling through Verdict at 16 clients 400 tx/s = 0.5× the direct floor',
    );
    expect(text).toContain(
      'a MariaDB participant, a leader and two followers: the machine floor) reaches 0.6× of it, and Verdict 0.63× of that floor',
    );
  });
});
