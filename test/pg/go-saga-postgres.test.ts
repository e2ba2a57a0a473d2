// The Go SDK's step service with its inbox in PostgreSQL (sdk/go/saga,
// postgres.go) on a real PostgreSQL 15 and three real nodes: each step's
// effect is a row written in the same local transaction as its inbox row.
// Sagas from a Go client run to FINISHED and to COMPENSATED (the declined
// charge's row is rolled back with its FAILED answer), and a SIGKILL of the
// service inside a step's transaction, before its commit, leaves neither the
// effect nor the record: the orchestrator's retry on the restarted service
// writes the effect once. Ended sagas' rows are dropped and their ends kept.
import { writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildGoDrivers, GoProc, goClient, stopGoProcs } from '../process/go-procs.ts';
import { Cluster, fileTempDir, freePorts, tempDir, useProcessCleanup, waitFor } from '../process/harness.ts';
import { sql, startPostgres, type PgServer } from './harness.ts';

/** lib/pq's sslmode is "require" unless told: the test server is plaintext on loopback. */
const plaintext = (url: string): string => `${url}${url.includes('?') ? '&' : '?'}sslmode=disable`;
const WAIT_MS = 60_000;

let server: PgServer;
let url = '';
let bin = '';
useProcessCleanup();
afterEach(stopGoProcs);
beforeAll(async () => {
  bin = fileTempDir('verdict-go-pgsaga-bin-');
  buildGoDrivers(bin, ['stepservice', 'client']);
  server = await startPostgres({ databases: ['gosaga'] });
  url = server.url('gosaga');
  await sql(url, 'CREATE TABLE IF NOT EXISTS go_saga_effects (key text NOT NULL, effect text NOT NULL)');
}, 400_000);
afterAll(async () => {
  await stopGoProcs();
  if (server !== undefined) await server.stop();
});

const step = (name: string, input: string) => ({ service: 'gopgshop', name, input });

describe('a Go step service on PostgreSQL', () => {
  it('writes each effect with its inbox row: FINISHED, COMPENSATED, and a SIGKILL inside a step leaves the effect once', async () => {
    const cluster = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await cluster.waitForLeader();
    const nodes = cluster.nodes.map((n) => n.address);
    const [port] = await freePorts(1);
    const dir = tempDir('verdict-go-pgsaga-');
    const hold = join(dir, 'hold');
    const args = [
      '--id',
      'gopgshop',
      '--cluster-id',
      cluster.clusterId,
      '--nodes',
      nodes.join(','),
      '--listen',
      `127.0.0.1:${port}`,
      '--data',
      join(dir, 'unused'),
    ];
    args.push('--hold-file', hold, '--pg-url', plaintext(url));
    const client = join(bin, 'client');
    let svc = new GoProc(join(bin, 'stepservice'), args);
    await svc.waitLine('the PostgreSQL step service registered', (e) => e.event === 'ready');

    const results = await goClient(client, nodes, [
      { op: 'saga-start', saga: 'pg-ok', steps: [step('reserve', '1'), step('charge', '40')] },
      { op: 'saga-start', saga: 'pg-declined', steps: [step('reserve', '2'), step('charge', 'decline')] },
      { op: 'saga-wait', saga: 'pg-ok' },
      { op: 'saga-wait', saga: 'pg-declined' },
    ]);
    expect(results[2]).toMatchObject({
      state: 'finished',
      steps: ['done', 'done'],
      outputs: ['reserved 1', 'charged 40'],
    });
    expect(results[3]).toMatchObject({ state: 'compensated', steps: ['compensated', 'failed'] });

    // SIGKILL inside the reserve's transaction, after its effect's INSERT and before the commit.
    writeFileSync(hold, '');
    const [started] = await goClient(client, nodes, [
      { op: 'saga-start', saga: 'pg-killed', steps: [step('reserve', 'hold'), step('charge', '50')] },
    ]);
    expect(started).toMatchObject({ state: 'running' });
    await svc.waitLine(
      'the reserve held inside its transaction',
      (e) => e.event === 'holding' && e.key === 'pg-killed/0/action',
    );
    await svc.kill('SIGKILL');
    rmSync(hold);
    svc = new GoProc(join(bin, 'stepservice'), args);
    await svc.waitLine('the step service registered again', (e) => e.event === 'ready');
    const [killed] = await goClient(client, nodes, [{ op: 'saga-wait', saga: 'pg-killed' }]);
    expect(killed).toMatchObject({ state: 'finished', outputs: ['reserved hold', 'charged 50'] });

    // One row per effect, whatever was retried; the declined charge's row went with its FAILED answer.
    const effects = (
      await sql<{ key: string; effect: string }>(url, 'SELECT key, effect FROM go_saga_effects ORDER BY key')
    ).map((r) => `${r.key} ${r.effect}`);
    expect(effects).toEqual(
      [
        'pg-declined/0/action reserve',
        'pg-declined/0/compensate release',
        'pg-killed/0/action reserve',
        'pg-killed/1/action charge',
        'pg-ok/0/action reserve',
        'pg-ok/1/action charge',
      ].sort(),
    );
    // The orchestrator ends the sagas: their inbox rows go, their ends stay.
    await waitFor(
      'the three sagas ended in the inbox',
      WAIT_MS,
      async () => ((await sql(url, 'SELECT saga_id FROM verdict_saga_ended')).length === 3 ? true : undefined),
      () => svc.stderr.slice(-2_000),
    );
    expect(
      (await sql<{ saga_id: string }>(url, 'SELECT saga_id FROM verdict_saga_ended ORDER BY saga_id')).map(
        (r) => r.saga_id,
      ),
    ).toEqual(['pg-declined', 'pg-killed', 'pg-ok']);
    expect(
      await sql(url, "SELECT key FROM verdict_saga_inbox WHERE saga_id IN ('pg-ok', 'pg-declined', 'pg-killed')"),
    ).toEqual([]);
  }, 300_000);
});
