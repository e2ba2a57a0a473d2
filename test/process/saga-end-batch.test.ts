// End notices in batches against real processes (docs/sagas.md, "The end of
// a saga"): the leader sends each step service one EndSagas call for the
// sagas due, the step service confirms them with one SagaStates call and
// records them together; a forged EndSagas for a running or unknown saga
// takes none of them. A step service from before EndSagas (it serves
// Execute, Compensate and End only, and answers EndSagas UNIMPLEMENTED) is
// sent End, one saga at a time, and its sagas end all the same.
import * as grpc from '@grpc/grpc-js';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { ClusterLink } from '../../src/participant/cluster-link.ts';
import { startStepService } from '../../src/saga/step-service.ts';
import {
  SagasClient,
  sagaStepService,
  type SagaEndRequest,
  type SagaEndsAck,
  type SagaEndsRequest,
  type SagaStatesRequest,
  type SagaStatesResponse,
  type StepRequest,
  type StepResult,
} from '../../src/transport/saga-rpc.ts';
import { unaryCall } from '../../src/transport/unary.ts';
import { Cluster, fileTempDir, freePorts, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

const stops: (() => unknown)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

describe('saga End notices in batches', () => {
  it('a forged EndSagas takes no running or unknown saga; the leader ends finished sagas, old step services one at a time', async () => {
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    stops.push(() => c.destroy());
    await c.waitForLeader({ timeoutMs: 120_000 });
    const endpoints = c.nodes.map((n) => n.address);
    const [port, oldPort] = await freePorts(2);
    let open = false;
    const hotel = await startStepService({
      clusterId: c.clusterId,
      serviceId: 'hotel',
      listen: `127.0.0.1:${port}`,
      endpointsOfCluster: endpoints,
      dataDir: join(fileTempDir('verdict-saga-ends-'), 'hotel'),
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 200,
      handlers: {
        book: {
          action: (req) => {
            if (!open && req.sagaId === 'held') throw new Error('not yet');
            return { status: 'done', output: `room-${req.sagaId}`, effect: 'book' };
          },
          compensate: () => ({ status: 'done', output: '', effect: '' }),
        },
      },
    });
    stops.push(() => hotel.stop());
    await hotel.registered;

    // A step service of the version before EndSagas: Execute, Compensate and End only.
    const oldEnds: string[] = [];
    const old = new grpc.Server();
    const done = (cb: grpc.sendUnaryData<StepResult>): void =>
      cb(null, { status: 'STEP_DONE', output: 'ok', reason: '' });
    old.addService(
      {
        Execute: sagaStepService.Execute,
        Compensate: sagaStepService.Compensate,
        End: sagaStepService.End,
      } as grpc.ServiceDefinition,
      {
        Execute: (_call: grpc.ServerUnaryCall<StepRequest, StepResult>, cb: grpc.sendUnaryData<StepResult>) => done(cb),
        Compensate: (_call: grpc.ServerUnaryCall<StepRequest, StepResult>, cb: grpc.sendUnaryData<StepResult>) =>
          done(cb),
        End: (call: grpc.ServerUnaryCall<SagaEndRequest, object>, cb: grpc.sendUnaryData<object>) => {
          oldEnds.push(call.request.sagaId);
          cb(null, {});
        },
      },
    );
    await new Promise<void>((resolve, reject) =>
      old.bindAsync(`127.0.0.1:${oldPort}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    stops.push(() => new Promise<void>((r) => old.tryShutdown(() => r())));
    const link = new ClusterLink({ clusterId: c.clusterId, endpoints });
    stops.push(() => link.close());
    await waitFor('the old step service to register', 60_000, async () =>
      link.register('old-desk', `127.0.0.1:${oldPort}`, 'memory').then(
        () => true,
        () => undefined,
      ),
    );

    const client = new VerdictClient({ endpoints, insecure: true });
    stops.push(() => client.close());
    const outsider = new grpc.Client(hotel.address, grpc.credentials.createInsecure());
    stops.push(() => outsider.close());
    const endMany = (sagaIds: string[]): Promise<SagaEndsAck> =>
      unaryCall(
        outsider,
        sagaStepService.EndSagas as grpc.MethodDefinition<SagaEndsRequest, SagaEndsAck>,
        { clusterId: c.clusterId, sagaIds },
        10_000,
      );

    const held = await client.saga({ id: 'held', steps: [{ service: 'hotel', name: 'book' }] });
    await waitFor('saga held to be running', 30_000, async () =>
      (await client.sagaStatus('held')).state === 'running' ? true : undefined,
    );
    const forged = await endMany(['held', 'never-started']);
    expect(forged.ended).toEqual([]);
    expect(forged.problem).toMatch(/2 not ended, their keys stay \(saga held is running on the cluster\)/);
    await expect(endMany(Array.from({ length: 1_025 }, (_, i) => `x${i}`))).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringMatching(/at most 1024 saga ids; 1025 were sent/),
    });

    // Sagas over both step services: the hotel's ends come in batches, the old desk's one saga at a time.
    const ids = ['trip-1', 'trip-2', 'trip-3', 'trip-4'];
    const handles = await Promise.all(
      ids.map((id) =>
        client.saga({
          id,
          steps: [
            { service: 'hotel', name: 'book' },
            { service: 'old-desk', name: 'check-in' },
          ],
        }),
      ),
    );
    for (const h of handles) expect((await h.result()).end).toBe('finished');
    open = true;
    expect((await held.result()).end).toBe('finished');
    await waitFor('every saga ended at the old desk, one End each', 60_000, async () =>
      ids.every((id) => oldEnds.includes(id)) ? true : undefined,
    );
    await waitFor('the hotel inbox to drop every saga', 60_000, async () =>
      [...ids, 'held'].every((id) => hotel.inbox?.get(`${id}/0/action`) === undefined) ? true : undefined,
    );
    // Every node answers SagaStates from its applied table, in the order asked.
    for (const n of c.nodes) {
      const sagas = new SagasClient(n.address);
      stops.push(() => sagas.close());
      await waitFor(`node ${n.address} to answer SagaStates`, 30_000, async () => {
        const r = await sagas.call<SagaStatesRequest, SagaStatesResponse>(
          'SagaStates',
          { sagaIds: ['trip-2', 'never-started', 'held'] },
          5_000,
        );
        return r.sagas.map((a) => `${a.sagaId}:${a.state}`).join(' ') === 'trip-2:finished never-started: held:finished'
          ? true
          : undefined;
      });
    }
    // Taken now, and again (idempotent, from what the inbox recorded).
    expect((await endMany(['held', 'trip-1'])).ended.sort()).toEqual(['held', 'trip-1']);
    expect(await endMany(['held'])).toEqual({ ended: ['held'], problem: '' });
  }, 240_000);
});
