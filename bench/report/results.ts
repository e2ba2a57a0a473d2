// The shape of bench/results/*.json, and the summary keys computed from the
// scenarios: ratios, peaks, the raw log, failover, and medians over floors.
import type { FailoverRun } from '../scenarios/failover.ts';
import type { EtcdAnchor, EtcdAnchorResult } from '../scenarios/etcd-anchor.ts';
import type { Floors } from '../floors/floors.ts';
import type { CliTiming } from '../scenarios/cli-status.ts';
import type { CpuFigures } from '../harness/cpu-sample.ts';
import { percentile, type LatencySummary } from '../harness/hist.ts';
import type { PgDirectFloor } from '../floors/pg.ts';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  /** Filesystem of the directory the clusters and the fsync floor write to. */
  disk: string;
  commit: string;
  /** 1-minute load average before the run and after it: other work on the machine skews every figure. */
  load_avg_start: number;
  load_avg_end: number;
}

/** A scenario's figures; its latency percentiles are those of LatencySummary. */
export interface Scenario extends Omit<LatencySummary, 'count'> {
  id: string;
  kind: 'commit' | 'raw';
  nodes: number;
  /** Participants per transaction (commit) or 0 (raw). */
  participants: number;
  /**
   * postgres: the shop/ledger transaction of bench/harness/pg-workload.ts, participants shop and ledger;
   * postgres+mysql: the same with the ledger on MariaDB.
   */
  resource: 'memory' | 'postgres' | 'postgres+mysql' | 'raw-log';
  /** Concurrent clients (commit) or Puts in flight (raw). */
  clients: number;
  warmup_ms: number;
  measure_ms: number;
  /** Committed transactions (or acknowledged Puts) per second in the measured window. */
  tps: number;
  ok: number;
  aborted: number;
  errors: Record<string, number>;
  /** Begin + commit, commit scenarios only. */
  txn_p50_us: number | null;
  txn_p99_us: number | null;
  /** Raft terms that passed during the scenario (0: one leader throughout). */
  leader_changes: number;
  /**
   * CPU of every process the scenario touches, over its measured window (bench/harness/cpu-sample.ts); null when not
   * sampled, absent in older files.
   */
  cpu?: CpuFigures | null;
  /** HDR histogram of the latency, compressed base64 (hdr-histogram-js). */
  histogram: string;
}

export interface Settings {
  mode: 'quick' | 'full';
  warmup_ms: number;
  measure_ms: number;
  raw_measure_ms: number;
  cluster_sizes: number[];
  concurrency: number[];
  participant_sweep: number[];
  participant_sweep_clients: number[];
  raw_sizes: number[];
  failover_runs: number;
  /** The paired step (bench/scenarios/paired.ts); absent in older results files. */
  paired?: { warmup_ms: number; segment_ms: number; settle_ms: number; rounds: number };
  node_timing: {
    tickMs: number;
    electionTicks: number;
    heartbeatTicks: number;
    snapshotEntries: number;
    snapshotLogRatio?: number;
  };
  payload: string;
}

export interface FailoverSummary {
  method: string;
  runs: FailoverRun[];
  in_doubt_pairs: number;
  in_doubt_p50_ms: number | null;
  in_doubt_p99_ms: number | null;
  /** The longest in-doubt time at any participant over all runs. */
  in_doubt_max_ms: number | null;
  in_doubt_window_ms_per_run: (number | null)[];
  cluster_in_doubt_window_ms_per_run: (number | null)[];
  client_gap_ms_per_run: (number | null)[];
  election_ms_per_run: number[];
  still_in_doubt: number;
  decided_rolled_back: number;
}

