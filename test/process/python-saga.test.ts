// The Python SDK's saga step service (sdk/python/verdict/saga.py) as a
// process beside three real nodes: `verdict saga start` runs a saga on it
// to FINISHED, and one whose charge is declined to COMPENSATED, with the
// reservation's compensation run by the Python service. Each effect is
// applied once (the inbox), and once the sagas ended their keys are gone.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Cluster, freePorts, runCli, tempDir, useProcessCleanup, waitFor } from './harness.ts';
import { PythonProc, stopPythonProcs } from './python-procs.ts';

useProcessCleanup();
afterEach(stopPythonProcs);
afterAll(stopPythonProcs);

const WAIT_MS = 60_000;

describe('a Python step service', () => {
  it('runs its steps exactly once to FINISHED, and compensates them when a later step fails', async () => {
    const cluster = await Cluster.start({ nodes: 3 });
    await cluster.waitForLeader();
    const endpoints = cluster.nodes.map((n) => n.address).join(',');
    const [port] = await freePorts(1);
    const data = join(tempDir('verdict-py-saga-'), 'shop');
    const svc = new PythonProc('step_service.py', [
      '--id',
      'shop',
      '--cluster-id',
      cluster.clusterId,
      '--nodes',
      endpoints,
      '--listen',
      `127.0.0.1:${port}`,
      '--data',
      data,
    ]);
    await svc.waitLine('the step service registered', (e) => e.event === 'ready');

    const done = await runCli(
      ['saga', 'start', '--step', 'shop:reserve', '--step', 'shop:charge=40', '--json', '--endpoints', endpoints],
      { timeoutMs: WAIT_MS },
    );
    expect(done.code, done.stderr).toBe(0);
    const finished = JSON.parse(done.stdout) as { id: string; state: string; outputs: string[] };
    expect(finished).toMatchObject({ state: 'finished', outputs: ['reserve done', 'charged'] });

    const declined = await runCli(
      ['saga', 'start', '--step', 'shop:reserve', '--step', 'shop:charge=decline', '--json', '--endpoints', endpoints],
      { timeoutMs: WAIT_MS },
    );
    expect(declined.code, declined.stderr).toBe(2);
    const compensated = JSON.parse(declined.stdout) as { id: string };
    const show = await runCli(['saga', 'show', compensated.id, '--json', '--endpoints', endpoints], {
      timeoutMs: WAIT_MS,
    });
    expect(JSON.parse(show.stdout)).toMatchObject({ state: 'compensated', steps: ['compensated', 'failed'] });
    await svc.waitLine(
      'the reservation compensated',
      (e) => e.event === 'applied' && e.key === `${compensated.id}/0/compensate`,
    );

    // Each effect once, whatever the orchestrator retried.
    const applied = svc.lines.filter((e) => e.event === 'applied').map((e) => `${e.key} ${e.effect}`);
    expect(applied.sort()).toEqual(
      [
        `${compensated.id}/0/action reserve`,
        `${compensated.id}/0/compensate release`,
        `${finished.id}/0/action reserve`,
        `${finished.id}/1/action charge`,
      ].sort(),
    );
    // The orchestrator ends both sagas; the service confirms each with the cluster and records the end (its keys are
    // dropped).
    const ends = async (): Promise<string[]> =>
      readFileSync(join(data, 'inbox.log'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('"t":"end"'))
        .map((l) => (JSON.parse(l.slice(9)) as { saga_id: string }).saga_id);
    await waitFor(
      'both sagas ended at the step service',
      WAIT_MS,
      async () => ((await ends()).length === 2 ? true : undefined),
      () => svc.stderr.slice(-2_000),
    );
    expect((await ends()).sort()).toEqual([finished.id, compensated.id].sort());
  }, 240_000);
});
