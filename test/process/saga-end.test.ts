// An outsider's End cannot wedge a saga (plaintext, where any process that
// reaches a step service's port can call it): End drops a saga's keys and
// refuses its later calls, so the step service confirms with the cluster
// that the saga has ended (FINISHED or COMPENSATED in the applied log)
// before it takes one. A forged End for a running saga is refused and the
// saga finishes; the orchestrator's own End, after the end, is taken, and a
// repeated one too.
import * as grpc from '@grpc/grpc-js';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { startStepService } from '../../src/saga/step-service.ts';
import { sagaStepService } from '../../src/transport/saga-rpc.ts';
import { unaryCall } from '../../src/transport/unary.ts';
import { Cluster, fileTempDir, freePorts, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

const stops: (() => unknown)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

describe("a saga's End", () => {
  it('from an outsider, for a running saga, is refused and the saga finishes; after the end it is taken, and again', async () => {
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await c.waitForLeader({ timeoutMs: 120_000 });
    const [port] = await freePorts(1);
    let open = false;
    let calls = 0;
    const hotel = await startStepService({
      clusterId: c.clusterId,
      serviceId: 'hotel',
      listen: `127.0.0.1:${port}`,
      endpointsOfCluster: c.nodes.map((n) => n.address),
      dataDir: join(fileTempDir('verdict-saga-end-'), 'hotel'),
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 200,
      handlers: {
        // Transient errors until the test opens it: the saga stays running meanwhile.
        book: {
          action: (req) => {
            calls++;
            if (!open) throw new Error('not yet');
            return { status: 'done', output: `room-${req.sagaId}`, effect: 'book' };
          },
          compensate: () => ({ status: 'done', output: '', effect: '' }),
        },
      },
    });
    stops.push(() => hotel.stop());
    await hotel.registered;
    const client = new VerdictClient({ endpoints: c.nodes.map((n) => n.address), insecure: true });
    stops.push(() => client.close());
    const outsider = new grpc.Client(hotel.address, grpc.credentials.createInsecure());
    stops.push(() => outsider.close());
    const end = (sagaId: string): Promise<unknown> =>
      unaryCall(
        outsider,
        sagaStepService.End as grpc.MethodDefinition<{ clusterId: string; sagaId: string }, unknown>,
        { clusterId: c.clusterId, sagaId },
        10_000,
      );

    const handle = await client.saga({ id: 'trip-1', steps: [{ service: 'hotel', name: 'book' }] });
    await waitFor('the hotel step to be tried', 30_000, async () => (calls > 0 ? true : undefined));
    await expect(end('trip-1')).rejects.toMatchObject({
      code: grpc.status.FAILED_PRECONDITION,
      details: expect.stringMatching(/saga trip-1 is running on the cluster: not ended/),
    });
    await expect(end('never-started')).rejects.toMatchObject({
      code: grpc.status.FAILED_PRECONDITION,
      details: expect.stringMatching(/unknown to the cluster/),
    });
    open = true;
    const result = await handle.result();
    expect(result.end).toBe('finished');
    expect(result.status.outputs).toEqual(['room-trip-1']);
    // Ended in the log: an End now is taken, and taken again (idempotent).
    await expect(end('trip-1')).resolves.toEqual({});
    await expect(end('trip-1')).resolves.toEqual({});
    // The inbox dropped its keys once the orchestrator's End came.
    await waitFor('the inbox to drop trip-1', 30_000, async () =>
      hotel.inbox?.get('trip-1/0/action') === undefined ? true : undefined,
    );
  }, 180_000);
});
