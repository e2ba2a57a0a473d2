// `npm run bench -- databases [--quick] [--clients N (16)] [--warmup-ms MS] [--measure-ms MS] [--no-mysql] [--minimal]
// [--no-verdict]`
//
// The full run's PostgreSQL and MariaDB rows alone, each beside its floor in
// the same run: a PostgreSQL of our own (and a MariaDB, unless --no-mysql or
// none is installed), first the direct floors (PREPARE TRANSACTION + COMMIT
// PREPARED in shop and ledger with no coordinator; the same with the ledger
// in MariaDB under XA), then a 3-node cluster with the shop, ledger and
// myledger participants and the shop/ledger transaction through Verdict at
// --clients, classic two-phase commit as in the full run. Prints each row
// with its CPU per transaction by process (PostgreSQL's and MariaDB's own
// processes counted as "database") and the load average, then one JSON line
// with the two ratios the full run writes (ratios.pg_through_verdict_over_direct,
// ratios.mysql_through_verdict_over_direct). --minimal adds the full run's
// least-process floors (floors.pg_minimal_16, floors.mysql_minimal_16);
// --no-verdict leaves out the cluster (the floors alone). Writes no results file.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { childProc, CpuWindow, databaseProcs, type CpuFigures } from '../harness/cpu-sample.ts';
import type { CommitLoad, LoadResult } from '../harness/loadgen.ts';
import {
  measureMySqlDirect,
  measureMySqlMinimal,
  MYSQL_PARTICIPANTS,
  mysqlParticipantArgs,
  startBenchMySql,
  type BenchMySql,
} from '../floors/mysql.ts';
import {
  measurePgDirect,
  measurePgMinimal,
  PG_PARTICIPANTS,
  pgParticipantArgs,
  startBenchPg,
  type BenchPg,
  type PgDirectFloor,
} from '../floors/pg.ts';
import { mysqlQuery } from '../../test/mysql/harness.ts';
import { BenchCluster, intFlag as flag, killAllNow, runJsonChild, stopAll } from '../harness/procs.ts';

const QUICK = process.argv.includes('--quick');
const CLIENTS = flag('clients', 16);
const WARMUP_MS = flag('warmup-ms', QUICK ? 3_000 : 10_000);
const MEASURE_MS = flag('measure-ms', QUICK ? 5_000 : 12_000);
const WITH_MYSQL = !process.argv.includes('--no-mysql');
const WITH_MINIMAL = process.argv.includes('--minimal');

interface Row {
  tps: number;
  committed: number;
  aborted: number;
  errors: number;
  p50Ms: number;
  directTps: number;
  directP50Ms: number;
  overDirect: number;
  loadAvg: number;
  cpuMsPerTxn: number | null;
  cpuByKind: CpuFigures['by_kind'] | null;
}

