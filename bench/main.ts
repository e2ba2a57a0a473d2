// The whole comparison (`npm run bench [-- --quick] [-- --keep]`, through
// bench/run.mjs and bench/cli.ts), in one run, on this machine, with real
// processes on loopback: node processes, memory participant processes, and
// load generators (bench/harness/loadgen.ts), each its own process; with
// PostgreSQL (bench/floors/pg.ts) also a PostgreSQL server, two PostgreSQL
// participant processes (shop, ledger) and the direct floor. Writes
// bench/results/latest.json and bench/REPORT.md with its SVG charts
// (bench/report/report.ts).
//
// Order: the floors first (bench/floors/, on a quiet machine; PostgreSQL's
// direct two-phase commit at 1 and 16 connections among them), then per
// cluster size the concurrency sweep, the participants sweep (3 nodes), the
// shop/ledger transaction through PostgreSQL participants (3 nodes) and the
// raw replicated log, then etcd 3.4 as an anchor for the raw log
// (bench/scenarios/etcd-anchor.ts, installed from Debian when missing), then
// the paired step (bench/scenarios/paired.ts: the target ratios again with
// every system up and the targets taken in turn; the three latency ratios it
// measures are the target keys, the sweeps' beside them: report/results.ts,
// targetRatios), then the failover runs, each on a fresh cluster, then sagas
// and the outbox. Every measured window follows a warm-up (20 s in a full
// run). One progress line per scenario started and finished. Every load is
// bounded in time and count, every child process is stopped at the end, on
// Ctrl-C and on failure.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, tmpdir, totalmem, type as osType } from 'node:os';
import { join } from 'node:path';
import { failoverPlan, runFailover, type FailoverRun } from './scenarios/failover.ts';
import { measureFloors, type Floors } from './floors/floors.ts';
import { measureCliStatus, type CliTiming } from './scenarios/cli-status.ts';
import { childProc, CpuWindow, databaseProcs, type CpuFigures } from './harness/cpu-sample.ts';
import type { CommitLoad, LoadResult, RawLoad } from './harness/loadgen.ts';
import {
  measurePgDirect,
  measurePgMinimal,
  NO_PG_DIRECT,
  PG_CONCURRENCY,
  PG_PARTICIPANTS,
  pgParticipantArgs,
  startBenchPg,
  type BenchPg,
  type PgDirectFloors,
} from './floors/pg.ts';
import {
  measureMySqlDirect,
  measureMySqlMinimal,
  MYSQL_CONCURRENCY,
  MYSQL_PARTICIPANTS,
  mysqlParticipantArgs,
  startBenchMySql,
  type BenchMySql,
} from './floors/mysql.ts';
import { BenchCluster, killAllNow, liveChildren, NODE_TIMING, ROOT, runJsonChild, stopAll } from './harness/procs.ts';
import { writeReport } from './report/report.ts';
import { measureEtcdAnchor } from './scenarios/etcd-anchor.ts';
import { measurePaired, type PairedFigures } from './scenarios/paired.ts';
import { measureOutbox } from './scenarios/outbox.ts';
import { measureSagas } from './scenarios/saga.ts';
import { groupsPlan, measureGroups, type GroupsFigures } from './scenarios/groups.ts';
import { withModel } from './analysis/groups-model.ts';
import {
  commitId,
  cpuBounds,
  etcdAnchorFields,
  etcdRatios,
  mysqlCommitId,
  pgCommitId,
  rawId,
  summarizeFailover,
  summaryKeys,
  targetRatios,
  type Machine,
  type Results,
  type Scenario,
  type Settings,
} from './report/results.ts';

const QUICK = process.argv.includes('--quick');
const KEEP = process.argv.includes('--keep');

const FAILOVER_METHOD =
  'in doubt = from the SIGKILL of the leader until a participant journals the decision of a transaction it had prepared ' +
  "(begun on the killed leader, prepared before the kill): read back from the participants' journals (prepared/decided records carry wall-clock atMs), " +
  'p50/p99/max over (transaction, participant) pairs. The cluster view (cluster_in_doubt_window_ms) is kill → every transaction begun before the kill ' +
  'and unanswered at it has a final outcome from client.outcome() or its own commit(), polled every 50 ms. The kill is aimed: it fires once at least ' +
  'half of the 16 clients have had a commit() outstanding for 0.4 of the recent median commit latency (aimMs), so that participants are likely prepared; a run whose kill finds none prepared adds no pairs. The client gap is the longest time between two successful commits among the gaps that end after the kill. Rolled back = an answer that changed when re-read after the run, or a participant journal contradicting it.';

/**
 * Warm-up before every measured window of a full run. Node's JIT needs it: a
 * profile of the commit path counted 812 optimisations in the first 17 s, and
 * the 3-node p50 measured 8–10 ms after 2 s of load but 6.1 ms after 25 s.
 */
const WARMUP_FULL_MS = 20_000;

