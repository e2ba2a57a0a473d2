// A saga in the history, on a real three-node cluster: "yesterday's" saga
// (every node's history shifted a day back, VERDICT_TEST_HISTORY_SHIFT_MS)
// whose second step failed twice before it answered DONE is collected from
// the saga table (which keeps one ended saga here, VERDICT_TEST_SAGAS_KEPT),
// and is still read after every node was killed and restarted: through
// `verdict saga show` on a follower (which falls back to the history), the
// console's /api/history (one saga, and a search of sagas) and its saga
// page's API, with its type, labels, each step's output and each call's
// failed attempts and last error. A transaction search does not list it.

import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { startStepService, type StepService } from '../../src/saga/step-service.ts';
import { Cluster, fileTempDir, freePorts, runCli, useProcessCleanup, waitFor, type NodeProc } from './harness.ts';

useProcessCleanup();

const DAY_MS = 86_400_000;
const WAIT_MS = 60_000;
const ENV = { VERDICT_TEST_HISTORY_SHIFT_MS: String(-DAY_MS), VERDICT_TEST_SAGAS_KEPT: '1' };
const before = Object.fromEntries(Object.keys(ENV).map((k) => [k, process.env[k]]));

let c: Cluster;
let pay: StepService | null = null;
let client: VerdictClient;

beforeAll(async () => {
  // The node processes inherit them.
  Object.assign(process.env, ENV);
  c = await Cluster.start({
    nodes: 3,
    metrics: true,
    configExtra: () => ({ sagaRetryMinMs: 200, sagaRetryMaxMs: 300 }),
  });
  await c.waitForLeader({ timeoutMs: 120_000 });
  client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address), callTimeoutMs: 20_000 });
}, 180_000);

