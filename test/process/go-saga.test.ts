// The Go SDK's sagas on three real nodes: a Go client starts sagas
// (client.StartSaga) and waits for their end (client.WaitSaga), and a Go
// step service (sdk/go/saga) serves their steps. One saga runs to FINISHED,
// one whose charge is declined is COMPENSATED with its reservation released
// by the Go service, and one is cut by a SIGKILL of the service after its
// step's record was written and before its answer: restarted on the same
// inbox, the service answers the orchestrator's retry from the inbox, so
// each handler ran once and each effect was applied once per process.
// Once the sagas ended, the service confirmed each end with the cluster and
// recorded it. Under mutual TLS the nodes call the Go step service with
// their certificates, and a caller with a certificate of the same CA and
// cluster but without the node mark is refused (R8).
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildGoDrivers, type Event, GoProc, goClient, stopGoProcs } from './go-procs.ts';
import { Cluster, fileTempDir, freePorts, tempDir, uniqueClusterId, useProcessCleanup, waitFor } from './harness.ts';
import { tlsCredentials } from '../../src/client/tls.ts';
import { certDir, TestCa } from '../tls-certs.ts';

useProcessCleanup();
afterEach(stopGoProcs);
afterAll(stopGoProcs);

const WAIT_MS = 60_000;
let bin = '';
beforeAll(() => {
  bin = fileTempDir('verdict-go-saga-bin-');
  buildGoDrivers(bin, ['stepservice', 'client']);
}, 400_000);

const step = (name: string, input: string) => ({ service: 'goshop', name, input });
const keysOf = (lines: Event[], event: string): string[] =>
  lines.filter((e) => e.event === event).map((e) => String(e.key));
const count = (xs: string[], x: string): number => xs.filter((y) => y === x).length;

