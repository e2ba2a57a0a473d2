// The PostgreSQL part of the benchmark: the shop/ledger transaction of
// bench/harness/pg-workload.ts committed through Verdict by two PostgreSQL
// participant processes, and the same transaction committed with PostgreSQL's
// two-phase commit driven directly (bench/floors/pg-direct.ts), in the same run.
//
//   startBenchPg()   a PostgreSQL 15 of our own (test/pg/harness.ts: initdb in
//                    a temp folder, a free loopback port, max_prepared_transactions
//                    set), or the server VERDICT_PG_URL names; databases shop
//                    and ledger with their tables, accounts seeded. Without
//                    PostgreSQL binaries and without VERDICT_PG_URL the
//                    PostgreSQL part is skipped and the results say why.
//   measurePgDirect() floors.pg_direct_1 / pg_direct_16: the direct floor at 1
//                    and 16 connections per database, each run in its own process;
//                    pg_direct_16_marked: at 16 with the participant's marker row
//                    written beside each PREPARE TRANSACTION.
//                    pg_direct_16_after: at 16 again once Verdict's PostgreSQL
//                    scenarios are done, on the same server.
//   measurePgMinimal() floors.pg_minimal_16: the same transaction through the
//                    least possible processes (bench/floors/pg-minimal.ts): what any
//                    replicated coordinator with participant processes costs here;
//                    with a MariaDB ledger, floors.mysql_minimal_16 (bench/floors/mysql.ts).
//   pgParticipantArgs() the `verdict participant --resource postgres` flags of
//                    the shop and ledger participants bench/main.ts starts on
//                    its 3-node cluster; their scenarios are commit.nodes3.pg2.cN.
//
// ratios.pg_through_verdict_over_direct (bench/report/results.ts) is the throughput
// through Verdict at 16 clients over the direct floor's at 16 connections.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startPostgres, withClient, type PgServer } from '../../test/pg/harness.ts';
import type { LatencySummary } from '../harness/hist.ts';
import type { PgDirectResult } from './direct-child.ts';
import type { PgDirectConfig } from './pg-direct.ts';
import { LEDGER_SCHEMA, SHOP_SCHEMA } from '../harness/pg-workload.ts';
import type { PgMinimalConfig } from './pg-minimal.ts';
import { listeningAddress, ROOT, runJsonChild, spawnChild, stopChild, type Child } from '../harness/procs.ts';

/** Concurrent clients (through Verdict) and connections per database (direct), in quick and full runs alike. */
export const PG_CONCURRENCY = [1, 16] as const;
/** The participants' ids, also the databases' names. */
export const PG_PARTICIPANTS = ['shop', 'ledger'] as const;
/**
 * Prepared transactions the server allows at once: both participants at full concurrency, and the direct floor's, with
 * room to spare.
 */
const MAX_PREPARED_TRANSACTIONS = 128;
/**
 * Each participant's --pg-concurrency: transactions it holds open at once, so 16 clients never queue for a connection.
 */
export const PG_PARTICIPANT_CONCURRENCY = 16;

const PG_BIN = process.env.VERDICT_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface BenchPg {
  server: PgServer;
  urls: Record<(typeof PG_PARTICIPANTS)[number], string>;
  /** Unique per run: order ids and gids carry it, so runs against one external server never collide. */
  tag: string;
}

/** A direct floor's figures: the latency percentiles of the whole transaction and its throughput. */
export interface PgDirectFloor extends LatencySummary {
  connections: number;
  tps: number;
  ok: number;
  errors: Record<string, number>;
  measure_ms: number;
  leftover_prepared: number;
  histogram: string;
}

