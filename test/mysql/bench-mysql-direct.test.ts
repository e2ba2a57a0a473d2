// The benchmark's MySQL floor against a real PostgreSQL and a real MariaDB
// (bench/floors/mysql.ts, bench/floors/mysql-direct.ts): the shop database (PostgreSQL) and
// the ledger (MariaDB) are set up, the direct PREPARE TRANSACTION / XA PREPARE
// loop runs in its own process and commits, every order has its debit, and
// nothing is left prepared in either server.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { measureMySqlDirect, startBenchMySql, type BenchMySql } from '../../bench/floors/mysql.ts';
import { startBenchPg, type BenchPg } from '../../bench/floors/pg.ts';
import { OPENING_BALANCE_CENTS } from '../../bench/harness/pg-workload.ts';
import { preparedXacts, sql } from '../pg/harness.ts';
import { mysqlQuery, xaRecover } from './harness.ts';

let pg: BenchPg;
let my: BenchMySql;
const dir = mkdtempSync(join(tmpdir(), 'verdict-bench-mysql-test-'));

beforeAll(async () => {
  const startedPg = await startBenchPg();
  if ('skipped' in startedPg) throw new Error(startedPg.skipped);
  pg = startedPg;
  const startedMy = await startBenchMySql(pg);
  if ('skipped' in startedMy) throw new Error(startedMy.skipped);
  my = startedMy;
}, 120_000);

afterAll(async () => {
  await Promise.all([pg?.server.stop(), my?.server.stop()]);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('bench MySQL direct floor', () => {
  it('commits the shop/ledger transaction with PREPARE TRANSACTION + XA PREPARE from one process, all or nothing, leaving nothing prepared', async () => {
    const connections = 2;
    const r = await measureMySqlDirect(pg, my, dir, connections, { warmupMs: 200, measureMs: 1_000 });
    expect(r.connections).toBe(connections);
    expect(r.ok).toBeGreaterThan(0);
    expect(r.errors).toEqual({});
    expect(r.leftover_prepared).toBe(0);
    expect(r.p50_us).toBeGreaterThan(0);
    const tag = `${pg.tag}my${connections}`;
    const [orders] = await sql<{ n: string }>(
      pg.urls.shop,
      'SELECT count(*) AS n FROM orders WHERE starts_with(id, $1)',
      [`${tag}-`],
    );
    const [debits] = await mysqlQuery<{ d: string }>(
      my.ledgerUrl,
      `SELECT COALESCE(SUM(${OPENING_BALANCE_CENTS} - balance_cents), 0) AS d FROM accounts`,
    );
    expect(Number(orders.n)).toBeGreaterThanOrEqual(r.ok);
    expect(Number(debits.d)).toBe(Number(orders.n));
    expect(await preparedXacts(pg.urls.shop, 'bench-mydirect-')).toEqual([]);
    expect(await xaRecover(my.ledgerUrl)).toEqual([]);
  });
});