describe('a Go step service and a Go client', () => {
  it('run sagas to FINISHED and COMPENSATED on three real nodes, and a SIGKILL of the service between its record and its answer applies the effect once', async () => {
    const cluster = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await cluster.waitForLeader();
    const nodes = cluster.nodes.map((n) => n.address);
    const [port] = await freePorts(1);
    const dir = tempDir('verdict-go-saga-');
    const data = join(dir, 'goshop');
    const hold = join(dir, 'hold');
    const args = [
      '--id',
      'goshop',
      '--cluster-id',
      cluster.clusterId,
      '--nodes',
      nodes.join(','),
      '--listen',
      `127.0.0.1:${port}`,
      '--data',
      data,
      '--hold-file',
      hold,
    ];
    const client = join(bin, 'client');
    let svc = new GoProc(join(bin, 'stepservice'), args);
    await svc.waitLine('the Go step service registered', (e) => e.event === 'ready');

    const [finished, declined] = await goClient(client, nodes, [
      { op: 'saga-start', saga: 'go-saga-ok', steps: [step('reserve', '1'), step('charge', '40')] },
      { op: 'saga-start', saga: 'go-saga-declined', steps: [step('reserve', '2'), step('charge', 'decline')] },
    ]);
    expect(finished).toMatchObject({ saga: 'go-saga-ok', state: 'running' });
    expect(declined).toMatchObject({ saga: 'go-saga-declined', state: 'running' });
    const [ok, comp] = await goClient(client, nodes, [
      { op: 'saga-wait', saga: 'go-saga-ok' },
      { op: 'saga-wait', saga: 'go-saga-declined' },
    ]);
    expect(ok).toMatchObject({ state: 'finished', steps: ['done', 'done'], outputs: ['reserved 1', 'charged 40'] });
    expect(comp).toMatchObject({ state: 'compensated', steps: ['compensated', 'failed'] });

    // The third saga: the service is killed after its reserve's record is durable and before the answer leaves.
    writeFileSync(hold, '');
    const [started] = await goClient(client, nodes, [
      { op: 'saga-start', saga: 'go-saga-killed', steps: [step('reserve', 'hold'), step('charge', '50')] },
    ]);
    expect(started).toMatchObject({ state: 'running' });
    await svc.waitLine(
      'the reserve recorded and held before its answer',
      (e) => e.event === 'holding' && e.key === 'go-saga-killed/0/action',
    );
    await svc.kill('SIGKILL');
    const first = svc.lines;
    rmSync(hold);
    svc = new GoProc(join(bin, 'stepservice'), args);
    await svc.waitLine('the Go step service registered again', (e) => e.event === 'ready');
    const [killed] = await goClient(client, nodes, [{ op: 'saga-wait', saga: 'go-saga-killed' }]);
    expect(killed).toMatchObject({
      state: 'finished',
      steps: ['done', 'done'],
      outputs: ['reserved hold', 'charged 50'],
    });
    expect(existsSync(hold)).toBe(false);

    // Each handler ran once over both processes, whatever the orchestrator retried.
    const ran = [...keysOf(first, 'ran'), ...keysOf(svc.lines, 'ran')];
    expect(ran.sort()).toEqual(
      [
        'go-saga-ok/0/action',
        'go-saga-ok/1/action',
        'go-saga-declined/0/action',
        'go-saga-declined/1/action',
        'go-saga-declined/0/compensate',
        'go-saga-killed/0/action',
        'go-saga-killed/1/action',
      ].sort(),
    );
    // Effects: once in the first process, and once in the second (its replay of the inbox, then the new charge); never
    // twice in one.
    const appliedFirst = keysOf(first, 'applied');
    const appliedSecond = keysOf(svc.lines, 'applied');
    for (const key of ['go-saga-killed/0/action', 'go-saga-ok/0/action', 'go-saga-declined/0/compensate']) {
      expect(count(appliedFirst, key), `${key} in the first process`).toBe(1);
      expect(count(appliedSecond, key), `${key} in the second process`).toBe(1);
    }
    expect(count(appliedFirst, 'go-saga-killed/1/action')).toBe(0);
    expect(count(appliedSecond, 'go-saga-killed/1/action')).toBe(1);
    // A declined charge has no effect, and nothing was left to refund.
    expect(appliedFirst).not.toContain('go-saga-declined/1/action');
    expect(ran).not.toContain('go-saga-declined/1/compensate');

    // The orchestrator ends the sagas; the service confirms each end with the cluster and records it (its keys are
    // dropped).
    const ends = (): string[] =>
      readFileSync(join(data, 'inbox.log'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('"t":"end"'))
        .map((l) => (JSON.parse(l.slice(9)) as { saga_id: string }).saga_id);
    await waitFor(
      'the three sagas ended at the step service',
      WAIT_MS,
      async () => (new Set(ends()).size === 3 ? true : undefined),
      () => `ends: ${ends().join(',')}; ${svc.stderr.slice(-2_000)}`,
    );
    expect(new Set(ends())).toEqual(new Set(['go-saga-ok', 'go-saga-declined', 'go-saga-killed']));
  }, 300_000);

  it('R8: under mutual TLS the nodes run a saga on the Go step service, which refuses a caller without the node mark', async () => {
    const certs = certDir();
    try {
      const ca = TestCa.create(certs, 'cluster-ca');
      const clusterId = uniqueClusterId();
      const cluster = await Cluster.start({
        nodes: 3,
        clusterId,
        logLevel: 'warn',
        configExtra: (id) => {
          const n = ca.node(id, clusterId, `${clusterId}-${id}`);
          return { tls: { ca: ca.cert, cert: n.cert, key: n.key } };
        },
        clientCredentials: tlsCredentials({ ca: ca.cert, ...ca.issue('ops') }),
      });
      await cluster.waitForLeader();
      const nodes = cluster.nodes.map((n) => n.address);
      const [port] = await freePorts(1);
      const data = join(tempDir('verdict-go-saga-tls-'), 'goshop');
      const cert = ca.issue('goshop', { ou: clusterId, file: `${clusterId}-goshop` });
      const svc = new GoProc(join(bin, 'stepservice'), [
        ...[
          '--id',
          'goshop',
          '--cluster-id',
          clusterId,
          '--nodes',
          nodes.join(','),
          '--listen',
          `127.0.0.1:${port}`,
          '--data',
          data,
        ],
        ...['--tls', [ca.cert, cert.cert, cert.key].join(',')],
      ]);
      await svc.waitLine('the TLS step service registered', (e) => e.event === 'ready');
      const app = ca.issue('app');
      const appTls = [ca.cert, app.cert, app.key].join(',');
      const [started, ended] = await goClient(
        join(bin, 'client'),
        nodes,
        [
          { op: 'saga-start', saga: 'go-tls-ok', steps: [step('reserve', '3'), step('charge', '60')] },
          { op: 'saga-wait', saga: 'go-tls-ok' },
        ],
        appTls,
      );
      expect(started).toMatchObject({ saga: 'go-tls-ok', state: 'running' });
      expect(ended).toMatchObject({ state: 'finished', outputs: ['reserved 3', 'charged 60'] });
      // A certificate of this cluster's CA and OU without the node mark asks for a step's effect: refused, and nothing
      // runs.
      const forger = ca.issue('forger', { ou: clusterId, file: `${clusterId}-forger` });
      const [forged] = await goClient(
        join(bin, 'client'),
        nodes,
        [{ op: 'step-direct', saga: 'go-tls-forged', address: `127.0.0.1:${port}`, cluster_id: clusterId }],
        [ca.cert, forger.cert, forger.key].join(','),
      );
      expect(forged).toMatchObject({
        error: 'PermissionDenied',
        message: expect.stringMatching(/takes calls only from a node of its cluster/),
      });
      expect(keysOf(svc.lines, 'ran').sort()).toEqual(['go-tls-ok/0/action', 'go-tls-ok/1/action']);
      // The service confirmed the end with the cluster over TLS and recorded it.
      await waitFor(
        'the saga ended at the step service',
        WAIT_MS,
        async () =>
          readFileSync(join(data, 'inbox.log'), 'utf8').includes('"t":"end","saga_id":"go-tls-ok"') ? true : undefined,
        () => svc.stderr.slice(-2_000),
      );
    } finally {
      rmSync(certs, { recursive: true, force: true });
    }
  }, 300_000);
});
