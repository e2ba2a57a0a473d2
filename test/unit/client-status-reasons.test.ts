// The SDK's decisions from the cluster's status codes and `verdict-reason`
// metadata (docs/protocol-outcomes.md), never from message text: which
// refusals are followed, which are retried, and when a Commit that begins
// the transaction may still begin it on its next attempt (R2). Each case runs
// on the unary path (an older node: Begin, then Commit) and on the commit stream.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { VerdictError } from '../../src/client/errors.ts';
import type { CommitRequest } from '../../src/transport/coordinator-rpc.ts';
import { FakeCluster, alreadyDecided, fail, noLeader, unknownOutcome } from './fixtures/client-fake-coordinator.ts';

const cluster = new FakeCluster();
const clients: VerdictClient[] = [];

function client(endpoints: string[]): VerdictClient {
  const c = new VerdictClient({
    insecure: true,
    endpoints,
    backoff: { initialMs: 10, maxMs: 40 },
    callTimeoutMs: 3_000,
    attemptTimeoutMs: 1_000,
  });
  clients.push(c);
  return c;
}

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  cluster.close();
});

const committed = (req: CommitRequest) => ({
  txnId: req.txnId,
  outcome: 'OUTCOME_COMMITTED' as const,
  reason: '',
  decisionIndex: 9,
});

describe('SDK status reasons', () => {
  it('NO_LEADER did nothing: the next attempt still begins the transaction (R2)', async () => {
    const electing = await cluster.node({ Begin: noLeader, Commit: noLeader });
    const leader = await cluster.node({
      Begin: (r) => ({ txnId: r.txnId, deadlineAtMs: 0, leaderId: 'n2' }),
      Commit: committed,
    });
    const r = await client([electing.address, leader.address]).transaction({ txnId: 'order-1' }).enlist('p').commit();
    expect(r.outcome).toBe('COMMITTED');
    expect(electing.requests('Commit')[0]).toMatchObject({ txnId: 'order-1', begin: true });
    expect(leader.requests('Commit')[0]).toMatchObject({ txnId: 'order-1', begin: true });
  });

  it('UNKNOWN_OUTCOME may have taken effect: the Commit is retried elsewhere with the same id and without begin (R2, R7)', async () => {
    const gone = await cluster.node({
      Begin: (r) => ({ txnId: r.txnId, deadlineAtMs: 0, leaderId: 'n1' }),
      Commit: unknownOutcome,
    });
    const next = await cluster.node({ Commit: committed });
    const r = await client([gone.address, next.address]).transaction({ txnId: 'order-2' }).enlist('p').commit();
    expect(r.outcome).toBe('COMMITTED');
    expect(gone.count('Commit')).toBe(1);
    expect(next.requests('Commit')).toEqual([expect.objectContaining({ txnId: 'order-2', begin: false })]);
  });

  it('a refusal whose text says "not the leader" without NOT_LEADER metadata is no redirect: message text is never matched', async () => {
    const leader = await cluster.node({ Commit: committed });
    const liar = await cluster.node({
      Begin: (r) => ({ txnId: r.txnId, deadlineAtMs: 0, leaderId: 'n1' }),
      Commit: () => fail(grpc.status.UNAVAILABLE, `not the leader: the leader is n9 at ${leader.address}`),
    });
    const other = await cluster.node({ Commit: committed });
    const r = await client([liar.address, other.address]).transaction({ txnId: 'order-3' }).enlist('p').commit();
    expect(r.outcome).toBe('COMMITTED');
    // Not followed to the address in the text, and, since the attempt may have reached a leader, resent without begin.
    expect(leader.count('Commit')).toBe(0);
    expect(other.requests('Commit')).toEqual([expect.objectContaining({ txnId: 'order-3', begin: false })]);
  });

  it('ALREADY_DECIDED surfaces at once as ALREADY_EXISTS with the recorded outcome, and is not retried', async () => {
    const a = await cluster.node({ Begin: () => alreadyDecided('ABORTED'), Commit: () => alreadyDecided('ABORTED') });
    const b = await cluster.node({ Commit: committed });
    const err = await client([a.address, b.address])
      .transaction({ txnId: 'order-4' })
      .enlist('p')
      .commit()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VerdictError);
    expect(err).toMatchObject({
      code: 'ALREADY_EXISTS',
      details: { statusReason: 'ALREADY_DECIDED', recordedOutcome: 'ABORTED' },
    });
    expect(b.count('Commit') + b.count('Begin')).toBe(0);
  });
});
