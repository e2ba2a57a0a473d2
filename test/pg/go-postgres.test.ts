// The Go SDK's PostgreSQL resource (sdk/go/participant/postgres) on a real
// PostgreSQL 15 and three real nodes: a Go participant process commits
// through PREPARE TRANSACTION under the TypeScript resource's gid, votes NO
// when a statement fails, is SIGKILLed after its YES, and once restarted
// applies the cluster's decision from its journal and pg_prepared_xacts —
// a transaction left prepared without a journal record included — and
// leaves nothing prepared (R3, R4). A Go TCC participant (sdk/go/tcc)
// confirms and cancels through its barrier beside it, and a reserve whose
// TTL ran out is settled by asking the cluster, never by a bare timer. A
// server with max_prepared_transactions = 0 is refused at start.
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
      const insert = (id: string, amount: number | null) => ({
        sql: [`INSERT INTO go_orders VALUES ('${id}', ${amount === null ? 'NULL' : amount})`],
      });
      const results = await goClient(client, nodes, [
        { op: 'commit', txn: 'gpg-c1', enlist: { goshop: insert('gpg-c1', 1) } },
        { op: 'commit', txn: 'gpg-n1', enlist: { goshop: insert('gpg-n1', null) } },
      ]);
      expect(results.map((r) => r.outcome ?? r.error)).toEqual(['COMMITTED', 'ABORTED']);
      await gop.waitLine('gpg-c1 committed in PostgreSQL', (e) => e.event === 'decided' && e.txn_id === 'gpg-c1');
      // The NULL into a NOT NULL column is a NO vote with PostgreSQL's SQLSTATE.
      expect(await gop.waitLine('gpg-n1 voted', (e) => e.event === 'vote' && e.txn_id === 'gpg-n1')).toMatchObject({
        vote: 'NO',
        reason: expect.stringMatching(/23502/),
      });

      writeFileSync(hold, '');
      const committing = goClient(client, nodes, [
        { op: 'commit', txn: 'gpg-k1', enlist: { goshop: insert('gpg-k1', 3) } },
      ]);
      await gop.waitLine('gpg-k1 held inside COMMIT', (e) => e.event === 'holding' && e.txn_id === 'gpg-k1');
      expect((await committing).map((r) => r.outcome ?? r.error)).toEqual(['COMMITTED']);
      await gop.kill('SIGKILL');
      // The prepared transaction outlives its process, under the TypeScript resource's gid.
      expect((await preparedXacts(shop, prefix)).map((p) => p.gid)).toEqual([gidOf(prefix, 'gpg-k1')]);
      // And one prepared under this participant's gid that its journal never recorded (a crash between PREPARE
      // TRANSACTION and the journal's fsync): no YES left for it.
      await prepareByHand(shop, gidOf(prefix, 'gpg-orphan'), ["INSERT INTO go_orders VALUES ('gpg-orphan', 9)"]);
      rmSync(hold, { force: true });

      gop = new GoProc(participant, args);
      await gop.waitLine(
        'gpg-k1 committed after the restart',
        (e) => e.event === 'decided' && e.txn_id === 'gpg-k1' && e.outcome === 'COMMITTED',
      );
      await gop.waitLine(
        'gpg-orphan rolled back after the restart',
        (e) => e.event === 'decided' && e.txn_id === 'gpg-orphan' && e.outcome === 'ABORTED',
      );
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

  it('TCC: a Go TCC participant confirms and cancels seats through its barrier beside a Go PostgreSQL participant, and a reserve whose TTL ran out is settled by asking the cluster', async () => {
    await sql(
      shop,
      'CREATE TABLE IF NOT EXISTS go_seats (show text PRIMARY KEY, free int NOT NULL, held int NOT NULL, sold int NOT NULL)',
    );
    await sql(shop, "INSERT INTO go_seats VALUES ('s1', 10, 0, 0), ('s2', 5, 0, 0)");
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await c.waitForLeader();
    const nodes = c.nodes.map((n) => n.address);
    const dir = tempDir('verdict-gotcc-');
    const [p1, p2, p3, p4] = await freePorts(4);
    const participant = join(bin, 'participant');
    const client = join(bin, 'client');
    const common = (id: string, port: number): string[] => [
      '--id',
      id,
      '--cluster-id',
      c.clusterId,
      '--nodes',
      nodes.join(','),
      '--data-dir',
      join(dir, id),
      '--listen',
      `127.0.0.1:${port}`,
      '--hold-file',
      join(dir, 'hold'),
    ];
    const prefix = gidPrefix(c.clusterId, 'goshop2');
    try {
      const shopP = new GoProc(participant, [...common('goshop2', p1), '--pg-url', plaintext(shop)]);
      const seats = new GoProc(participant, [...common('goseats', p2), '--tcc-pg-url', plaintext(shop)]);
      await shopP.waitLine('the PostgreSQL participant registered', (e) => e.event === 'ready');
      await seats.waitLine('the TCC participant registered', (e) => e.event === 'ready');
      const order = (id: string) => ({ sql: [`INSERT INTO go_orders VALUES ('${id}', 1)`] });
      const results = await goClient(client, nodes, [
        { op: 'commit', txn: 'gtcc-c1', enlist: { goshop2: order('gtcc-c1'), goseats: 's1:3' } },
        // Fifty seats are not free: the Try refuses, so the order is not written either.
        { op: 'commit', txn: 'gtcc-n1', enlist: { goshop2: order('gtcc-n1'), goseats: 's1:50' } },
      ]);
      expect(results.map((r) => r.outcome ?? r.error)).toEqual(['COMMITTED', 'ABORTED']);
      await seats.waitLine(
        'gtcc-c1 confirmed',
        (e) => e.event === 'decided' && e.txn_id === 'gtcc-c1' && e.outcome === 'COMMITTED',
      );
      expect(
        await seats.waitLine('gtcc-n1 refused', (e) => e.event === 'vote' && e.txn_id === 'gtcc-n1'),
      ).toMatchObject({ vote: 'NO', reason: expect.stringMatching(/not 50 free seats/) });
      expect(await sql(shop, "SELECT free, held, sold FROM go_seats WHERE show = 's1'")).toEqual([
        { free: 7, held: 0, sold: 3 },
      ]);
      expect(await sql(shop, "SELECT id FROM go_orders WHERE id LIKE 'gtcc-%'")).toEqual([{ id: 'gtcc-c1' }]);
      expect(
        await sql(shop, "SELECT txn_id, state FROM verdict_tcc_barrier WHERE branch = 'goseats' ORDER BY txn_id"),
      ).toEqual([{ txn_id: 'gtcc-c1', state: 'confirmed' }]);

      // A reserve with a 300 ms TTL in a transaction whose other participant is slow to vote: the TTL runs out long
      // before the transaction's timeout, and the participant asks the cluster to abort instead of cancelling alone.
      const holdPrepare = join(dir, 'hold-prepare');
      writeFileSync(holdPrepare, '');
      const slow = new GoProc(participant, [...common('goslow', p3), '--hold-prepare-file', holdPrepare]);
      await slow.waitLine('a participant slow to vote registered', (e) => e.event === 'ready');
      const ttl = new GoProc(participant, [
        ...common('gottl', p4),
        '--tcc-pg-url',
        plaintext(shop),
        '--tcc-ttl-ms',
        '300',
      ]);
      await ttl.waitLine('the TTL participant registered', (e) => e.event === 'ready');
      const expiringRun = goClient(client, nodes, [
        { op: 'commit', txn: 'gtcc-t1', timeout_ms: 60_000, enlist: { gottl: 's2:2', goslow: { set: { k: 'v' } } } },
      ]);
      await slow.waitLine(
        'goslow holds the PREPARE of gtcc-t1',
        (e) => e.event === 'holding-prepare' && e.txn_id === 'gtcc-t1',
      );
      expect(
        await ttl.waitLine('gtcc-t1 expired', (e) => e.event === 'tcc-expired' && e.txn_id === 'gtcc-t1'),
      ).toMatchObject({ outcome: 'ABORTED' });
      rmSync(holdPrepare, { force: true });
      const expiring = await expiringRun;
      expect(expiring.map((r) => r.outcome ?? r.error)).toEqual(['ABORTED']);
      expect(await sql(shop, "SELECT free, held, sold FROM go_seats WHERE show = 's2'")).toEqual([
        { free: 5, held: 0, sold: 0 },
      ]);
      await shopP.kill('SIGTERM');
      await seats.kill('SIGTERM');
      await ttl.kill('SIGTERM');
      await slow.kill('SIGTERM');
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
        [
          '--id',
          'goshop',
          '--cluster-id',
          'c',
          '--pg-url',
          plaintext(off.url('shop')),
          '--nodes',
          '127.0.0.1:1',
          '--data-dir',
          dir,
          '--listen',
          '127.0.0.1:0',
          '--hold-file',
          join(dir, 'hold'),
        ],
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
