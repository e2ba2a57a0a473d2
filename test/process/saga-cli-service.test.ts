// The README's saga section as written: `verdict saga service` processes
// for flight, hotel and payment, then `verdict saga start` from the shell:
// FINISHED (exit 0) when payment charges, COMPENSATED (exit 2) when its
// input is "decline", its reservations compensated in `saga show`.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, Cluster, freePorts, ROOT, runCli, tempDir, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

const WAIT_MS = 60_000;
const services = new Set<ChildProcess>();

afterAll(async () => {
  await Promise.all(
    [...services].map((c) =>
      c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once('exit', r).kill('SIGKILL')),
    ),
  );
});

describe('verdict saga service and verdict saga start, as the README runs them', () => {
  let cluster: Cluster;
  let endpoints = '';
  const logs = new Map<string, string>();

  beforeAll(async () => {
    cluster = await Cluster.start({ nodes: 3 });
    await cluster.waitForLeader();
    endpoints = cluster.nodes.map((n) => n.address).join(',');
    const dir = tempDir('verdict-saga-cli-');
    const ports = await freePorts(3);
    for (const [i, [id, handler]] of [
      ['flight', 'reserve'],
      ['hotel', 'reserve'],
      ['payment', 'charge'],
    ].entries()) {
      const child = spawn(
        process.execPath,
        [
          BIN,
          'saga',
          'service',
          '--id',
          id,
          '--listen',
          `127.0.0.1:${ports[i]}`,
          '--data',
          join(dir, id),
          '--handler',
          handler,
          '--cluster-id',
          cluster.clusterId,
          '--endpoints',
          endpoints,
          '--insecure',
        ],
        { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      services.add(child);
      logs.set(id, '');
      child.stderr?.setEncoding('utf8').on('data', (d: string) => logs.set(id, (logs.get(id) ?? '') + d));
    }
    // Registered: every step service is in the cluster's registry.
    await waitFor(
      'the three step services to register',
      WAIT_MS,
      async () => {
        const r = await runCli(['participants', '--json', '--endpoints', endpoints]);
        const ids =
          r.code === 0
            ? (JSON.parse(r.stdout) as { participantId?: string; id?: string }[]).map((p) => p.participantId ?? p.id)
            : [];
        return ['flight', 'hotel', 'payment'].every((id) => ids.includes(id)) ? true : undefined;
      },
      () => [...logs].map(([id, log]) => `${id}: ${log.slice(-500)}`).join('\n'),
    );
  }, 3 * WAIT_MS);

  it('runs a saga to FINISHED (exit 0) and one to COMPENSATED (exit 2)', async () => {
    const steps = ['--step', 'flight:reserve', '--step', 'hotel:reserve'];
    const done = await runCli(
      ['saga', 'start', ...steps, '--step', 'payment:charge', '--pivot', '2', '--endpoints', endpoints],
      { timeoutMs: WAIT_MS },
    );
    expect(done.stderr).toBe('');
    expect(done.stdout).toMatch(/^FINISHED \S+/);
    expect(done.code).toBe(0);

    const declined = await runCli(
      [
        'saga',
        'start',
        ...steps,
        '--step',
        'payment:charge=decline',
        '--pivot',
        '2',
        '--json',
        '--endpoints',
        endpoints,
      ],
      { timeoutMs: WAIT_MS },
    );
    expect(declined.code, declined.stderr).toBe(2);
    const status = JSON.parse(declined.stdout) as { id: string };
    const show = await runCli(['saga', 'show', status.id, '--json', '--endpoints', endpoints], { timeoutMs: WAIT_MS });
    expect(show.code, show.stderr).toBe(0);
    const shown = JSON.parse(show.stdout) as { state: string; steps: string[]; outputs: string[] };
    // The two reservations ran and were compensated in reverse; the declined charge never took effect.
    expect(shown).toMatchObject({
      state: 'compensated',
      steps: ['compensated', 'compensated', 'failed'],
      outputs: ['flight.reserve done', 'hotel.reserve done', ''],
    });
  });
});
