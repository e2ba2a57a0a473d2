// The reserve TTL a TCC participant's YES carries (Vote.reserve_ttl_ms), at
// the node's edge: real gRPC on loopback between the leader's participant
// link and a participant that answers each PREPARE with a chosen value. A
// value in 1 ms .. 30 days reaches the engine; 0 (what a participant older
// than the field sends) is "not given"; a value past 30 days is refused as
// an invalid vote with the reason, so the transaction aborts as for any
// invalid vote; a NO's value is dropped (a NO holds nothing).
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type { EngineVote } from '../../src/commit/engine.ts';
import { RESERVE_TTL_MS_MAX } from '../../src/domain/protocol.ts';
import { ParticipantLink } from '../../src/node/participant-link.ts';
import { participantService, type AnswerBatch, type ExchangeBatch } from '../../src/transport/participant-rpc.ts';

const servers = new Set<grpc.Server>();
const links = new Set<ParticipantLink>();
afterEach(() => {
  for (const l of links) l.close();
  links.clear();
  for (const s of servers) s.forceShutdown();
  servers.clear();
});

/** A participant that votes `vote` to every PREPARE with `reserveTtlMs` on the wire (a string: a uint64 past 2^53). */
async function participant(vote: 'VOTE_YES' | 'VOTE_NO', reserveTtlMs: number | string): Promise<string> {
  const server = new grpc.Server();
  const unimplemented = (_call: unknown, cb: grpc.sendUnaryData<unknown>): void =>
    cb({ code: grpc.status.UNIMPLEMENTED, details: 'not here' });
  server.addService(participantService, {
    Prepare: unimplemented,
    Decide: unimplemented,
    Status: unimplemented,
    Exchange: (call: grpc.ServerDuplexStream<ExchangeBatch, AnswerBatch>) => {
      call.on('data', (b: ExchangeBatch) =>
        call.write({
          answers: b.requests.map((r) => ({
            id: r.id,
            vote: {
              txnId: r.prepare?.txnId ?? '',
              participantId: 'seats',
              vote,
              reason: vote === 'VOTE_NO' ? 'sold out' : '',
              reserveTtlMs: reserveTtlMs as number,
            },
          })),
          closing: false,
        }),
      );
      call.on('end', () => call.end());
    },
  });
  servers.add(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return `127.0.0.1:${port}`;
}

async function voteOf(vote: 'VOTE_YES' | 'VOTE_NO', reserveTtlMs: number | string): Promise<EngineVote | Error> {
  const endpoint = await participant(vote, reserveTtlMs);
  const link = new ParticipantLink('c1');
  links.add(link);
  const to = { id: 'seats', endpoint, registeredAtMs: 0, resourceKind: 'tcc-memory', serves: ['Exchange'] };
  const req = {
    txnId: 'T1',
    participantId: 'seats',
    participants: ['seats'],
    payload: new Uint8Array(),
    timeoutMs: 5_000,
  };
  return new Promise((resolve) =>
    link.prepare(to, req, 5_000, undefined, (err, v) => resolve(err ?? (v as EngineVote))),
  );
}

describe("the node's edge: a vote's reserve TTL", { timeout: 20_000 }, () => {
  it('a YES with 45,000 ms reaches the engine as 45,000 ms; with 30 days exactly too', async () => {
    expect(await voteOf('VOTE_YES', 45_000)).toEqual({ vote: 'yes', reason: '', reserveTtlMs: 45_000 });
    expect(await voteOf('VOTE_YES', RESERVE_TTL_MS_MAX)).toMatchObject({ reserveTtlMs: RESERVE_TTL_MS_MAX });
  });

  it('0 (a participant older than the field, or no TTL) is a YES with no TTL: unknown', async () => {
    const v = await voteOf('VOTE_YES', 0);
    expect(v).toEqual({ vote: 'yes', reason: '' });
  });

  it('past 30 days, and the largest uint64 (a negative number sent as unsigned), are refused as an invalid vote, with the reason', async () => {
    const far = await voteOf('VOTE_YES', RESERVE_TTL_MS_MAX + 1);
    expect(far).toBeInstanceOf(Error);
    expect((far as Error).message).toBe(
      'participant seats answered an invalid vote: YES with reserve TTL 2592000001 ms is more than 2592000000 ms (30 days): a reserve is not held that long',
    );
    const wrapped = await voteOf('VOTE_YES', '18446744073709551615');
    expect((wrapped as Error).message).toMatch(
      /^participant seats answered an invalid vote: YES with reserve TTL .* more than/,
    );
  });

  it("a NO's TTL is dropped: a NO holds nothing", async () => {
    expect(await voteOf('VOTE_NO', RESERVE_TTL_MS_MAX + 1)).toEqual({ vote: 'no', reason: 'sold out' });
  });
});
