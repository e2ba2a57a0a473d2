// Durable attempt counts and stuck sagas a person can act on, on real
// processes: three nodes, a step service over gRPC, the SDK and the CLI.
//
// - An action before the pivot that always errors keeps its attempt count
//   across a SIGKILL of the leader: the new leader's first call carries the
//   logged count plus one (never 1 again), and the action is abandoned after
//   sagaActionAttemptsMax attempts in all, its saga COMPENSATED.
// - A compensation that keeps failing flags its saga stuck: the leader logs a
//   warn line with the saga's id, type, labels, step, service, handler,
//   attempts and last error, and repeats it at most every
//   sagaStuckLogIntervalMs; after the leader is killed the new leader logs it
//   too, and `saga list --stuck` still lists it; verdict_sagas_stuck{type}
//   and verdict_saga_stuck_total{type} count it; `saga show` and the SDK's
//   status show every step's service, handler, input, attempts and last error.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { startStepService, type StepService } from '../../src/saga/step-service.ts';
import { Cluster, fileTempDir, freePorts, runCli, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

const CLI_WAIT = { timeoutMs: 60_000 };
const ATTEMPTS_MAX = 6;
const STUCK_AFTER = 4;
const LOG_INTERVAL_MS = 2_000;

const services: StepService[] = [];
afterAll(async () => {
  for (const s of services) await s.stop();
});

interface StuckLine {
  time: number;
  msg: string;
  sagaId: string;
  sagaType: string;
  labels: Record<string, string>;
  step: number;
  kind: string;
  service: string;
  handler: string;
  attempts: number;
  lastError: string;
}

/** The stuck warn lines for `sagaId` in a node's log (pino JSON lines). */
function stuckLines(logFile: string, sagaId: string): StuckLine[] {
  const out: StuckLine[] = [];
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('is stuck and needs a person')) continue;
    try {
      const o = JSON.parse(line) as StuckLine;
      if (o.sagaId === sagaId) out.push(o);
    } catch {
      // A line cut by a SIGKILL: not ours to read.
    }
  }
  return out;
}

