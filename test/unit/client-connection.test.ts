// CoordinatorConnection against fake Coordinator nodes on loopback: leader
// discovery, redirects, failover and which errors surface at once.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { callBounds, CoordinatorConnection, type ConnectionOptions } from '../../src/client/connection.ts';
import { RetriesExhaustedError, VerdictError } from '../../src/client/errors.ts';
import { FakeCluster, HANG, STATUS_OK, fail, followerOf } from './fixtures/client-fake-coordinator.ts';

const cluster = new FakeCluster();
const connections: CoordinatorConnection[] = [];
const FAST = { backoff: { initialMs: 10, maxMs: 40 }, callTimeoutMs: 3_000 };

function connect(addresses: string[], options: ConnectionOptions = FAST): CoordinatorConnection {
  const c = new CoordinatorConnection(addresses, { insecure: true, ...options });
  connections.push(c);
  return c;
}

afterEach(() => {
  for (const c of connections.splice(0)) c.close();
  cluster.close();
});

describe('CoordinatorConnection', () => {
  it("follows a follower's leader-address hint to the leader and remembers the leader for the next call", async () => {
    const leader = await cluster.node({ ClusterStatus: () => STATUS_OK });
    const follower = await cluster.node(followerOf(leader.address));
    const c = connect([follower.address]);

    expect((await c.call('ClusterStatus', {})).clusterId).toBe('test-cluster');
    expect(c.leaderAddress).toBe(leader.address);
    // A hinted address not in the list is learnt.
    expect(c.knownAddresses).toContain(leader.address);

    await c.call('ClusterStatus', {});
    expect(follower.count('ClusterStatus')).toBe(1);
    expect(leader.count('ClusterStatus')).toBe(2);
  });

  it('skips a dead first address (nothing listening) for the next one', async () => {
    const dead = await cluster.deadAddress();
    const live = await cluster.node({ ClusterStatus: () => STATUS_OK });
    const c = connect([dead, live.address]);
    expect((await c.call('ClusterStatus', {})).nodeId).toBe('n1');
    expect(c.leaderAddress).toBe(live.address);
  });

  it('moves on from a node that does not answer within the attempt deadline (DEADLINE_EXCEEDED)', async () => {
    const silent = await cluster.node({ ClusterStatus: () => HANG });
    const live = await cluster.node({ ClusterStatus: () => STATUS_OK });
    const c = connect([silent.address, live.address], { ...FAST, attemptTimeoutMs: 200 });
    const t0 = Date.now();
    await c.call('ClusterStatus', {});
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(silent.count('ClusterStatus')).toBe(1);
    expect(live.count('ClusterStatus')).toBe(1);
  });

  it('retries UNAVAILABLE without a hint in backed-off rounds until a node answers', async () => {
    // An election: no node knows a leader for the first two rounds.
    const a = await cluster.node({
      ClusterStatus: (_req, n) => (n <= 2 ? fail(grpc.status.UNAVAILABLE, 'no leader') : STATUS_OK),
    });
    const b = await cluster.node({ ClusterStatus: () => fail(grpc.status.UNAVAILABLE, 'no leader') });
    const c = connect([a.address, b.address]);
    await c.call('ClusterStatus', {});
    expect(a.count('ClusterStatus')).toBe(3);
    expect(b.count('ClusterStatus')).toBe(2);
  });

  it("surfaces INVALID_ARGUMENT at once as a VerdictError with the server's reason, without retrying", async () => {
    const reason = 'participant "ghost" is not registered';
    const a = await cluster.node({ Commit: () => fail(grpc.status.INVALID_ARGUMENT, reason) });
    const b = await cluster.node({ Commit: () => fail(grpc.status.UNAVAILABLE, 'must not be asked') });
    const c = connect([a.address, b.address]);
    const err = await c
      .call('Commit', { txnId: 't1', participants: [], begin: false, timeoutMs: 0, commitMode: 'COMMIT_MODE_DEFAULT' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VerdictError);
    expect(err).not.toBeInstanceOf(RetriesExhaustedError);
    expect((err as VerdictError).code).toBe('INVALID_ARGUMENT');
    expect((err as VerdictError).reason).toBe(reason);
    expect(a.count('Commit')).toBe(1);
    expect(b.count('Commit')).toBe(0);
  });

  it.each([
    [grpc.status.FAILED_PRECONDITION, 'FAILED_PRECONDITION'],
    [grpc.status.RESOURCE_EXHAUSTED, 'RESOURCE_EXHAUSTED'],
    [grpc.status.NOT_FOUND, 'NOT_FOUND'],
  ])('surfaces code %i as %s at once', async (code, name) => {
    const a = await cluster.node({ GetOutcome: () => fail(code, 'because') });
    const c = connect([a.address]);
    await expect(c.call('GetOutcome', { txnId: 't', participantId: '' })).rejects.toMatchObject({
      code: name,
      reason: 'because',
    });
    expect(a.count('GetOutcome')).toBe(1);
  });

  it('gives up with RetriesExhaustedError at the deadline when every node stays UNAVAILABLE', async () => {
    const a = await cluster.node({ ClusterStatus: () => fail(grpc.status.UNAVAILABLE, 'no leader') });
    const c = connect([a.address], { ...FAST, callTimeoutMs: 300 });
    const t0 = Date.now();
    const err = await c.call('ClusterStatus', {}).catch((e: unknown) => e);
    const elapsedMs = Date.now() - t0;
    expect(err).toBeInstanceOf(RetriesExhaustedError);
    expect((err as VerdictError).code).toBe('UNAVAILABLE');
    expect(elapsedMs).toBeGreaterThanOrEqual(290);
    expect(elapsedMs).toBeLessThan(2_000);
    expect(a.count('ClusterStatus')).toBeGreaterThan(2);
  });

  it('bounds redirects: two followers pointing at each other do not loop past the deadline', async () => {
    let yAddress = '';
    const x = await cluster.node(followerOf(() => yAddress));
    const y = await cluster.node(followerOf(x.address));
    yAddress = y.address;
    // One round fits in the deadline (the first pause is longer than it).
    const c = connect([x.address], {
      backoff: { initialMs: 1_000, maxMs: 1_000 },
      callTimeoutMs: 300,
      maxRedirects: 3,
    });
    await expect(c.call('ClusterStatus', {})).rejects.toBeInstanceOf(RetriesExhaustedError);
    // x, then 3 hints followed (y, x, y), then no untried address is left.
    expect(x.count('ClusterStatus')).toBe(2);
    expect(y.count('ClusterStatus')).toBe(2);
  });

  it('takes callTimeoutMs and attemptTimeoutMs, defaulting the one not given', () => {
    expect(connect(['127.0.0.1:1'], { callTimeoutMs: 1_234, attemptTimeoutMs: 567 }).defaults).toEqual({
      callTimeoutMs: 1_234,
      attemptTimeoutMs: 567,
    });
    expect(connect(['127.0.0.1:1'], { callTimeoutMs: 4_321 }).defaults).toEqual({
      callTimeoutMs: 4_321,
      attemptTimeoutMs: 5_000,
    });
    expect(callBounds({ callTimeoutMs: 300 })).toEqual({ callTimeoutMs: 300 });
    expect(callBounds({})).toEqual({});
    expect(() => connect(['127.0.0.1:1'], { callTimeoutMs: -1 })).toThrow(/callTimeoutMs must be a positive number/);
  });

  it('refuses an empty or malformed address list before any RPC', () => {
    expect(() => new CoordinatorConnection([])).toThrow(VerdictError);
    expect(() => new CoordinatorConnection(['localhost'])).toThrow(/host:port/);
  });
});