export interface Results {
  schema: 1;
  started_at: string;
  finished_at: string;
  elapsed_s: number;
  machine: Machine;
  settings: Settings;
  floors: Floors;
  /** Why the PostgreSQL part was not measured; null when it was. */
  pg: { skipped: string } | null;
  /** Why the MySQL/MariaDB part was not measured; null when it was (absent in older results). */
  mysql?: { skipped: string } | null;
  scenarios: Scenario[];
  failover: FailoverSummary;
  ratios: Record<string, number | null>;
  peak_tps: Record<string, number | null>;
  raft: Record<string, number | null>;
  floor_ratios: Record<string, number | null>;
  /**
   * What bounds each target in this run: CPU per transaction and the ceilings it implies (cpuBounds); absent in older
   * files.
   */
  bounds?: Record<string, number | null>;
  /**
   * Command-line timings: `status_ms` is `verdict status` from a cold process against 3 nodes (null if not measured).
   * Absent from older files.
   */
  cli?: { status_ms: CliTiming | null };
  /** Sagas on three nodes, three steps (bench/scenarios/saga.ts); absent in older results files. */
  saga?: import('../scenarios/saga.ts').SagaFigures | null;
  /**
   * Outbox relays through NATS JetStream to the inbox (bench/scenarios/outbox.ts); absent in older results files, null
   * when skipped.
   */
  outbox?: import('../scenarios/outbox.ts').OutboxFigures | null;
  /**
   * Decision groups at G = 1, 2, 4 and the capacity model fitted to them (bench/scenarios/groups.ts); absent in older
   * results files, null when the scenario failed.
   */
  groups?: import('../scenarios/groups.ts').GroupsFigures | null;
  /** Other systems measured in the same run on the same machine; absent in results files older than the anchor. */
  anchors?: { etcd: EtcdAnchorFields };
  /**
   * The target ratios measured with every system up and the targets taken in turn (bench/scenarios/paired.ts); null
   * when the step failed, absent in older files.
   */
  paired?: import('../scenarios/paired.ts').PairedFigures | null;
  /**
   * The sweeps' figures of the keys in PAIRED_KEYS, kept beside the paired ones that `ratios` holds (targetRatios);
   * absent in older files.
   */
  ratios_sweep?: Record<string, number | null>;
  /** Where each key in PAIRED_KEYS of `ratios` came from; absent in older files, whose `ratios` are all the sweeps'. */
  ratio_source?: Record<string, 'paired' | 'sweep'>;
}

/**
 * The latency ratios the paired step measures. In `ratios` they are its
 * pooled p50 ratios whenever it measured them: the sweeps take the two
 * sides of such a ratio minutes apart (the etcd anchor twenty minutes after
 * the raw log), and on this machine a p50 moves by half from one minute to
 * the next; the paired step takes them in turn, a few seconds each, with the
 * other systems paused (docs/benchmarks.md, "Paired").
 */
export const PAIRED_KEYS = ['latency_p50_3_over_1', 'latency_p50_3_parallel_over_1', 'raft_seq_p50_over_etcd'] as const;

/**
 * The target ratios of a run: the sweeps' `ratios` with each key of
 * PAIRED_KEYS replaced by the paired step's pooled ratio where that step
 * measured it (unrounded beyond its three decimals, so rounding never moves
 * a figure across its target), the sweeps' figures of those keys in
 * `ratios_sweep`, and where each came from in `ratio_source`.
 */
export function targetRatios(
  sweep: Record<string, number | null>,
  paired: import('../scenarios/paired.ts').PairedFigures | null,
): Required<Pick<Results, 'ratios' | 'ratios_sweep' | 'ratio_source'>> {
  const ratios = { ...sweep };
  const ratios_sweep: Record<string, number | null> = {};
  const ratio_source: Record<string, 'paired' | 'sweep'> = {};
  for (const key of PAIRED_KEYS) {
    ratios_sweep[key] = sweep[key] ?? null;
    const pooled = paired?.ratios[key]?.pooled ?? null;
    ratios[key] = pooled ?? sweep[key] ?? null;
    ratio_source[key] = pooled === null ? 'sweep' : 'paired';
  }
  return { ratios, ratios_sweep, ratio_source };
}

/**
 * The etcd anchor as the results file holds it: the figures (null when skipped) and why it was skipped (null when
 * measured).
 */
export type EtcdAnchorFields =
  | (EtcdAnchor & { skipped: null })
  | { seq_p50_us: null; inflight64_tps: null; skipped: string };

export function etcdAnchorFields(e: EtcdAnchorResult): EtcdAnchorFields {
  return 'skipped' in e ? { seq_p50_us: null, inflight64_tps: null, skipped: e.skipped } : { ...e, skipped: null };
}

