// Sagas end to end on real processes: three node processes on loopback, two
// step services (flight and hotel) serving SagaStep over gRPC with their
// inboxes in synced journal files, and the SDK starting sagas and waiting for
// their ends — including while the leader is killed with SIGKILL mid-saga.
// Afterwards every saga is all done or all compensated, and every effect was
// applied once.

import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { VerdictError } from '../../src/client/errors.ts';
import type { InboxRecord } from '../../src/saga/inbox.ts';
import { startStepService, type StepService } from '../../src/saga/step-service.ts';
import { Cluster, fileTempDir, freePorts, runCli, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

/** A CLI process on a loaded two-core machine: a generous bound (each waits for its answer, not for time). */
const CLI_WAIT = { timeoutMs: 60_000 };

const services: StepService[] = [];
afterAll(async () => {
  for (const s of services) await s.stop();
});

/** Effects as applied, per step service: "action:<saga>:<step>" or "compensate:<saga>:<step>", counted. */
const applied = new Map<string, number>();

async function startBooking(c: Cluster): Promise<void> {
  const dir = fileTempDir('verdict-saga-steps-');
  const ports = await freePorts(2);
  for (const [i, id] of ['flight', 'hotel'].entries()) {
    const s = await startStepService({
      clusterId: c.clusterId,
      serviceId: id,
      listen: `127.0.0.1:${ports[i]}`,
      endpointsOfCluster: c.nodes.map((n) => n.address),
      dataDir: join(dir, id),
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 200,
      handlers: {
        book: {
          // "full" is a business refusal: nothing is booked.
          action: (req) => {
            // Load sagas' first attempts fail transiently, so that the kill below lands mid-saga.
            if (req.sagaId.startsWith('load-') && req.attempt < 2) throw new Error('not yet');
            return req.input === 'full'
              ? { status: 'failed', reason: `${id} is full` }
              : { status: 'done', output: `${id}-${req.sagaId}`, effect: `book ${req.sagaId}` };
          },
          compensate: (req) => ({ status: 'done', output: '', effect: `cancel ${req.sagaId}` }),
        },
      },
      apply: (r: InboxRecord) => {
        const k = `${id}:${r.kind}:${r.sagaId}:${r.step}`;
        applied.set(k, (applied.get(k) ?? 0) + 1);
      },
    });
    services.push(s);
  }
  await Promise.all(services.map((s) => s.registered));
}

describe('sagas on real processes', () => {
  it('a compensation that keeps failing is flagged stuck, retried by an operator, and resolved by hand, each act in the log', async () => {
    const c = await Cluster.start({ nodes: 3, configExtra: () => ({ sagaStuckAfterAttempts: 3 }) });
    await c.waitForLeader({ timeoutMs: 120_000 });
    const ports = await freePorts(1);
    const dir = fileTempDir('verdict-saga-stuck-');
    const bank = await startStepService({
      clusterId: c.clusterId,
      serviceId: 'bank',
      listen: `127.0.0.1:${ports[0]}`,
      endpointsOfCluster: c.nodes.map((n) => n.address),
      dataDir: join(dir, 'bank'),
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 200,
      handlers: {
        // The refund's own system is down: it errors on every attempt.
        debitNoRefund: {
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
    services.push(bank);
    await bank.registered;
    const client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address) });
    const eps = ['--endpoints', c.nodes.map((n) => n.address).join(',')];
    try {
      await client.saga({
        id: 'order-1',
        steps: [
          { service: 'bank', name: 'debitNoRefund' },
          { service: 'bank', name: 'ship' },
        ],
      });
      const stuck = await waitFor('order-1 to be flagged stuck', 60_000, async () =>
        (await client.sagas.list(true)).find((s) => s.id === 'order-1'),
      );
      expect(stuck.state).toBe('compensating');
      expect(stuck.stuck).toMatchObject({ step: 0, kind: 'compensate', attempts: 3 });
      expect(stuck.stuck?.lastError).toMatch(/refund system unreachable/);
      const listed = await runCli(['saga', 'list', '--stuck', ...eps], CLI_WAIT);
      expect(listed.stdout).toMatch(
        /order-1\s+compensating\s+compensating,failed\s+step 0 compensate at bank\/debitNoRefund, 3 attempts: .*refund system unreachable/,
      );
      // Resolving the wrong step, or the wrong kind, is refused and changes nothing.
      const wrong = await runCli(
        ['saga', 'resolve', 'order-1', '--step', '0', '--done', '--reason', 'x', ...eps],
        CLI_WAIT,
      );
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toMatch(
        /saga order-1 step 0 is not stuck on its action \(the saga is stuck on step 0 compensate\); nothing was changed/,
      );
      // An operator's retry: recorded, attempts counted afresh, and (the refund still failing) stuck again.
      const retried = await runCli(
        ['saga', 'retry', 'order-1', '--reason', 'refund system back?', '--operator', 'alice', ...eps],
        CLI_WAIT,
      );
      expect(retried.code, retried.stderr).toBe(0);
      await waitFor('order-1 to be stuck again', 60_000, async () =>
        (await client.sagas.list(true)).some((s) => s.id === 'order-1') ? true : undefined,
      );
      const resolved = await runCli(
        [
          'saga',
          'resolve',
          'order-1',
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
      const end = await (await client.sagas.status('order-1', 10_000)).state;
      expect(end).toBe('compensated');
      const shown = await runCli(['saga', 'show', 'order-1', ...eps], CLI_WAIT);
      expect(shown.stdout).toMatch(/retry step 0 compensate by alice: refund system back\?/);
      expect(shown.stdout).toMatch(/resolved compensated step 0 compensate by bob: refunded by hand, ticket 42/);
      expect(shown.stdout).toMatch(/saga order-1: COMPENSATED/);
      expect(await client.sagas.list(true)).toEqual([]);
    } finally {
      client.close();
      await c.destroy();
    }
  }, 180_000);

  it('finishes, compensates, refuses bad input, and survives kill -9 of the leader mid-saga', async () => {
    const c = await Cluster.start({ nodes: 3, metrics: true });
    await c.waitForLeader({ timeoutMs: 120_000 });
    await startBooking(c);
    const client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address) });
    try {
      // 1. A saga that finishes, with outputs later steps could read.
      const ok = await (
        await client.saga({
          id: 'trip-1',
          steps: [
            { service: 'flight', name: 'book' },
            { service: 'hotel', name: 'book' },
          ],
          pivot: 1,
        })
      ).result();
      expect(ok.end).toBe('finished');
      expect(ok.status.outputs).toEqual(['flight-trip-1', 'hotel-trip-1']);

      // 2. The hotel refuses: the flight is compensated.
      const full = await (
        await client.saga({
          id: 'trip-2',
          steps: [
            { service: 'flight', name: 'book' },
            { service: 'hotel', name: 'book', input: 'full' },
          ],
        })
      ).result();
      expect(full.end).toBe('compensated');
      expect(full.status.steps).toEqual(['compensated', 'failed']);
      expect(full.status.timeline.map((e) => e.what)).toEqual([
        'started',
        'sent',
        'done',
        'sent',
        'failed',
        'sent',
        'compensated',
        'compensated',
      ]);

      // 3. Bad input: a clear error naming the saga and the step; nothing started.
      await expect(client.saga({ id: 'trip-x', steps: [{ service: 'train', name: 'book' }] })).rejects.toThrow(
        /FAILED_PRECONDITION: saga trip-x step 0: step service train is not registered/,
      );
      await expect(client.saga({ id: 'trip-y', steps: [] })).rejects.toThrow(
        /INVALID_ARGUMENT: saga trip-y has no steps/,
      );
      await expect(client.sagaStatus('trip-x')).rejects.toBeInstanceOf(VerdictError);
      await expect(client.sagas.resolve('trip-1', 0, 'done', 'by hand')).rejects.toThrow(
        /FAILED_PRECONDITION: saga trip-1 step 0 is not stuck on its action/,
      );

      // 4. Many sagas while the leader is killed.
      const ids = Array.from({ length: 30 }, (_, i) => `load-${i}`);
      let ended = 0;
      const handles = ids.map((id, i) =>
        client
          .saga({
            id,
            steps: [
              { service: 'flight', name: 'book' },
              { service: 'hotel', name: 'book', input: i % 5 === 0 ? 'full' : '' },
              { service: 'flight', name: 'book' },
            ],
            pivot: 1,
          })
          .then((h) => h.result())
          .then((e) => (ended++, e)),
      );
      const { node: leader } = await c.waitForLeader({ timeoutMs: 120_000 });
      await leader.kill('SIGKILL');
      const endedBeforeKill = ended;
      const ends = await Promise.all(handles);
      expect(endedBeforeKill, 'the kill did not land mid-saga').toBeLessThan(ids.length);
      for (const [i, e] of ends.entries()) expect(e.end, ids[i]).toBe(i % 5 === 0 ? 'compensated' : 'finished');
      // Exactly once: every effect of every saga applied once at its step service.
      for (const [k, n] of applied) expect(n, k).toBe(1);
      for (const [i, id] of ids.entries()) {
        if (i % 5 === 0) {
          expect(applied.get(`flight:action:${id}:0`)).toBe(1);
          expect(applied.get(`flight:compensate:${id}:0`)).toBe(1);
          expect(applied.has(`hotel:action:${id}:1`)).toBe(false);
        } else
          for (const k of [`flight:action:${id}:0`, `hotel:action:${id}:1`, `flight:action:${id}:2`])
            expect(applied.get(k), k).toBe(1);
      }
      // Nothing stuck after healing.
      expect(await client.sagas.list(true)).toEqual([]);

      // 5. The CLI: a demo start, a timeline, the stuck list, a refused resolve.
      const eps = [
        '--endpoints',
        c.nodes
          .filter((n) => n !== leader)
          .map((n) => n.address)
          .join(','),
      ];
      const started = await runCli(
        ['saga', 'start', '--id', 'cli-1', '--step', 'flight:book', '--step', 'hotel:book=full', ...eps],
        { timeoutMs: 60_000 },
      );
      expect(started.stdout.trim(), started.stderr).toBe('COMPENSATED cli-1');
      expect(started.code).toBe(2);
      const shown = await runCli(['saga', 'show', 'trip-2', ...eps], CLI_WAIT);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(/saga trip-2: COMPENSATED/);
      expect(shown.stdout).toMatch(/failed step 1 action: hotel is full/);
      const stuck = await runCli(['saga', 'list', '--stuck', ...eps], CLI_WAIT);
      expect(stuck.stdout.trim()).toBe('(no saga is stuck)');
      const refused = await runCli(
        ['saga', 'resolve', 'trip-2', '--step', '0', '--compensated', '--reason', 'by hand', ...eps],
        CLI_WAIT,
      );
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/saga trip-2 step 0 is not stuck on its compensate .*nothing was changed/);
      // Metrics on the new leader: sagas by state, step attempts and their latency.
      const { node: now } = await c.waitForLeader({ timeoutMs: 120_000 });
      const text = await (await fetch(`http://${now.metricsAddress}/metrics`)).text();
      const sample = (re: RegExp): number => Number(re.exec(text)?.[1] ?? Number.NaN);
      expect(sample(/^verdict_sagas\{state="finished"[^}]*\} (\d+)$/m)).toBe(25);
      expect(sample(/^verdict_sagas\{state="compensated"[^}]*\} (\d+)$/m)).toBe(8);
      expect(sample(/^verdict_sagas_stuck\{[^}]*\} (\d+)$/m)).toBe(0);
      expect(text).toMatch(/^verdict_saga_stuck_total\{[^}]*\} 0$/m);
      expect(sample(/^verdict_saga_step_attempts_total\{[^}]*\} (\d+)$/m)).toBeGreaterThan(0);
      expect(text).toMatch(
        /^verdict_saga_step_duration_seconds_count\{[^}]*kind="action"[^}]*result="answered"[^}]*\} \d+$/m,
      );
      const typo = await runCli(['saga', 'list', '--stuk', ...eps], CLI_WAIT);
      expect(typo.stderr).toMatch(/unknown flag "--stuk" for verdict saga list \(did you mean --stuck\?\)/);
    } finally {
      client.close();
      await c.destroy();
    }
  }, 240_000);
});