export interface PgDirectFloors {
  pg_direct_1: PgDirectFloor | null;
  pg_direct_16: PgDirectFloor | null;
  /**
   * pg_direct_16 with a marker row beside each PREPARE TRANSACTION, as the participant writes (absent in older
   * results).
   */
  pg_direct_16_marked?: PgDirectFloor | null;
  /**
   * pg_direct_16 measured again after Verdict's PostgreSQL scenarios, on the same server: how far the floor moved
   * meanwhile (absent in older results).
   */
  pg_direct_16_after?: PgDirectFloor | null;
  /**
   * The same transaction at 16 in flight through the least possible processes: two participants, a leader and two
   * followers (bench/floors/pg-minimal.ts; absent in older results).
   */
  pg_minimal_16?: PgDirectFloor | null;
}

export const NO_PG_DIRECT: PgDirectFloors = { pg_direct_1: null, pg_direct_16: null };

/** A floor child's result (bench/floors/direct-child.ts) as the results file holds it. */
export function directFloor(r: PgDirectResult, connections: number): PgDirectFloor {
  return {
    ...r.latency,
    connections,
    tps: r.tps,
    ok: r.ok,
    errors: r.errors,
    measure_ms: r.measured_ms,
    leftover_prepared: r.leftover_prepared,
    histogram: r.histogram,
  };
}

/**
 * Starts (or connects to) PostgreSQL and prepares shop and ledger. Returns the
 * reason instead when there is no PostgreSQL to use at all; any other failure
 * throws, with PostgreSQL's message.
 */
