// The benchmark's PostgreSQL floor against a real PostgreSQL 15
// (bench/floors/pg.ts, bench/floors/pg-direct.ts): the shop and ledger databases are set
// up, the direct PREPARE TRANSACTION / COMMIT PREPARED loop runs in its own
// process and commits, every order has its debit and no gid is left prepared;
// the same for the floor through minimal processes (bench/floors/pg-minimal.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { measurePgDirect, measurePgMinimal, startBenchPg, type BenchPg } from '../../bench/floors/pg.ts';
import { DIRECT_MARKER_TABLE, OPENING_BALANCE_CENTS } from '../../bench/harness/pg-workload.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { preparedXacts, sql } from './harness.ts';

let pg: BenchPg;
const dir = mkdtempSync(join(tmpdir(), 'verdict-bench-pg-test-'));

beforeAll(async () => {
  const started = await startBenchPg();
  if ('skipped' in started) throw new Error(started.skipped);
  pg = started;
});

afterAll(async () => {
  await pg?.server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('bench PostgreSQL direct floor', () => {
  it('commits the shop/ledger transaction with PREPARE TRANSACTION + COMMIT PREPARED, all or nothing, leaving nothing prepared', async () => {
    const connections = 2;
    const r = await measurePgDirect(pg, dir, connections, { warmupMs: 200, measureMs: 1_000 });
    expect(r.connections).toBe(connections);
    expect(r.ok).toBeGreaterThan(0);
    expect(r.errors).toEqual({});
    expect(r.leftover_prepared).toBe(0);
    expect(r.p50_us).toBeGreaterThan(0);
    expect(r.p50_us).toBeLessThanOrEqual(r.p99_us);
    const tag = `${pg.tag}c${connections}`;
    const [orders] = await sql<{ n: string }>(
      pg.urls.shop,
      'SELECT count(*) AS n FROM orders WHERE starts_with(id, $1)',
      [`${tag}-`],
    );
    const [debits] = await sql<{ d: string }>(
      pg.urls.ledger,
      `SELECT coalesce(sum(${OPENING_BALANCE_CENTS} - balance_cents), 0) AS d FROM accounts`,
    );
    // Warm-up and measured transactions alike: every committed order has its debit (1 cent) and no debit lacks its
    // order.
    expect(Number(orders.n)).toBeGreaterThanOrEqual(r.ok);
    expect(Number(debits.d)).toBe(Number(orders.n));
    for (const url of [pg.urls.shop, pg.urls.ledger]) expect(await preparedXacts(url, 'bench-direct-')).toEqual([]);
  });

  it('measured again in the same run (`again`), uses order ids and gids of its own, so nothing collides with the first', async () => {
    const first = await measurePgDirect(pg, dir, 2, { warmupMs: 0, measureMs: 500 }, false, 'x');
    const again = await measurePgDirect(pg, dir, 2, { warmupMs: 0, measureMs: 500 }, false, 'y');
    for (const r of [first, again]) {
      expect(r.ok).toBeGreaterThan(0);
      // The same order ids twice would fail the second run with unique violations (sqlstate-23505).
      expect(r.errors).toEqual({});
    }
    for (const suffix of ['x', 'y']) {
      const [orders] = await sql<{ n: string }>(
        pg.urls.shop,
        'SELECT count(*) AS n FROM orders WHERE starts_with(id, $1)',
        [`${pg.tag}c2${suffix}-`],
      );
      expect(Number(orders.n)).toBeGreaterThan(0);
    }
  });

  it('with markers, writes one marker row per committed transaction in each database, as the participant does', async () => {
    const r = await measurePgDirect(pg, dir, 2, { warmupMs: 200, measureMs: 1_000 }, true);
    expect(r.ok).toBeGreaterThan(0);
    expect(r.errors).toEqual({});
    expect(r.leftover_prepared).toBe(0);
    const tag = `${pg.tag}c2m`;
    const [orders] = await sql<{ n: string }>(
      pg.urls.shop,
      'SELECT count(*) AS n FROM orders WHERE starts_with(id, $1)',
      [`${tag}-`],
    );
    expect(Number(orders.n)).toBeGreaterThanOrEqual(r.ok);
    // Every committed transaction left its marker in both databases, and no rolled-back one did.
    for (const url of [pg.urls.shop, pg.urls.ledger]) {
      const [m] = await sql<{ n: string }>(
        url,
        `SELECT count(*) AS n FROM ${DIRECT_MARKER_TABLE} WHERE starts_with(txn_id, $1)`,
        [`${tag}-`],
      );
      expect(Number(m.n)).toBe(Number(orders.n));
      expect(await preparedXacts(url, 'bench-direct-')).toEqual([]);
    }
  });

  it('through minimal processes (two participants, a leader, two followers), commits all or nothing with a marker per database, leaving nothing prepared', async () => {
    const r = await measurePgMinimal(pg, dir, 2, { warmupMs: 200, measureMs: 1_000 });
    expect(r.connections).toBe(2);
    expect(r.ok).toBeGreaterThan(0);
    expect(r.errors).toEqual({});
    expect(r.leftover_prepared).toBe(0);
    expect(r.p50_us).toBeGreaterThan(0);
    const tag = `${pg.tag}n2`;
    const [orders] = await sql<{ n: string }>(
      pg.urls.shop,
      'SELECT count(*) AS n FROM orders WHERE starts_with(id, $1)',
      [tag],
    );
    expect(Number(orders.n)).toBeGreaterThanOrEqual(r.ok);
    for (const url of [pg.urls.shop, pg.urls.ledger]) {
      const [m] = await sql<{ n: string }>(
        url,
        `SELECT count(*) AS n FROM ${DIRECT_MARKER_TABLE} WHERE starts_with(txn_id, $1)`,
        [tag],
      );
      expect(Number(m.n)).toBe(Number(orders.n));
      expect(await preparedXacts(url, 'bench-minimal-')).toEqual([]);
    }
    // Every order of every floor in this file has its debit, and no debit lacks its order.
    const [all] = await sql<{ n: string }>(pg.urls.shop, 'SELECT count(*) AS n FROM orders');
    const [debits] = await sql<{ d: string }>(
      pg.urls.ledger,
      `SELECT coalesce(sum(${OPENING_BALANCE_CENTS} - balance_cents), 0) AS d FROM accounts`,
    );
    expect(Number(debits.d)).toBe(Number(all.n));
  });
});
