// The MySQL/MariaDB part of the benchmark: the shop/ledger transaction of
// bench/harness/pg-workload.ts with the ledger on MariaDB, committed through Verdict
// by a PostgreSQL participant (shop) and a MySQL participant (myledger), and
// the same transaction with both databases' two-phase commit driven directly
// from one process (bench/floors/mysql-direct.ts), in the same run.
//
//   startBenchMySql()   a MariaDB of our own (test/mysql/harness.ts) or the
//                       server VERDICT_MYSQL_URL names; database ledger with
//                       the accounts table, seeded. Skipped, with the reason
//                       in the results, without MariaDB binaries or without
//                       PostgreSQL (the shop side).
//   measureMySqlDirect() floors.mysql_direct_16.
//   measureMySqlMinimal() floors.mysql_minimal_16: through the least possible processes.
//   mysqlParticipantArgs() the `verdict participant --resource mysql` flags of
//                       myledger; its scenario is commit.nodes3.pgmysql.c16.
//
// ratios.mysql_through_verdict_over_direct (bench/report/results.ts) is the
// throughput through Verdict at 16 clients over the direct floor's at 16
// connections per database.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { mysqlQuery, startMariaDb, type MariaDbServer } from '../../test/mysql/harness.ts';
import type { MySqlDirectConfig } from './mysql-direct.ts';
import { directFloor, measurePgMinimal, type BenchPg, type PgDirectFloor } from './pg.ts';
import type { PgDirectResult } from './direct-child.ts';
import { ACCOUNTS_PER_CLIENT, CLIENTS_MAX, OPENING_BALANCE_CENTS } from '../harness/pg-workload.ts';
import { runJsonChild } from '../harness/procs.ts';

export const MYSQL_CONCURRENCY = [16] as const;
/** The PostgreSQL shop participant and the MariaDB ledger participant. */
export const MYSQL_PARTICIPANTS = ['shop', 'myledger'] as const;
export const MYSQL_PARTICIPANT_CONCURRENCY = 16;

export interface BenchMySql {
  server: MariaDbServer;
  ledgerUrl: string;
}

export async function startBenchMySql(pg: BenchPg | null): Promise<BenchMySql | { skipped: string }> {
  if (pg === null) return { skipped: 'the shop side of the transaction is PostgreSQL, which is skipped' };
  const external = process.env.VERDICT_MYSQL_URL ?? '';
  const bin = join(process.env.VERDICT_MYSQL_BIN ?? '/usr/sbin', 'mariadbd');
  if (external === '' && !existsSync(bin))
    return {
      skipped: `no MariaDB server binary at ${bin} and VERDICT_MYSQL_URL is not set: install mariadb-server, or set VERDICT_MYSQL_BIN or VERDICT_MYSQL_URL`,
    };
  const server = await startMariaDb({ databases: ['ledger'] });
  try {
    const ledgerUrl = server.url('ledger');
    await mysqlQuery(
      ledgerUrl,
      'CREATE TABLE IF NOT EXISTS accounts (id VARCHAR(64) PRIMARY KEY, balance_cents BIGINT NOT NULL CHECK (balance_cents >= 0)) ENGINE=InnoDB',
    );
    const rows = Array.from(
      { length: CLIENTS_MAX * ACCOUNTS_PER_CLIENT },
      (_, g) => `('acct-${g}', ${OPENING_BALANCE_CENTS})`,
    );
    await mysqlQuery(
      ledgerUrl,
      `INSERT INTO accounts (id, balance_cents) VALUES ${rows.join(', ')} ON DUPLICATE KEY UPDATE balance_cents = VALUES(balance_cents)`,
    );
    return { server, ledgerUrl };
  } catch (err) {
    await server.stop();
    throw new Error(
      `preparing the benchmark's MariaDB ledger failed: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

export async function measureMySqlDirect(
  pg: BenchPg,
  my: BenchMySql,
  dir: string,
  connections: number,
  t: { warmupMs: number; measureMs: number },
): Promise<PgDirectFloor> {
  const cfg: MySqlDirectConfig = {
    shopUrl: pg.urls.shop,
    ledgerUrl: my.ledgerUrl,
    connections,
    warmupMs: t.warmupMs,
    measureMs: t.measureMs,
    tag: `${pg.tag}my${connections}`,
  };
  const r = await runJsonChild<PgDirectResult>(
    `MySQL direct floor, ${connections} connection(s)`,
    'floors/mysql-direct.ts',
    cfg,
    join(dir, 'mysql-direct.log'),
    t.warmupMs + t.measureMs + 90_000,
  );
  if (r.ok === 0)
    throw new Error(
      `the MySQL direct floor at ${connections} connection(s) committed nothing (errors: ${JSON.stringify(r.errors)}); see ${join(dir, 'mysql-direct.log')}`,
    );
  return directFloor(r, connections);
}

/**
 * floors.mysql_minimal_16: the same transaction through the least possible
 * processes (bench/floors/pg-minimal.ts), the ledger participant in front of
 * MariaDB: what any replicated coordinator with participant processes costs
 * on this path, none of it Verdict's code.
 */
export function measureMySqlMinimal(
  pg: BenchPg,
  my: BenchMySql,
  dir: string,
  connections: number,
  t: { warmupMs: number; measureMs: number },
): Promise<PgDirectFloor> {
  return measurePgMinimal(pg, dir, connections, t, my.ledgerUrl);
}

export function mysqlParticipantArgs(my: BenchMySql): string[] {
  return [
    '--resource',
    'mysql',
    '--mysql-url',
    my.ledgerUrl,
    '--mysql-concurrency',
    String(MYSQL_PARTICIPANT_CONCURRENCY),
  ];
}