function settings(): Settings & Required<Pick<Settings, 'paired'>> {
  const base = {
    cluster_sizes: [1, 3, 5],
    node_timing: NODE_TIMING,
    payload:
      'memory resource: {"set":{"<run>-w<client>-<seq mod 64>":"<seq>"}} per participant (64 keys per client in turn: no lock conflicts, not even with the transaction just answered under parallel commit)',
  };
  return QUICK
    ? {
        ...base,
        mode: 'quick',
        warmup_ms: 1_000,
        measure_ms: 2_500,
        raw_measure_ms: 2_500,
        concurrency: [1, 16],
        participant_sweep: [1, 4],
        participant_sweep_clients: [1],
        raw_sizes: [3],
        failover_runs: 1,
        paired: { warmup_ms: 1_000, segment_ms: 1_000, settle_ms: 200, rounds: 2 },
      }
    : {
        ...base,
        mode: 'full',
        warmup_ms: WARMUP_FULL_MS,
        measure_ms: 12_000,
        raw_measure_ms: 10_000,
        concurrency: [1, 4, 16, 64, 256, 512, 1000],
        participant_sweep: [1, 2, 4, 8, 16],
        participant_sweep_clients: [1, 16],
        raw_sizes: [1, 3, 5],
        failover_runs: 4,
        paired: { warmup_ms: WARMUP_FULL_MS, segment_ms: 3_000, settle_ms: 200, rounds: 20 },
      };
}

// `parallel`: the transactions commit in parallel (docs/protocol.md, "Parallel commit"); absent: classic.
type Step =
  | { kind: 'commit'; nodes: number; participants: number; clients: number; parallel?: boolean }
  | { kind: 'pg'; nodes: number; clients: number; parallel?: boolean }
  | { kind: 'mysql'; nodes: number; clients: number }
  | { kind: 'raw'; nodes: number; inflight: number };

/**
 * The steps of each cluster, in the order they run. Participant processes
 * are started only for the steps that use them and stopped after the last
 * (see runCluster), so the order groups them: every step with at most the
 * two base memory participants first (the concurrency sweep, one
 * participant, parallel commit, the raw log), then PostgreSQL, then MariaDB,
 * then the participant sweep beyond two. The 1-node and 3-node headline
 * scenarios thus run beside the same processes, not beside 16 idle ones.
 */
function plan(s: Settings, withPg: boolean, withMySql: boolean): Map<number, Step[]> {
  const out = new Map<number, Step[]>();
  for (const nodes of s.cluster_sizes) {
    const steps: Step[] = s.concurrency.map((clients) => ({ kind: 'commit', nodes, participants: 2, clients }));
    const sweep: Step[] = [];
    if (nodes === 3) {
      for (const participants of s.participant_sweep) {
        for (const clients of s.participant_sweep_clients) {
          if (steps.some((x) => x.kind === 'commit' && x.participants === participants && x.clients === clients))
            continue;
          (participants <= BASE_PARTICIPANTS ? steps : sweep).push({ kind: 'commit', nodes, participants, clients });
        }
      }
      // Parallel commit on 3 nodes against classic 2PC on 1 (ratios.latency_p50_3_parallel_over_1,
      // pg_latency_p50_3_parallel_over_1).
      steps.push({ kind: 'commit', nodes, participants: 2, clients: 1, parallel: true });
    }
    if (s.raw_sizes.includes(nodes)) for (const inflight of [1, 64]) steps.push({ kind: 'raw', nodes, inflight });
    if (nodes === 3 && withPg) {
      for (const clients of PG_CONCURRENCY) steps.push({ kind: 'pg', nodes, clients });
      steps.push({ kind: 'pg', nodes, clients: 1, parallel: true });
    }
    if (nodes === 1 && withPg) steps.push({ kind: 'pg', nodes, clients: 1 });
    if (nodes === 3 && withMySql)
      for (const clients of MYSQL_CONCURRENCY) steps.push({ kind: 'mysql', nodes, clients });
    out.set(nodes, [...steps, ...sweep]);
  }
  return out;
}

/** Memory participants every cluster runs throughout (p1, p2): most steps use them. */
const BASE_PARTICIPANTS = 2;

/** The participant processes a step needs besides the base ones. */
function participantsOf(step: Step): string[] {
  if (step.kind === 'commit') return Array.from({ length: step.participants }, (_, i) => `p${i + 1}`);
  if (step.kind === 'pg') return [...PG_PARTICIPANTS];
  if (step.kind === 'mysql') return [...MYSQL_PARTICIPANTS];
  return [];
}

