// `npm run bench -- cpu-per-txn [--nodes N] [--participants N] [--clients N] [--measure-ms MS] [--warmup-ms MS (20000)]
// [--pg] [--parallel] [--raw]`
//
// CPU time per committed transaction, per process, for the memory-participant
// commit load of bench/harness/loadgen.ts. On a machine with few cores the throughput
// ceiling is the CPU that one transaction costs summed over every process
// that touches it, and unlike wall-clock figures that sum does not move much
// when other work shares the machine. So this is the figure to watch when
// making the commit path cheaper.
//
// It starts a local cluster (default 3 nodes) and memory participants
// (default 2) as real processes on loopback, runs the closed-loop load
// generator (default 16 clients), reads utime+stime of every process from
// /proc/<pid>/stat when the load generator's measured window opens and when
// it closes, and prints CPU ms per committed transaction for the leader, the
// followers, the participants and the load generator, then one JSON line.
// Linux only (/proc). Everything is stopped at the end.
//
// --parallel: the transactions commit in parallel (docs/protocol.md);
// without it, classic two-phase commit.
//
// --raw: the raw replicated log instead (bench/harness/loadgen.ts's raw mode: 100-byte
// Puts on the leader's PutStream, --clients of them in flight, no
// participants): CPU per acknowledged Put, per node.
//
// --pg: the PostgreSQL path instead (bench/floors/pg.ts): a PostgreSQL of our own,
// the shop and ledger participants, the shop/ledger transaction; first the
// direct floor (PREPARE TRANSACTION + COMMIT PREPARED with no coordinator)
// at as many connections per database as there are clients, in the same run,
// so the ratio through Verdict over direct is printed beside the CPU figures
// (PostgreSQL's own backends are not sampled). The load average is printed
// with each figure: the machine may be shared.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CommitLoad, LoadResult, RawLoad } from '../harness/loadgen.ts';
import { measurePgDirect, PG_PARTICIPANTS, pgParticipantArgs, startBenchPg, type BenchPg } from '../floors/pg.ts';
import { childProc, CpuWindow, type CpuFigures, type CpuProc } from '../harness/cpu-sample.ts';
import { BenchCluster, intFlag as flag, killAllNow, runJsonChild, stopAll } from '../harness/procs.ts';

