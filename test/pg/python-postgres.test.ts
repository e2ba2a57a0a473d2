// The Python SDK's PostgreSQL resource (sdk/python/verdict/postgres.py) on a
// real PostgreSQL 15: PREPARE TRANSACTION under the TypeScript resource's gid,
// a "crash" (the process ends with transactions prepared), and a restart
// that finds them in its journal and in pg_prepared_xacts and applies the
// cluster's decisions with COMMIT / ROLLBACK PREPARED, redeliveries
// included (R4, R7). A server with max_prepared_transactions = 0 is refused.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gidOf, gidPrefix } from '../../src/participant/postgres-gid.ts';
import { tempDir } from '../process/harness.ts';
import { preparedXacts, rollbackPrepared, sql, startPostgres, uniqueClusterId, type PgServer } from './harness.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const SCRIPT = join(ROOT, 'sdk', 'python', 'tests', 'proc', 'pg_engine.py');
const CLUSTER = uniqueClusterId('py');
let server: PgServer;
let shop: string;

/** One step of the Python side, to its end; its JSON answer. */
function step(url: string, dataDir: string, name: string): Record<string, unknown> {
  const r = spawnSync('/usr/bin/python3', [SCRIPT, url, CLUSTER, dataDir, name], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
  if (r.status !== 0) throw new Error(`pg_engine.py ${name} ended with ${r.status ?? r.signal}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
}

beforeAll(async () => {
  server = await startPostgres({ databases: ['shop'] });
  shop = server.url('shop');
  await sql(shop, 'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, amount int NOT NULL)');
});

afterAll(async () => {
  if (server === undefined) return;
  try {
    expect(await preparedXacts(shop, `verdict:${CLUSTER}:`)).toEqual([]);
  } finally {
    await rollbackPrepared(server, ['shop'], `verdict:${CLUSTER}:`);
    await server.stop();
  }
});

describe('the Python PostgreSQL resource', () => {
  it('R4: prepared transactions survive the process and are resolved from the journal and pg_prepared_xacts with the cluster decisions', async () => {
    const dir = tempDir('verdict-pypg-');
    const prepared = step(shop, dir, 'prepare');
    expect(prepared).toMatchObject({ t1: [true, ''], t2: [true, ''], t4: [true, ''], t3: null });
    expect((prepared.t5 as [boolean, string])[0]).toBe(false);
    expect(String((prepared.t5 as [boolean, string])[1])).toMatch(/23502/);
    // The TypeScript resource's gids, so either runtime and the operator's tools read them.
    const prefix = gidPrefix(CLUSTER, 'shop');
    expect(prepared.gids).toEqual({ t1: gidOf(prefix, 't1'), t2: gidOf(prefix, 't2'), t3: gidOf(prefix, 't3'), t4: gidOf(prefix, 't4') });
    expect((await preparedXacts(shop, prefix)).map((p) => p.gid)).toEqual(['t1', 't2', 't3', 't4'].map((t) => gidOf(prefix, t)));
    // Nothing is visible before the decision.
    expect(await sql(shop, 'SELECT id FROM orders ORDER BY id')).toEqual([]);

    const recovered = step(shop, dir, 'recover');
    expect(recovered).toEqual({ in_doubt: ['t1', 't2', 't3', 't4'], prepared_here: ['t1', 't2', 't3', 't4'], after: [] });
    expect(await sql(shop, 'SELECT id, amount FROM orders ORDER BY id')).toEqual([
      { id: 't1', amount: 10 },
      { id: 't4', amount: 40 },
    ]);
    expect(await preparedXacts(shop, prefix)).toEqual([]);
  });

  it('refuses to start on a PostgreSQL with max_prepared_transactions = 0, saying why', async () => {
    const off = await startPostgres({ maxPreparedTransactions: 0, databases: ['shop'], private: true });
    try {
      const r = step(off.url('shop'), tempDir('verdict-pypg-'), 'prepare');
      expect(String(r.refused)).toMatch(/FAILED_PRECONDITION: PostgreSQL has max_prepared_transactions = 0/);
    } finally {
      await off.stop();
    }
  });
});
