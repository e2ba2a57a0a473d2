// Commits on Coordinator.CommitStream: the SDK's hot path must answer exactly
// as the unary Commit does (outcome by transaction, redirects, R2's rule on
// `begin`), whatever the batching.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import type { CommitRequest } from '../../src/transport/coordinator-rpc.ts';
import { FakeCluster, HANG, fail, followerOf } from './fixtures/client-fake-coordinator.ts';

const cluster = new FakeCluster();
const clients: VerdictClient[] = [];

function client(endpoints: string[], attemptTimeoutMs = 3_000): VerdictClient {
  const c = new VerdictClient({
    insecure: true,
    endpoints,
    backoff: { initialMs: 10, maxMs: 40 },
    callTimeoutMs: 3_000,
    attemptTimeoutMs,
  });
  clients.push(c);
  return c;
}

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  cluster.close();
});

const byTxn = (req: CommitRequest) => ({
  txnId: req.txnId,
  outcome: req.txnId.endsWith('7') ? ('OUTCOME_ABORTED' as const) : ('OUTCOME_COMMITTED' as const),
  reason: `for ${req.txnId}`,
  decisionIndex: 3,
});

describe('commit stream', () => {
  it('R7: concurrent commits share the stream and each gets the outcome of its own transaction', async () => {
    const leader = await cluster.node({ Commit: byTxn });
    const c = client([leader.address]);
    const ids = Array.from({ length: 24 }, (_, i) => `t-${i}`);
    const results = await Promise.all(ids.map((id) => c.transaction({ txnId: id }).enlist('p').commit()));
    expect(results.map((r) => [r.txnId, r.outcome, r.reason])).toEqual(
      ids.map((id) => [id, id.endsWith('7') ? 'ABORTED' : 'COMMITTED', `for ${id}`]),
    );
    expect(
      leader
        .requests('Commit')
        .map((q) => q.txnId)
        .sort(),
    ).toEqual([...ids].sort());
    for (const q of leader.requests('Commit')) expect(q.begin).toBe(true);
  });

  it('shares one stream per endpoint: N concurrent transactions of one client send their commits of one turn in one message, and get their outcomes back batched', async () => {
    const leader = await cluster.node({ Commit: byTxn });
    const c = client([leader.address]);
    // Warm the connection so the burst below is one turn's worth of commits, not split by the connect.
    await c.transaction({ txnId: 'warm-0' }).enlist('p').commit();
    const n = 50;
    const ids = Array.from({ length: n }, (_, i) => `burst-${i}`);
    const results = await Promise.all(ids.map((id) => c.transaction({ txnId: id }).enlist('p').commit()));
    expect(results.map((r) => r.txnId)).toEqual(ids);
    expect(leader.commitStreams.opened).toBe(1);
    // The warm-up commit, then the whole burst in one message.
    expect(leader.commitStreams.commitsPerMessage).toEqual([1, n]);
    // The fake answers in the same turn, so the burst's outcomes come back in one message too.
    expect(leader.commitStreams.outcomesPerMessage).toEqual([1, n]);
    // A second burst on the same client: still the same stream.
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        c
          .transaction({ txnId: `again-${i}` })
          .enlist('p')
          .commit(),
      ),
    );
    expect(leader.commitStreams.opened).toBe(1);
    expect(leader.commitStreams.commitsPerMessage.slice(2)).toEqual([10]);
  });

  it('R2: a streamed redirect from a follower keeps begin; a streamed refusal surfaces as the unary one would', async () => {
    const leader = await cluster.node({ Commit: byTxn });
    const follower = await cluster.node(followerOf(leader.address));
    const c = client([follower.address]);
    const r = await c.transaction({ txnId: 'order-1' }).enlist('p').commit();
    expect(r.outcome).toBe('COMMITTED');
    expect(follower.requests('Commit')[0]).toMatchObject({ txnId: 'order-1', begin: true });
    expect(leader.requests('Commit')[0]).toMatchObject({ txnId: 'order-1', begin: true });

    const refusing = await cluster.node({
      Commit: () => fail(grpc.status.FAILED_PRECONDITION, 'participant p is not registered'),
    });
    const c2 = client([refusing.address]);
    await expect(c2.transaction().enlist('p').commit()).rejects.toMatchObject({
      code: 'FAILED_PRECONDITION',
      message: expect.stringMatching(/not registered/),
    });
  });

  it('R2: a streamed Commit left unanswered past its attempt deadline is resent elsewhere without begin', async () => {
    const silent = await cluster.node({ Commit: () => HANG });
    const next = await cluster.node({ Commit: byTxn });
    const c = client([silent.address, next.address], 200);
    const r = await c.transaction({ txnId: 'order-2' }).enlist('p').commit();
    expect(r.outcome).toBe('COMMITTED');
    expect(silent.requests('Commit')[0]).toMatchObject({ txnId: 'order-2', begin: true });
    expect(next.requests('Commit')[0]).toMatchObject({ txnId: 'order-2', begin: false });
  });
});