export async function startBenchPg(): Promise<BenchPg | { skipped: string }> {
  const external = process.env.VERDICT_PG_URL ?? '';
  if (external === '' && !existsSync(join(PG_BIN, 'postgres'))) {
    return {
      skipped: `no PostgreSQL server binary at ${join(PG_BIN, 'postgres')} and VERDICT_PG_URL is not set: install postgresql-15, or set VERDICT_PG_BIN or VERDICT_PG_URL`,
    };
  }
  const server = await startPostgres({
    maxPreparedTransactions: MAX_PREPARED_TRANSACTIONS,
    databases: [...PG_PARTICIPANTS],
  });
  try {
    const urls = { shop: server.url('shop'), ledger: server.url('ledger') };
    for (const [db, ddl] of [
      ['shop', SHOP_SCHEMA],
      ['ledger', LEDGER_SCHEMA],
    ] as const) {
      await withClient(urls[db], async (c) => {
        const mpt = Number(
          (await c.query<{ mpt: string }>("SELECT current_setting('max_prepared_transactions') AS mpt")).rows[0]?.mpt,
        );
        if (mpt < PG_PARTICIPANT_CONCURRENCY * 2) {
          throw new Error(
            `PostgreSQL at ${db} has max_prepared_transactions = ${mpt}; the benchmark needs at least ${PG_PARTICIPANT_CONCURRENCY * 2} (set it and restart PostgreSQL)`,
          );
        }
        for (const stmt of ddl) await c.query(stmt);
      });
    }
    return { server, urls, tag: `r${Date.now().toString(36)}` };
  } catch (err) {
    await server.stop();
    throw new Error(
      `preparing the benchmark's shop and ledger databases failed: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

export interface PgDirectTiming {
  warmupMs: number;
  measureMs: number;
}

/**
 * The direct floor at one concurrency, in its own process; with `marker`, each
 * database also writes a marker row as the participant does. `again` names a
 * second measurement of the same floor in one run (its order ids must differ).
 */
export async function measurePgDirect(
  pg: BenchPg,
  dir: string,
  connections: number,
  t: PgDirectTiming,
  marker = false,
  again = '',
): Promise<PgDirectFloor> {
  const cfg: PgDirectConfig = {
    shopUrl: pg.urls.shop,
    ledgerUrl: pg.urls.ledger,
    connections,
    warmupMs: t.warmupMs,
    measureMs: t.measureMs,
    // Order ids carry the tag: a marked run must not reuse an unmarked run's.
    tag: `${pg.tag}c${connections}${marker ? 'm' : ''}${again}`,
    marker,
  };
  const what = `PostgreSQL direct floor${marker ? ' with markers' : ''}, ${connections} connection(s)`;
  const r = await runJsonChild<PgDirectResult>(
    what,
    'floors/pg-direct.ts',
    cfg,
    join(dir, 'pg-direct.log'),
    t.warmupMs + t.measureMs + 90_000,
  );
  if (r.ok === 0)
    throw new Error(
      `the ${what} committed nothing (errors: ${JSON.stringify(r.errors)}); see ${join(dir, 'pg-direct.log')}`,
    );
  return directFloor(r, connections);
}

/** The extra `verdict participant` flags of participant `id` (shop or ledger). */
export function pgParticipantArgs(pg: BenchPg, id: string): string[] {
  const url = (pg.urls as Record<string, string>)[id];
  if (url === undefined)
    throw new Error(
      `no PostgreSQL database for participant ${id}; the PostgreSQL participants are ${PG_PARTICIPANTS.join(', ')}`,
    );
  return ['--resource', 'postgres', '--pg-url', url, '--pg-concurrency', String(PG_PARTICIPANT_CONCURRENCY)];
}

/**
 * The PostgreSQL path done by the least possible processes (bench/floors/pg-minimal.ts):
 * two participant processes in front of shop and ledger, two followers, and
 * the client and leader in one process, at `connections` transactions in
 * flight. What any replicated coordinator costs on this machine, none of it
 * Verdict's code: floors.pg_minimal_16.
 */
export async function measurePgMinimal(
  pg: BenchPg,
  dir: string,
  connections: number,
  t: PgDirectTiming,
  mariaDbLedgerUrl: string | null = null,
): Promise<PgDirectFloor> {
  const what = mariaDbLedgerUrl === null ? 'PostgreSQL' : 'MariaDB';
  const log = join(dir, mariaDbLedgerUrl === null ? 'pg-minimal.log' : 'mysql-minimal.log');
  const start = (label: string, cfg: PgMinimalConfig): Child =>
    spawnChild(label, ['--import', 'tsx', join(ROOT, 'bench', 'floors', 'pg-minimal.ts'), JSON.stringify(cfg)], log, {
      stdin: true,
      stdout: true,
    });
  const ledgerUrl = mariaDbLedgerUrl ?? pg.urls.ledger;
  const participants = [
    start('minimal shop participant', { role: 'participant', url: pg.urls.shop, connections }),
    start('minimal ledger participant', {
      role: 'participant',
      url: ledgerUrl,
      connections,
      db: mariaDbLedgerUrl === null ? 'postgres' : 'mysql',
    }),
  ];
  const followers = [1, 2].map((i) =>
    start(`minimal follower ${i}`, { role: 'follower', dir, name: `minimal-follower-${i}`, bytes: 200 }),
  );
  try {
    const [[shop, ledger], fs] = await Promise.all([
      Promise.all(participants.map((c) => listeningAddress(c))),
      Promise.all(followers.map((c) => listeningAddress(c))),
    ]);
    const cfg: PgMinimalConfig = {
      role: 'coordinator',
      shop,
      ledger,
      followers: fs,
      shopUrl: pg.urls.shop,
      ledgerUrl,
      ledgerDb: mariaDbLedgerUrl === null ? 'postgres' : 'mysql',
      dir,
      connections,
      warmupMs: t.warmupMs,
      measureMs: t.measureMs,
      // Unique per call: order ids and gids must not repeat an earlier run's.
      tag: `${pg.tag}${mariaDbLedgerUrl === null ? 'n' : 'x'}${connections}${Date.now().toString(36)}`,
      bytes: 200,
    };
    const r = await runJsonChild<PgDirectResult>(
      `${what} minimal-process floor`,
      'floors/pg-minimal.ts',
      cfg,
      log,
      t.warmupMs + t.measureMs + 90_000,
    );
    if (r.ok === 0)
      throw new Error(
        `the ${what} minimal-process floor committed nothing (errors: ${JSON.stringify(r.errors)}); see ${log}`,
      );
    return directFloor(r, connections);
  } finally {
    const all = [...participants, ...followers];
    for (const c of all) c.proc.stdin?.end();
    await Promise.all(all.map((c) => stopChild(c, 'SIGTERM', 3_000)));
  }
}