/** `parallel`: the transactions committed in parallel (the id ends in `.parallel`). */
export function commitId(nodes: number, participants: number, clients: number, parallel = false): string {
  return `commit.nodes${nodes}.memory${participants}.c${clients}${parallel ? '.parallel' : ''}`;
}

/** The shop/ledger transaction through Verdict, PostgreSQL participants shop and ledger. */
export function pgCommitId(nodes: number, clients: number, parallel = false): string {
  return `commit.nodes${nodes}.pg2.c${clients}${parallel ? '.parallel' : ''}`;
}

/**
 * The shop/ledger transaction through Verdict, shop on PostgreSQL and the ledger on MariaDB (bench/floors/mysql.ts).
 */
export function mysqlCommitId(nodes: number, clients: number): string {
  return `commit.nodes${nodes}.pgmysql.c${clients}`;
}

export function rawId(nodes: number, inflight: number): string {
  return `raw.nodes${nodes}.inflight${inflight}`;
}

const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;

function ratio(a: number | undefined, b: number | undefined): number | null {
  return a === undefined || b === undefined || b === 0 ? null : round(a / b);
}

export function summarizeFailover(runs: FailoverRun[], method: string): FailoverSummary {
  const delays = runs.flatMap((r) => r.inDoubt.delaysMs);
  const windows = runs.map((r) => r.inDoubt.windowMs);
  return {
    method,
    runs,
    in_doubt_pairs: delays.length,
    in_doubt_p50_ms: delays.length ? percentile(delays, 50) : null,
    in_doubt_p99_ms: delays.length ? percentile(delays, 99) : null,
    in_doubt_max_ms: delays.length ? Math.max(...delays) : null,
    in_doubt_window_ms_per_run: windows,
    cluster_in_doubt_window_ms_per_run: runs.map((r) =>
      r.cluster.windowMs === null ? null : Math.round(r.cluster.windowMs),
    ),
    client_gap_ms_per_run: runs.map((r) => r.clientGapMs),
    election_ms_per_run: runs.map((r) => r.electionMs),
    still_in_doubt: runs.reduce((s, r) => s + r.inDoubt.stillInDoubt, 0),
    decided_rolled_back: runs.reduce((s, r) => s + r.decidedRolledBack, 0),
  };
}

/**
 * Verdict's raw log against the etcd anchor: sequential p50 latency over
 * etcd's (lower is better) and 64-in-flight throughput over etcd's (higher is
 * better); null when either side was not measured.
 */
export function etcdRatios(
  raft: Record<string, number | null | undefined>,
  etcd: EtcdAnchorResult | null,
): Record<'raft_seq_p50_over_etcd' | 'raft_inflight64_over_etcd', number | null> {
  const e = etcd === null || 'skipped' in etcd ? null : etcd;
  return {
    raft_seq_p50_over_etcd: ratio(raft.seq_p50_us ?? undefined, e?.seq_p50_us),
    raft_inflight64_over_etcd: ratio(raft.inflight64_tps ?? undefined, e?.inflight64_tps),
  };
}

/**
 * Throughput through Verdict over the direct floor's (both at 16 clients / connections); null when either is missing.
 */
export function pgThroughVerdictOverDirect(
  verdictTps: number | undefined,
  direct: PgDirectFloor | null | undefined,
): number | null {
  return direct === null || direct === undefined ? null : ratio(verdictTps, direct.tps);
}

