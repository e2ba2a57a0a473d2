// Load a client can impose on a running node, and what it gets at each bound
// (docs/limits.md): oversized and undecodable requests are INVALID_ARGUMENT
// naming the limit, strings are bounded and never echoed or logged whole,
// participant endpoints must be dialable, one client's undecided
// transactions are capped without locking the others out, and a commit
// stream whose client never reads is cut off instead of filling memory.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { startParticipant, type ParticipantRuntime } from '../../src/participant/runtime.ts';
import { commitStreamMethod, coordinatorService } from '../../src/transport/coordinator-rpc.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import { raftNodeService } from '../../src/transport/proto.ts';
import { Cluster, fileTempDir, freePorts, useProcessCleanup, waitFor, type NodeProc } from './harness.ts';
import { rawBidi, rawClient, rawUnary } from './raw-rpc.ts';

useProcessCleanup();

const CALL_DEADLINE_MS = 20_000;
const CLIENT_IN_FLIGHT_MAX = 5;
/** Small, so that few requests reach it; the reading client's batches of 50 stay below it. */
const STREAM_UNREAD_MAX = 100;

const ser = <K extends keyof typeof coordinatorService>(m: K, req: unknown): Buffer =>
  (coordinatorService[m] as grpc.MethodDefinition<unknown, unknown>).requestSerialize(req);