describe('saga attempts and stuck sagas on real processes', () => {
  it('attempts survive a leader kill; a stuck saga is logged, counted and shown with its business context', async () => {
    const c = await Cluster.start({
      nodes: 3,
      metrics: true,
      configExtra: () => ({
        sagaActionAttemptsMax: ATTEMPTS_MAX,
        sagaActionAbandonAfterMs: 0,
        sagaStuckAfterAttempts: STUCK_AFTER,
        sagaRetryMinMs: 1_000,
        sagaRetryMaxMs: 1_000,
        sagaStuckLogIntervalMs: LOG_INTERVAL_MS,
      }),
    });
    await c.waitForLeader({ timeoutMs: 120_000 });
    const [port] = await freePorts(1);
    const chargeAttempts: number[] = [];
    const pay = await startStepService({
      clusterId: c.clusterId,
      serviceId: 'pay',
      listen: `127.0.0.1:${port}`,
      endpointsOfCluster: c.nodes.map((n) => n.address),
      dataDir: join(fileTempDir('verdict-saga-stuck-'), 'pay'),
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 200,
      handlers: {
        // The card processor is down: every attempt errors.
        charge: {
          action: (req) => {
            chargeAttempts.push(req.attempt);
            throw new Error('card processor down');
          },
          compensate: () => ({ status: 'done', output: '', effect: '' }),
        },
        // The debit works; its refund's system is unreachable.
        debit: {
          action: () => ({ status: 'done', output: 'debited', effect: 'debit' }),
          compensate: () => {
            throw new Error('refund system unreachable');
          },
        },
        ship: {
          action: () => ({ status: 'failed', reason: 'out of stock' }),
          compensate: () => ({ status: 'done', output: '', effect: '' }),
        },
      },
    });
    services.push(pay);
    await pay.registered;
    const client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address) });
    try {
      // Bad type and labels are refused, naming what is wrong; nothing starts.
      await expect(
        client.saga({ id: 'bad-1', steps: [{ service: 'pay', name: 'debit' }], labels: { 'bad key': 'x' } }),
      ).rejects.toThrow(/INVALID_ARGUMENT: saga bad-1: label name "bad key"/);
      await expect(
        client.saga({ id: 'bad-2', steps: [{ service: 'pay', name: 'debit' }], type: 'order refund' }),
      ).rejects.toThrow(/INVALID_ARGUMENT: saga bad-2: type "order refund" must be/);
      const badCli = await runCli(
        ['saga', 'start', '--step', 'pay:debit', '--label', 'order', '--endpoints', c.nodes[0].address],
        CLI_WAIT,
      );
      expect([badCli.code, badCli.stderr.trim()]).toEqual([64, 'verdict: --label "order": write NAME=VALUE']);

      // 1. The stuck saga, with a type and labels.
      await client.saga({
        id: 'refund-7731',
        type: 'order-refund',
        labels: { order: 'ORD-7731', amount: '12,400 RUB' },
        steps: [
          { service: 'pay', name: 'debit', input: '{"order":"ORD-7731"}' },
          { service: 'pay', name: 'ship' },
        ],
      });
      const { node: first } = await c.waitForLeader({ timeoutMs: 120_000 });
      const lines = await waitFor('two stuck warn lines on the leader', 90_000, async () => {
        const l = stuckLines(first.logFile, 'refund-7731');
        return l.length >= 2 ? l : undefined;
      });
      expect(lines[0]).toMatchObject({
        sagaType: 'order-refund',
        labels: { amount: '12,400 RUB', order: 'ORD-7731' },
        step: 0,
        kind: 'compensate',
        service: 'pay',
        handler: 'debit',
        lastError: expect.stringMatching(/refund system unreachable/),
      });
      expect(lines[0].attempts).toBeGreaterThanOrEqual(STUCK_AFTER);
      expect(lines[0].msg).toMatch(
        /^saga refund-7731 \(order-refund amount=12,400 RUB order=ORD-7731\) is stuck and needs a person: step 0 compensate at pay\/debit failed \d+ times, last error: .*refund system unreachable/,
      );
      // Repeated at a bounded rate: never two lines for the saga closer than the interval (a scan's second of slack).
      for (let i = 1; i < lines.length; i++)
        expect(lines[i].time - lines[i - 1].time).toBeGreaterThanOrEqual(LOG_INTERVAL_MS - 1_000);
      expect(lines[1].attempts).toBeGreaterThan(lines[0].attempts);

      const metrics = await (await fetch(`http://${first.metricsAddress}/metrics`)).text();
      expect(metrics).toMatch(/^verdict_sagas_stuck\{[^}]*type="order-refund"[^}]*\} 1$/m);
      expect(metrics).toMatch(/^verdict_saga_stuck_total\{[^}]*type="order-refund"[^}]*\} 1$/m);

      const status = await client.sagaStatus('refund-7731');
      expect(status.type).toBe('order-refund');
      expect(status.labels).toEqual({ amount: '12,400 RUB', order: 'ORD-7731' });
      expect(status.stepDetails[0]).toMatchObject({
        service: 'pay',
        handler: 'debit',
        input: '{"order":"ORD-7731"}',
        state: 'compensating',
        output: 'debited',
        action: null,
      });
      expect(status.stepDetails[0].compensation?.attempts).toBeGreaterThanOrEqual(STUCK_AFTER);
      expect(status.stepDetails[0].compensation?.lastError).toMatch(/refund system unreachable/);
      expect(status.stepDetails[1]).toMatchObject({ service: 'pay', handler: 'ship', state: 'failed' });

      // 2. The always-failing action: attempts counted, then the leader is killed mid-way.
      await client.saga({
        id: 'charge-1',
        type: 'order',
        labels: { order: 'ORD-7732' },
        steps: [{ service: 'pay', name: 'charge', input: '{"order":"ORD-7732"}' }],
      });
      await waitFor('two failed attempts of charge-1 in the log', 60_000, async () => {
        const s = await client.sagaStatus('charge-1');
        return (s.stepDetails[0].action?.attempts ?? 0) >= 2 ? true : undefined;
      });
      await first.kill('SIGKILL');
      const charged = await (
        await client.sagas.start({
          id: 'charge-1',
          type: 'order',
          labels: { order: 'ORD-7732' },
          steps: [{ service: 'pay', name: 'charge', input: '{"order":"ORD-7732"}' }],
        })
      ).result();
      expect(charged.end).toBe('compensated');
      const gaveUp = charged.status.timeline.find((e) => e.what === 'abandoned');
      expect(gaveUp?.detail).toMatch(
        new RegExp(`^gave up after ${ATTEMPTS_MAX} attempts over [0-9.]+ s: step service pay: .*card processor down`),
      );
      // The count went on across the kill: attempt 1 only once, and the calls at most the bound plus the call in flight
      // at the kill.
      expect(chargeAttempts.filter((a) => a === 1)).toEqual([1]);
      expect(Math.max(...chargeAttempts)).toBe(ATTEMPTS_MAX);
      expect(chargeAttempts.length).toBeLessThanOrEqual(ATTEMPTS_MAX + 1);

      // 3. The new leader takes over the stuck saga: it logs it, and the manual queue still lists it.
      const { node: second } = await c.waitForLeader({ timeoutMs: 120_000 });
      await waitFor('the new leader to log the stuck saga', 60_000, async () =>
        stuckLines(second.logFile, 'refund-7731').length > 0 ? true : undefined,
      );
      const eps = ['--endpoints', second.address];
      const listed = await runCli(['saga', 'list', '--stuck', ...eps], CLI_WAIT);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(
        /refund-7731\s+order-refund\s+amount=12,400 RUB order=ORD-7731\s+compensating\s+compensating,failed\s+step 0 compensate at pay\/debit, \d+ attempts: .*refund system unreachable/,
      );
      const shown = await runCli(['saga', 'show', 'refund-7731', ...eps], CLI_WAIT);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(/^type: order-refund$/m);
      expect(shown.stdout).toMatch(/^labels: amount=12,400 RUB order=ORD-7731$/m);
      expect(shown.stdout).toMatch(
        /^STEP\s+SERVICE\s+HANDLER\s+INPUT\s+STATE\s+OUTPUT\s+ATTEMPTS\s+COMP ATTEMPTS\s+LAST ERROR$/m,
      );
      expect(shown.stdout).toMatch(
        /^0\s+pay\s+debit\s+\{"order":"ORD-7731"\}\s+compensating\s+debited\s+\d+\s+.*refund system unreachable/m,
      );
      // Resolved by hand: who, when and why in the log; the queue is empty.
      const resolved = await runCli(
        [
          'saga',
          'resolve',
          'refund-7731',
          '--step',
          '0',
          '--compensated',
          '--reason',
          'refunded by hand, ticket 42',
          '--operator',
          'bob',
          ...eps,
        ],
        CLI_WAIT,
      );
      expect(resolved.code, resolved.stderr).toBe(0);
      const after = await client.sagaStatus('refund-7731');
      expect(after.state).toBe('compensated');
      expect(after.timeline.find((e) => e.what === 'resolved compensated')).toMatchObject({
        operator: 'bob',
        detail: 'refunded by hand, ticket 42',
      });
      expect(await client.sagas.list(true)).toEqual([]);
    } finally {
      client.close();
      await c.destroy();
    }
  }, 300_000);
});