/** The summary keys of the results file, from the scenarios, floors and failover runs. */
export function summaryKeys(
  scenarios: Scenario[],
  floors: Floors,
): Pick<Results, 'ratios' | 'peak_tps' | 'raft' | 'floor_ratios'> {
  const by = new Map(scenarios.map((s) => [s.id, s]));
  const p50 = (id: string): number | undefined => by.get(id)?.p50_us;
  const peak = (nodes: number): number | null => {
    const xs = scenarios.filter(
      (s) => s.kind === 'commit' && s.resource === 'memory' && s.nodes === nodes && s.participants === 2,
    );
    return xs.length ? Math.max(...xs.map((s) => s.tps)) : null;
  };
  const ratios: Record<string, number | null> = {
    latency_p50_3_over_1: ratio(p50(commitId(3, 2, 1)), p50(commitId(1, 2, 1))),
    // Parallel commit on 3 nodes over classic 2PC on 1, the same run (issue 20: target ≤ 1.0).
    latency_p50_3_parallel_over_1: ratio(p50(commitId(3, 2, 1, true)), p50(commitId(1, 2, 1))),
    pg_latency_p50_3_parallel_over_1: ratio(p50(pgCommitId(3, 1, true)), p50(pgCommitId(1, 1))),
    latency_p50_5_over_1: ratio(p50(commitId(5, 2, 1)), p50(commitId(1, 2, 1))),
    latency_p50_16p_over_1p: ratio(p50(commitId(3, 16, 1)), p50(commitId(3, 1, 1))),
    pg_through_verdict_over_direct: pgThroughVerdictOverDirect(by.get(pgCommitId(3, 16))?.tps, floors.pg_direct_16),
    mysql_through_verdict_over_direct: pgThroughVerdictOverDirect(
      by.get(mysqlCommitId(3, 16))?.tps,
      floors.mysql_direct_16,
    ),
  };
  const peak_tps: Record<string, number | null> = {
    nodes1_memory2: peak(1),
    nodes3_memory2: peak(3),
    nodes5_memory2: peak(5),
  };
  const pg16 = by.get(pgCommitId(3, 16));
  if (pg16 !== undefined) peak_tps.nodes3_pg2_c16 = pg16.tps;
  if (floors.pg_direct_16 !== null) peak_tps.pg_direct_16 = floors.pg_direct_16.tps;
  const my16 = by.get(mysqlCommitId(3, 16));
  if (my16 !== undefined) peak_tps.nodes3_pgmysql_c16 = my16.tps;
  if (floors.mysql_direct_16 != null) peak_tps.mysql_direct_16 = floors.mysql_direct_16.tps;
  const raft: Record<string, number | null> = {
    seq_p50_us: p50(rawId(3, 1)) ?? null,
    seq_p99_us: by.get(rawId(3, 1))?.p99_us ?? null,
    inflight64_tps: by.get(rawId(3, 64))?.tps ?? null,
    inflight64_p50_us: p50(rawId(3, 64)) ?? null,
  };
  for (const n of [1, 5]) {
    if (by.has(rawId(n, 1))) raft[`nodes${n}_seq_p50_us`] = p50(rawId(n, 1)) ?? null;
    if (by.has(rawId(n, 64))) raft[`nodes${n}_inflight64_tps`] = by.get(rawId(n, 64))?.tps ?? null;
  }
  const fsync = floors.fsync_200B.p50_us;
  const unary = floors.grpc_unary_rtt.p50_us;
  const streams = floors.grpc_client_streams_rtt.p50_us;
  const floor_ratios: Record<string, number | null> = {};
  for (const n of [1, 3, 5]) {
    const c = p50(commitId(n, 2, 1));
    if (c === undefined) continue;
    floor_ratios[`nodes${n}_commit_p50_over_fsync_p50`] = ratio(c, fsync);
    floor_ratios[`nodes${n}_commit_p50_over_grpc_unary_p50`] = ratio(c, unary);
  }
  floor_ratios.raft_seq_p50_over_fsync_p50 = ratio(p50(rawId(3, 1)), fsync);
  // Three nodes' logs share one disk: their fsyncs at once are the 3-node floor, one process's the 1-node floor.
  const fsyncX3 = floors.fsync_200B_x3?.p50_us;
  if (fsyncX3 !== undefined) {
    floor_ratios.fsync_x3_p50_over_fsync_p50 = ratio(fsyncX3, fsync);
    floor_ratios.raft_seq_p50_over_fsync_x3_p50 = ratio(p50(rawId(3, 1)), fsyncX3);
  }
  floor_ratios.raft_seq_p50_over_grpc_streams_p50 = ratio(p50(rawId(3, 1)), streams);
  return { ratios, peak_tps, raft, floor_ratios };
}

