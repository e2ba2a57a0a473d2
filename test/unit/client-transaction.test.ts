// VerdictClient and Transaction against fake Coordinator nodes: commit
// failover with the same transaction id (R7), outcome unknown instead of a
// guess, input validation, and payload bytes as the server sees them.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { OutcomeUnknownError, VerdictError } from '../../src/client/errors.ts';
import type { ResponseOf } from '../../src/client/connection.ts';
import type { CommitRequest } from '../../src/transport/coordinator-rpc.ts';
import { FakeCluster, HANG, fail, followerOf, type Script } from './fixtures/client-fake-coordinator.ts';

const cluster = new FakeCluster();
const clients: VerdictClient[] = [];
const FAST = { backoff: { initialMs: 10, maxMs: 40 }, callTimeoutMs: 3_000 };

function client(endpoints: string[], extra: Partial<typeof FAST> & { attemptTimeoutMs?: number } = {}): VerdictClient {
  const c = new VerdictClient({ insecure: true, endpoints, ...FAST, ...extra });
  clients.push(c);
  return c;
}

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  cluster.close();
});

const begin: Script['Begin'] = (req) => ({ txnId: req.txnId, deadlineAtMs: 0, leaderId: 'n1' });
const decided =
  (outcome: 'OUTCOME_COMMITTED' | 'OUTCOME_ABORTED', reason = '', decisionIndex = 7) =>
  (req: CommitRequest): ResponseOf<'Commit'> => ({ txnId: req.txnId, outcome, reason, decisionIndex });