const r2 = (x: number): number => Math.round(x * 100) / 100;
const say = (line: string): void => void process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-databases-'));
  process.on('exit', killAllNow);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void stopAll().then(() => process.exit(130)));
  let pg: BenchPg | null = null;
  let my: BenchMySql | null = null;
  try {
    const started = await startBenchPg();
    if ('skipped' in started) throw new Error(`PostgreSQL: ${started.skipped}`);
    pg = started;
    if (WITH_MYSQL) {
      const m = await startBenchMySql(pg);
      if ('skipped' in m) say(`MariaDB skipped: ${m.skipped}`);
      else my = m;
    }
    const t = { warmupMs: WARMUP_MS, measureMs: MEASURE_MS };
    const pgDirect = await measurePgDirect(pg, dir, CLIENTS, t);
    say(
      `floor pg_direct_${CLIENTS}: ${pgDirect.tps} tx/s, p50 ${(pgDirect.p50_us / 1000).toFixed(2)} ms (load average ${loadavg()[0].toFixed(2)})`,
    );
    const myDirect = my !== null ? await measureMySqlDirect(pg, my, dir, CLIENTS, t) : null;
    if (myDirect !== null)
      say(
        `floor mysql_direct_${CLIENTS}: ${myDirect.tps} tx/s, p50 ${(myDirect.p50_us / 1000).toFixed(2)} ms (load average ${loadavg()[0].toFixed(2)})`,
      );
    if (WITH_MINIMAL) {
      const pgMin = await measurePgMinimal(pg, dir, CLIENTS, t);
      say(
        `floor pg_minimal_${CLIENTS}: ${pgMin.tps} tx/s (${r2(pgMin.tps / pgDirect.tps)} of direct), p50 ${(pgMin.p50_us / 1000).toFixed(2)} ms (load average ${loadavg()[0].toFixed(2)})`,
      );
      if (my !== null && myDirect !== null) {
        const myMin = await measureMySqlMinimal(pg, my, dir, CLIENTS, t);
        say(
          `floor mysql_minimal_${CLIENTS}: ${myMin.tps} tx/s (${r2(myMin.tps / myDirect.tps)} of direct), p50 ${(myMin.p50_us / 1000).toFixed(2)} ms (load average ${loadavg()[0].toFixed(2)})`,
        );
      }
    }
    if (process.argv.includes('--no-verdict')) return;
    const rows = await throughVerdict(dir, pg, my, pgDirect, myDirect);
    process.stdout.write(
      `${JSON.stringify({
        clients: CLIENTS,
        warmupMs: WARMUP_MS,
        measureMs: MEASURE_MS,
        rows,
        ratios: {
          pg_through_verdict_over_direct: rows.pg.overDirect,
          mysql_through_verdict_over_direct: rows.mysql?.overDirect ?? null,
        },
      })}\n`,
    );
  } finally {
    await stopAll();
    await Promise.all([my?.server.stop(), pg?.server.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function throughVerdict(
  dir: string,
  pg: BenchPg,
  my: BenchMySql | null,
  pgDirect: PgDirectFloor,
  myDirect: PgDirectFloor | null,
): Promise<{ pg: Row; mysql: Row | null }> {
  const cluster = await BenchCluster.start(join(dir, 'cluster'), 3, 'db');
  try {
    const ids = [...new Set<string>([...PG_PARTICIPANTS, ...(my !== null ? MYSQL_PARTICIPANTS : [])])];
    await cluster.startParticipants(ids, (id) =>
      id === 'myledger' && my !== null ? mysqlParticipantArgs(my) : pgParticipantArgs(pg, id),
    );
    const pgRow = await row(dir, cluster, 'pg', [...PG_PARTICIPANTS], pgDirect, pg.tag);
    // MariaDB's count of sessions opened: a participant that keeps its sessions opens none per transaction.
    const sessions = async (): Promise<number> =>
      my === null
        ? 0
        : Number(
            (await mysqlQuery<{ Value: string }>(my.ledgerUrl, "SHOW GLOBAL STATUS LIKE 'Connections'"))[0]?.Value,
          );
    const sessionsBefore = await sessions();
    const myRow =
      my !== null && myDirect !== null
        ? await row(dir, cluster, 'mysql', [...MYSQL_PARTICIPANTS], myDirect, pg.tag)
        : null;
    if (myRow !== null)
      say(
        `MariaDB sessions opened during the mysql row (warm-up and window): ${(await sessions()) - sessionsBefore}, ${myRow.committed} committed in the window`,
      );
    return { pg: pgRow, mysql: myRow };
  } finally {
    await cluster.destroy();
  }
}

async function row(
  dir: string,
  cluster: BenchCluster,
  kind: 'pg' | 'mysql',
  participants: string[],
  direct: PgDirectFloor,
  tag: string,
): Promise<Row> {
  const leader = await cluster.waitForLeader();
  const cfg: CommitLoad = {
    mode: 'commit',
    workload: 'pg',
    endpoints: cluster.endpoints,
    participants,
    clients: CLIENTS,
    warmupMs: WARMUP_MS,
    measureMs: MEASURE_MS,
    keyPrefix: `${tag}-${kind}-db`,
    txnTimeoutMs: 30_000,
    parallelCommit: false,
  };
  const window = new CpuWindow(() => [
    ...cluster.nodes.flatMap((n) => childProc(n.id === leader.id ? 'leader' : 'follower', n.id, n.child)),
    ...participants.flatMap((p) => childProc('participant', p, cluster.participants.get(p))),
    ...databaseProcs(),
  ]);
  const load = await runJsonChild<LoadResult>(
    `load ${kind}`,
    'harness/loadgen.ts',
    cfg,
    join(dir, `load-${kind}.log`),
    WARMUP_MS + MEASURE_MS + 90_000,
    { onLine: window.onLine },
  );
  const cpu = window.figures(load.ok);
  const errs = Object.values(load.errors).reduce((a, b) => a + b, 0);
  const out: Row = {
    tps: load.tps,
    committed: load.ok,
    aborted: load.aborted,
    errors: errs,
    p50Ms: r2(load.latency.p50_us / 1000),
    directTps: direct.tps,
    directP50Ms: r2(direct.p50_us / 1000),
    overDirect: direct.tps > 0 ? r2(load.tps / direct.tps) : 0,
    loadAvg: r2(loadavg()[0]),
    cpuMsPerTxn: cpu?.ms_per_txn ?? null,
    cpuByKind: cpu?.by_kind ?? null,
  };
  say(
    `${kind} through Verdict, ${CLIENTS} clients: ${out.tps} tx/s, p50 ${out.p50Ms} ms, ${load.ok} committed, ${load.aborted} aborted, ${errs} errors; ÷ direct ${out.overDirect} (load average ${out.loadAvg})` +
      (cpu !== null
        ? `; CPU ${cpu.ms_per_txn} ms/txn: ${Object.entries(cpu.by_kind)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}`
        : ''),
  );
  return out;
}

await main();
