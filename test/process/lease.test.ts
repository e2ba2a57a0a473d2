// Leases from a real three-node cluster, as two outbox relays use them
// (src/outbox/lease-keeper.ts): one holder per partition, a relay that stops
// renewing loses its partitions to the other with a larger epoch, the loser's
// renewal is refused, and a lease outlives a leader that is killed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorConnection } from '../../src/client/connection.ts';
import { LeaseKeeper } from '../../src/outbox/lease-keeper.ts';
import { Cluster, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

describe('partition leases from the cluster', () => {
  let c: Cluster;
  let conn: CoordinatorConnection;

  beforeAll(async () => {
    c = await Cluster.start({ nodes: 3, tickMs: 100, electionTicks: 20 });
    await c.waitForLeader();
    conn = new CoordinatorConnection(
      c.nodes.map((n) => n.address),
      { callTimeoutMs: 20_000, insecure: true },
    );
  }, 60_000);
  afterAll(() => conn?.close());

  it('one holder per partition; a relay that stops renewing loses its partitions to the other, at a larger epoch', async () => {
    const a = new LeaseKeeper({ conn, prefix: 'outbox/orders', partitions: 4, holder: 'relay-a', ttlMs: 3_000 });
    const b = new LeaseKeeper({ conn, prefix: 'outbox/orders', partitions: 4, holder: 'relay-b', ttlMs: 3_000 });
    await a.refresh();
    expect([...a.owned().keys()].sort()).toEqual([0, 1, 2, 3]);
    await b.refresh();
    expect(b.owned().size).toBe(0);
    const epochA = a.owned().get(0) as number;
    // relay-a stops renewing (as if SIGKILLed): its own view lapses first, then the cluster's.
    await waitFor('relay-a to see its leases lapse', 10_000, async () => (a.owned().size === 0 ? true : undefined));
    await waitFor(
      'relay-b to take every partition',
      20_000,
      async () => {
        await b.refresh();
        return b.owned().size === 4 ? true : undefined;
      },
      () => `relay-b holds ${[...b.owned().keys()]}`,
    );
    expect(b.owned().get(0)).toBeGreaterThan(epochA);
    // The stale holder's renewal is refused by the cluster.
    const stale = await conn.call('RenewLease', {
      name: 'outbox/orders/p0',
      holder: 'relay-a',
      epoch: epochA,
      ttlMs: 3_000,
    });
    expect(stale.granted).toBe(false);
    expect(stale.reason).toMatch(/held by relay-b/);
    await b.releaseAll();
  }, 60_000);

  it('a lease survives the leader being killed: the holder keeps it, at the same epoch', async () => {
    const a = new LeaseKeeper({
      conn,
      prefix: 'outbox/ledger',
      partitions: 1,
      holder: 'relay-a',
      ttlMs: 20_000,
      guardMs: 5_000,
    });
    await a.refresh();
    const epoch = a.owned().get(0);
    expect(epoch).toBeGreaterThanOrEqual(1);
    const leader = (await c.waitForLeader()).node;
    await leader.kill();
    await c.waitForLeader({ notId: leader.id });
    const other = await conn.call('AcquireLease', {
      name: 'outbox/ledger/p0',
      holder: 'relay-b',
      epoch: 0,
      ttlMs: 3_000,
    });
    expect(other.granted).toBe(false);
    await a.refresh();
    expect(a.owned().get(0)).toBe(epoch);
  }, 90_000);

  it('refuses a malformed lease request with a reason', async () => {
    await expect(
      conn.call('AcquireLease', { name: '../etc', holder: 'relay-a', epoch: 0, ttlMs: 3_000 }),
    ).rejects.toThrow(/lease name/);
    await expect(conn.call('AcquireLease', { name: 'x', holder: 'relay-a', epoch: 0, ttlMs: 1 })).rejects.toThrow(
      /ttl_ms must be 500–300000/,
    );
  });
});