const NODES = flag('nodes', 3);
const PARTICIPANTS = flag('participants', 2);
const CLIENTS = flag('clients', 16);
// V8 keeps optimising the commit path for many seconds; a shorter warm-up measures partly cold code.
const WARMUP_MS = flag('warmup-ms', 20_000);
const MEASURE_MS = flag('measure-ms', 10_000);
const PG = process.argv.includes('--pg');
const PARALLEL = process.argv.includes('--parallel');
const RAW = process.argv.includes('--raw');

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-cpu-'));
  process.on('exit', killAllNow);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void stopAll().then(() => process.exit(130)));
  let pg: BenchPg | null = null;
  try {
    if (PG) {
      const started = await startBenchPg();
      if ('skipped' in started) throw new Error(`--pg: ${started.skipped}`);
      pg = started;
    }
    await (RAW ? measureRaw(dir) : measure(dir, pg));
  } finally {
    await pg?.server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measure(dir: string, pg: BenchPg | null): Promise<void> {
  let direct: { tps: number; loadAvg: number } | null = null;
  if (pg !== null) {
    const d = await measurePgDirect(pg, dir, CLIENTS, { warmupMs: Math.min(WARMUP_MS, 10_000), measureMs: MEASURE_MS });
    direct = { tps: d.tps, loadAvg: loadavg()[0] };
    process.stderr.write(
      `PostgreSQL direct, ${CLIENTS} connection(s) per database: ${d.tps} tx/s, p50 ${(d.p50_us / 1000).toFixed(2)} ms (load average ${direct.loadAvg.toFixed(2)})\n`,
    );
  }
  const cluster = await BenchCluster.start(join(dir, 'cluster'), NODES, 'cpu');
  try {
    const ids = pg !== null ? [...PG_PARTICIPANTS] : Array.from({ length: PARTICIPANTS }, (_, i) => `p${i + 1}`);
    const bench = pg;
    await cluster.startParticipants(ids, bench !== null ? (id) => pgParticipantArgs(bench, id) : undefined);
    const leader = await cluster.waitForLeader();
    const cfg: CommitLoad = {
      mode: 'commit',
      endpoints: cluster.endpoints,
      participants: ids,
      workload: pg !== null ? 'pg' : 'memory',
      clients: CLIENTS,
      warmupMs: WARMUP_MS,
      measureMs: MEASURE_MS,
      keyPrefix: `${pg?.tag ?? 'cpu'}-${Date.now().toString(36)}`,
      txnTimeoutMs: 5_000,
      // Classic 2PC unless --parallel: comparable with the figures measured before parallel commit became the cluster's
      // default.
      parallelCommit: PARALLEL,
    };
    const { load, cpu } = await sampledLoad(cluster, leader, cfg, dir, 'no transaction committed in the window');
    const txns = load.ok + load.aborted;
    const loadAvg = loadavg()[0];
    process.stderr.write(
      `${NODES} nodes, ${ids.length} ${pg !== null ? 'PostgreSQL' : 'memory'} participants, ${CLIENTS} clients, ${MEASURE_MS} ms measured: ${load.ok} committed, ${load.aborted} aborted, errors ${JSON.stringify(load.errors)}, ${load.tps} tx/s, commit p50 ${(load.latency.p50_us / 1000).toFixed(2)} ms (load average ${loadAvg.toFixed(2)})\n`,
    );
    if (direct !== null) process.stderr.write(`  through Verdict / direct: ${(load.tps / direct.tps).toFixed(2)}\n`);
    for (const r of cpu.by_process)
      process.stderr.write(
        `  ${r.label.padEnd(8)} ${r.kind.padEnd(12)} ${r.ms_per_txn.toFixed(3)} ms CPU / txn (${r.sys_ms_per_txn.toFixed(3)} of it in the kernel)\n`,
      );
    for (const [k, v] of Object.entries(cpu.by_kind))
      process.stderr.write(`  ${'total'.padEnd(8)} ${k.padEnd(12)} ${v.toFixed(3)} ms CPU / txn\n`);
    process.stderr.write(
      `  all processes: ${cpu.ms_per_txn.toFixed(3)} ms CPU / committed txn (${txns} finished); ceiling on ${cpu.cores} cores ${cpu.ceiling_tps} tx/s\n`,
    );
    process.stdout.write(
      JSON.stringify({
        nodes: NODES,
        participants: ids.length,
        workload: pg !== null ? 'pg' : 'memory',
        loadAvg: round(loadAvg),
        directTps: direct?.tps ?? null,
        overDirect: direct !== null ? round(load.tps / direct.tps) : null,
        clients: CLIENTS,
        measureMs: MEASURE_MS,
        committed: load.ok,
        aborted: load.aborted,
        cpuMsPerTxn: cpu.ms_per_txn,
        ...measured(load, cpu),
      }) + '\n',
    );
  } finally {
    await cluster.destroy();
  }
}

/**
 * Runs the load generator with `cfg` against the cluster and reads the CPU of
 * every node and participant over its measured window. Throws (with `none`)
 * when nothing finished in the window, and when the leader changed, which
 * would make the split by role meaningless.
 */
async function sampledLoad(
  cluster: BenchCluster,
  leader: { id: string },
  cfg: CommitLoad | RawLoad,
  dir: string,
  none: string,
): Promise<{ load: LoadResult; cpu: CpuFigures }> {
  const procs: CpuProc[] = [];
  for (const n of cluster.nodes) procs.push(...childProc(n.id === leader.id ? 'leader' : 'follower', n.id, n.child));
  for (const [id, c] of cluster.participants) procs.push(...childProc('participant', id, c));
  const window = new CpuWindow(() => procs);
  const load = await runJsonChild<LoadResult>(
    'load',
    'harness/loadgen.ts',
    cfg,
    join(dir, 'loadgen.log'),
    WARMUP_MS + MEASURE_MS + 60_000,
    { onLine: window.onLine },
  );
  if (load.ok === 0) throw new Error(`${none}: ${JSON.stringify(load.errors)}`);
  const cpu = window.figures(load.ok);
  if (cpu === null) throw new Error('the load generator never reported its measured window');
  const leaderNow = await cluster.waitForLeader();
  if (leaderNow.id !== leader.id)
    throw new Error(
      `the leader changed during the run (${leader.id} → ${leaderNow.id}); the split by role is meaningless, run again`,
    );
  return { load, cpu };
}

/** The JSON line's fields both loads share: throughput, p50 and the CPU split. */
function measured(load: LoadResult, cpu: CpuFigures): Record<string, unknown> {
  return {
    tps: load.tps,
    p50Ms: load.latency.p50_us / 1000,
    byKind: cpu.by_kind,
    rows: cpu.by_process,
    ceilingTps: cpu.ceiling_tps,
  };
}

/** --raw: the raw log at --clients Puts in flight on a cluster with no participants. */
async function measureRaw(dir: string): Promise<void> {
  if (PG || PARALLEL) throw new Error('--raw measures the raw log alone: leave out --pg and --parallel');
  const cluster = await BenchCluster.start(join(dir, 'cluster'), NODES, 'cpu');
  try {
    const leader = await cluster.waitForLeader();
    const cfg: RawLoad = {
      mode: 'raw',
      system: 'verdict',
      leader: leader.address,
      inflight: CLIENTS,
      warmupMs: WARMUP_MS,
      measureMs: MEASURE_MS,
      valueBytes: 100,
    };
    const { load, cpu } = await sampledLoad(cluster, leader, cfg, dir, 'no Put acknowledged in the window');
    process.stderr.write(
      `raw log, ${NODES} nodes, ${CLIENTS} Put(s) in flight, ${MEASURE_MS} ms measured: ${load.ok} acknowledged, errors ${JSON.stringify(load.errors)}, ${load.tps} Puts/s, p50 ${(load.latency.p50_us / 1000).toFixed(2)} ms (load average ${loadavg()[0].toFixed(2)})\n`,
    );
    for (const r of cpu.by_process)
      process.stderr.write(
        `  ${r.label.padEnd(8)} ${r.kind.padEnd(12)} ${r.ms_per_txn.toFixed(3)} ms CPU / Put (${r.sys_ms_per_txn.toFixed(3)} of it in the kernel)\n`,
      );
    process.stdout.write(
      JSON.stringify({
        nodes: NODES,
        workload: 'raw',
        inflight: CLIENTS,
        loadAvg: round(loadavg()[0]),
        measureMs: MEASURE_MS,
        acknowledged: load.ok,
        cpuMsPerPut: cpu.ms_per_txn,
        ...measured(load, cpu),
      }) + '\n',
    );
  } finally {
    await cluster.destroy();
  }
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

await main();
