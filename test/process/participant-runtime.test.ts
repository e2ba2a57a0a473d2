// The participant runtime in-process, against a FAKE cluster: a gRPC server
// implementing the Coordinator calls a participant makes (RegisterParticipant
// records the call, GetOutcome answers from a script). Prepare and Decide go
// over real gRPC to the participant, and restarts reuse its data directory.
import * as grpc from '@grpc/grpc-js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  coordinatorParticipantService,
  type CoordinatorParticipantHandlers,
  type OutcomeValue,
} from '../../src/participant/cluster-link.ts';
import {
  LEADER_ADDRESS_KEY,
  type OutcomeRequest,
  type RegisterParticipantRequest,
} from '../../src/transport/coordinator-rpc.ts';
import { memoryPayload } from '../../src/participant/memory.ts';
import {
  ParticipantStartupError,
  startParticipant,
  type ParticipantOptions,
  type ParticipantRuntime,
} from '../../src/participant/runtime.ts';
import {
  ParticipantClient,
  type Ack,
  type DecideRequest,
  type PrepareRequest,
  type VoteMessage,
} from '../../src/transport/participant-rpc.ts';
import { ParticipantExchange } from '../../src/transport/participant-exchange.ts';
import { startUnackingParticipant } from './ops-helpers.ts';

const CLUSTER = 'alpha';
const DEADLINE_MS = 3_000;

interface FakeNode {
  address: string;
  server: grpc.Server;
  registrations: RegisterParticipantRequest[];
  questions: OutcomeRequest[];
  /** Per call: an outcome, a gRPC error, or a redirect to the leader. The last entry repeats. */
  registerScript: Answer[];
  outcomeScript: (Answer | OutcomeValue)[];
}

type Answer = 'ok' | { code: grpc.status; details: string; leader?: string };

const servers: grpc.Server[] = [];
const runtimes: ParticipantRuntime[] = [];
const clients: ParticipantClient[] = [];
const exchanges: ParticipantExchange[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const x of exchanges.splice(0)) x.close();
  for (const c of clients.splice(0)) c.close();
  await Promise.all(runtimes.splice(0).map((r) => r.stop()));
  for (const s of servers.splice(0)) s.forceShutdown();
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, probe: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

function next<T>(script: T[]): T {
  return script.length > 1 ? (script.shift() as T) : script[0];
}

function fail(cb: grpc.sendUnaryData<never>, a: Exclude<Answer, 'ok'>): void {
  const metadata = new grpc.Metadata();
  if (a.leader !== undefined) metadata.set(LEADER_ADDRESS_KEY, a.leader);
  cb({ code: a.code, details: a.details, metadata, name: 'Error', message: a.details });
}

async function fakeNode(): Promise<FakeNode> {
  const server = new grpc.Server();
  const node: FakeNode = {
    address: '',
    server,
    registrations: [],
    questions: [],
    registerScript: ['ok'],
    outcomeScript: ['OUTCOME_IN_PROGRESS'],
  };
  const impl: CoordinatorParticipantHandlers = {
    RegisterParticipant: (call, cb) => {
      node.registrations.push(call.request);
      const a = next(node.registerScript);
      if (a !== 'ok') return fail(cb, a);
      cb(null, {
        participant: {
          participantId: call.request.participantId,
          endpoint: call.request.endpoint,
          registeredAtMs: Date.now(),
          lastSeenAtMs: 0,
          inDoubt: 0,
          connection: '',
          resourceKind: '',
          serves: [],
        },
      });
    },
    GetOutcome: (call, cb) => {
      node.questions.push(call.request);
      const a = next(node.outcomeScript);
      if (typeof a === 'object') return fail(cb, a);
      if (a === 'ok') throw new Error('scripts give GetOutcome an outcome');
      cb(null, { txnId: call.request.txnId, outcome: a, reason: '', decisionIndex: a === 'OUTCOME_COMMITTED' ? 7 : 0 });
    },
  };
  server.addService(coordinatorParticipantService, impl);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  servers.push(server);
  node.address = `127.0.0.1:${port}`;
  return node;
}

