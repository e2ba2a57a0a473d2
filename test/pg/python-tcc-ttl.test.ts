// TCC on PostgreSQL with a TTL (sdk/python/verdict/tcc_postgres.py and
// tcc.ReserveWatcher) in a Python participant process beside a real node
// and a real PostgreSQL 15. A reserve whose TTL runs out is never released
// on the timer alone: the participant asks the cluster (Coordinator.Abort)
// and applies its answer.
//
// - The other participant's PREPARE is held, so no decision comes: the
//   TTL runs out, the cluster logs ABORT at the TCC participant's request,
//   the client hears ABORTED, and the reserve is cancelled.
// - The TCC participant is SIGKILLed after its YES, and the COMMIT is
//   decided while it is down; it restarts after the TTL ran out: the
//   cluster answers COMMITTED, so the reserve is confirmed, not cancelled.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Cluster, freePorts, tempDir, useProcessCleanup, waitFor } from '../process/harness.ts';
import { PythonProc, pythonClient, stopPythonProcs } from '../process/python-procs.ts';
import { type PgServer, sql, startPostgres } from './harness.ts';

useProcessCleanup();
afterEach(stopPythonProcs);
let server: PgServer | null = null;
afterAll(async () => {
  await stopPythonProcs();
  await server?.stop();
});

const WAIT_MS = 60_000;

describe('Python TCC on PostgreSQL with a TTL', () => {
  it('AC1: an expired reserve is settled through the cluster: cancelled when the cluster aborts, confirmed when it had committed', async () => {
    server = await startPostgres({ databases: ['tcc'] });
    const url = server.url('tcc');
    await sql(url, 'CREATE TABLE IF NOT EXISTS tcc_kv (k text PRIMARY KEY, v text NOT NULL)');
    await sql(
      url,
      'CREATE TABLE IF NOT EXISTS tcc_held (txn_id text NOT NULL, k text NOT NULL, v text NOT NULL, PRIMARY KEY (txn_id, k))',
    );
    const c = await Cluster.start({ nodes: 1, logLevel: 'warn' });
    await c.waitForLeader();
    const nodes = c.nodes.map((n) => n.address);
    const dir = tempDir('verdict-py-tcc-ttl-');
    const [seatsPort, slowPort] = await freePorts(2);
    const holdPrepare = join(dir, 'hold-prepare');
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
    ];
    const seatsArgs = [...common('seats', seatsPort), '--hold-file', join(dir, 'never'), '--tcc-pg-url', url];
    let seats = new PythonProc('participant.py', seatsArgs);
    const slow = new PythonProc('participant.py', [
      ...common('slow', slowPort),
      '--hold-file',
      join(dir, 'never'),
      '--hold-prepare-file',
      holdPrepare,
    ]);
    await seats.waitLine('the TCC participant registered', (e) => e.event === 'ready');
    await slow.waitLine('the slow participant registered', (e) => e.event === 'ready');

    // No decision while slow's PREPARE is held: the TTL (1.5 s) runs out long before the transaction's own timeout (60
    // s).
    writeFileSync(holdPrepare, '');
    const startedAtMs = Date.now();
    const aborting = pythonClient(nodes, [
      {
        op: 'commit',
        txn: 'ttl-a1',
        timeout_ms: 60_000,
        enlist: { seats: { set: { s1: 'alice' }, ttl_ms: 1_500 }, slow: { set: { x: '1' } } },
      },
    ]);
    await seats.waitLine(
      'ttl-a1 reserved (YES)',
      (e) => e.event === 'vote' && e.txn_id === 'ttl-a1' && e.vote === 'YES',
    );
    expect(await sql(url, 'SELECT k FROM tcc_held WHERE txn_id = $1', ['ttl-a1'])).toEqual([{ k: 's1' }]);
    expect(
      await seats.waitLine('the reserve expired', (e) => e.event === 'tcc-reserve-expired' && e.txn_id === 'ttl-a1'),
    ).toBeDefined();
    const settled = await seats.waitLine(
      'the expired reserve settled',
      (e) => e.event === 'tcc-expired-settled' && e.txn_id === 'ttl-a1',
    );
    expect(settled).toMatchObject({ outcome: 'ABORTED', applied: 'Cancel' });
    const [aborted] = await aborting;
    expect(aborted.outcome).toBe('ABORTED');
    expect(String(aborted.reason)).toMatch(/expired/);
    expect(Date.now() - startedAtMs).toBeLessThan(30_000);
    expect(await sql(url, 'SELECT k FROM tcc_held')).toEqual([]);
    expect(
      await sql(url, 'SELECT state FROM verdict_tcc_barrier WHERE txn_id = $1 AND branch = $2', ['ttl-a1', 'seats']),
    ).toEqual([{ state: 'cancelled' }]);
    rmSync(holdPrepare);

    // The COMMIT is decided, but seats dies after its YES (SIGKILL while slow's PREPARE is held) and comes back after
    // the TTL.
    writeFileSync(holdPrepare, '');
    const committing = pythonClient(nodes, [
      {
        op: 'commit',
        txn: 'ttl-c1',
        timeout_ms: 60_000,
        enlist: { seats: { set: { s2: 'bob' }, ttl_ms: 1_000 }, slow: { set: { y: '1' } } },
      },
    ]);
    await seats.waitLine(
      'ttl-c1 reserved (YES)',
      (e) => e.event === 'vote' && e.txn_id === 'ttl-c1' && e.vote === 'YES',
    );
    await slow.waitLine(
      'slow holds its PREPARE of ttl-c1',
      (e) => e.event === 'holding-prepare' && e.txn_id === 'ttl-c1',
    );
    await seats.kill('SIGKILL');
    rmSync(holdPrepare);
    const [committed] = await committing;
    expect(committed.outcome).toBe('COMMITTED');
    // Down past its TTL: the reserve expired while nobody could deliver the COMMIT.
    await new Promise((r) => setTimeout(r, 1_500));
    seats = new PythonProc('participant.py', seatsArgs);
    await seats.waitLine('the TCC participant restarted', (e) => e.event === 'ready');
    await waitFor('ttl-c1 confirmed at seats', WAIT_MS, async () =>
      (await sql(url, 'SELECT v FROM tcc_kv WHERE k = $1', ['s2'])).length === 1 ? true : undefined,
    );
    expect(
      await sql(url, 'SELECT state FROM verdict_tcc_barrier WHERE txn_id = $1 AND branch = $2', ['ttl-c1', 'seats']),
    ).toEqual([{ state: 'confirmed' }]);
    expect(await sql(url, 'SELECT k, v FROM tcc_kv ORDER BY k')).toEqual([{ k: 's2', v: 'bob' }]);
    expect(await sql(url, 'SELECT k FROM tcc_held')).toEqual([]);
    // Never a Cancel of what the cluster committed.
    expect(
      seats.lines.filter((e) => e.txn_id === 'ttl-c1' && (e.outcome === 'ABORTED' || e.applied === 'Cancel')),
    ).toEqual([]);
    await seats.kill('SIGTERM');
  }, 240_000);
});
