// The Python SDK's PostgreSQL resource (sdk/python/verdict/postgres.py) on a
// real PostgreSQL 15: PREPARE TRANSACTION under the TypeScript resource's gid,
// a "crash" (the process ends with transactions prepared), and a restart
// that finds them in its journal and in pg_prepared_xacts and applies the
// cluster's decisions with COMMIT / ROLLBACK PREPARED, redeliveries
// included (R4, R7). A server with max_prepared_transactions = 0 is refused.
// And end to end: a Python PostgreSQL participant process on three real
// nodes, SIGKILLed after its YES, leaves nothing prepared once restarted.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { rmSync, writeFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { gidOf, gidPrefix } from '../../src/participant/postgres-gid.ts';
import { Cluster, freePorts, tempDir, useProcessCleanup } from '../process/harness.ts';
import { PythonProc, pythonClient, stopPythonProcs } from '../process/python-procs.ts';
import { preparedXacts, rollbackPrepared, sql, startPostgres, uniqueClusterId, type PgServer } from './harness.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const SCRIPT = join(ROOT, 'sdk', 'python', 'tests', 'proc', 'pg_engine.py');
const CLUSTER = uniqueClusterId('py');
let server: PgServer;
let shop: string;

useProcessCleanup();
afterEach(stopPythonProcs);

/** One step of the Python side, to its end; its JSON answer. */
function step(url: string, dataDir: string, name: string): Record<string, unknown> {
  const r = spawnSync('/usr/bin/python3', [SCRIPT, url, CLUSTER, dataDir, name], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  });
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
    // Waiting on prepared t1's key past the PREPARE's budget (statement_timeout): NO, with query_canceled.
    expect(prepared.t6).toEqual([false, expect.stringMatching(/57014/)]);
    // The TypeScript resource's gids, so either runtime and the operator's tools read them.
    const prefix = gidPrefix(CLUSTER, 'shop');
    expect(prepared.gids).toEqual({
      t1: gidOf(prefix, 't1'),
      t2: gidOf(prefix, 't2'),
      t3: gidOf(prefix, 't3'),
      t4: gidOf(prefix, 't4'),
    });
    expect((await preparedXacts(shop, prefix)).map((p) => p.gid)).toEqual(
      ['t1', 't2', 't3', 't4'].map((t) => gidOf(prefix, t)),
    );
    // Nothing is visible before the decision.
    expect(await sql(shop, 'SELECT id FROM orders ORDER BY id')).toEqual([]);

    const recovered = step(shop, dir, 'recover');
    expect(recovered).toEqual({
      in_doubt: ['t1', 't2', 't3', 't4'],
      prepared_here: ['t1', 't2', 't3', 't4'],
      after: [],
    });
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

  it('R4: a Python PostgreSQL participant on three real nodes, SIGKILLed after its YES, commits on restart and leaves nothing prepared', async () => {
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await c.waitForLeader();
    const nodes = c.nodes.map((n) => n.address);
    const prefix = gidPrefix(c.clusterId, 'pyshop');
    const dir = tempDir('verdict-pypg-');
    const hold = join(dir, 'hold');
    const [port] = await freePorts(1);
    const args = [
      '--id',
      'pyshop',
      '--cluster-id',
      c.clusterId,
      '--pg-url',
      shop,
      '--nodes',
      nodes.join(','),
      '--data-dir',
      join(dir, 'pyshop'),
      '--listen',
      `127.0.0.1:${port}`,
      '--hold-file',
      hold,
    ];
    try {
      let py = new PythonProc('participant.py', args);
      await py.waitLine('the PostgreSQL participant registered', (e) => e.event === 'ready');
      const insert = (id: string, amount: number | null) => ({
        sql: [`INSERT INTO orders VALUES ('${id}', ${amount === null ? 'NULL' : amount})`],
      });
      const results = await pythonClient(nodes, [
        { op: 'commit', txn: 'pg-c1', enlist: { pyshop: insert('pg-c1', 1) } },
        { op: 'commit', txn: 'pg-n1', enlist: { pyshop: insert('pg-n1', null) } },
      ]);
      expect(results.map((r) => r.outcome ?? r.error)).toEqual(['COMMITTED', 'ABORTED']);
      await py.waitLine('pg-c1 committed in PostgreSQL', (e) => e.event === 'decided' && e.txn_id === 'pg-c1');

      writeFileSync(hold, '');
      const committing = pythonClient(nodes, [{ op: 'commit', txn: 'pg-k1', enlist: { pyshop: insert('pg-k1', 3) } }]);
      await py.waitLine('pg-k1 held inside COMMIT', (e) => e.event === 'holding' && e.txn_id === 'pg-k1');
      expect((await committing).map((r) => r.outcome ?? r.error)).toEqual(['COMMITTED']);
      await py.kill('SIGKILL');
      // The prepared transaction outlives its process, under the TypeScript resource's gid.
      expect((await preparedXacts(shop, prefix)).map((p) => p.gid)).toEqual([gidOf(prefix, 'pg-k1')]);
      rmSync(hold, { force: true });

      py = new PythonProc('participant.py', args);
      await py.waitLine(
        'pg-k1 committed after the restart',
        (e) => e.event === 'decided' && e.txn_id === 'pg-k1' && e.outcome === 'COMMITTED',
      );
      expect(await preparedXacts(shop, prefix)).toEqual([]);
      expect(await sql(shop, "SELECT id, amount FROM orders WHERE id LIKE 'pg-%' ORDER BY id")).toEqual([
        { id: 'pg-c1', amount: 1 },
        { id: 'pg-k1', amount: 3 },
      ]);
      await py.kill('SIGTERM');
    } finally {
      await rollbackPrepared(server, ['shop'], prefix);
    }
  });
});