function machine(dir: string): Machine {
  const sh = (cmd: string, args: string[]): string => {
    try {
      return execFileSync(cmd, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  const df = sh('df', ['-T', dir]).split('\n')[1]?.split(/\s+/) ?? [];
  const dirty = sh('git', ['status', '--porcelain']) !== '';
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${osType()} ${release()}`,
    node: process.version,
    disk: df.length > 1 ? `${df[1]} on ${df[0]} (${dir.startsWith(tmpdir()) ? 'the OS temp dir' : dir})` : 'unknown',
    commit: `${sh('git', ['rev-parse', '--short', 'HEAD']) || 'unknown'}${dirty ? ' (with uncommitted changes)' : ''}`,
    load_avg_start: round2(loadavg()[0]),
    load_avg_end: 0,
  };
}

const round2 = (x: number): number => Math.round(x * 100) / 100;
const ms = (us: number): string => `${(us / 1000).toFixed(2)} ms`;

let stepNo = 0;
/** `verdict status` from a cold process against the 3-node cluster (cli.status_ms); null until measured. */
let cliStatus: CliTiming | null = null;
const CLI_STATUS_RUNS = 5;
let stepTotal = 0;
function progress(line: string): void {
  process.stderr.write(`${line}\n`);
}
function tag(): string {
  return `[${String(stepNo).padStart(2)}/${stepTotal}]`;
}

function toScenario(
  id: string,
  step: Step,
  s: Settings,
  r: LoadResult,
  leaderChanges: number,
  cpu: CpuFigures | null,
): Scenario {
  return {
    id,
    kind: step.kind === 'raw' ? 'raw' : 'commit',
    nodes: step.nodes,
    participants:
      step.kind === 'commit'
        ? step.participants
        : step.kind === 'pg'
          ? PG_PARTICIPANTS.length
          : step.kind === 'mysql'
            ? MYSQL_PARTICIPANTS.length
            : 0,
    resource:
      step.kind === 'commit'
        ? 'memory'
        : step.kind === 'pg'
          ? 'postgres'
          : step.kind === 'mysql'
            ? 'postgres+mysql'
            : 'raw-log',
    clients: r.concurrency,
    warmup_ms: s.warmup_ms,
    measure_ms: r.measuredMs,
    tps: r.tps,
    ok: r.ok,
    aborted: r.aborted,
    errors: r.errors,
    p50_us: r.latency.p50_us,
    p90_us: r.latency.p90_us,
    p99_us: r.latency.p99_us,
    p999_us: r.latency.p999_us,
    max_us: r.latency.max_us,
    mean_us: r.latency.mean_us,
    txn_p50_us: r.txn?.p50_us ?? null,
    txn_p99_us: r.txn?.p99_us ?? null,
    leader_changes: leaderChanges,
    cpu,
    histogram: r.histogram,
  };
}

function stepId(nodes: number, step: Step): string {
  if (step.kind === 'commit') return commitId(nodes, step.participants, step.clients, step.parallel);
  if (step.kind === 'pg') return pgCommitId(nodes, step.clients, step.parallel);
  if (step.kind === 'mysql') return mysqlCommitId(nodes, step.clients);
  return rawId(nodes, step.inflight);
}

function stepLabel(nodes: number, step: Step): string {
  const how = 'parallel' in step && step.parallel === true ? ', parallel commit' : '';
  if (step.kind === 'commit')
    return `${nodes} node(s), ${step.participants} memory participant(s), ${step.clients} client(s)${how}`;
  if (step.kind === 'pg')
    return `${nodes} node(s), PostgreSQL participants ${PG_PARTICIPANTS.join(' and ')} (order row, balance debit), ${step.clients} client(s)${how}`;
  if (step.kind === 'mysql')
    return `${nodes} node(s), PostgreSQL participant shop (order row) and MariaDB participant myledger (balance debit, XA), ${step.clients} client(s)`;
  return `${nodes} node(s), raw log, ${step.inflight} Put(s) in flight`;
}

async function runCluster(
  dir: string,
  nodes: number,
  steps: Step[],
  s: Settings,
  pg: BenchPg | null,
  my: BenchMySql | null,
): Promise<Scenario[]> {
  const base = Array.from({ length: BASE_PARTICIPANTS }, (_, i) => `p${i + 1}`);
  progress(
    `        starting a ${nodes}-node cluster and ${base.length} memory participant processes (the others start with the first step that needs them)`,
  );
  const cluster = await BenchCluster.start(join(dir, `nodes${nodes}`), nodes, `n${nodes}`);
  const out: Scenario[] = [];
  /**
   * Starts what `step` needs and stops what no later step needs, so idle processes do not share the cores with a
   * measured window.
   */
  const participantsFor = async (at: number): Promise<void> => {
    const needed = new Set([...base, ...participantsOf(steps[at])]);
    const later = new Set(steps.slice(at).flatMap(participantsOf));
    for (const id of [...cluster.participants.keys()])
      if (!needed.has(id) && !later.has(id) && !base.includes(id)) await cluster.stopParticipant(id);
    const missing = [...needed].filter((id) => !cluster.participants.has(id));
    const argsOf = (id: string): string[] => {
      if (id === 'myledger' && my !== null) return mysqlParticipantArgs(my);
      if ((PG_PARTICIPANTS as readonly string[]).includes(id) && pg !== null) return pgParticipantArgs(pg, id);
      return [];
    };
    if (missing.length > 0) await cluster.startParticipants(missing, argsOf);
  };
  try {
    await cluster.startParticipants(base);
    if (nodes === 3 && cliStatus === null) {
      await cluster.waitForLeader();
      progress(`${tag()} start cli.status_ms: verdict status, ${CLI_STATUS_RUNS} cold processes against 3 nodes`);
      cliStatus = await measureCliStatus(cluster.endpoints, CLI_STATUS_RUNS);
      progress(
        `${tag()} done  cli.status_ms: p50 ${cliStatus.p50_ms} ms (min ${cliStatus.min_ms}, max ${cliStatus.max_ms})`,
      );
    }
    for (const [i, step] of steps.entries()) {
      stepNo++;
      const id = stepId(nodes, step);
      const label = stepLabel(nodes, step);
      progress(`${tag()} start ${id}: ${label}`);
      await participantsFor(i);
      const t0 = Date.now();
      const before = await cluster.waitForLeader();
      const measureMs = step.kind === 'raw' ? s.raw_measure_ms : s.measure_ms;
      const cfg: CommitLoad | RawLoad =
        step.kind === 'commit'
          ? {
              mode: 'commit',
              workload: 'memory',
              endpoints: cluster.endpoints,
              participants: participantsOf(step),
              clients: step.clients,
              warmupMs: s.warmup_ms,
              measureMs,
              keyPrefix: `s${i}`,
              txnTimeoutMs: 30_000,
              // Explicit both ways: the cluster's default is parallel, and the classic scenarios measure classic 2PC.
              parallelCommit: step.parallel === true,
            }
          : step.kind === 'pg' || step.kind === 'mysql'
            ? {
                mode: 'commit',
                workload: 'pg',
                endpoints: cluster.endpoints,
                participants: step.kind === 'pg' ? [...PG_PARTICIPANTS] : [...MYSQL_PARTICIPANTS],
                clients: step.clients,
                warmupMs: s.warmup_ms,
                measureMs,
                keyPrefix: `${pg?.tag ?? 'r'}-${step.kind}-s${i}`,
                txnTimeoutMs: 30_000,
                parallelCommit: step.kind === 'pg' && step.parallel === true,
              }
            : {
                mode: 'raw',
                leader: before.address,
                inflight: step.inflight,
                warmupMs: s.warmup_ms,
                measureMs,
                valueBytes: 100,
              };
      // CPU of every process the step's transactions touch, over the measured window (bench/harness/cpu-sample.ts).
      const stepParticipants = cfg.mode === 'commit' ? cfg.participants : [];
      const cpuWindow = new CpuWindow(() => [
        ...cluster.nodes.flatMap((n) => childProc(n.id === before.id ? 'leader' : 'follower', n.id, n.child)),
        ...stepParticipants.flatMap((p) => childProc('participant', p, cluster.participants.get(p))),
        ...(step.kind === 'pg' || step.kind === 'mysql' ? databaseProcs() : []),
      ]);
      const r = await runJsonChild<LoadResult>(
        `load ${id}`,
        'harness/loadgen.ts',
        cfg,
        join(dir, `nodes${nodes}`, `load-${id}.log`),
        s.warmup_ms + measureMs + 90_000,
        { onLine: cpuWindow.onLine },
      );
      const after = await cluster.waitForLeader();
      const sc = toScenario(id, step, s, r, after.term - before.term, cpuWindow.figures(r.ok));
      out.push(sc);
      const errs = Object.values(r.errors).reduce((a, b) => a + b, 0);
      const notes = [
        errs ? `${errs} errors` : '',
        r.aborted ? `${r.aborted} aborted` : '',
        sc.leader_changes ? `${sc.leader_changes} leader change(s)` : '',
      ]
        .filter(Boolean)
        .join(', ');
      progress(
        `${tag()} done  ${id}: ${sc.tps} ${step.kind === 'raw' ? 'puts' : 'tx'}/s, p50 ${ms(sc.p50_us)}, p99 ${ms(sc.p99_us)}, p99.9 ${ms(sc.p999_us)}${sc.cpu ? `, CPU ${sc.cpu.ms_per_txn} ms/${step.kind === 'raw' ? 'put' : 'tx'} (ceiling ${sc.cpu.ceiling_tps}/s)` : ''}${notes ? ` (${notes})` : ''} [${((Date.now() - t0) / 1000).toFixed(1)} s]`,
      );
    }
  } finally {
    await cluster.destroy();
  }
  return out;
}

/** Writes bench/results/latest.json (older runs are in git history). */
function writeResults(results: Results): string {
  const dirOut = join(ROOT, 'bench', 'results');
  mkdirSync(dirOut, { recursive: true });
  const latest = join(dirOut, 'latest.json');
  writeFileSync(`${latest}.tmp`, JSON.stringify(results, null, 2) + '\n');
  renameSync(`${latest}.tmp`, latest);
  return latest;
}

function headline(r: Results): string {
  const f = r.floors;
  const fo = r.failover;
  const lines = [
    `verdict bench (${r.settings.mode}) on ${r.machine.cpu} x${r.machine.cores}, ${r.machine.disk}, node ${r.machine.node}: ${r.elapsed_s} s (load average ${r.machine.load_avg_start} before, ${r.machine.load_avg_end} after)`,
    `floors: fsync 200 B p50 ${ms(f.fsync_200B.p50_us)} p99 ${ms(f.fsync_200B.p99_us)}; gRPC unary RTT p50 ${ms(f.grpc_unary_rtt.p50_us)}; bidi RTT p50 ${ms(f.grpc_bidi_rtt.p50_us)}; client-streams RTT p50 ${ms(f.grpc_client_streams_rtt.p50_us)}`,
  ];
  if (r.pg !== null) lines.push(`PostgreSQL: skipped (${r.pg.skipped})`);
  const cli = r.cli?.status_ms;
  if (cli)
    lines.push(
      `cli.status_ms (verdict status, cold process, 3 nodes): p50 ${cli.p50_ms} ms, min ${cli.min_ms}, max ${cli.max_ms} over ${cli.runs} runs`,
    );
  for (const d of [f.pg_direct_1, f.pg_direct_16]) {
    if (d !== null)
      lines.push(
        `PostgreSQL direct PREPARE/COMMIT PREPARED, ${d.connections} connection(s) per database: ${d.tps} tx/s, p50 ${ms(d.p50_us)} p99 ${ms(d.p99_us)} p99.9 ${ms(d.p999_us)}`,
      );
  }
  for (const c of PG_CONCURRENCY) {
    const x = r.scenarios.find((sc) => sc.id === pgCommitId(3, c));
    if (x)
      lines.push(
        `PostgreSQL through Verdict, 3 nodes, ${c} client(s): ${x.tps} tx/s, commit p50 ${ms(x.p50_us)} p99 ${ms(x.p99_us)} p99.9 ${ms(x.p999_us)}, begin+commit p50 ${ms(x.txn_p50_us ?? 0)}`,
      );
  }
  if (r.mysql != null) lines.push(`MySQL/MariaDB: skipped (${r.mysql.skipped})`);
  const myDirect = f.mysql_direct_16;
  if (myDirect != null)
    lines.push(
      `PostgreSQL + MariaDB direct (PREPARE TRANSACTION, XA PREPARE), ${myDirect.connections} connection(s) per database: ${myDirect.tps} tx/s, p50 ${ms(myDirect.p50_us)} p99 ${ms(myDirect.p99_us)}`,
    );
  const myMinimal = f.mysql_minimal_16;
  if (myMinimal != null)
    lines.push(
      `PostgreSQL + MariaDB through the least possible processes, 16 in flight: ${myMinimal.tps} tx/s, p50 ${ms(myMinimal.p50_us)} p99 ${ms(myMinimal.p99_us)}`,
    );
  for (const c of MYSQL_CONCURRENCY) {
    const x = r.scenarios.find((sc) => sc.id === mysqlCommitId(3, c));
    if (x)
      lines.push(
        `PostgreSQL + MariaDB through Verdict, 3 nodes, ${c} client(s): ${x.tps} tx/s, commit p50 ${ms(x.p50_us)} p99 ${ms(x.p99_us)}`,
      );
  }
  for (const n of r.settings.cluster_sizes) {
    const c1 = r.scenarios.find((s) => s.id === commitId(n, 2, 1));
    if (c1)
      lines.push(
        `commit, ${n} node(s), 2 memory participants, 1 client: p50 ${ms(c1.p50_us)} p99 ${ms(c1.p99_us)} p99.9 ${ms(c1.p999_us)}; peak ${r.peak_tps[`nodes${n}_memory2`]} tx/s`,
      );
  }
  lines.push(`ratios: ${JSON.stringify(r.ratios)}`);
  lines.push(
    `ratio_source: ${JSON.stringify(r.ratio_source ?? {})}; ratios_sweep: ${JSON.stringify(r.ratios_sweep ?? {})}`,
  );
  lines.push(`peak_tps: ${JSON.stringify(r.peak_tps)}`);
  lines.push(`raft: ${JSON.stringify(r.raft)}`);
  lines.push(`anchors: ${JSON.stringify(r.anchors)}`);
  lines.push(`floor_ratios: ${JSON.stringify(r.floor_ratios)}`);
  lines.push(`bounds: ${JSON.stringify(r.bounds ?? {})}`);
  lines.push(
    `failover: in_doubt_p99_ms ${fo.in_doubt_p99_ms} (p50 ${fo.in_doubt_p50_ms}, max ${fo.in_doubt_max_ms}, ${fo.in_doubt_pairs} pairs), cluster window ${JSON.stringify(fo.cluster_in_doubt_window_ms_per_run)} ms, ` +
      `client gap ${JSON.stringify(fo.client_gap_ms_per_run)} ms, election ${JSON.stringify(fo.election_ms_per_run)} ms, still in doubt ${fo.still_in_doubt}, decided_rolled_back ${fo.decided_rolled_back}`,
  );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const s = settings();
  const dir = mkdtempSync(join(tmpdir(), 'verdict-bench-'));
  let interrupted = false;
  let pg: BenchPg | null = null;
  let my: BenchMySql | null = null;
  const onSignal = (sig: string): void => {
    if (interrupted) return;
    interrupted = true;
    progress(
      `bench: ${sig}; stopping ${liveChildren()} child process(es)${pg && !pg.server.external ? ' and PostgreSQL' : ''}`,
    );
    void Promise.all([stopAll(2_000), pg?.server.stop(), my?.server.stop()]).finally(() => {
      if (!KEEP) rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('exit', killAllNow);

  const m = machine(dir);
  let ok = false;
  try {
    progress('bench: starting PostgreSQL (test/pg/harness.ts, or VERDICT_PG_URL) with databases shop and ledger');
    const started = await startBenchPg();
    let pgSkipped: string | null = null;
    if ('skipped' in started) {
      pgSkipped = started.skipped;
      progress(`bench: PostgreSQL skipped: ${pgSkipped}`);
    } else {
      pg = started;
      progress(`bench: PostgreSQL ${pg.server.external ? 'at VERDICT_PG_URL' : 'of our own'} ready`);
    }
    const startedMy = await startBenchMySql(pg);
    const mySkipped = 'skipped' in startedMy ? startedMy.skipped : null;
    if ('skipped' in startedMy) progress(`bench: MySQL/MariaDB skipped: ${startedMy.skipped}`);
    else {
      my = startedMy;
      progress(`bench: MariaDB ${my.server.external ? 'at VERDICT_MYSQL_URL' : 'of our own'} ready`);
    }
    const steps = plan(s, pg !== null, my !== null);
    // The floors, the etcd anchor and the paired step, then what the plan and the PostgreSQL, MySQL and failover parts
    // add.
    stepTotal =
      3 +
      (pg !== null ? PG_CONCURRENCY.length + 3 : 0) +
      (my !== null ? MYSQL_CONCURRENCY.length : 0) +
      [...steps.values()].reduce((n, x) => n + x.length, 0) +
      s.failover_runs;
    progress(`verdict bench (${s.mode}): ${stepTotal} steps on ${m.cpu} x${m.cores}; work dir ${dir}`);

    stepNo++;
    progress(`${tag()} start floors: fsync of 200 B, gRPC round trips between two processes`);
    const machineFloors = await measureFloors(dir, {
      measureMs: QUICK ? 1_500 : 5_000,
      fsyncSamplesMax: QUICK ? 2_000 : 20_000,
    });
    progress(
      `${tag()} done  floors: fsync p50 ${ms(machineFloors.fsync_200B.p50_us)} (three processes at once: ${ms(machineFloors.fsync_200B_x3?.p50_us ?? 0)}), gRPC unary p50 ${ms(machineFloors.grpc_unary_rtt.p50_us)}, bidi p50 ${ms(machineFloors.grpc_bidi_rtt.p50_us)}, client streams p50 ${ms(machineFloors.grpc_client_streams_rtt.p50_us)}`,
    );
    const pgDirect: PgDirectFloors = { ...NO_PG_DIRECT };
    if (pg !== null) {
      for (const connections of PG_CONCURRENCY) {
        stepNo++;
        progress(
          `${tag()} start floor pg_direct_${connections}: PostgreSQL PREPARE TRANSACTION + COMMIT PREPARED in shop and ledger, no coordinator, ${connections} connection(s) per database`,
        );
        const t0 = Date.now();
        const d = await measurePgDirect(pg, dir, connections, { warmupMs: s.warmup_ms, measureMs: s.measure_ms });
        pgDirect[`pg_direct_${connections}`] = d;
        const errs = Object.values(d.errors).reduce((a, b) => a + b, 0);
        progress(
          `${tag()} done  floor pg_direct_${connections}: ${d.tps} tx/s, p50 ${ms(d.p50_us)}, p99 ${ms(d.p99_us)}, p99.9 ${ms(d.p999_us)}${errs ? ` (${errs} errors)` : ''} [${((Date.now() - t0) / 1000).toFixed(1)} s]`,
        );
      }
      stepNo++;
      progress(
        `${tag()} start floor pg_direct_16_marked: the same at 16 connections, with the participant's marker row beside each PREPARE TRANSACTION`,
      );
      const t0 = Date.now();
      const marked = await measurePgDirect(pg, dir, 16, { warmupMs: s.warmup_ms, measureMs: s.measure_ms }, true);
      pgDirect.pg_direct_16_marked = marked;
      progress(
        `${tag()} done  floor pg_direct_16_marked: ${marked.tps} tx/s, p50 ${ms(marked.p50_us)}, p99 ${ms(marked.p99_us)} [${((Date.now() - t0) / 1000).toFixed(1)} s]`,
      );
      stepNo++;
      progress(
        `${tag()} start floor pg_minimal_16: the same transaction through the least possible processes (two participants, a leader and two followers), 16 in flight`,
      );
      const t1 = Date.now();
      const minimal = await measurePgMinimal(pg, dir, 16, { warmupMs: s.warmup_ms, measureMs: s.measure_ms });
      pgDirect.pg_minimal_16 = minimal;
      progress(
        `${tag()} done  floor pg_minimal_16: ${minimal.tps} tx/s, p50 ${ms(minimal.p50_us)}, p99 ${ms(minimal.p99_us)} [${((Date.now() - t1) / 1000).toFixed(1)} s]`,
      );
    }
    let mysqlDirect16: Floors['mysql_direct_16'] = null;
    let mysqlMinimal16: Floors['mysql_minimal_16'] = null;
    if (pg !== null && my !== null) {
      for (const connections of MYSQL_CONCURRENCY) {
        stepNo++;
        progress(
          `${tag()} start floor mysql_direct_${connections}: PREPARE TRANSACTION in shop (PostgreSQL), XA PREPARE in ledger (MariaDB), both committed from one process, ${connections} connection(s) per database`,
        );
        const t0 = Date.now();
        const d = await measureMySqlDirect(pg, my, dir, connections, {
          warmupMs: s.warmup_ms,
          measureMs: s.measure_ms,
        });
        mysqlDirect16 = d;
        progress(
          `${tag()} done  floor mysql_direct_${connections}: ${d.tps} tx/s, p50 ${ms(d.p50_us)}, p99 ${ms(d.p99_us)} [${((Date.now() - t0) / 1000).toFixed(1)} s]`,
        );
      }
      stepNo++;
      progress(
        `${tag()} start floor mysql_minimal_16: the same through the least possible processes (a PostgreSQL and a MariaDB participant, a leader and two followers), 16 in flight`,
      );
      const t1 = Date.now();
      mysqlMinimal16 = await measureMySqlMinimal(pg, my, dir, 16, { warmupMs: s.warmup_ms, measureMs: s.measure_ms });
      progress(
        `${tag()} done  floor mysql_minimal_16: ${mysqlMinimal16.tps} tx/s, p50 ${ms(mysqlMinimal16.p50_us)}, p99 ${ms(mysqlMinimal16.p99_us)} [${((Date.now() - t1) / 1000).toFixed(1)} s]`,
      );
    }
    const floors: Floors = {
      ...machineFloors,
      ...pgDirect,
      mysql_direct_16: mysqlDirect16,
      mysql_minimal_16: mysqlMinimal16,
    };

    const scenarios: Scenario[] = [];
    for (const [nodes, list] of steps) scenarios.push(...(await runCluster(dir, nodes, list, s, pg, my)));
    if (pg !== null) {
      // The server has served every PostgreSQL scenario since the first direct floor: measure that floor
      // again, so the report shows how far it moved between them.
      stepNo++;
      progress(
        `${tag()} start floor pg_direct_16_after: the direct floor at 16 connections again, after Verdict's PostgreSQL scenarios, on the same server`,
      );
      const t0 = Date.now();
      const after = await measurePgDirect(
        pg,
        dir,
        16,
        { warmupMs: s.warmup_ms, measureMs: s.measure_ms },
        false,
        'after',
      );
      floors.pg_direct_16_after = after;
      progress(
        `${tag()} done  floor pg_direct_16_after: ${after.tps} tx/s, p50 ${ms(after.p50_us)}, p99 ${ms(after.p99_us)} [${((Date.now() - t0) / 1000).toFixed(1)} s]`,
      );
      await pg.server.stop();
      pg = null;
    }
    if (my !== null) {
      await my.server.stop();
      my = null;
    }

    stepNo++;
    progress(
      `${tag()} start anchor etcd: etcd 3.4, 3 members on loopback, 100-byte KV.Put to the leader, 1 and 64 in flight`,
    );
    const tEtcd = Date.now();
    // An anchor that fails to start is reported as skipped, with why; it never costs the run of Verdict's own figures.
    const etcd = await measureEtcdAnchor(join(dir, 'anchor'), {
      warmupMs: s.warmup_ms,
      measureMs: s.raw_measure_ms,
      log: progress,
    }).catch((err: unknown) => ({
      skipped: `etcd failed: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]} (logs in ${join(dir, 'anchor', 'etcd')})`,
    }));
    progress(
      'skipped' in etcd
        ? `${tag()} done  anchor etcd: skipped (${etcd.skipped})`
        : `${tag()} done  anchor etcd ${etcd.version}: 1 in flight p50 ${ms(etcd.seq_p50_us)}; 64 in flight ${etcd.inflight64_tps} puts/s [${((Date.now() - tEtcd) / 1000).toFixed(1)} s]`,
    );

    stepNo++;
    progress(
      `${tag()} start paired: 1-node classic, 3-node classic and parallel, the raw log and etcd, one in flight each, taken in turn`,
    );
    const tPaired = Date.now();
    let paired: PairedFigures | null = null;
    try {
      paired = await measurePaired(join(dir, 'paired'), {
        warmupMs: s.paired.warmup_ms,
        segmentMs: s.paired.segment_ms,
        settleMs: s.paired.settle_ms,
        rounds: s.paired.rounds,
        log: progress,
      });
      const pr = paired.ratios;
      progress(
        `${tag()} done  paired: 3/1 ${pr.latency_p50_3_over_1.pooled}, parallel3/1 ${pr.latency_p50_3_parallel_over_1.pooled}, raw/etcd ${pr.raft_seq_p50_over_etcd?.pooled ?? '-'} (pooled p50s) [${((Date.now() - tPaired) / 1000).toFixed(1)} s]`,
      );
    } catch (err) {
      // The sweeps' figures stand without it.
      progress(`${tag()} skipped paired: ${(err as Error).message.split('\n')[0]}`);
    }

    const runs: FailoverRun[] = [];
    for (let i = 1; i <= s.failover_runs; i++) {
      stepNo++;
      progress(
        `${tag()} start failover run ${i}/${s.failover_runs}: 3 nodes, 2 memory participants, 16 clients, SIGKILL of the leader`,
      );
      const t0 = Date.now();
      const r = await runFailover(join(dir, `failover${i}`), `f${i}`, failoverPlan(QUICK));
      runs.push(r);
      progress(
        `${tag()} done  failover run ${i}: killed ${r.killedLeader}; election ${r.electionMs} ms; in doubt at participants ${r.inDoubt.pairs} pair(s), window ${r.inDoubt.windowMs ?? '-'} ms; ` +
          `cluster view ${r.cluster.windowMs === null ? '-' : Math.round(r.cluster.windowMs)} ms; client gap ${r.clientGapMs ?? '-'} ms; rolled back ${r.decidedRolledBack} [${((Date.now() - t0) / 1000).toFixed(1)} s]`,
      );
    }

    // Sagas (bench/scenarios/saga.ts): three steps on three nodes at 1 and 16 clients, and the direct calls as the
    // floor.
    progress(`${tag()} start sagas: 3 nodes, 3 steps, 1 and 16 clients, direct calls as the floor`);
    const saga = await measureSagas(join(dir, 'saga'), QUICK ? 5_000 : 20_000);
    progress(
      `${tag()} done  sagas: ${saga.tps_3steps_c16} sagas/s at 16 clients; p50 ${saga.p50_ms_c1} ms at 1 client; direct calls p50 ${saga.direct_p50_ms} ms`,
    );

    // Outbox (bench/scenarios/outbox.ts): polling and CDC relays at 16 writers through NATS JetStream to the inbox, the
    // broker's publish floor beside them.
    progress(
      `${tag()} start outbox: polling and CDC relays, 16 writers and at 200 events/s, NATS JetStream, publish and publish + consume floors`,
    );
    let outbox: Awaited<ReturnType<typeof measureOutbox>> | null = null;
    try {
      outbox = await measureOutbox(QUICK ? 5_000 : 20_000);
      progress(
        `${tag()} done  outbox: polling ${outbox.polling_eps} events/s, cdc ${outbox.cdc_eps} events/s; publish + consume floor ${outbox.floor_publish_consume_eps}/s (raw publish ${outbox.floor_publish_eps}/s); p99 at ${outbox.rate_eps} events/s polling ${outbox.polling_p99_ms_at_rate} ms, cdc ${outbox.cdc_p99_ms_at_rate} ms`,
      );
    } catch (err) {
      // No nats-server or PostgreSQL here: the rest of the run stands.
      progress(`${tag()} skipped outbox: ${(err as Error).message.split('\n')[0]}`);
    }

    // Decision groups (bench/scenarios/groups.ts): G = 1, 2, 4 on 3 and 5 nodes, leaders spread, and the capacity
    // model fitted to them.
    progress(`${tag()} start groups: G = 1, 2, 4, leaders spread, memory participants; the capacity model`);
    let groups: GroupsFigures | null = null;
    try {
      groups = withModel(await measureGroups(join(dir, 'groups'), { ...groupsPlan(QUICK), log: progress }));
      const m = groups.model;
      progress(
        `${tag()} done  groups: ${groups.points.map((p) => `${p.nodes}x${p.groups}${p.together === true ? ' on one node' : ''} ${p.peak_tps} tx/s`).join(', ')}${m ? `; model for 9 × 16 cores: G = ${m.nine_by_16.groups}, ${Math.round(m.nine_by_16.prediction.tps)} tx/s (${m.nine_by_16.prediction.bound})` : ''}`,
      );
    } catch (err) {
      // The rest of the run stands without it.
      progress(`${tag()} skipped groups: ${(err as Error).message.split('\n')[0]}`);
    }

    const failover = summarizeFailover(runs, FAILOVER_METHOD);
    const keys = summaryKeys(scenarios, floors);
    const finishedAt = new Date();
    const results: Results = {
      schema: 1,
      started_at: startedAt.toISOString(),
      finished_at: finishedAt.toISOString(),
      elapsed_s: Math.round((finishedAt.getTime() - startedAt.getTime()) / 1000),
      machine: { ...m, load_avg_end: round2(loadavg()[0]) },
      settings: s,
      floors,
      pg: pgSkipped === null ? null : { skipped: pgSkipped },
      mysql: mySkipped === null ? null : { skipped: mySkipped },
      scenarios,
      failover,
      ...keys,
      bounds: cpuBounds(scenarios, floors, 'skipped' in etcd ? null : etcd.seq_p50_us),
      ...targetRatios(
        {
          ...keys.ratios,
          ...etcdRatios(keys.raft, etcd),
          saga_over_direct_p50: saga.direct_p50_ms > 0 ? round2(saga.p50_ms_c1 / saga.direct_p50_ms) : null,
        },
        paired,
      ),
      saga,
      outbox,
      groups,
      anchors: { etcd: etcdAnchorFields(etcd) },
      paired,
      cli: { status_ms: cliStatus },
    };
    const latest = writeResults(results);
    const report = writeReport(results);
    progress(`bench: wrote ${latest}, ${report.join(', ')}`);
    process.stdout.write(headline(results) + '\n');
    ok = true;
  } finally {
    await stopAll();
    await pg?.server.stop();
    await my?.server.stop();
    if (ok && !KEEP) rmSync(dir, { recursive: true, force: true });
    else progress(`bench: kept ${dir} (node, participant and load generator logs)`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench: failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