async function dataDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'verdict-participant-'));
  dirs.push(d);
  return d;
}

async function start(
  dir: string,
  endpoints: string[],
  over: Partial<ParticipantOptions> = {},
): Promise<ParticipantRuntime> {
  const r = await startParticipant({
    clusterId: CLUSTER,
    participantId: 'p1',
    listen: '127.0.0.1:0',
    endpointsOfCluster: endpoints,
    dataDir: dir,
    logger: pino({ level: 'silent' }),
    insecure: true,
    registerRetryMs: 50,
    engine: { askBackoffMinMs: 20, askBackoffMaxMs: 100 },
    ...over,
  });
  runtimes.push(r);
  return r;
}

async function stop(r: ParticipantRuntime): Promise<void> {
  runtimes.splice(runtimes.indexOf(r), 1);
  await r.stop();
}

function client(address: string): ParticipantClient {
  const c = new ParticipantClient(address);
  clients.push(c);
  return c;
}

const prepareReq = (
  txnId: string,
  set: Record<string, string>,
  over: Partial<PrepareRequest> = {},
): PrepareRequest => ({
  clusterId: CLUSTER,
  txnId,
  participantId: 'p1',
  participants: ['p1'],
  payload: memoryPayload(set),
  timeoutMs: 0,
  ...over,
});
const decisionReq = (
  txnId: string,
  decision: DecideRequest['decision'],
  over: Partial<DecideRequest> = {},
): DecideRequest => ({
  clusterId: CLUSTER,
  txnId,
  participantId: 'p1',
  decision,
  reason: '',
  ...over,
});