afterAll(async () => {
  for (const [k, v] of Object.entries(before)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  client?.close();
  await pay?.stop();
});

async function consoleGet(n: NodeProc, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://${n.metricsAddress}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

type SagaRec = {
  sagaId: string;
  type: string;
  labels: Record<string, string>;
  state: string;
  startedAtMs: number;
  steps: { step: number; service: string; name: string; status: string; output: string }[];
  calls: {
    step: number;
    kind: string;
    attemptsTotal: number;
    lastError: string;
    firstFailureAtMs: number;
    lastFailureAtMs: number;
  }[];
  timeline: { what: string }[];
};

describe('a saga in the history', () => {
  it("reads yesterday's saga after the saga table collected it and every node restarted: saga show, the console's history API and saga page", async () => {
    const [port] = await freePorts(1);
    let shipTries = 0;
    pay = await startStepService({
      clusterId: c.clusterId,
      serviceId: 'pay',
      listen: `127.0.0.1:${port}`,
      endpointsOfCluster: c.nodes.map((n) => n.address),
      dataDir: join(fileTempDir('verdict-saga-history-'), 'pay'),
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 200,
      handlers: {
        debit: {
          action: () => ({ status: 'done', output: 'debited 30', effect: 'debit' }),
          compensate: () => ({ status: 'done', output: '', effect: '' }),
        },
        ship: {
          action: () => {
            if (++shipTries <= 2) throw new Error(`carrier unreachable (try ${shipTries})`);
            return { status: 'done', output: 'parcel 42', effect: 'ship' };
          },
          compensate: () => ({ status: 'done', output: '', effect: '' }),
        },
      },
    });
    await pay.registered;
    const first = await client.saga({
      id: 'refund-7731',
      type: 'order-refund',
      labels: { order: 'ORD-7731' },
      steps: [
        { service: 'pay', name: 'debit', input: '30' },
        { service: 'pay', name: 'ship', input: 'ORD-7731' },
      ],
    });
    expect((await first.result()).end).toBe('finished');
    // The table keeps one ended saga: the next one's end collects this one.
    const second = await client.saga({ id: 'refund-7732', steps: [{ service: 'pay', name: 'debit', input: '5' }] });
    expect((await second.result()).end).toBe('finished');
    const ep = (n: NodeProc): string[] => ['--endpoints', n.address];
    await waitFor('refund-7731 collected from the saga table and read from the history', WAIT_MS, async () => {
      const r = await runCli(['saga', 'show', 'refund-7731', ...ep(c.nodes[0] as NodeProc)]);
      return /from node \S+'s history/.test(r.stdout) ? r : undefined;
    });

    for (const n of c.nodes) await n.kill('SIGKILL');
    for (const n of c.nodes) n.start();
    const { node: leader } = await c.waitForLeader({ timeoutMs: 120_000 });
    const follower = c.nodes.find((n) => n !== leader) as NodeProc;

    const shown = await waitFor('saga show on a follower after the restart', WAIT_MS, async () => {
      const r = await runCli(['saga', 'show', 'refund-7731', '--json', ...ep(follower)]);
      return r.code === 0 ? r : undefined;
    });
    const g = JSON.parse(shown.stdout) as SagaRec & { fromHistory: string };
    expect(g).toMatchObject({
      sagaId: 'refund-7731',
      type: 'order-refund',
      labels: { order: 'ORD-7731' },
      state: 'finished',
      fromHistory: follower.id,
    });
    expect(g.steps).toEqual([
      expect.objectContaining({ step: 0, service: 'pay', name: 'debit', status: 'done', output: 'debited 30' }),
      expect.objectContaining({ step: 1, service: 'pay', name: 'ship', status: 'done', output: 'parcel 42' }),
    ]);
    expect(g.calls).toEqual([
      expect.objectContaining({
        step: 1,
        kind: 'action',
        attemptsTotal: 2,
        lastError: expect.stringMatching(/carrier unreachable \(try 2\)/),
      }),
    ]);
    expect(g.calls[0]?.firstFailureAtMs).toBeLessThanOrEqual(g.calls[0]?.lastFailureAtMs ?? 0);
    // Yesterday, as the shifted clock wrote it.
    expect(Math.abs(Date.now() - DAY_MS - g.startedAtMs)).toBeLessThan(30 * 60_000);
    expect(g.timeline.map((e) => e.what)).toEqual(expect.arrayContaining(['started', 'done', 'finished']));
    const text = await runCli(['saga', 'show', 'refund-7731', ...ep(follower)]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`saga refund-7731: FINISHED — from node ${follower.id}'s history`));
    expect(text.stdout).toMatch(/^1 +pay +ship +ORD-7731 +done +parcel 42 +2 +.*carrier unreachable \(try 2\)/m);
    expect(text.stdout).toMatch(
      /step 1 action: 2 failed attempts, first \S+, last \S+: .*carrier unreachable \(try 2\)/,
    );

    const one = await consoleGet(follower, '/api/history?saga=refund-7731');
    expect(one.status).toBe(200);
    expect((one.body.records as { txnId: string; saga: SagaRec }[])[0]).toMatchObject({
      txnId: 'saga/refund-7731',
      saga: { sagaId: 'refund-7731', state: 'finished' },
    });
    const search = await consoleGet(leader, '/api/history?kind=saga&since=36h&until=12h');
    expect((search.body.records as { saga: SagaRec }[]).map((r) => r.saga.sagaId)).toEqual([
      'refund-7732',
      'refund-7731',
    ]);
    const txnsOnly = await runCli(['txn', 'list', '--since', '36h', '--json', ...ep(leader)]);
    expect((JSON.parse(txnsOnly.stdout) as { records: unknown[] }).records).toEqual([]);
    // Indexed by the step services they called: txn list --participant and the console's search find them on any node.
    const atPay = await runCli(['txn', 'list', '--since', '36h', '--participant', 'pay', ...ep(follower)]);
    expect(atPay.code).toBe(0);
    expect(atPay.stdout).toMatch(/^saga\/refund-7732 +FINISHED +\S+ +pay:done/m);
    expect(atPay.stdout).toMatch(/^saga\/refund-7731 +FINISHED +\S+ +pay:done,pay:done +- +order-refund/m);
    const atPayTxns = await runCli([
      'txn',
      'list',
      '--since',
      '36h',
      '--participant',
      'pay',
      '--kind',
      'txn',
      '--json',
      ...ep(follower),
    ]);
    expect(atPayTxns.code, atPayTxns.stderr).toBe(0);
    expect((JSON.parse(atPayTxns.stdout) as { records: unknown[] }).records).toEqual([]);
    const bySearch = await consoleGet(follower, '/api/history?participant=pay&since=36h');
    expect((bySearch.body.records as { txnId: string }[]).map((r) => r.txnId)).toEqual([
      'saga/refund-7732',
      'saga/refund-7731',
    ]);
    const page = await consoleGet(follower, '/api/sagas/refund-7731');
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({
      fromHistory: true,
      saga: { sagaId: 'refund-7731', state: 'finished' },
      actions: { retry: { offered: false } },
    });
    const bad = await consoleGet(follower, '/api/history?kind=orders');
    expect([bad.status, bad.body.error]).toEqual([400, expect.stringMatching(/kind "orders" is not txn or saga/)]);
  }, 300_000);
});
