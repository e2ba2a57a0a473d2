// The Python step service with its inbox in PostgreSQL
// (sdk/python/verdict/saga_postgres.py) beside a real node and a real
// PostgreSQL 15. A saga's step runs its effect (a row of saga_ledger) and
// its inbox row in one local transaction; the service is SIGKILLed after
// that COMMIT and before its answer leaves, and restarted: the
// orchestrator's repeated call is answered from the inbox row, the saga
// finishes, and every effect is in the ledger exactly once.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Cluster, freePorts, runCli, tempDir, useProcessCleanup, waitFor } from '../process/harness.ts';
import { PythonProc, stopPythonProcs } from '../process/python-procs.ts';
import { type PgServer, sql, startPostgres } from './harness.ts';

useProcessCleanup();
afterEach(stopPythonProcs);
let server: PgServer | null = null;
afterAll(async () => {
  await stopPythonProcs();
  await server?.stop();
});

const WAIT_MS = 60_000;

describe('a Python step service with its inbox in PostgreSQL', () => {
  it('SIGKILLed between a step effect and its answer, restarted: the repeated call is answered from the inbox and every effect happens once', async () => {
    server = await startPostgres({ databases: ['saga'] });
    const url = server.url('saga');
    await sql(url, 'CREATE TABLE IF NOT EXISTS saga_ledger (key text NOT NULL, effect text NOT NULL)');
    const cluster = await Cluster.start({ nodes: 1 });
    await cluster.waitForLeader();
    const endpoints = cluster.nodes.map((n) => n.address).join(',');
    const [port] = await freePorts(1);
    const dir = tempDir('verdict-py-saga-pg-');
    const hold = join(dir, 'hold');
    const args = [
      '--id',
      'shop',
      '--cluster-id',
      cluster.clusterId,
      '--nodes',
      endpoints,
      '--listen',
      `127.0.0.1:${port}`,
      '--data',
      join(dir, 'shop'),
      '--pg',
      url,
      '--hold-file',
      hold,
    ];
    writeFileSync(hold, '');
    let svc = new PythonProc('step_service.py', args);
    await svc.waitLine('the step service registered', (e) => e.event === 'ready');

    const running = runCli(
      ['saga', 'start', '--step', 'shop:reserve', '--step', 'shop:charge=40', '--json', '--endpoints', endpoints],
      { timeoutMs: WAIT_MS * 2 },
    );
    const held = await svc.waitLine(
      'the reservation committed and held before its answer',
      (e) => e.event === 'holding',
    );
    const key = String(held.key);
    expect(key).toMatch(/\/0\/action$/);
    const sagaId = key.slice(0, -'/0/action'.length);
    // The effect and the inbox row are committed; the answer never leaves.
    expect(await sql(url, 'SELECT key, effect FROM saga_ledger')).toEqual([{ key, effect: 'reserve' }]);
    expect(await sql(url, 'SELECT status FROM verdict_saga_inbox WHERE key = $1', [key])).toEqual([{ status: 'done' }]);
    await svc.kill('SIGKILL');
    rmSync(hold);

    svc = new PythonProc('step_service.py', args);
    await svc.waitLine('the restarted step service registered', (e) => e.event === 'ready');
    const done = await running;
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({
      id: sagaId,
      state: 'finished',
      outputs: ['reserve done', 'charged'],
    });
    // Each effect once, though the reservation's call was repeated after the crash.
    const rows = await sql<{ key: string; effect: string }>(url, 'SELECT key, effect FROM saga_ledger ORDER BY key');
    expect(rows).toEqual([
      { key: `${sagaId}/0/action`, effect: 'reserve' },
      { key: `${sagaId}/1/action`, effect: 'charge' },
    ]);
    // The orchestrator ends the saga; the service confirms it with the cluster, drops its rows and remembers the end.
    await waitFor('the saga ended at the step service', WAIT_MS, async () =>
      (await sql(url, 'SELECT 1 FROM verdict_saga_ended WHERE saga_id = $1', [sagaId])).length === 1 ? true : undefined,
    );
    expect(await sql(url, 'SELECT key FROM verdict_saga_inbox WHERE saga_id = $1', [sagaId])).toEqual([]);
    await svc.kill('SIGTERM');
  }, 240_000);
});
