// Sagas on a TLS cluster: three node processes with mutual TLS, two step
// services with certificates of the cluster's CA serving SagaStep over mutual
// TLS and registering over TLS. A saga finishes and another compensates,
// each effect applied once; a saga's history is read by its starter and an
// admin, and refused to another client; a caller with a certificate of the same CA that
// is not a node of the cluster, and a plaintext caller, get nothing done; a
// step service without TLS that is told to listen beyond loopback, or whose
// certificate does not suit it, does not start.

import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { tlsCredentials } from '../../src/client/tls.ts';
import type { InboxRecord } from '../../src/saga/inbox.ts';
import { startStepService, StepServiceStartupError, type StepService } from '../../src/saga/step-service.ts';
import { stepKey } from '../../src/saga/state.ts';
import { SagaStepClient, sagaStepService, type StepRequest } from '../../src/transport/saga-rpc.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import { certDir, TestCa, type CertFiles } from '../tls-certs.ts';
import { Cluster, freePorts, tempDir, uniqueClusterId, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

let certs: string;
let ca: TestCa;
const services: StepService[] = [];
const applied = new Map<string, number>();

beforeAll(() => {
  certs = certDir();
  ca = TestCa.create(certs, 'cluster-ca');
});

afterAll(async () => {
  for (const s of services) await s.stop();
  rmSync(certs, { recursive: true, force: true });
});

const creds = (c: CertFiles): grpc.ChannelCredentials => tlsCredentials({ ca: ca.cert, cert: c.cert, key: c.key });
/** Dialling a step service (not a node): the CA and the host are checked, not the node mark. */
const serviceCreds = (c: CertFiles): grpc.ChannelCredentials =>
  grpc.credentials.createSsl(readFileSync(ca.cert), readFileSync(c.key), readFileSync(c.cert));

describe('sagas on a TLS cluster', () => {
  it('step services serve and register over mutual TLS; only the nodes of the cluster may call them', async () => {
    const clusterId = uniqueClusterId();
    const admin = ca.issue('ops-admin');
    const c = await Cluster.start({
      nodes: 3,
      clusterId,
      logLevel: 'warn',
      configExtra: (id) => {
        const n = ca.node(id, clusterId, `${clusterId}-${id}`);
        return { tls: { ca: ca.cert, cert: n.cert, key: n.key, adminNames: ['ops-admin'] } };
      },
      clientCredentials: creds(admin),
    });
    await c.waitForLeader({ timeoutMs: 120_000 });
    const endpoints = c.nodes.map((n) => n.address);
    const dir = tempDir('verdict-saga-tls-');
    const ports = await freePorts(3);
    const common = (id: string, port: number) => ({
      clusterId,
      serviceId: id,
      listen: `127.0.0.1:${port}`,
      endpointsOfCluster: endpoints,
      dataDir: join(dir, id),
      logger: pino({ level: 'silent' }),
      registerRetryMs: 200,
    });

    // Without TLS a step service refuses to listen beyond loopback; with it, its certificate must name the address it
    // serves.
    await expect(
      startStepService({ ...common('flight', 0), listen: `0.0.0.0:${ports[2]}`, handlers: {} }),
    ).rejects.toThrow(StepServiceStartupError);
    const elsewhere = ca.issue('flight', { ou: clusterId, file: 'flight-loopback' });
    await expect(
      startStepService({
        ...common('flight', ports[2]),
        listen: `192.0.2.1:${ports[2]}`,
        tls: { ca: ca.cert, ...elsewhere },
        handlers: {},
      }),
    ).rejects.toThrow(/does not name 192\.0\.2\.1 in its subjectAltName/);

    for (const [i, id] of ['flight', 'hotel'].entries()) {
      const cert = ca.issue(id, { ou: clusterId, file: `${clusterId}-${id}` });
      const s = await startStepService({
        ...common(id, ports[i]),
        tls: { ca: ca.cert, ...cert },
        handlers: {
          book: {
            action: (req) =>
              req.input === 'full'
                ? { status: 'failed', reason: `${id} is full` }
                : { status: 'done', output: `${id}-${req.sagaId}`, effect: `book ${req.sagaId}` },
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

    const client = new VerdictClient({ endpoints, callTimeoutMs: 20_000, credentials: creds(ca.issue('alice')) });
    try {
      const trip = [
        { service: 'flight', name: 'book' },
        { service: 'hotel', name: 'book' },
      ];
      const ok = await (await client.saga({ id: 'tls-ok', steps: trip, pivot: 1 })).result();
      expect(ok.end).toBe('finished');
      expect(ok.status.outputs).toEqual(['flight-tls-ok', 'hotel-tls-ok']);
      const full = await (
        await client.saga({ id: 'tls-full', steps: [trip[0], { ...trip[1], input: 'full' }], pivot: 1 })
      ).result();
      expect(full.end).toBe('compensated');
      expect(Object.fromEntries(applied)).toEqual({
        'flight:action:tls-ok:0': 1,
        'hotel:action:tls-ok:1': 1,
        'flight:action:tls-full:0': 1,
        'flight:compensate:tls-full:0': 1,
      });

      // A saga's history (its inputs and outputs) is its starter's and the admins' to read, as its status is.
      const historyAs = (who: CertFiles) => new RaftNodeClient(endpoints[0] as string, creds(who));
      const [aliceH, adminH, bobH] = [historyAs(ca.issue('alice')), historyAs(admin), historyAs(ca.issue('bob'))];
      try {
        const mine = await waitFor(
          'the saga in the history',
          30_000,
          async () => (await aliceH.history({ sagaId: 'tls-ok' })).records[0]?.saga ?? undefined,
        );
        expect(mine).toMatchObject({ sagaId: 'tls-ok', owner: 'CN=alice', state: 'finished' });
        expect((await adminH.history({ sagaId: 'tls-ok' })).records[0]?.saga?.sagaId).toBe('tls-ok');
        await expect(bobH.history({ sagaId: 'tls-ok' })).rejects.toMatchObject({
          code: grpc.status.PERMISSION_DENIED,
          details: expect.stringMatching(/is for the client that started it \(CN=alice\)/),
        });
        expect((await bobH.history({ kind: 'saga' })).records).toEqual([]);
        expect((await adminH.history({ kind: 'saga' })).records.map((r) => r.saga?.sagaId).sort()).toEqual([
          'tls-full',
          'tls-ok',
        ]);
      } finally {
        for (const h of [aliceH, adminH, bobH]) h.close();
      }

      // The orchestrator's End, confirmed by the step service with the cluster over TLS, drops the sagas' keys.
      await waitFor("the step services to drop the ended sagas' keys", 30_000, async () =>
        ['tls-ok/0/action', 'tls-full/0/action'].every((k) => services[0].inbox?.get(k) === undefined) &&
        services[1].inbox?.get('tls-ok/1/action') === undefined
          ? true
          : undefined,
      );

      // The participants list shows the step services with their kind.
      const listed = await client.participants();
      expect(listed.map((p) => [p.participantId, p.resourceKind]).sort()).toEqual([
        ['flight', 'saga-memory'],
        ['hotel', 'saga-memory'],
      ]);

      // Someone with a certificate of the same CA that is not a node of the cluster is refused, and nothing is applied.
      const call: StepRequest = {
        clusterId,
        sagaId: 'forged',
        step: 0,
        key: stepKey('forged', 0, 'action'),
        name: 'book',
        input: '',
        outputs: [],
        attempt: 1,
      };
      const mallory = new SagaStepClient(
        services[0].address,
        serviceCreds(ca.issue('mallory', { ou: clusterId, file: `${clusterId}-mallory` })),
      );
      await expect(mallory.call('action', call, 10_000)).rejects.toMatchObject({
        code: grpc.status.PERMISSION_DENIED,
        details: expect.stringMatching(
          /takes Execute only from a node of its cluster: .* lacks the node mark O=verdict-node/,
        ),
      });
      mallory.close();
      // A plaintext caller does not get through the handshake.
      const plain = new SagaStepClient(services[0].address);
      await expect(plain.call('action', call, 5_000)).rejects.toMatchObject({ code: expect.any(Number) });
      plain.close();
      expect(applied.has('flight:action:forged:0')).toBe(false);

      // hotel goes away; a server at its address with another step service's certificate (flight's) gets no call at
      // all.
      const hotelAddress = services[1].address;
      await services[1].stop();
      services.splice(1, 1);
      const calls: string[] = [];
      const impostor = new grpc.Server();
      const flightCert = ca.issue('flight', { ou: clusterId, file: `${clusterId}-flight-again` });
      impostor.addService(
        sagaStepService as unknown as grpc.ServiceDefinition,
        Object.fromEntries(
          Object.keys(sagaStepService).map((m) => [
            m,
            (_call: unknown, cb: (err: Partial<grpc.StatusObject>) => void) => {
              calls.push(m);
              cb({ code: grpc.status.UNAVAILABLE, details: 'impostor' });
            },
          ]),
        ) as unknown as grpc.UntypedServiceImplementation,
      );
      await new Promise<void>((res, rej) =>
        impostor.bindAsync(
          hotelAddress,
          grpc.ServerCredentials.createSsl(
            readFileSync(ca.cert),
            [{ cert_chain: readFileSync(flightCert.cert), private_key: readFileSync(flightCert.key) }],
            true,
          ),
          (e) => (e ? rej(e) : res()),
        ),
      );
      try {
        await client.saga({ id: 'tls-impostor', steps: trip, pivot: 1 });
        // The node keeps calling hotel's address (with backoff); every attempt fails at the handshake.
        await new Promise((r) => setTimeout(r, 3_000));
        expect(calls).toEqual([]);
        expect((await client.sagaStatus('tls-impostor')).state).not.toBe('finished');
      } finally {
        impostor.forceShutdown();
      }
    } finally {
      client.close();
      await c.destroy();
    }
  }, 240_000);
});