describe('participant runtime against a fake cluster', () => {
  it("registers with the cluster, retrying UNAVAILABLE and following a follower's redirect to the leader", async () => {
    const leader = await fakeNode();
    const follower = await fakeNode();
    follower.registerScript = [{ code: grpc.status.UNAVAILABLE, details: 'not the leader', leader: leader.address }];
    leader.registerScript = [{ code: grpc.status.UNAVAILABLE, details: 'no quorum yet' }, 'ok'];
    const r = await start(await dataDir(), [follower.address]);
    await r.registered;
    expect(follower.registrations.length).toBeGreaterThanOrEqual(1);
    expect(leader.registrations).toHaveLength(2);
    expect(leader.registrations[1]).toEqual({
      clusterId: CLUSTER,
      participantId: 'p1',
      endpoint: r.address,
      resourceKind: 'memory',
      serves: ['Exchange', 'Status'],
    });
  });

  it('serves Prepare and Decide over gRPC: YES, NO on a lock still held after the lock wait, ACK, and status codes with reasons', async () => {
    const cluster = await fakeNode();
    const r = await start(await dataDir(), [cluster.address], { lockWaitMs: 200 });
    const c = client(r.address);
    expect(await c.prepare(prepareReq('T1', { greeting: 'hello' }), DEADLINE_MS)).toEqual({
      txnId: 'T1',
      participantId: 'p1',
      vote: 'VOTE_YES',
      reason: '',
      reserveTtlMs: 0,
    });
    expect(await c.prepare(prepareReq('T2', { greeting: 'bye' }), DEADLINE_MS)).toMatchObject({
      vote: 'VOTE_NO',
      reason: 'key greeting is locked by prepared transaction T1 (waited 200 ms)',
    });
    expect(
      await c.prepare({ ...prepareReq('T3', {}), payload: new TextEncoder().encode('nope') }, DEADLINE_MS),
    ).toMatchObject({ vote: 'VOTE_NO', reason: expect.stringMatching(/not valid JSON/) });
    expect(r.resource.get('greeting')).toBeUndefined();
    expect(await c.decide(decisionReq('T1', 'DECISION_COMMIT'), DEADLINE_MS)).toEqual({
      txnId: 'T1',
      participantId: 'p1',
    });
    expect(await c.decide(decisionReq('T1', 'DECISION_COMMIT'), DEADLINE_MS)).toEqual({
      txnId: 'T1',
      participantId: 'p1',
    });
    expect(r.resource.get('greeting')).toBe('hello');

    await expect(c.decide(decisionReq('T9', 'DECISION_COMMIT'), DEADLINE_MS)).rejects.toMatchObject({
      code: grpc.status.FAILED_PRECONDITION,
      details: expect.stringMatching(/never prepared/),
    });
    await expect(c.prepare(prepareReq('T4', {}, { clusterId: 'beta' }), DEADLINE_MS)).rejects.toMatchObject({
      code: grpc.status.FAILED_PRECONDITION,
      details: expect.stringMatching(/cluster id mismatch/),
    });
    await expect(c.prepare(prepareReq('', {}), DEADLINE_MS)).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'txn_id is empty',
    });
    await expect(c.decide(decisionReq('T5', 'DECISION_UNSPECIFIED'), DEADLINE_MS)).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
    });
  });

  it("R7: the leader's Exchange stream carries PREPAREs and DECISIONs in batches, answered by id with the unary calls' answers and status codes", async () => {
    const cluster = await fakeNode();
    // No lock wait: the NO on the lock comes in the same batch as the YES that took it.
    const r = await start(await dataDir(), [cluster.address], { lockWaitMs: 0 });
    const c = client(r.address);
    const x = new ParticipantExchange(c.channel, r.address);
    exchanges.push(x);
    const call = <T>(f: (cb: (err: grpc.ServiceError | null, res?: T) => void) => void): Promise<T> =>
      new Promise((resolve, reject) => f((err, res) => (err ? reject(err) : resolve(res as T))));
    // Sent in one turn, so in one batch: a YES, a NO on the lock it takes, and a refusal.
    const [yes, no, bad] = await Promise.allSettled([
      call<VoteMessage>((cb) => x.prepare(prepareReq('X1', { k: 'v1' }), DEADLINE_MS, cb)),
      call<VoteMessage>((cb) => x.prepare(prepareReq('X2', { k: 'v2' }), DEADLINE_MS, cb)),
      call<VoteMessage>((cb) => x.prepare(prepareReq('X3', {}, { clusterId: 'beta' }), DEADLINE_MS, cb)),
    ]);
    expect(yes).toEqual({
      status: 'fulfilled',
      value: { txnId: 'X1', participantId: 'p1', vote: 'VOTE_YES', reason: '', reserveTtlMs: 0 },
    });
    expect(no).toMatchObject({
      status: 'fulfilled',
      value: { txnId: 'X2', vote: 'VOTE_NO', reason: 'key k is locked by prepared transaction X1' },
    });
    expect(bad).toMatchObject({
      status: 'rejected',
      reason: { code: grpc.status.FAILED_PRECONDITION, details: expect.stringMatching(/cluster id mismatch/) },
    });
    // The same DECISION twice is acknowledged twice (R7) and applied once.
    const acks = await Promise.all(
      [1, 2].map(() => call<Ack>((cb) => x.decide(decisionReq('X1', 'DECISION_COMMIT'), DEADLINE_MS, cb))),
    );
    expect(acks).toEqual([
      { txnId: 'X1', participantId: 'p1' },
      { txnId: 'X1', participantId: 'p1' },
    ]);
    expect(r.resource.get('k')).toBe('v1');
    await expect(
      call<Ack>((cb) => x.decide(decisionReq('X9', 'DECISION_COMMIT'), DEADLINE_MS, cb)),
    ).rejects.toMatchObject({
      code: grpc.status.FAILED_PRECONDITION,
      details: expect.stringMatching(/never prepared/),
    });
  });

  it("failover: when the leader's Exchange stream breaks, the transactions it prepared are asked about at once, not after inDoubtAfterMs", async () => {
    const cluster = await fakeNode();
    // The new leader's answer, once it is there: UNAVAILABLE while electing, then ABORT (R3: it holds no decision).
    cluster.outcomeScript = [{ code: grpc.status.UNAVAILABLE, details: 'electing' }, 'OUTCOME_ABORTED'];
    const r = await start(await dataDir(), [cluster.address], {
      engine: { inDoubtAfterMs: 120_000, askBackoffMinMs: 20, askBackoffMaxMs: 100 },
    });
    const x = new ParticipantExchange(client(r.address).channel, r.address);
    const call = <T>(f: (cb: (err: grpc.ServiceError | null, res?: T) => void) => void): Promise<T> =>
      new Promise((resolve, reject) => f((err, res) => (err ? reject(err) : resolve(res as T))));
    expect(await call<VoteMessage>((cb) => x.prepare(prepareReq('F1', { f: '1' }), DEADLINE_MS, cb))).toMatchObject({
      vote: 'VOTE_YES',
    });
    expect(await call<VoteMessage>((cb) => x.prepare(prepareReq('F2', { g: '1' }), DEADLINE_MS, cb))).toMatchObject({
      vote: 'VOTE_YES',
    });
    await call<Ack>((cb) => x.decide(decisionReq('F2', 'DECISION_COMMIT'), DEADLINE_MS, cb));
    await sleep(200);
    expect(cluster.questions).toEqual([]);
    // The leader goes away without ending its stream (as a killed process does).
    x.close();
    await waitFor('F1 aborted', () => r.engine.stateOf('F1') === 'ABORTED', 20_000);
    // Only the undecided one was asked about, with this participant's id (R3), and more than once (the first answer was
    // UNAVAILABLE).
    expect(new Set(cluster.questions.map((q) => `${q.txnId}/${q.participantId}`))).toEqual(new Set(['F1/p1']));
    expect(cluster.questions.length).toBeGreaterThanOrEqual(2);
    expect(r.engine.stateOf('F2')).toBe('COMMITTED');
    expect(r.resource.get('g')).toBe('1');
    expect(r.resource.get('f')).toBeUndefined();
  }, 40_000);

  it('R4: one Exchange batch carries a DECISION beside the next PREPARE; the ACK and the VOTE come back, and both records are in the journal after a restart', async () => {
    const cluster = await fakeNode();
    const dir = await dataDir();
    const r = await start(dir, [cluster.address]);
    const x = new ParticipantExchange(client(r.address).channel, r.address);
    exchanges.push(x);
    const call = <T>(f: (cb: (err: grpc.ServiceError | null, res?: T) => void) => void): Promise<T> =>
      new Promise((resolve, reject) => f((err, res) => (err ? reject(err) : resolve(res as T))));
    expect((await call<VoteMessage>((cb) => x.prepare(prepareReq('Y1', { a: '1' }), DEADLINE_MS, cb))).vote).toBe(
      'VOTE_YES',
    );
    // Sent in one turn, so in one batch message: the DECISION for Y1 rides the PREPARE of Y2.
    const [ack, vote] = await Promise.all([
      call<Ack>((cb) => x.decide(decisionReq('Y1', 'DECISION_COMMIT'), DEADLINE_MS, cb)),
      call<VoteMessage>((cb) => x.prepare(prepareReq('Y2', { b: '2' }), DEADLINE_MS, cb)),
    ]);
    expect(ack).toEqual({ txnId: 'Y1', participantId: 'p1' });
    expect(vote).toMatchObject({ txnId: 'Y2', vote: 'VOTE_YES' });
    expect(r.resource.get('a')).toBe('1');
    x.close();
    await stop(r);
    const again = await start(dir, [cluster.address]);
    expect(again.engine.stateOf('Y1')).toBe('COMMITTED');
    expect(again.resource.get('a')).toBe('1');
    expect(again.engine.inDoubt().map((t) => t.txnId)).toEqual(['Y2']);
  });

  it('the Exchange falls back to unary calls for a participant that does not serve it, and fails requests when the participant is gone', async () => {
    const old = await startUnackingParticipant();
    const c = client(old.address);
    const x = new ParticipantExchange(c.channel, old.address);
    exchanges.push(x);
    const call = <T>(f: (cb: (err: grpc.ServiceError | null, res?: T) => void) => void): Promise<T> =>
      new Promise((resolve, reject) => f((err, res) => (err ? reject(err) : resolve(res as T))));
    expect(await call<VoteMessage>((cb) => x.prepare(prepareReq('U1', {}), DEADLINE_MS, cb))).toMatchObject({
      txnId: 'U1',
      vote: 'VOTE_YES',
    });
    // That participant never acknowledges: its unary Decide's UNAVAILABLE comes through as is.
    await expect(
      call<Ack>((cb) => x.decide(decisionReq('U1', 'DECISION_COMMIT'), DEADLINE_MS, cb)),
    ).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect(old.decisions).toBe(1);
    old.stop();
    const cluster = await fakeNode();
    const r = await start(await dataDir(), [cluster.address]);
    const x2 = new ParticipantExchange(client(r.address).channel, r.address);
    exchanges.push(x2);
    expect(await call<VoteMessage>((cb) => x2.prepare(prepareReq('U2', { a: '1' }), DEADLINE_MS, cb))).toMatchObject({
      vote: 'VOTE_YES',
    });
    await stop(r);
    // The participant is gone: the request fails (UNAVAILABLE), as a unary call to it would, instead of waiting for
    // ever.
    await expect(
      call<VoteMessage>((cb) => x2.prepare(prepareReq('U3', { a: '2' }), DEADLINE_MS, cb)),
    ).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
  });

  it('R4: restarted with a prepared transaction in its journal, it asks GetOutcome with its participant_id until COMMITTED, then applies it', async () => {
    const cluster = await fakeNode();
    const dir = await dataDir();
    const first = await start(dir, [cluster.address]);
    expect((await client(first.address).prepare(prepareReq('T1', { balance: '90' }), DEADLINE_MS)).vote).toBe(
      'VOTE_YES',
    );
    await stop(first);

    cluster.outcomeScript = [
      { code: grpc.status.UNAVAILABLE, details: 'electing' },
      'OUTCOME_IN_PROGRESS',
      'OUTCOME_UNKNOWN',
      'OUTCOME_COMMITTED',
    ];
    const second = await start(dir, [cluster.address]);
    expect(second.engine.inDoubt().map((t) => t.txnId)).toEqual(['T1']);
    // Still locked while in doubt: nothing was decided alone.
    expect(second.resource.lockedBy('balance')).toBe('T1');
    await waitFor("T1 to be committed from the cluster's answer", () => second.resource.get('balance') === '90');
    // The COMMITTED record reaches the journal just after the resource applies it.
    await waitFor('T1 to leave the in-doubt list', () => second.engine.inDoubt().length === 0);
    expect(cluster.questions.length).toBe(4);
    for (const q of cluster.questions) expect(q).toEqual({ txnId: 'T1', participantId: 'p1' });
    await stop(second);

    // The outcome is durable: a third start has it without asking.
    const asked = cluster.questions.length;
    const third = await start(dir, [cluster.address]);
    expect(third.resource.get('balance')).toBe('90');
    expect(third.engine.stateOf('T1')).toBe('COMMITTED');
    await sleep(100);
    expect(cluster.questions.length).toBe(asked);
  });

  it('R7: refuses a data directory that belongs to another participant', async () => {
    const cluster = await fakeNode();
    const dir = await dataDir();
    await stop(await start(dir, [cluster.address]));
    await expect(start(dir, [cluster.address], { participantId: 'p2' })).rejects.toThrow(ParticipantStartupError);
    await expect(start(dir, [cluster.address], { participantId: 'p2' })).rejects.toThrow(
      /belongs to participant "p1" of cluster "alpha"/,
    );
  });
});
