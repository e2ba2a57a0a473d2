// The Go SDK's PostgreSQL resource (sdk/go/participant/postgres) on a real
// PostgreSQL 15 and three real nodes: a Go participant process commits
// through PREPARE TRANSACTION under the TypeScript resource's gid, votes NO
// when a statement fails, is SIGKILLed after its YES, and once restarted
// applies the cluster's decision from its journal and pg_prepared_xacts —
// a transaction left prepared without a journal record included — and
// leaves nothing prepared (R3, R4). A server with
// max_prepared_transactions = 0 is refused at start.
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { gidOf, gidPrefix } from '../../src/participant/postgres-gid.ts';
import { Cluster, fileTempDir, freePorts, tempDir, useProcessCleanup } from '../process/harness.ts';
import { buildGoDrivers, GoProc, goClient, stopGoProcs } from '../process/go-procs.ts';
import { prepareByHand, preparedXacts, rollbackPrepared, sql, startPostgres, type PgServer } from './harness.ts';

/** lib/pq's sslmode is "require" unless told (it has no "prefer"): the test server is plaintext on loopback. */
const plaintext = (url: string): string => `${url}${url.includes('?') ? '&' : '?'}sslmode=disable`;

let server: PgServer;
let shop: string;
let bin = '';

useProcessCleanup();
afterEach(stopGoProcs);

beforeAll(async () => {
  bin = fileTempDir('verdict-go-bin-');
  buildGoDrivers(bin);
  server = await startPostgres({ databases: ['shop'] });
  shop = server.url('shop');
  await sql(shop, 'CREATE TABLE IF NOT EXISTS go_orders (id text PRIMARY KEY, amount int NOT NULL)');
}, 400_000);

afterAll(async () => {
  await stopGoProcs();
  if (server !== undefined) await server.stop();
});

describe('the Go PostgreSQL resource', () => {
  it('R4: a Go PostgreSQL participant on three real nodes, SIGKILLed after its YES, commits on restart and leaves nothing prepared', async () => {
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await c.waitForLeader();
    const nodes = c.nodes.map((n) => n.address);
    const prefix = gidPrefix(c.clusterId, 'goshop');
    const dir = tempDir('verdict-gopg-');
    const hold = join(dir, 'hold');
    const [port] = await freePorts(1);
    const participant = join(bin, 'participant');
    const client = join(bin, 'client');
    const args = [
      '--id',
      'goshop',
      '--cluster-id',
      c.clusterId,
      '--pg-url',
      plaintext(shop),
      '--nodes',
      nodes.join(','),
      '--data-dir',
      join(dir, 'goshop'),
      '--listen',
      `127.0.0.1:${port}`,
      '--hold-file',
      hold,
    ];
    try {
      let gop = new GoProc(participant, args);
      await gop.waitLine('the PostgreSQL participant registered', (e) => e.event === 'ready');
      const insert = (id: string, amount: number | null) => ({ sql: [`INSERT INTO go_orders VALUES ('${id}', ${amount === null ? 'NULL' : amount})`] });
      const results = await goClient(client, nodes, [
        { op: 'commit', txn: 'gpg-c1', enlist: { goshop: insert('gpg-c1', 1) } },
        { op: 'commit', txn: 'gpg-n1', enlist: { goshop: insert('gpg-n1', null) } },
      ]);
      expect(results.map((r) => r.outcome ?? r.error)).toEqual(['COMMITTED', 'ABORTED']);
      await gop.waitLine('gpg-c1 committed in PostgreSQL', (e) => e.event === 'decided' && e.txn_id === 'gpg-c1');
      // The NULL into a NOT NULL column is a NO vote with PostgreSQL's SQLSTATE.
      expect(await gop.waitLine('gpg-n1 voted', (e) => e.event === 'vote' && e.txn_id === 'gpg-n1')).toMatchObject({ vote: 'NO', reason: expect.stringMatching(/23502/) });

      writeFileSync(hold, '');
      const committing = goClient(client, nodes, [{ op: 'commit', txn: 'gpg-k1', enlist: { goshop: insert('gpg-k1', 3) } }]);
      await gop.waitLine('gpg-k1 held inside COMMIT', (e) => e.event === 'holding' && e.txn_id === 'gpg-k1');
      expect((await committing).map((r) => r.outcome ?? r.error)).toEqual(['COMMITTED']);
      await gop.kill('SIGKILL');
      // The prepared transaction outlives its process, under the TypeScript resource's gid.
      expect((await preparedXacts(shop, prefix)).map((p) => p.gid)).toEqual([gidOf(prefix, 'gpg-k1')]);
      // And one prepared under this participant's gid that its journal never recorded (a crash between PREPARE TRANSACTION and the journal's fsync): no YES left for it.
      await prepareByHand(shop, gidOf(prefix, 'gpg-orphan'), ["INSERT INTO go_orders VALUES ('gpg-orphan', 9)"]);
      rmSync(hold, { force: true });

      gop = new GoProc(participant, args);
      await gop.waitLine('gpg-k1 committed after the restart', (e) => e.event === 'decided' && e.txn_id === 'gpg-k1' && e.outcome === 'COMMITTED');
      await gop.waitLine('gpg-orphan rolled back after the restart', (e) => e.event === 'decided' && e.txn_id === 'gpg-orphan' && e.outcome === 'ABORTED');
      expect(await preparedXacts(shop, prefix)).toEqual([]);
      expect(await sql(shop, "SELECT id, amount FROM go_orders WHERE id LIKE 'gpg-%' ORDER BY id")).toEqual([
        { id: 'gpg-c1', amount: 1 },
        { id: 'gpg-k1', amount: 3 },
      ]);
      await gop.kill('SIGTERM');
    } finally {
      await rollbackPrepared(server, ['shop'], prefix);
    }
  });

  it('refuses to start on a PostgreSQL with max_prepared_transactions = 0, saying why', async () => {
    const off = await startPostgres({ maxPreparedTransactions: 0, databases: ['shop'], private: true });
    try {
      const dir = tempDir('verdict-gopg-');
      const r = spawnSync(
        join(bin, 'participant'),
        ['--id', 'goshop', '--cluster-id', 'c', '--pg-url', plaintext(off.url('shop')), '--nodes', '127.0.0.1:1', '--data-dir', dir, '--listen', '127.0.0.1:0', '--hold-file', join(dir, 'hold')],
        {
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/FAILED_PRECONDITION: PostgreSQL has max_prepared_transactions = 0/);
    } finally {
      await off.stop();
    }
  });
});