describe('VerdictClient commit', () => {
  it("begin() carries the cluster's abort instant as deadlineAtMs", async () => {
    const a = await cluster.node({
      Begin: (req) => ({ txnId: req.txnId, deadlineAtMs: 1_764_000_000_000, leaderId: 'n1' }),
    });
    const tx = await client([a.address]).begin({ timeoutMs: 2_000 });
    expect(tx.deadlineAtMs).toBe(1_764_000_000_000);
    expect(a.requests('Begin')[0].timeoutMs).toBe(2_000);
  });

  it('R7: a Commit failed with UNAVAILABLE by the leader is retried on another node with the same txnId, and its outcome returned', async () => {
    const a = await cluster.node({ Begin: begin, Commit: () => fail(grpc.status.UNAVAILABLE, 'leader stepping down') });
    const b = await cluster.node({ Commit: decided('OUTCOME_COMMITTED', '', 42) });
    const c = client([a.address, b.address]);
    const tx = await c.begin();
    tx.enlist('shop', { sku: 1 }).enlist('ledger');
    const r = await tx.commit();
    expect(r).toEqual({ txnId: tx.txnId, outcome: 'COMMITTED', reason: '', decisionIndex: 42 });
    const sent = [...a.requests('Commit'), ...b.requests('Commit')];
    expect(sent).toHaveLength(2);
    expect(sent.map((q) => q.txnId)).toEqual([tx.txnId, tx.txnId]);
    expect(sent.map((q) => q.participants.map((p) => p.participantId))).toEqual([
      ['shop', 'ledger'],
      ['shop', 'ledger'],
    ]);
    expect(a.requests('Begin')[0].txnId).toBe(tx.txnId);
  });

  it("R2: transaction() begins with its first Commit (no Begin call); a follower's redirect keeps begin, a resend after a silent leader drops it", async () => {
    // Nodes of this version (they serve CommitStream, and with it CommitRequest.begin).
    const leader = await cluster.node({ Commit: () => HANG });
    const follower = await cluster.node(followerOf(leader.address));
    const next = await cluster.node({ Commit: decided('OUTCOME_ABORTED', 'not begun on this leader') });
    const c = client([follower.address, next.address], { attemptTimeoutMs: 200 });
    const tx = c.transaction({ txnId: 'order-21' });
    const r = await tx.enlist('ledger').commit();
    expect(r.outcome).toBe('ABORTED');
    for (const n of [leader, follower, next]) expect(n.count('Begin')).toBe(0);
    // Redirected before anything happened: still begins. Its fate at the silent leader is unknown: the resend must not
    // begin (R2).
    expect(follower.requests('Commit')[0]).toMatchObject({ txnId: 'order-21', begin: true });
    expect(leader.requests('Commit')[0]).toMatchObject({ txnId: 'order-21', begin: true });
    expect(next.requests('Commit')[0]).toMatchObject({ txnId: 'order-21', begin: false });
    // Calling commit() again after an answer returns it; a transaction never sent is aborted locally.
    const unsent = c.transaction();
    expect((await unsent.abort('changed my mind')).outcome).toBe('ABORTED');
    expect(next.count('Abort') + leader.count('Abort')).toBe(0);
  });

  it('R7: a Commit whose leader goes silent (DEADLINE_EXCEEDED) is resent to the next node with the same txnId', async () => {
    const a = await cluster.node({ Begin: begin, Commit: () => HANG });
    const b = await cluster.node({ Commit: decided('OUTCOME_ABORTED', 'ledger voted NO') });
    const c = client([a.address, b.address], { attemptTimeoutMs: 200 });
    const tx = await c.begin({ txnId: 'order-17' });
    const r = await tx.enlist('ledger').commit();
    expect(r).toMatchObject({ txnId: 'order-17', outcome: 'ABORTED', reason: 'ledger voted NO' });
    expect(a.requests('Commit')[0].txnId).toBe('order-17');
    expect(b.requests('Commit')[0].txnId).toBe('order-17');
  });

  it('throws OutcomeUnknownError with the txnId when every node fails Commit until the deadline (never a guess)', async () => {
    const down: Script = { Begin: begin, Commit: () => fail(grpc.status.UNAVAILABLE, 'no leader') };
    const a = await cluster.node(down);
    const b = await cluster.node(down);
    const c = client([a.address, b.address]);
    const tx = await c.begin({ txnId: 'pay-9' });
    tx.enlist('bank');
    const t0 = Date.now();
    const err = await tx.commit({ callTimeoutMs: 400 }).catch((e: unknown) => e);
    expect(Date.now() - t0).toBeLessThan(2_500);
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect((err as OutcomeUnknownError).txnId).toBe('pay-9');
    expect((err as Error).message).toMatch(/outcome\("pay-9"\)/);
    // Every attempt carried the same id.
    const ids = new Set([...a.requests('Commit'), ...b.requests('Commit')].map((q) => q.txnId));
    expect([...ids]).toEqual(['pay-9']);
    expect(a.count('Commit') + b.count('Commit')).toBeGreaterThan(2);
  });

  it('throws OutcomeUnknownError when the cluster answers Commit with IN_PROGRESS', async () => {
    const a = await cluster.node({
      Begin: begin,
      Commit: (req) => ({ txnId: req.txnId, outcome: 'OUTCOME_IN_PROGRESS', reason: '', decisionIndex: 0 }),
    });
    const tx = await client([a.address]).begin();
    await expect(tx.enlist('p').commit()).rejects.toBeInstanceOf(OutcomeUnknownError);
  });

  it('surfaces INVALID_ARGUMENT from Commit as a VerdictError with the reason, at once and without retries', async () => {
    const a = await cluster.node({
      Begin: begin,
      Commit: () => fail(grpc.status.INVALID_ARGUMENT, 'participant "ghost" is not registered'),
    });
    const b = await cluster.node({ Commit: decided('OUTCOME_COMMITTED') });
    const tx = await client([a.address, b.address]).begin();
    const err = await tx
      .enlist('ghost')
      .commit()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VerdictError);
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'participant "ghost" is not registered' });
    expect(a.count('Commit')).toBe(1);
    expect(b.count('Commit')).toBe(0);
  });

  it('a second commit() after an answer returns the same result without another RPC', async () => {
    const a = await cluster.node({ Begin: begin, Commit: decided('OUTCOME_COMMITTED') });
    const tx = await client([a.address]).begin();
    tx.enlist('p');
    const first = await tx.commit();
    expect(await tx.commit()).toEqual(first);
    expect(a.count('Commit')).toBe(1);
  });
});