/**
 * What bounds the targets on this machine, from the same run: the CPU each
 * scenario cost per transaction (bench/harness/cpu-sample.ts) and what follows.
 *
 * - A throughput ceiling: every process shares the machine's cores, so no
 *   run commits more than cores × 1000 / (CPU ms per transaction) a second.
 * - A cycle floor for one closed-loop client: its transactions cannot follow
 *   each other faster than (CPU ms per transaction) / cores; over the 1-node
 *   (or 1-participant) p50 that bounds the latency ratios from below, for the
 *   CPU this implementation spends (not a floor of the machine).
 * - The same swaps done by minimal processes (floors.fanout: gRPC streams,
 *   fdatasyncs, nothing else): sixteen participant processes' prepare phase
 *   in place of one's, and the 3-node patterns in place of the 1-node one.
 *   A floor of the machine for a system whose parts are processes of their
 *   own, whatever each does inside.
 * - The 3-node latency with the disk and the network alone added to the
 *   1-node one: two syncs per batch (the segment, then its mark) contending
 *   with the other nodes' (three processes' fsyncs at once, floors) and one
 *   round trip to the followers.
 */
export function cpuBounds(
  scenarios: Scenario[],
  floors: Floors,
  etcdSeqP50Us: number | null,
): Record<string, number | null> {
  const by = new Map(scenarios.map((s) => [s.id, s]));
  const cpu = (id: string): number | null => by.get(id)?.cpu?.ms_per_txn ?? null;
  const out: Record<string, number | null> = {};
  const sweep = scenarios.filter(
    (s) =>
      s.kind === 'commit' &&
      s.resource === 'memory' &&
      s.nodes === 3 &&
      s.participants === 2 &&
      !s.id.endsWith('.parallel'),
  );
  const peak = [...sweep].sort((a, b) => b.tps - a.tps)[0];
  if (peak?.cpu) {
    out.nodes3_memory2_peak_clients = peak.clients;
    out.nodes3_memory2_peak_cpu_ms_per_txn = peak.cpu.ms_per_txn;
    out.nodes3_memory2_peak_busy = peak.cpu.busy;
  }
  // The most generous ceiling: the concurrency at which a transaction cost the least CPU.
  const leanest = sweep.filter((s) => s.cpu).sort((a, b) => (a.cpu?.ms_per_txn ?? 0) - (b.cpu?.ms_per_txn ?? 0))[0];
  if (leanest?.cpu) {
    out.nodes3_memory2_leanest_clients = leanest.clients;
    out.nodes3_memory2_leanest_cpu_ms_per_txn = leanest.cpu.ms_per_txn;
    out.nodes3_memory2_cpu_ceiling_tps = leanest.cpu.ceiling_tps;
  }
  const c1 = cpu(commitId(1, 2, 1));
  const c3 = cpu(commitId(3, 2, 1));
  out.nodes1_memory2_c1_cpu_ms_per_txn = c1;
  out.nodes3_memory2_c1_cpu_ms_per_txn = c3;
  const p1 = by.get(commitId(1, 2, 1))?.p50_us;
  // One client's transactions follow each other no faster than their CPU over the cores: the 3-node cycle against the
  // 1-node p50.
  const cores3 = by.get(commitId(3, 2, 1))?.cpu?.cores;
  if (c3 !== null && cores3 !== undefined && p1 !== undefined)
    out.latency_p50_3_over_1_cpu_floor = ratio((c3 / cores3) * 1000, p1);
  const x3 = floors.fsync_200B_x3?.p50_us;
  if (p1 !== undefined && x3 !== undefined) {
    const extra = 2 * Math.max(0, x3 - floors.fsync_200B.p50_us) + floors.grpc_client_streams_rtt.p50_us;
    out.latency_p50_3_over_1_disk_network_floor = ratio(p1 + extra, p1);
  }
  const pg = by.get(pgCommitId(3, 16));
  if (pg?.cpu) {
    out.pg_c16_cpu_ms_per_txn = pg.cpu.ms_per_txn;
    out.pg_c16_database_cpu_ms_per_txn = pg.cpu.by_kind.database ?? null;
    out.pg_c16_cpu_ceiling_tps = pg.cpu.ceiling_tps;
    out.pg_c16_busy = pg.cpu.busy;
    if (floors.pg_direct_16) out.pg_c16_cpu_ceiling_over_direct = ratio(pg.cpu.ceiling_tps, floors.pg_direct_16.tps);
  }
  // What the participant's marker row (its idempotent decisions) costs the databases with no coordinator at all.
  if (floors.pg_direct_16 && floors.pg_direct_16_marked)
    out.pg_direct_marked_over_direct = ratio(floors.pg_direct_16_marked.tps, floors.pg_direct_16.tps);
  // The same transaction through the least possible processes (bench/floors/pg-minimal.ts): the most any replicated
  // coordinator with participant processes can reach here, and how near Verdict comes to it.
  if (floors.pg_direct_16 && floors.pg_minimal_16)
    out.pg_minimal_over_direct = ratio(floors.pg_minimal_16.tps, floors.pg_direct_16.tps);
  if (floors.pg_minimal_16 && pg) out.pg_through_verdict_over_minimal = ratio(pg.tps, floors.pg_minimal_16.tps);
  // The direct floor again after Verdict's PostgreSQL scenarios, on the same server: how far it moved, and Verdict over
  // it.
  if (floors.pg_direct_16 && floors.pg_direct_16_after)
    out.pg_direct_after_over_before = ratio(floors.pg_direct_16_after.tps, floors.pg_direct_16.tps);
  if (floors.pg_direct_16_after && pg)
    out.pg_through_verdict_over_direct_after = ratio(pg.tps, floors.pg_direct_16_after.tps);
  // The same bounds for the path with the ledger on MariaDB: its CPU ceiling and its least-process floor.
  const my = by.get(mysqlCommitId(3, 16));
  if (my?.cpu) {
    out.mysql_c16_cpu_ms_per_txn = my.cpu.ms_per_txn;
    out.mysql_c16_database_cpu_ms_per_txn = my.cpu.by_kind.database ?? null;
    out.mysql_c16_cpu_ceiling_tps = my.cpu.ceiling_tps;
    out.mysql_c16_busy = my.cpu.busy;
    if (floors.mysql_direct_16)
      out.mysql_c16_cpu_ceiling_over_direct = ratio(my.cpu.ceiling_tps, floors.mysql_direct_16.tps);
  }
  if (floors.mysql_direct_16 && floors.mysql_minimal_16)
    out.mysql_minimal_over_direct = ratio(floors.mysql_minimal_16.tps, floors.mysql_direct_16.tps);
  if (floors.mysql_minimal_16 && my)
    out.mysql_through_verdict_over_minimal = ratio(my.tps, floors.mysql_minimal_16.tps);
  const one = by.get(commitId(3, 1, 1));
  const sixteen = by.get(commitId(3, 16, 1));
  out.participants1_c1_cpu_ms_per_txn = one?.cpu?.ms_per_txn ?? null;
  out.participants16_c1_cpu_ms_per_txn = sixteen?.cpu?.ms_per_txn ?? null;
  out.participants16_c1_participant_cpu_ms_per_txn = sixteen?.cpu?.by_kind.participant ?? null;
  if (one && sixteen?.cpu)
    out.latency_p50_16p_over_1p_cpu_floor = ratio((sixteen.cpu.ms_per_txn / sixteen.cpu.cores) * 1000, one.p50_us);
  const raw1 = by.get(rawId(3, 1));
  out.raft_seq_cpu_ms_per_put = raw1?.cpu?.ms_per_txn ?? null;
  out.raft_inflight64_cpu_ms_per_put = by.get(rawId(3, 64))?.cpu?.ms_per_txn ?? null;
  // The raw log syncs twice per batch (the segment, then its mark: docs/storage.md), etcd once.
  if (etcdSeqP50Us !== null && x3 !== undefined) {
    out.raft_seq_two_syncs_us = Math.round(2 * x3);
    // What the ratio would be with the mark's sync (the guarantee etcd does not give) taken out at its contended price.
    const seq = raw1?.p50_us;
    if (seq !== undefined) out.raft_seq_over_etcd_without_mark_sync = ratio(seq - x3, etcdSeqP50Us);
  }
  const par = by.get(commitId(3, 2, 1, true));
  out.nodes3_memory2_c1_parallel_cpu_ms_per_txn = par?.cpu?.ms_per_txn ?? null;
  if (par?.cpu && p1 !== undefined)
    out.latency_p50_3_parallel_over_1_cpu_floor = ratio((par.cpu.ms_per_txn / par.cpu.cores) * 1000, p1);
  // One transaction's flushes on the one disk with nothing else running (floors.flush_pattern): the 1-node p50
  // with its flushes swapped for the 3-node pattern's is what the disk alone leaves of each ratio.
  const fp = floors.flush_pattern;
  if (fp !== undefined && p1 !== undefined) {
    out.latency_p50_3_over_1_flush_floor = ratio(
      p1 - fp.classic1.p50_us + fp.classic3.p50_us + floors.grpc_client_streams_rtt.p50_us,
      p1,
    );
    out.latency_p50_3_parallel_over_1_flush_floor = ratio(p1 - fp.classic1.p50_us + fp.parallel3.p50_us, p1);
    out.flush_pattern_classic1_us = fp.classic1.p50_us;
    out.flush_pattern_parallel3_us = fp.parallel3.p50_us;
    out.flush_pattern_parallel3_one_sync_us = fp.parallel3_one_sync.p50_us;
  }
  // The participant sweep's prepare phase on the one disk: one journal flush against sixteen at once (the last of
  // them).
  const p1p = one?.p50_us;
  if (fp?.participants1 !== undefined && fp.participants16 !== undefined && p1p !== undefined) {
    out.latency_p50_16p_over_1p_flush_floor = ratio(p1p - fp.participants1.p50_us + fp.participants16.p50_us, p1p);
    out.flush_pattern_participants1_us = fp.participants1.p50_us;
    out.flush_pattern_participants16_us = fp.participants16.p50_us;
  }
  // The same prepare phase done by the least possible participant processes (floors.fanout): one message in, one
  // fdatasync, one message out each, on the same two cores. Swapped in for the one participant's, it is what the
  // machine leaves of the ratio with participants in their own Node processes talking gRPC, whatever they do inside.
  const fan = floors.fanout;
  if (fan !== undefined && p1p !== undefined) {
    out.latency_p50_16p_over_1p_fanout_floor = ratio(p1p - fan.participants1.p50_us + fan.participantsN.p50_us, p1p);
    out.fanout_participants1_us = fan.participants1.p50_us;
    out.fanout_participants16_us = fan.participantsN.p50_us;
    out.fanout_participant_cpu_us_per_txn = fan.participant_cpu_us_per_txn;
  }
  // Likewise the 1-node classic transaction's pattern (two participants, then the node's two flushes) swapped for the
  // 3-node ones done by minimal processes: two follower processes' appends, and for parallel commit all at once.
  if (fan !== undefined && p1 !== undefined) {
    out.latency_p50_3_over_1_fanout_floor = ratio(p1 - fan.classic1.p50_us + fan.classic3.p50_us, p1);
    out.latency_p50_3_parallel_over_1_fanout_floor = ratio(p1 - fan.classic1.p50_us + fan.parallel3.p50_us, p1);
    out.fanout_classic1_us = fan.classic1.p50_us;
    out.fanout_classic3_us = fan.classic3.p50_us;
    out.fanout_parallel3_us = fan.parallel3.p50_us;
  }
  // A raw log write done by minimal processes, plus the client's round trip to the leader, over etcd's p50: with the
  // mark's sync and without (etcd's design); the same Node client drives etcd.
  if (fan?.raft3 !== undefined && fan.raft3_one_sync !== undefined && etcdSeqP50Us !== null) {
    const client = floors.grpc_bidi_rtt.p50_us;
    out.raft_seq_over_etcd_fanout_floor = ratio(fan.raft3.p50_us + client, etcdSeqP50Us);
    out.raft_seq_over_etcd_fanout_floor_one_sync = ratio(fan.raft3_one_sync.p50_us + client, etcdSeqP50Us);
    out.fanout_raft3_us = fan.raft3.p50_us;
    out.fanout_raft3_one_sync_us = fan.raft3_one_sync.p50_us;
  }
  // The same write with the client in a process of its own, timed there: its hop as it costs beside the syncs, not the
  // back-to-back round trip added above (etcd's p50 holds the same Node client's hop).
  if (fan?.raft3_client !== undefined && etcdSeqP50Us !== null) {
    out.raft_seq_over_etcd_fanout_floor_client = ratio(fan.raft3_client.p50_us, etcdSeqP50Us);
    out.fanout_raft3_client_us = fan.raft3_client.p50_us;
  }
  return out;
}
