// R9 and R8 for what clients create, on three node processes with mutual
// TLS: a lease is held by its holder's certificate (another certificate
// neither releases, renews nor takes it, whatever holder name it gives), a
// client holds at most its quota of leases and its expired leases never fill
// the table, and a saga is read only by the client that started it and by
// admins (status, list, a repeated start).

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorConnection } from '../../src/client/connection.ts';
import { VerdictError } from '../../src/client/errors.ts';
import { SagaCaller } from '../../src/client/saga.ts';
import { tlsCredentials } from '../../src/client/tls.ts';
import { LEASES_PER_CLIENT_MAX } from '../../src/lease/state.ts';
import { startStepService, type StepService } from '../../src/saga/step-service.ts';
import { certDir, TestCa } from '../tls-certs.ts';
import { Cluster, freePorts, tempDir, uniqueClusterId, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

let certs: string;
let ca: TestCa;
let clusterId: string;
let cluster: Cluster;
let endpoints: string[];
let hotel: StepService | null = null;
const closers: (() => void)[] = [];

const creds = (cn: string): grpc.ChannelCredentials => {
  const c = ca.issue(cn);
  return tlsCredentials({ ca: ca.cert, cert: c.cert, key: c.key });
};
const leases = (cn: string): CoordinatorConnection => {
  const conn = new CoordinatorConnection(endpoints, { callTimeoutMs: 20_000, credentials: creds(cn) });
  closers.push(() => conn.close());
  return conn;
};
const sagas = (cn: string, ou?: string): SagaCaller => {
  const c = ca.issue(cn, ou === undefined ? {} : { ou, file: `${ou}-${cn}-caller` });
  const s = new SagaCaller(endpoints, tlsCredentials({ ca: ca.cert, cert: c.cert, key: c.key }));
  closers.push(() => s.close());
  return s;
};

beforeAll(async () => {
  certs = certDir();
  ca = TestCa.create(certs, 'cluster-ca');
  clusterId = uniqueClusterId();
  cluster = await Cluster.start({
    nodes: 3,
    clusterId,
    logLevel: 'warn',
    configExtra: (id) => {
      const n = ca.node(id, clusterId, `${clusterId}-${id}`);
      return { tls: { ca: ca.cert, cert: n.cert, key: n.key, adminNames: ['ops-admin'] } };
    },
    clientCredentials: tlsCredentials({ ca: ca.cert, ...ca.issue('ops-admin') }),
  });
  await cluster.waitForLeader({ timeoutMs: 120_000 });
  endpoints = cluster.nodes.map((n) => n.address);
  const [port] = await freePorts(1);
  const cert = ca.issue('hotel', { ou: clusterId, file: `${clusterId}-hotel` });
  hotel = await startStepService({
    clusterId,
    serviceId: 'hotel',
    listen: `127.0.0.1:${port}`,
    endpointsOfCluster: endpoints,
    dataDir: join(tempDir('verdict-client-bounds-'), 'hotel'),
    logger: pino({ level: 'silent' }),
    registerRetryMs: 200,
    tls: { ca: ca.cert, ...cert },
    handlers: {
      book: {
        action: (req) => ({ status: 'done', output: `room for ${req.input}`, effect: 'book' }),
        compensate: () => ({ status: 'done', output: '', effect: 'cancel' }),
      },
    },
  });
  await hotel.registered;
}, 180_000);

afterAll(async () => {
  for (const close of closers) close();
  await hotel?.stop();
  rmSync(certs, { recursive: true, force: true });
});

describe('leases under mutual TLS', () => {
  it("R8: a relay's lease is its certificate's: another certificate naming the same holder neither releases, renews nor takes it", async () => {
    const relay = leases('relay-1');
    const mallory = leases('mallory');
    const name = 'outbox/orders/p0';
    const got = await relay.call('AcquireLease', { name, holder: 'relay-a', epoch: 0, ttlMs: 60_000 });
    expect(got.granted).toBe(true);
    const epoch = got.lease?.epoch as number;
    for (const rpc of ['ReleaseLease', 'RenewLease', 'AcquireLease'] as const) {
      const r = await mallory.call(rpc, { name, holder: 'relay-a', epoch, ttlMs: 60_000 });
      expect(r.granted, rpc).toBe(false);
      expect(r.reason, rpc).toMatch(/held by relay-a \(CN=relay-1\)/);
    }
    // The relay still holds it, and renews it; once it releases, another client gets a larger epoch.
    expect((await relay.call('RenewLease', { name, holder: 'relay-a', epoch, ttlMs: 60_000 })).granted).toBe(true);
    expect((await relay.call('ReleaseLease', { name, holder: 'relay-a', epoch, ttlMs: 0 })).granted).toBe(true);
    const next = await mallory.call('AcquireLease', { name, holder: 'relay-a', epoch: 0, ttlMs: 60_000 });
    expect(next.granted).toBe(true);
    expect(next.lease?.epoch).toBeGreaterThan(epoch);
  }, 60_000);

  it('R9: a client holds at most its quota of leases; its throw-away leases, once expired, refuse nobody', async () => {
    const mallory = leases('mallory-2');
    const ask = (name: string, ttlMs: number) =>
      mallory.call('AcquireLease', { name, holder: 'junk', epoch: 0, ttlMs });
    // Ten long leases and the rest short ones fill the quota; everything else this client asks for is refused. The
    // short ones outlive the time the 1,000 requests take even on a loaded machine (a lease's end is the cluster's).
    const shortMs = 20_000;
    const rs = await Promise.all(
      Array.from({ length: LEASES_PER_CLIENT_MAX }, (_, i) => ask(`junk/${i}`, i < 10 ? 300_000 : shortMs)),
    );
    expect(rs.every((r) => r.granted)).toBe(true);
    const over = await ask('junk/one-more', shortMs);
    expect(over.granted).toBe(false);
    expect(over.reason).toBe(
      `client CN=mallory-2 holds ${LEASES_PER_CLIENT_MAX} live leases, the limit per client; release some before acquiring more`,
    );
    // Another client is not affected.
    expect(
      (
        await leases('relay-2').call('AcquireLease', {
          name: 'outbox/ledger/p0',
          holder: 'relay-b',
          epoch: 0,
          ttlMs: 5_000,
        })
      ).granted,
    ).toBe(true);
    // Once the short ones ended, their places are free again (the bound sweeps them): asked until granted, within a
    // bound.
    await waitFor('a lease granted once the short ones ended', shortMs + 40_000, async () =>
      (await ask('junk/after', 500)).granted ? true : undefined,
    );
  }, 120_000);
});

describe('sagas under mutual TLS', () => {
  it("R9: a saga's status, its place in the list and a repeated start are for the client that started it and for admins", async () => {
    const alice = sagas('alice');
    const bob = sagas('bob');
    const admin = sagas('ops-admin');
    const steps = [{ service: 'hotel', name: 'book', input: 'alice' }];
    const end = await (await alice.start({ id: 'trip-alice', steps })).result();
    expect(end.end).toBe('finished');
    expect(end.status.outputs).toEqual(['room for alice']);
    await (await bob.start({ id: 'trip-bob', steps: [{ ...steps[0], input: 'bob' }] })).result();

    const denied = (p: Promise<unknown>) =>
      expect(p).rejects.toSatisfy((e) => e instanceof VerdictError && e.code === 'PERMISSION_DENIED');
    await denied(bob.status('trip-alice'));
    await expect(bob.status('trip-alice')).rejects.toThrow(
      /the status of saga trip-alice is for the client that started it \(CN=alice\) and for admins only; the caller presented client certificate CN=bob/,
    );
    await denied(bob.start({ id: 'trip-alice', steps }));
    expect((await bob.list(false)).map((s) => s.id)).toEqual(['trip-bob']);
    expect((await alice.list(false)).map((s) => s.id)).toEqual(['trip-alice']);
    expect((await alice.status('trip-alice')).outputs).toEqual(['room for alice']);
    // Alice's repeated start is the same saga (R7), run once.
    expect((await (await alice.start({ id: 'trip-alice', steps })).result()).status.timeline).toEqual(
      end.status.timeline,
    );
    // A step service of the saga reads its status (it confirms the saga's end before taking End); another does not,
    // and neither does a client certificate that only bears the service's name.
    expect((await sagas('hotel', clusterId).status('trip-alice')).state).toBe('finished');
    await denied(sagas('car', clusterId).status('trip-alice'));
    await denied(sagas('hotel').status('trip-alice'));
    // Its list is still only what it started: nothing.
    expect(await sagas('hotel', clusterId).list(false)).toEqual([]);
    // An admin reads every saga.
    expect((await admin.status('trip-alice')).state).toBe('finished');
    expect((await admin.list(false)).map((s) => s.id).sort()).toEqual(['trip-alice', 'trip-bob']);
  }, 120_000);
});