describe('limits at the edge of a running node', () => {
  let c: Cluster;
  let leader: NodeProc;
  let participant: ParticipantRuntime;
  let client: VerdictClient;
  let raw: grpc.Client;

  beforeAll(async () => {
    c = await Cluster.start({
      nodes: 1,
      configExtra: () => ({ clientInFlightMax: CLIENT_IN_FLIGHT_MAX, streamUnreadMax: STREAM_UNREAD_MAX }),
    });
    leader = (await c.waitForLeader()).node;
    const [port] = await freePorts(1);
    participant = await startParticipant({
      clusterId: c.clusterId,
      participantId: 'shop',
      listen: `127.0.0.1:${port}`,
      endpointsOfCluster: [leader.address],
      dataDir: join(fileTempDir('verdict-limits-'), 'shop'),
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 200,
    });
    await participant.registered;
    client = new VerdictClient({ insecure: true, endpoints: [leader.address], callTimeoutMs: CALL_DEADLINE_MS });
    raw = rawClient(leader.address);
  });

  afterAll(async () => {
    raw?.close();
    client?.close();
    await participant?.stop();
  });

  it('refuses a 20 MB Put with INVALID_ARGUMENT naming requestBytesMax, and keeps serving', async () => {
    const body = (raftNodeService.Put as grpc.MethodDefinition<unknown, unknown>).requestSerialize({
      key: 'big',
      value: Buffer.alloc(20 * 1024 * 1024, 7),
    });
    const r = await rawUnary(raw, raftNodeService.Put.path, body, CALL_DEADLINE_MS);
    expect(r.code, r.details).toBe(grpc.status.INVALID_ARGUMENT);
    expect(r.details).toMatch(/Put request of 2097\d{4} bytes exceeds the limit of 1048576 bytes \(requestBytesMax\)/);
    const small = await rawUnary(
      raw,
      raftNodeService.Put.path,
      (raftNodeService.Put as grpc.MethodDefinition<unknown, unknown>).requestSerialize({
        key: 'small',
        value: Buffer.from('v'),
      }),
      CALL_DEADLINE_MS,
    );
    expect(small.code, small.details).toBe(grpc.status.OK);
  });

  it('refuses undecodable bodies with INVALID_ARGUMENT, not INTERNAL', async () => {
    for (const method of ['Begin', 'Commit', 'RegisterParticipant', 'GetOutcome'] as const) {
      // 0xff opens a field with number 31 and wire type 7, which does not exist.
      const r = await rawUnary(
        raw,
        coordinatorService[method].path,
        Buffer.from([0xff, 0xff, 0xff, 0xff]),
        CALL_DEADLINE_MS,
      );
      expect(r.code, `${method}: ${r.details}`).toBe(grpc.status.INVALID_ARGUMENT);
      expect(r.details).toMatch(new RegExp(`${method} request is not a valid protobuf message`));
    }
  });

  it('refuses oversized string fields (Coordinator and RaftNode) without echoing or logging them whole', async () => {
    const huge = `x${'y'.repeat(99_999)}`;
    const cases: [keyof typeof coordinatorService, unknown, RegExp][] = [
      ['Begin', { txnId: huge, timeoutMs: 0 }, /txn_id "xy{63}"… \(100000 characters\) is longer than 128 characters/],
      [
        'RegisterParticipant',
        { clusterId: huge, participantId: 'p', endpoint: '127.0.0.1:1' },
        /cluster_id "xy{63}"… \(100000 characters\) is longer than 64/,
      ],
      ['Abort', { txnId: 't-ok', reason: huge }, /reason "xy{63}"… \(100000 characters\) is longer than 1000/],
      ['GetOutcome', { txnId: 't-ok', participantId: huge }, /participant_id "xy{63}"… \(100000 characters\)/],
    ];
    for (const [method, req, expected] of cases) {
      const r = await rawUnary(raw, coordinatorService[method].path, ser(method, req), CALL_DEADLINE_MS);
      expect(r.code, `${method}: ${r.details.slice(0, 200)}`).toBe(grpc.status.INVALID_ARGUMENT);
      expect(r.details).toMatch(expected);
      expect(r.details.length).toBeLessThan(400);
    }
    const node = (m: 'Put' | 'AddMember', req: unknown): Buffer =>
      (raftNodeService[m] as grpc.MethodDefinition<unknown, unknown>).requestSerialize(req);
    const put = await rawUnary(
      raw,
      raftNodeService.Put.path,
      node('Put', { key: huge, value: Buffer.from('v') }),
      CALL_DEADLINE_MS,
    );
    expect(put.code, put.details.slice(0, 200)).toBe(grpc.status.INVALID_ARGUMENT);
    expect(put.details).toMatch(/key "xy{63}"… \(100000 characters\) is longer than 1024 characters/);
    const add = await rawUnary(
      raw,
      raftNodeService.AddMember.path,
      node('AddMember', { nodeId: huge, address: '127.0.0.1:1', timeoutMs: 0 }),
      CALL_DEADLINE_MS,
    );
    expect(add.code, add.details.slice(0, 200)).toBe(grpc.status.INVALID_ARGUMENT);
    expect(add.details.length).toBeLessThan(400);
    // The node's log is written asynchronously: wait (bounded) for the refusal's line, then check nothing echoed it.
    const log = await waitFor(
      'the refusal of the long txn_id in the node log',
      10_000,
      async () => {
        const text = readFileSync(leader.logFile, 'utf8');
        return /\(100000 characters\) is longer than 128 characters/.test(text) ? text : undefined;
      },
      () => leader.logTail(5),
    );
    expect(log).not.toContain('y'.repeat(200));
  });

  it('refuses on PutStream what the unary Put refuses, per Put, and ends a stream carrying an undecodable message with INVALID_ARGUMENT', async () => {
    const api = new RaftNodeClient(leader.address);
    try {
      const long = `x${'y'.repeat(99_999)}`;
      const [refused, ok] = await Promise.allSettled([
        api.putStreamed({ key: long, value: Buffer.from('v') }, CALL_DEADLINE_MS),
        api.putStreamed({ key: 'streamed-ok', value: Buffer.from('v') }, CALL_DEADLINE_MS),
      ]);
      expect(refused).toMatchObject({
        status: 'rejected',
        reason: {
          code: grpc.status.INVALID_ARGUMENT,
          details: expect.stringMatching(/key "xy{63}"… \(100000 characters\) is longer than 1024 characters/),
        },
      });
      // The refusal of one Put leaves the stream, and the Put beside it in the same message, alone.
      expect(ok.status === 'fulfilled' && ok.value.index > 0, JSON.stringify(ok)).toBe(true);
    } finally {
      api.close();
    }
    const r = await rawBidi(
      raw,
      raftNodeService.PutStream.path,
      [Buffer.from([0xff, 0xff, 0xff, 0xff])],
      CALL_DEADLINE_MS,
    );
    expect(r.code, r.details).toBe(grpc.status.INVALID_ARGUMENT);
    expect(r.details).toMatch(/^PutStream request is not a valid protobuf message/);
  });

  it('refuses participant endpoints that cannot be dialled at registration', async () => {
    for (const endpoint of ['127.0.0.1:99999', '999.999.999.999:1', '127.0.0.1:0', 'host name:80', ':7001']) {
      const r = await rawUnary(
        raw,
        coordinatorService.RegisterParticipant.path,
        ser('RegisterParticipant', { clusterId: c.clusterId, participantId: 'evil', endpoint }),
        CALL_DEADLINE_MS,
      );
      expect(r.code, `${endpoint}: ${r.details}`).toBe(grpc.status.INVALID_ARGUMENT);
      expect(r.details).toContain(JSON.stringify(endpoint));
    }
    expect((await client.participants()).map((p) => p.participantId)).toEqual(['shop']);
  });

  it('caps undecided transactions per client with RESOURCE_EXHAUSTED naming the limit, the count and the oldest ids; an abort frees a place at once', async () => {
    // A raw client is one connection, so one client without TLS.
    const ids = Array.from({ length: CLIENT_IN_FLIGHT_MAX }, (_, i) => `hog-${i}`);
    for (const txnId of ids) {
      const r = await rawUnary(
        raw,
        coordinatorService.Begin.path,
        ser('Begin', { txnId, timeoutMs: 60_000 }),
        CALL_DEADLINE_MS,
      );
      expect(r.code, r.details).toBe(grpc.status.OK);
    }
    const refused = await rawUnary(
      raw,
      coordinatorService.Begin.path,
      ser('Begin', { txnId: 'hog-more', timeoutMs: 60_000 }),
      CALL_DEADLINE_MS,
    );
    expect(refused.code, refused.details).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(refused.details).toMatch(
      new RegExp(
        `holds ${CLIENT_IN_FLIGHT_MAX} undecided transactions \\(limit clientInFlightMax=${CLIENT_IN_FLIGHT_MAX}\\); oldest: "hog-0" \\(\\d+ s\\), "hog-1" \\(\\d+ s\\), "hog-2"`,
      ),
    );
    // A retry of a transaction the client holds is the same transaction (R7), not a new one.
    expect(
      (
        await rawUnary(
          raw,
          coordinatorService.Begin.path,
          ser('Begin', { txnId: 'hog-0', timeoutMs: 60_000 }),
          CALL_DEADLINE_MS,
        )
      ).code,
    ).toBe(grpc.status.OK);
    // Another client (another connection) is not locked out.
    const other = await (await client.begin({ timeoutMs: 10_000 })).enlist('shop', { set: { k: 'v' } }).commit();
    expect(other.outcome).toBe('COMMITTED');
    // An abort releases its place at once.
    const aborted = await rawUnary(
      raw,
      coordinatorService.Abort.path,
      ser('Abort', { txnId: 'hog-0', reason: 'done' }),
      CALL_DEADLINE_MS,
    );
    expect(aborted.code, aborted.details).toBe(grpc.status.OK);
    expect(
      (
        await rawUnary(
          raw,
          coordinatorService.Begin.path,
          ser('Begin', { txnId: 'hog-more', timeoutMs: 60_000 }),
          CALL_DEADLINE_MS,
        )
      ).code,
    ).toBe(grpc.status.OK);
    for (const txnId of [...ids.slice(1), 'hog-more'])
      await rawUnary(raw, coordinatorService.Abort.path, ser('Abort', { txnId, reason: 'cleanup' }), CALL_DEADLINE_MS);
  });

  it('cuts off a commit stream whose client never reads with RESOURCE_EXHAUSTED, and serves one that reads', async () => {
    // Every Commit naming a malformed participant id is answered at once, at the edge: answers come as fast as
    // requests.
    const commit = (id: number) => ({
      id,
      commit: {
        txnId: 'unread',
        participants: [{ participantId: '!bad', payload: Buffer.alloc(0) }],
        begin: false,
        timeoutMs: 0,
        commitMode: 'COMMIT_MODE_DEFAULT' as const,
      },
    });
    const reader = rawClient(leader.address);
    try {
      // A client that reads: batches below the bound, each read before the next, all answered.
      const reading = reader.makeBidiStreamRequest(
        commitStreamMethod.path,
        commitStreamMethod.requestSerialize,
        commitStreamMethod.responseDeserialize,
        new grpc.Metadata(),
        {
          deadline: Date.now() + 60_000,
        },
      );
      reading.on('error', () => {});
      let got = 0;
      let wake: () => void = () => {};
      reading.on('data', (m: { outcomes: unknown[] }) => {
        got += m.outcomes.length;
        wake();
      });
      for (let b = 0; b < 20; b++) {
        const want = (b + 1) * 50;
        reading.write({ commits: Array.from({ length: 50 }, (_, i) => commit(b * 50 + i + 1)) });
        while (got < want) await new Promise<void>((r) => (wake = r));
      }
      reading.end();
      expect(got).toBe(1_000);

      // A client that never reads: its answers pile up on the node, which cuts the stream.
      const call = reader.makeBidiStreamRequest(
        commitStreamMethod.path,
        commitStreamMethod.requestSerialize,
        commitStreamMethod.responseDeserialize,
        new grpc.Metadata(),
        {
          deadline: Date.now() + 120_000,
        },
      );
      const status = new Promise<grpc.StatusObject>((res) => call.on('status', res));
      call.on('error', () => {});
      const perBatch = 500;
      for (let b = 0; b < 40; b++)
        call.write({ commits: Array.from({ length: perBatch }, (_, i) => commit(b * perBatch + i + 1)) });
      const cutOff = new RegExp(
        `commit stream cut off: the client has not read \\d+ answers on this stream \\(limit ${STREAM_UNREAD_MAX}\\)`,
      );
      await waitFor(
        'the commit stream to be cut off',
        60_000,
        async () => (cutOff.test(readFileSync(leader.logFile, 'utf8')) ? true : undefined),
        () => leader.logTail(5),
      );
      let answers = 0;
      call.on('data', () => answers++);
      const st = await status;
      expect(st.code, st.details).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(answers).toBeLessThan(40 * perBatch);
    } finally {
      reader.close();
    }
    const after = await (await client.begin({ timeoutMs: 10_000 })).enlist('shop', { set: { s: '1' } }).commit();
    expect(after.outcome).toBe('COMMITTED');
  });
});
