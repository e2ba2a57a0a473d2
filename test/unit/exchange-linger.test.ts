// A DECISION sent with a linger (NodeConfig.decisionLingerMs) on the
// leader's Participant.Exchange stream: it waits for the next request to
// share its batch message, or goes alone once the linger has passed. Real
// gRPC on loopback; the participant's side records every batch it receives.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  newExchangeCounts,
  ParticipantExchange,
  type ExchangeCounts,
} from '../../src/transport/participant-exchange.ts';
import { participantService, type AnswerBatch, type ExchangeBatch } from '../../src/transport/participant-rpc.ts';

interface Received {
  atMs: number;
  kinds: string[];
}

const servers = new Set<grpc.Server>();
const clients = new Set<grpc.Client>();
afterEach(() => {
  for (const c of clients) c.close();
  clients.clear();
  for (const s of servers) s.forceShutdown();
  servers.clear();
});

/** A participant that answers every request at once and records each batch message: when, and what it carried. */
async function participant(): Promise<{ exchange: ParticipantExchange; received: Received[]; counts: ExchangeCounts }> {
  const received: Received[] = [];
  const server = new grpc.Server();
  const unimplemented = (_call: unknown, cb: grpc.sendUnaryData<unknown>): void =>
    cb({ code: grpc.status.UNIMPLEMENTED, details: 'not here' });
  server.addService(participantService, {
    Prepare: unimplemented,
    Decide: unimplemented,
    Status: unimplemented,
    Exchange: (call: grpc.ServerDuplexStream<ExchangeBatch, AnswerBatch>) => {
      call.on('data', (b: ExchangeBatch) => {
        received.push({
          atMs: performance.now(),
          kinds: b.requests.map((r) => (r.prepare ? `prepare:${r.prepare.txnId}` : `decision:${r.decision?.txnId}`)),
        });
        call.write({
          answers: b.requests.map((r) =>
            r.prepare
              ? {
                  id: r.id,
                  vote: { txnId: r.prepare.txnId, participantId: 'p1', vote: 'VOTE_YES', reason: '', reserveTtlMs: 0 },
                }
              : { id: r.id, ack: { txnId: r.decision?.txnId ?? '', participantId: 'p1' } },
          ),
          closing: false,
        });
      });
      call.on('end', () => call.end());
    },
  });
  servers.add(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  clients.add(client);
  const counts = newExchangeCounts();
  return { exchange: new ParticipantExchange(client, `127.0.0.1:${port}`, counts), received, counts };
}

const prepare = (txnId: string) => ({
  clusterId: 'c',
  txnId,
  participantId: 'p1',
  participants: ['p1'],
  payload: Buffer.alloc(0),
  timeoutMs: 1000,
});
const decision = (txnId: string) => ({
  clusterId: 'c',
  txnId,
  participantId: 'p1',
  decision: 'DECISION_COMMIT' as const,
  reason: '',
});

function answered<T>(send: (cb: (err: grpc.ServiceError | null, res?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => send((err, res) => (err ? reject(err) : resolve(res as T))));
}

describe('Participant.Exchange: a DECISION with a linger', () => {
  it('rides the next PREPARE to the same participant: one batch message carries both, DECISION first', async () => {
    const { exchange, received } = await participant();
    // Open the stream first, so the timing below is not the connection's.
    await answered((cb) => exchange.prepare(prepare('t0'), 1000, cb));
    received.length = 0;
    const ack = answered((cb) => exchange.decide(decision('t1'), 1000, cb, 200));
    await new Promise((r) => setTimeout(r, 20));
    expect(received, 'nothing went while the DECISION waited').toEqual([]);
    const vote = answered((cb) => exchange.prepare(prepare('t2'), 1000, cb));
    await Promise.all([ack, vote]);
    expect(received.map((r) => r.kinds)).toEqual([['decision:t1', 'prepare:t2']]);
  });

  it('counts the requests and the messages they went in, and the answers back (verdict_participant_messages_total)', async () => {
    const { exchange, received, counts } = await participant();
    await answered((cb) => exchange.prepare(prepare('t0'), 1000, cb));
    const both = [
      answered((cb) => exchange.decide(decision('t1'), 1000, cb)),
      answered((cb) => exchange.prepare(prepare('t2'), 1000, cb)),
    ];
    await Promise.all(both);
    const messages = received.length;
    expect(counts.requests).toBe(3);
    expect(counts.requestMessages).toBe(messages);
    expect(counts.answers).toBe(3);
    expect(counts.answerMessages).toBeGreaterThanOrEqual(1);
    expect(counts.answerMessages).toBeLessThanOrEqual(3);
  });

  it("two groups' engines on one node, one turn: their PREPAREs and DECISIONs for the participant go in one batch message", async () => {
    const { exchange, received, counts } = await participant();
    await answered((cb) => exchange.prepare(prepare('t0'), 1000, cb));
    received.length = 0;
    const before = counts.requestMessages;
    // The node's one link per participant serves every group: group 0 sends from the turn itself, group 1 from a
    // later promise continuation of the same turn (its sync callback, say).
    const group0 = [
      answered((cb) => exchange.prepare(prepare('g0-a'), 1000, cb)),
      answered((cb) => exchange.decide(decision('g0-b'), 1000, cb)),
    ];
    await Promise.resolve();
    const group1 = [
      answered((cb) => exchange.decide(decision('g1-a'), 1000, cb)),
      answered((cb) => exchange.prepare(prepare('g1-b'), 1000, cb)),
    ];
    await Promise.all([...group0, ...group1]);
    expect(received.map((r) => r.kinds)).toEqual([['prepare:g0-a', 'decision:g0-b', 'decision:g1-a', 'prepare:g1-b']]);
    expect(counts.requestMessages - before).toBe(1);
  });

  it('goes alone once its linger has passed when no other request comes', async () => {
    const { exchange, received } = await participant();
    await answered((cb) => exchange.prepare(prepare('t0'), 1000, cb));
    received.length = 0;
    const sentAt = performance.now();
    await answered((cb) => exchange.decide(decision('t1'), 1000, cb, 60));
    expect(received.map((r) => r.kinds)).toEqual([['decision:t1']]);
    expect(received[0].atMs - sentAt).toBeGreaterThanOrEqual(55);
  });

  it('control: without a linger the DECISION goes at the end of the turn, in a message of its own', async () => {
    const { exchange, received } = await participant();
    await answered((cb) => exchange.prepare(prepare('t0'), 1000, cb));
    received.length = 0;
    const ack = answered((cb) => exchange.decide(decision('t1'), 1000, cb));
    await new Promise((r) => setTimeout(r, 20));
    expect(received.map((r) => r.kinds)).toEqual([['decision:t1']]);
    await answered((cb) => exchange.prepare(prepare('t2'), 1000, cb));
    await ack;
    expect(received.map((r) => r.kinds)).toEqual([['decision:t1'], ['prepare:t2']]);
  });
});