describe('VerdictClient input validation', () => {
  it('refuses empty and duplicate participant ids, commit without enlistments (before any RPC), and enlist after commit or abort', async () => {
    const a = await cluster.node({
      Begin: begin,
      Commit: decided('OUTCOME_COMMITTED'),
      Abort: (req) => ({ txnId: req.txnId, outcome: 'OUTCOME_ABORTED', reason: req.reason, decisionIndex: 3 }),
    });
    const c = client([a.address]);
    const tx = await c.begin();
    // A UUIDv7: its creation time lets the cluster prove it new (docs/protocol-outcomes.md).
    expect(tx.txnId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(() => tx.enlist('')).toThrow(VerdictError);
    expect(() => tx.enlist('  ')).toThrow(/non-empty/);
    await expect(tx.commit()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(a.count('Commit')).toBe(0);
    tx.enlist('shop');
    expect(() => tx.enlist('shop')).toThrow(/already enlisted/);
    await tx.commit();
    expect(() => tx.enlist('late')).toThrow(/enlist before commit/);

    const tx2 = await c.begin();
    expect(await tx2.abort('changed my mind')).toMatchObject({
      outcome: 'ABORTED',
      reason: 'changed my mind',
      decisionIndex: 3,
    });
    expect(() => tx2.enlist('shop')).toThrow(/aborted/);
    await expect(tx2.commit()).rejects.toMatchObject({ code: 'FAILED_PRECONDITION' });
  });

  it('refuses an empty txnId and a negative timeout before any RPC', async () => {
    const a = await cluster.node({ Begin: begin });
    const c = client([a.address]);
    await expect(c.begin({ txnId: '' })).rejects.toBeInstanceOf(VerdictError);
    await expect(c.begin({ timeoutMs: -1 })).rejects.toBeInstanceOf(VerdictError);
    await expect(c.outcome('')).rejects.toBeInstanceOf(VerdictError);
    expect(a.count('Begin')).toBe(0);
  });
});

describe('VerdictClient payloads and queries', () => {
  it('sends a JSON object as JSON text, a string as UTF-8, bytes as they are, and nothing as empty bytes', async () => {
    const a = await cluster.node({ Begin: begin, Commit: decided('OUTCOME_COMMITTED') });
    const tx = await client([a.address]).begin({ timeoutMs: 500 });
    tx.enlist('json', { sku: 'A-1', qty: 2 })
      .enlist('text', 'héllo')
      .enlist('bytes', new Uint8Array([0, 255, 7]))
      .enlist('none');
    await tx.commit();
    const sent = a.requests('Commit')[0].participants;
    const byId = new Map(sent.map((p) => [p.participantId, Buffer.from(p.payload)]));
    expect(byId.get('json')).toEqual(Buffer.from('{"sku":"A-1","qty":2}', 'utf8'));
    expect(byId.get('text')).toEqual(Buffer.from([0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f]));
    expect(byId.get('bytes')).toEqual(Buffer.from([0, 255, 7]));
    expect(byId.get('none')).toEqual(Buffer.alloc(0));
    expect(a.requests('Begin')[0].timeoutMs).toBe(500);
  });

  it('maps outcome enum names to short forms and refuses OUTCOME_UNSPECIFIED rather than guess', async () => {
    const answers: Record<string, ResponseOf<'GetOutcome'>['outcome']> = {
      c: 'OUTCOME_COMMITTED',
      a: 'OUTCOME_ABORTED',
      p: 'OUTCOME_IN_PROGRESS',
      u: 'OUTCOME_UNKNOWN',
      x: 'OUTCOME_UNSPECIFIED',
    };
    const a = await cluster.node({
      GetOutcome: (req) => ({ txnId: req.txnId, outcome: answers[req.txnId], reason: '', decisionIndex: 0 }),
    });
    const c = client([a.address]);
    expect((await c.outcome('c')).outcome).toBe('COMMITTED');
    expect((await c.outcome('a')).outcome).toBe('ABORTED');
    expect((await c.outcome('p')).outcome).toBe('IN_PROGRESS');
    expect((await c.outcome('u')).outcome).toBe('UNKNOWN');
    await expect(c.outcome('x')).rejects.toMatchObject({ code: 'INTERNAL' });
    // GetOutcome from the application never asks for cooperative termination (R3).
    expect(a.requests('GetOutcome').every((q) => q.participantId === '')).toBe(true);
  });

  it('registers a participant under the cluster id learnt from ClusterStatus', async () => {
    const a = await cluster.node({
      ClusterStatus: () => ({
        clusterId: 'prod-eu',
        nodeId: 'n1',
        leaderId: 'n1',
        leaderAddress: '',
        term: 3,
        commitIndex: 1,
        appliedIndex: 1,
        participants: 0,
        inFlight: 0,
        decided: 0,
        groupCount: 1,
        groups: [],
      }),
      RegisterParticipant: (req) => ({
        participant: {
          participantId: req.participantId,
          endpoint: req.endpoint,
          registeredAtMs: 1_000,
          lastSeenAtMs: 0,
          inDoubt: 0,
          connection: '',
          resourceKind: '',
          serves: [],
        },
      }),
    });
    const p = await client([a.address]).registerParticipant('shop', '127.0.0.1:9001');
    expect(p).toEqual({
      participantId: 'shop',
      endpoint: '127.0.0.1:9001',
      registeredAtMs: 1_000,
      lastSeenAtMs: 0,
      inDoubt: 0,
      connection: '',
      resourceKind: '',
      serves: [],
    });
    expect(a.requests('RegisterParticipant')[0].clusterId).toBe('prod-eu');
  });
});
