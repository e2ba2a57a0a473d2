// The gRPC transport against real servers on loopback. Every wait is bounded
// (waitFor), and every server and transport is closed after each test.
import { InvariantError } from '../../src/util/assert.ts';
import { nextTurn } from '../../src/util/sleep.ts';
import * as grpc from '@grpc/grpc-js';
import { createServer } from 'node:net';
import { pino, type Logger } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { EntryType, LOCAL_MESSAGES, MessageType, message, type Message, type NodeId } from '../../src/raft/types.ts';
import { putStreamHandler } from '../../src/node/put-stream.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import { GrpcTransport, SERVER_OPTIONS, type GrpcTransportOptions } from '../../src/transport/grpc.ts';
import { WARNED_REASONS_MAX } from '../../src/transport/peer.ts';
import {
  fromWire,
  raftNodeService,
  streamMethod,
  toWire,
  WireDecodeError,
  type NodeStatus,
  type Members,
  type RaftNodeHandlers,
  type StreamedPutAnswers,
  type StreamedPuts,
  type WireBatch,
  type WireMessage,
  type WireStreamAck,
} from '../../src/transport/proto.ts';
import { WIRE_NUMBER_MAX } from '../../src/transport/raft-edge.ts';

interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

interface Node {
  id: NodeId;
  transport: GrpcTransport;
  received: Message[];
  /** One entry per onMessages call, i.e. per delivered batch. */
  batches: number[];
  unreachable: NodeId[];
  logs: LogLine[];
  server: grpc.Server | null;
  port: number;
}

const servers = new Set<grpc.Server>();
const transports = new Set<GrpcTransport>();

afterEach(async () => {
  await Promise.all([...transports].map((t) => t.close()));
  for (const s of servers) s.forceShutdown();
  transports.clear();
  servers.clear();
});

function captureLogger(logs: LogLine[]): Logger {
  return pino({ level: 'debug' }, { write: (s: string) => void logs.push(JSON.parse(s) as LogLine) });
}

function bind(server: grpc.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err !== null ? reject(err) : resolve(bound),
    ),
  );
}

async function serve(n: Node, port: number): Promise<void> {
  const server = new grpc.Server(SERVER_OPTIONS);
  n.transport.register(server);
  servers.add(server);
  n.server = server;
  n.port = await bind(server, port);
}

function stop(n: Node): void {
  n.server?.forceShutdown();
  if (n.server !== null) servers.delete(n.server);
  n.server = null;
}

async function startNode(
  id: NodeId,
  extra: Partial<GrpcTransportOptions> = {},
  { listen = true }: { listen?: boolean } = {},
): Promise<Node> {
  const logs: LogLine[] = [];
  const received: Message[] = [];
  const batches: number[] = [];
  const unreachable: NodeId[] = [];
  const transport = new GrpcTransport({
    clusterId: 'c1',
    selfId: id,
    peers: new Map(),
    onMessages: (ms) => {
      batches.push(ms.length);
      received.push(...ms);
    },
    onUnreachable: (p) => void unreachable.push(p),
    logger: captureLogger(logs),
    backoffMinMs: 20,
    backoffMaxMs: 200,
    ...extra,
  });
  const n: Node = { id, transport, received, batches, unreachable, logs, server: null, port: 0 };
  transports.add(n.transport);
  if (listen) await serve(n, 0);
  return n;
}

/** Connects every node to every other (outbound peers map). */
function mesh(...nodes: Node[]): void {
  for (const n of nodes) {
    n.transport.updatePeers(new Map(nodes.filter((p) => p !== n).map((p) => [p.id, `127.0.0.1:${p.port}`])));
  }
}

async function waitFor(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

/**
 * One message of every type a node sends, with every field it may carry set
 * to something non-default (and large numbers where they are allowed), each
 * one a message the receiving edge accepts (src/transport/raft-edge.ts).
 */
function everyWireMessage(from: NodeId, to: NodeId): Message[] {
  const wireTypes = Object.values(MessageType).filter(
    (t): t is MessageType => typeof t === 'number' && !LOCAL_MESSAGES.has(t) && t !== MessageType.Prop,
  );
  return wireTypes.map((type, i) =>
    message({
      type,
      from,
      to,
      // A forwarded read carries no term; every other message does, at most 2^32 ahead of the receiver's (0 here).
      term: type === MessageType.ReadIndex ? 0 : 2 ** 32 - i,
      logTerm: 7 + i,
      index: WIRE_NUMBER_MAX - 100 + i,
      entries:
        type !== MessageType.App
          ? []
          : [
              { term: 7 + i, index: WIRE_NUMBER_MAX - 99 + i, type: EntryType.Normal, data: bytes(300, i) },
              {
                term: 7 + i,
                index: WIRE_NUMBER_MAX - 98 + i,
                type: EntryType.ConfChange,
                data: new Uint8Array([0, 255, 0]),
              },
              { term: 8 + i, index: WIRE_NUMBER_MAX - 97 + i, type: EntryType.Normal, data: new Uint8Array(0) },
            ],
      commit: 9 + i,
      reject: i % 2 === 0,
      rejectHint: 5 + i,
      context: bytes(17, 100 + i),
      snapshot:
        type === MessageType.Snap
          ? {
              metadata: {
                index: 1_000,
                term: 6,
                confState: { voters: ['n1', 'n2', 'n3'], learners: ['n4'], votersOutgoing: ['n1', 'n2'] },
              },
              data: bytes(4_096, 42),
            }
          : null,
    }),
  );
}

describe('GrpcTransport', () => {
  it('(a) delivers every wire message type with exact fidelity, both ways', async () => {
    const a = await startNode('n1');
    const b = await startNode('n2');
    mesh(a, b);

    const sent = everyWireMessage('n1', 'n2');
    a.transport.send(sent);
    await waitFor(() => b.received.length === sent.length, 'all messages at n2');
    // Plain Uint8Array copies, not Buffer views into the received frame
    // (checked first: a failing deep equal of byte arrays is slow to print).
    for (const m of b.received) {
      expect(Object.getPrototypeOf(m.context)).toBe(Uint8Array.prototype);
      for (const e of m.entries) expect(Object.getPrototypeOf(e.data)).toBe(Uint8Array.prototype);
      if (m.snapshot !== null) expect(Object.getPrototypeOf(m.snapshot.data)).toBe(Uint8Array.prototype);
    }
    expect(b.received.filter((m) => m.snapshot === null)).toHaveLength(sent.length - 1);
    expect(b.received).toStrictEqual(sent);

    const back = message({
      type: MessageType.AppResp,
      from: 'n2',
      to: 'n1',
      term: 5,
      index: 12,
      reject: true,
      rejectHint: 3,
    });
    b.transport.send([back]);
    await waitFor(() => a.received.length === 1, 'the reply at n1');
    expect(a.received).toStrictEqual([back]);
    expect(a.unreachable).toEqual([]);
    expect(b.unreachable).toEqual([]);
  });

  it('(a) refuses to send local message types', async () => {
    const a = await startNode('n1', {}, { listen: false });
    a.transport.updatePeers(new Map([['n2', '127.0.0.1:1']]));
    for (const type of LOCAL_MESSAGES) {
      expect(() => a.transport.send([message({ type, from: 'n1', to: 'n2' })])).toThrow(InvariantError);
    }
    expect(a.transport.pendingCount('n2')).toBe(0);
  });

  it('(b) batches many sends of one turn into few gRPC writes, in order', async () => {
    const a = await startNode('n1');
    const b = await startNode('n2');
    mesh(a, b);

    const count = 2_000;
    for (let i = 1; i <= count; i++) {
      a.transport.send([message({ type: MessageType.App, from: 'n1', to: 'n2', term: 1, index: i, commit: i - 1 })]);
      // Sends from different promise continuations of one turn still share a batch.
      if (i % 100 === 0) await Promise.resolve();
    }
    await waitFor(() => b.received.length === count, `${count} messages at n2`);
    expect(b.batches.length).toBeLessThanOrEqual(2);
    expect(b.received.map((m) => m.index)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  });

  it('(b) splits a batch above batchBytesMax and keeps the order', async () => {
    const a = await startNode('n1', { batchBytesMax: 1024 * 1024 });
    const b = await startNode('n2');
    mesh(a, b);

    const big = (index: number): Message =>
      message({
        type: MessageType.App,
        from: 'n1',
        to: 'n2',
        term: 1,
        index,
        entries: [{ term: 1, index: index + 1, type: EntryType.Normal, data: bytes(400 * 1024, index) }],
      });
    a.transport.send(Array.from({ length: 10 }, (_, i) => big(i + 1)));
    await waitFor(() => b.received.length === 10, '10 large messages at n2');
    // 400 KiB each under a 1 MiB limit: two per batch.
    expect(b.batches).toEqual([2, 2, 2, 2, 2]);
    expect(b.received.map((m) => m.index)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // What the sender counts (the metrics verdict_raft_messages_sent_total and …_batches_sent_total): what went out.
    expect(a.transport.sent.messages).toBe(10);
    expect(a.transport.sent.batches).toBe(5);
    expect(a.transport.sent.bytes).toBeGreaterThan(10 * 400 * 1024);
    // Compared as buffers: an element-wise deep equal of 400 KiB is slow.
    expect(Buffer.from(b.received[9].entries[0].data).equals(bytes(400 * 1024, 10))).toBe(true);
  });

  it('(f) node heartbeats (G > 1): a frame of no message to a peer sent nothing since the last call, and every frame names the groups the sender leads quiesced', async () => {
    const heard: string[] = [];
    const got: number[] = [];
    const a = await startNode('n1', { groups: 4, onGroupMessages: () => {}, quiescedGroups: () => [1, 3] });
    const b = await startNode('n2', {
      groups: 4,
      onGroupMessages: (gms) => got.push(...gms.map((gm) => gm.group)),
      onHeard: (peer, groups) => heard.push(`${peer} leads ${groups.join(',')}`),
    });
    mesh(a, b);
    const heartbeat = (): void => a.transport.groupTransport.heartbeat?.();
    heartbeat();
    await waitFor(() => heard.length === 1, 'a node heartbeat at n2');
    expect(heard).toEqual(['n1 leads 1,3']);
    expect(got).toEqual([]);
    // A message goes in this tick: the heartbeat adds no frame, and the message's frame names the groups.
    a.transport.groupTransport.send([
      { group: 2, message: message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term: 1 }) },
    ]);
    heartbeat();
    await waitFor(() => got.length === 1, 'the message at n2');
    // The next call finds a message sent since the last one: no frame; the one after sends one.
    heartbeat();
    await new Promise((r) => setTimeout(r, 100));
    expect(heard).toEqual(['n1 leads 1,3', 'n1 leads 1,3']);
    heartbeat();
    await waitFor(() => heard.length === 3, 'a third frame at n2');
    expect(got).toEqual([2]);
    expect({ messages: a.transport.sent.messages, batches: a.transport.sent.batches }).toEqual({
      messages: 1,
      batches: 3,
    });
  });

  it('(c) R7: rejects batches from another cluster, delivers nothing, and says why', async () => {
    const b = await startNode('n2');
    const intruder = await startNode('n1', { clusterId: 'c2' }, { listen: false });
    intruder.transport.updatePeers(new Map([['n2', `127.0.0.1:${b.port}`]]));

    intruder.transport.send([message({ type: MessageType.Vote, from: 'n1', to: 'n2', term: 99 })]);
    const mismatch = 'cluster id mismatch: message for cluster "c2" reached a node of cluster "c1"';
    await waitFor(() => b.logs.some((l) => l.detail === mismatch), 'the warning at n2');
    const warning = b.logs.find((l) => l.detail === mismatch);
    expect(warning).toMatchObject({ level: 40, reason: 'cluster', field: 'clusterId', from: 'n1' });
    expect(b.transport.refusals.totals().get('cluster')).toBe(1);

    // The sender learns the reason (FAILED_PRECONDITION) and reports the peer unreachable.
    await waitFor(() => intruder.unreachable.includes('n2'), 'n2 reported unreachable at the intruder');
    expect(intruder.logs.some((l) => l.code === grpc.status.FAILED_PRECONDITION && l.details === mismatch)).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(b.received).toEqual([]);
  });

  it('(c) rejects batches addressed to another node', async () => {
    const b = await startNode('n2');
    const confused = await startNode('n1', {}, { listen: false });
    // n1 believes n3 lives at n2's address.
    confused.transport.updatePeers(new Map([['n3', `127.0.0.1:${b.port}`]]));

    confused.transport.send([message({ type: MessageType.Heartbeat, from: 'n1', to: 'n3', term: 1 })]);
    const mismatch = 'node id mismatch: message for node "n3" reached node "n2"';
    await waitFor(
      () => b.logs.some((l) => l.detail === mismatch && l.reason === 'destination' && l.level === 40),
      'the warning at n2',
    );
    await waitFor(() => confused.unreachable.includes('n3'), 'n3 reported unreachable');
    expect(b.received).toEqual([]);
  });

  it('(d) reconnects after the peer restarts on the same port', async () => {
    const a = await startNode('n1');
    const b = await startNode('n2');
    mesh(a, b);
    const beat = (commit: number): Message =>
      message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term: 1, commit });

    a.transport.send([beat(1)]);
    await waitFor(() => b.received.length === 1, 'the first heartbeat');

    const port = b.port;
    stop(b);
    let commit = 2;
    // Keep sending as a leader would, until the sender has noticed the outage.
    await waitFor(() => {
      a.transport.send([beat(commit++)]);
      return a.unreachable.includes('n2');
    }, 'n2 reported unreachable');

    await serve(b, port);
    expect(b.port).toBe(port);
    const before = b.received.length;
    await waitFor(() => {
      a.transport.send([beat(commit++)]);
      return b.received.length > before;
    }, 'a heartbeat after the restart');
    // Whatever arrives after the restart arrives in order.
    const commits = b.received.map((m) => m.commit);
    expect(commits).toEqual([...commits].sort((x, y) => x - y));
  });

  it('(d) sends what was queued during the reconnect backoff when it ends', async () => {
    // A backoff long enough to restart the peer inside it, even on a busy machine.
    const a = await startNode('n1', { backoffMinMs: 1_000, backoffMaxMs: 1_000 });
    const b = await startNode('n2');
    mesh(a, b);
    a.transport.send([message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term: 1, commit: 1 })]);
    await waitFor(() => b.received.length === 1, 'the first heartbeat');

    const port = b.port;
    stop(b);
    await waitFor(() => a.unreachable.includes('n2'), 'n2 reported unreachable');
    await serve(b, port);
    a.transport.send([message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term: 1, commit: 2 })]);
    expect(a.transport.pendingCount('n2')).toBe(1);
    // No further send: the end of the backoff alone must flush the queue.
    await waitFor(() => b.received.length === 2, 'the heartbeat queued during the backoff');
    expect(b.received[1].commit).toBe(2);
  });

  it('(d) warns once per reason while a peer stays unreachable, and again when the reason changes', async () => {
    // A port that nothing listens on: bind one, then let it go.
    const probe = new grpc.Server();
    const deadPort = await bind(probe, 0);
    probe.forceShutdown();
    const a = await startNode('n1', {}, { listen: false });
    a.transport.updatePeers(new Map([['n2', `127.0.0.1:${deadPort}`]]));
    const warnings = (): LogLine[] =>
      a.logs.filter((l) => l.level === 40 && l.msg === 'stream to peer ended; reconnecting');
    const again = (): LogLine[] => a.logs.filter((l) => l.msg === 'stream to peer ended again; reconnecting');
    let commit = 1;
    const beat = (): void =>
      a.transport.send([message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term: 1, commit: commit++ })]);

    // Refused connections, over and over: one warning, the rest at debug.
    await waitFor(() => {
      beat();
      return again().length >= 3;
    }, 'three more refused attempts');
    expect(warnings()).toHaveLength(1);
    const first = String(warnings()[0].details);

    // Now something listens there and drops every connection at once: a new reason, warned once.
    const dropper = createServer((socket) => socket.destroy());
    await new Promise<void>((r) => dropper.listen(deadPort, '127.0.0.1', r));
    try {
      await waitFor(
        () => {
          beat();
          return warnings().length >= 2;
        },
        'a warning with the new reason',
        10_000,
      );
      const seen = again().length;
      await waitFor(() => {
        beat();
        return again().length >= seen + 3;
      }, 'three more dropped attempts');
      // Each reason once (a dropped connection may say so in more than one way), the refusal first.
      const reasons = warnings().map((w) => String(w.details));
      expect(new Set(reasons).size).toBe(reasons.length);
      expect(reasons.length).toBeGreaterThanOrEqual(2);
      expect(reasons.length).toBeLessThanOrEqual(WARNED_REASONS_MAX);
      expect(reasons[0]).toBe(first);
    } finally {
      await new Promise((r) => dropper.close(r));
    }
  });

  it('(e) keeps the queue of a down peer bounded and reports the overflow once', async () => {
    // A port that nothing listens on: bind one, then let it go.
    const probe = new grpc.Server();
    const deadPort = await bind(probe, 0);
    probe.forceShutdown();

    const a = await startNode('n1', { queueMessagesMax: 100, queueBytesMax: 1024 * 1024 }, { listen: false });
    a.transport.updatePeers(new Map([['n2', `127.0.0.1:${deadPort}`]]));
    const app = (index: number, size = 10): Message =>
      message({
        type: MessageType.App,
        from: 'n1',
        to: 'n2',
        index,
        entries: [{ term: 1, index, type: EntryType.Normal, data: new Uint8Array(size) }],
      });

    for (let i = 0; i < 10_000; i++) a.transport.send([app(i)]);
    expect(a.transport.pendingCount('n2')).toBe(100);
    // One turn: the deferred report has run, and no connection failure can have arrived yet.
    await nextTurn();
    expect(a.unreachable).toEqual(['n2']);

    // Keep flooding across connection failures and backoffs.
    let maxPending = 0;
    const until = Date.now() + 500;
    while (Date.now() < until) {
      for (let j = 0; j < 1_000; j++) a.transport.send([app(j)]);
      maxPending = Math.max(maxPending, a.transport.pendingCount('n2'));
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(maxPending).toBeLessThanOrEqual(100);

    // The byte bound holds too: 100 KiB messages under a 1 MiB bound.
    a.transport.updatePeers(new Map([['n3', `127.0.0.1:${deadPort}`]]));
    for (let i = 0; i < 100; i++) a.transport.send([{ ...app(i, 100 * 1024), to: 'n3' }]);
    expect(a.transport.pendingCount('n3')).toBe(10);
  });

  it("decodes a peer's malformed message into a one-line refusal naming the field, never an assertion", () => {
    const good = toWire(
      message({
        type: MessageType.App,
        from: 'n1',
        to: 'n2',
        term: 3,
        logTerm: 2,
        index: 4,
        entries: [{ term: 3, index: 5, type: EntryType.Normal, data: new Uint8Array([1]) }],
      }),
    );
    expect(fromWire(good).entries).toHaveLength(1);
    const bad: [string, WireMessage][] = [
      ['type', { ...good, type: MessageType.Hup }],
      ['type', { ...good, type: 999 }],
      ['term', { ...good, term: 2 ** 60 }],
      ['commit', { ...good, commit: -1 }],
      ['entries[0].type', { ...good, entries: [{ ...good.entries[0], type: 99 }] }],
      ['entries[0].index', { ...good, entries: [{ ...good.entries[0], index: 1.5 }] }],
      ['entries[0].data', { ...good, entries: [{ ...good.entries[0], data: 'text' as unknown as Uint8Array }] }],
      ['context', { ...good, context: undefined as unknown as Uint8Array }],
      ['from', { ...good, from: 7 as unknown as string }],
      [
        'snapshot.metadata.confState.voters[0]',
        {
          ...good,
          snapshot: {
            metadata: {
              index: 1,
              term: 1,
              confState: { voters: [null as unknown as string], learners: [], votersOutgoing: [] },
            },
            data: new Uint8Array(),
          },
        },
      ],
    ];
    for (const [field, w] of bad) {
      let thrown: unknown = null;
      try {
        fromWire(w);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, field).toBeInstanceOf(WireDecodeError);
      expect(thrown, field).not.toBeInstanceOf(InvariantError);
      expect((thrown as WireDecodeError).field).toBe(field);
      expect((thrown as Error).message).toMatch(new RegExp(`^${field.replace(/[[\].]/g, '\\$&')} `));
      expect((thrown as Error).message).not.toContain('\n');
    }
  });

  it('drops malformed messages of a live stream with a counted refusal and keeps serving it and the node', async () => {
    const b = await startNode('n2', { members: () => new Set(['n1']) });
    const client = new grpc.Client(`127.0.0.1:${b.port}`, grpc.credentials.createInsecure());
    try {
      const call = client.makeClientStreamRequest<WireBatch, WireStreamAck>(
        streamMethod.path,
        streamMethod.requestSerialize,
        streamMethod.responseDeserialize,
        () => {},
      );
      const beat = (term: number): WireMessage =>
        toWire(message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term }));
      const app = toWire(
        message({
          type: MessageType.App,
          from: 'n1',
          to: 'n2',
          term: 1,
          entries: [{ term: 1, index: 1, type: EntryType.Normal, data: new Uint8Array([1]) }],
        }),
      );
      const malformed: WireMessage[] = [
        { ...beat(1), term: 2 ** 60 },
        { ...app, entries: [{ ...app.entries[0], type: 99 }] },
        { ...beat(1), type: MessageType.Hup },
      ];
      call.write({ clusterId: 'c1', from: 'n1', to: 'n2', messages: [...malformed, beat(1)] });
      await waitFor(() => b.received.length === 1, 'the one well-formed message of the batch');
      const refused = (): number => [...b.transport.refusals.totals().values()].reduce((x, y) => x + y, 0);
      expect(refused()).toBe(malformed.length);
      // The same stream goes on, and so does the node.
      call.write({ clusterId: 'c1', from: 'n1', to: 'n2', messages: [beat(2)] });
      await waitFor(() => b.received.length === 2, 'the next batch on the same stream');
      expect(b.received.map((m) => [m.type, m.term])).toEqual([
        [MessageType.Heartbeat, 1],
        [MessageType.Heartbeat, 2],
      ]);
      expect(b.transport.inboundCount()).toBe(1);
      expect(b.logs.filter((l) => l.level === 40 && l.from === 'n1').length).toBeGreaterThan(0);
      call.end();
    } finally {
      client.close();
    }
  });

  it('forgets inbound streams that the sender cancels', async () => {
    const b = await startNode('n2', { members: () => new Set(['n1']) });
    const client = new grpc.Client(`127.0.0.1:${b.port}`, grpc.credentials.createInsecure());
    try {
      for (let i = 0; i < 3; i++) {
        const call = client.makeClientStreamRequest<WireBatch, WireStreamAck>(
          streamMethod.path,
          streamMethod.requestSerialize,
          streamMethod.responseDeserialize,
          () => {},
        );
        call.write({
          clusterId: 'c1',
          from: 'n1',
          to: 'n2',
          messages: [toWire(message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term: 1 }))],
        });
        await waitFor(() => b.received.length === i + 1 && b.transport.inboundCount() === 1, 'an open inbound stream');
        call.cancel();
        await waitFor(() => b.transport.inboundCount() === 0, 'the cancelled stream forgotten');
      }
    } finally {
      client.close();
    }
  });

  it('close() is idempotent and ends delivery', async () => {
    const a = await startNode('n1');
    const b = await startNode('n2');
    mesh(a, b);
    a.transport.send([message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term: 1 })]);
    await waitFor(() => b.received.length === 1, 'a heartbeat');
    await Promise.all([a.transport.close(), a.transport.close()]);
    await a.transport.close();
    a.transport.send([message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term: 1 })]);
    expect(a.transport.pendingCount('n2')).toBe(0);
  });
});

describe('RaftNode admin API', () => {
  it('round-trips Status, Put (the log probe) and TransferLeader through the generated definitions', async () => {
    const status: NodeStatus = {
      clusterId: 'c1',
      nodeId: 'n1',
      address: '127.0.0.1:7001',
      role: 'leader',
      term: 3,
      leaderId: 'n1',
      commitIndex: 10,
      appliedIndex: 9,
      lastIndex: 11,
      firstIndex: 1,
      peers: [{ nodeId: 'n2', address: '127.0.0.1:7002', matchIndex: 10, nextIndex: 11, state: 'replicate' }],
      pid: 4242,
      version: '0.1.0',
      consoleUrl: '',
    };
    const store = new Map<string, Uint8Array>();
    const members: Members['members'] = [
      { nodeId: 'n1', address: '127.0.0.1:7001', voter: true, matchIndex: 10, state: 'replicate' },
    ];
    const put: RaftNodeHandlers['Put'] = (call, cb) => {
      store.set(call.request.key, call.request.value);
      cb(null, { index: 12, leaderId: 'n1', leaderAddress: '127.0.0.1:7001' });
    };
    const handlers: RaftNodeHandlers = {
      Status: (_call, cb) => cb(null, status),
      History: (_call, cb) =>
        cb(null, {
          nodeId: 'n1',
          records: [],
          truncated: false,
          lacks: [],
          appliedIndex: 0,
          oldestAtMs: 0,
          bytes: 0,
          enabled: false,
          groups: 1,
        }),
      Put: put,
      PutStream: putStreamHandler(put).handler,
      // The group crosses the wire too (the term answered is 4 + timeoutMs + 10 * group).
      TransferLeader: (call, cb) => {
        if (call.request.to !== 'n2')
          return cb({ code: grpc.status.INVALID_ARGUMENT, details: `no voter ${call.request.to}` });
        const term = 4 + call.request.timeoutMs + 10 * call.request.group;
        cb(null, { leaderId: call.request.to, term, inFlight: call.request.force ? 2 : 0 });
      },
      AddMember: (call, cb) => {
        members.push({
          nodeId: call.request.nodeId,
          address: call.request.address,
          voter: call.request.timeoutMs > 0,
          matchIndex: 0,
          state: '',
        });
        cb(null, { members, leaderId: 'n1', term: 3, confIndex: 12 });
      },
      RemoveMember: (call, cb) =>
        cb({ code: grpc.status.FAILED_PRECONDITION, details: `${call.request.nodeId} is the last voter` }),
      // The group asked for crosses the wire (the leader named here is n<group + 1>).
      ListMembers: (call, cb) =>
        cb(null, { members, leaderId: `n${(call.request.group ?? 0) + 1}`, term: 3, confIndex: 0 }),
    };
    const server = new grpc.Server();
    server.addService(raftNodeService, handlers);
    servers.add(server);
    const port = await bind(server, 0);
    const client = new RaftNodeClient(`127.0.0.1:${port}`);
    try {
      expect(await client.status()).toStrictEqual(status);
      expect(await client.put({ key: 'k', value: new Uint8Array([1, 2, 3]) })).toStrictEqual({
        index: 12,
        leaderId: 'n1',
        leaderAddress: '127.0.0.1:7001',
      });
      // The probe's key and value reach the node as sent.
      expect([...(store.get('k') ?? [])]).toEqual([1, 2, 3]);
      expect(await client.transferLeader({ to: 'n2', timeoutMs: 1, force: false, group: 0 })).toStrictEqual({
        leaderId: 'n2',
        term: 5,
        inFlight: 0,
      });
      // force crosses the wire, and the count in flight comes back.
      expect(await client.transferLeader({ to: 'n2', timeoutMs: 1, force: true, group: 0 })).toMatchObject({
        inFlight: 2,
      });
      expect(await client.transferLeader({ to: 'n2', timeoutMs: 1, force: false, group: 3 })).toMatchObject({
        term: 35,
      });
      await expect(client.transferLeader({ to: 'n9', timeoutMs: 0, force: false, group: 0 })).rejects.toMatchObject({
        code: grpc.status.INVALID_ARGUMENT,
      });
      const added = await client.addMember({ nodeId: 'n4', address: '127.0.0.1:7004', timeoutMs: 5 });
      expect(added.confIndex).toBe(12);
      expect(added.members[1]).toStrictEqual({
        nodeId: 'n4',
        address: '127.0.0.1:7004',
        voter: true,
        matchIndex: 0,
        state: '',
      });
      expect((await client.listMembers()).members.map((m) => m.nodeId)).toEqual(['n1', 'n4']);
      expect((await client.listMembers()).leaderId).toBe('n1');
      expect((await client.listMembers(undefined, 2)).leaderId).toBe('n3');
      await expect(client.removeMember({ nodeId: 'n1' })).rejects.toMatchObject({
        code: grpc.status.FAILED_PRECONDITION,
        details: 'n1 is the last voter',
      });
      expect(await client.putStreamed({ key: 'k2', value: new Uint8Array([4]) })).toStrictEqual({
        index: 12,
        leaderId: 'n1',
        leaderAddress: '127.0.0.1:7001',
      });
      expect([...(store.get('k2') ?? [])]).toEqual([4]);
    } finally {
      client.close();
    }
  });
});

describe('RaftNode.PutStream', () => {
  /**
   * A node whose Put answers by key: `i-<n>` commits at index n, `follower-*` is refused as a follower would refuse it,
   * `hang-*` never commits.
   */
  async function putServer(
    o: { pendingMax?: number } = {},
  ): Promise<{ client: RaftNodeClient; messages: number[]; unary: () => number }> {
    let unaryPuts = 0;
    const put: RaftNodeHandlers['Put'] = (call, cb) => {
      const { key } = call.request;
      if (key.startsWith('hang-')) return;
      if (key.startsWith('follower-')) {
        const md = new grpc.Metadata();
        md.set('verdict-reason', 'NOT_LEADER');
        md.set('verdict-leader-address', '127.0.0.1:7002');
        return cb({ code: grpc.status.UNAVAILABLE, details: 'not the leader: the leader is n2', metadata: md });
      }
      cb(null, { index: Number(key.slice(2)), leaderId: 'n1', leaderAddress: '' });
    };
    const streams = putStreamHandler(put, o);
    const messages: number[] = [];
    const server = new grpc.Server();
    server.addService(raftNodeService, {
      Put: (call: Parameters<RaftNodeHandlers['Put']>[0], cb: Parameters<RaftNodeHandlers['Put']>[1]) => {
        unaryPuts++;
        put(call, cb);
      },
      PutStream: (call: grpc.ServerDuplexStream<StreamedPuts, StreamedPutAnswers>) => {
        call.on('data', (m: StreamedPuts) => messages.push(m.puts.length));
        streams.handler(call);
      },
    });
    servers.add(server);
    const port = await bind(server, 0);
    const client = new RaftNodeClient(`127.0.0.1:${port}`);
    return { client, messages, unary: () => unaryPuts };
  }

  it('concurrent Puts of one turn travel in one message on one stream, each answered with its own index, no unary call', async () => {
    const { client, messages, unary } = await putServer();
    try {
      const answers = await Promise.all(
        Array.from({ length: 64 }, (_, i) => client.putStreamed({ key: `i-${i + 1}`, value: new Uint8Array(100) })),
      );
      expect(answers.map((a) => a.index)).toEqual(Array.from({ length: 64 }, (_, i) => i + 1));
      expect(messages).toEqual([64]);
      expect(unary()).toBe(0);
    } finally {
      client.close();
    }
  });

  it('refuses a streamed Put with the status and leader hint the unary Put carries', async () => {
    const { client } = await putServer();
    try {
      const err = await client
        .putStreamed({ key: 'follower-1', value: new Uint8Array() })
        .catch((e: grpc.ServiceError) => e);
      expect(err).toMatchObject({ code: grpc.status.UNAVAILABLE, details: 'not the leader: the leader is n2' });
      expect((err as grpc.ServiceError).metadata.get('verdict-reason')).toEqual(['NOT_LEADER']);
      expect((err as grpc.ServiceError).metadata.get('verdict-leader-address')).toEqual(['127.0.0.1:7002']);
    } finally {
      client.close();
    }
  });

  it('refuses Puts beyond the per-stream bound with RESOURCE_EXHAUSTED and keeps serving the stream', async () => {
    const { client } = await putServer({ pendingMax: 3 });
    try {
      const waiting = Array.from({ length: 3 }, (_, i) =>
        client.putStreamed({ key: `hang-${i}`, value: new Uint8Array() }, 60_000).catch(() => 'cancelled'),
      );
      await expect(client.putStreamed({ key: 'i-9', value: new Uint8Array() })).rejects.toMatchObject({
        code: grpc.status.RESOURCE_EXHAUSTED,
        details: expect.stringMatching(/3 puts on this stream wait.*limit 3/),
      });
      client.close();
      expect(await Promise.all(waiting)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    } finally {
      client.close();
    }
  });
});

describe('GrpcTransport with decision groups', () => {
  it('carries every group on the one stream per peer, each message with its group, and a node of one group refuses any but group 0', async () => {
    const got: { group: number; message: Message }[] = [];
    const a = await startNode('n1', { groups: 4, onGroupMessages: (gms) => void got.push(...gms) });
    const b = await startNode('n2', { groups: 4, onGroupMessages: (gms) => void got.push(...gms) });
    mesh(a, b);
    const m = (term: number): Message => message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term });
    // Group 0 interleaved with the others: each keeps its group, in the order sent.
    a.transport.groupTransport.send([
      { group: 2, message: m(3) },
      { group: 0, message: m(4) },
      { group: 3, message: m(5) },
    ]);
    a.transport.send([m(6)]);
    await waitFor(() => got.length === 4, 'four messages at n2');
    expect(got.map((gm) => [gm.group, gm.message.term])).toEqual([
      [2, 3],
      [0, 4],
      [3, 5],
      [0, 6],
    ]);
    expect(b.transport.inboundCount()).toBe(1);

    // A node of one group (no `groups`) takes group 0's message and refuses group 2's at the edge, reason "group".
    const c = await startNode('n3');
    mesh(a, c);
    a.transport.groupTransport.send([
      { group: 2, message: message({ type: MessageType.Heartbeat, from: 'n1', to: 'n3', term: 7 }) },
      { group: 0, message: message({ type: MessageType.Heartbeat, from: 'n1', to: 'n3', term: 8 }) },
    ]);
    await waitFor(() => c.received.length === 1, 'group 0 at n3');
    expect(c.received.map((x) => x.term)).toEqual([8]);
    await waitFor(() => (c.transport.refusals.totals().get('group') ?? 0) === 1, 'the refusal of group 2 at n3');
  });

  it("two groups' sends to one peer in one turn (two replicas, two calls) go in one stream write; one group's are sent as before, without a group", async () => {
    const batches: number[][] = [];
    const a = await startNode('n1', { groups: 2, onGroupMessages: () => {} });
    const b = await startNode('n2', {
      groups: 2,
      onGroupMessages: (gms) => void batches.push(gms.map((gm) => gm.group)),
    });
    mesh(a, b);
    const m = (term: number): Message => message({ type: MessageType.Heartbeat, from: 'n1', to: 'n2', term });
    // As two replicas of a host send: each its own call, the second from a later promise continuation of the turn.
    a.transport.groupTransport.send([{ group: 0, message: m(1) }]);
    await Promise.resolve();
    a.transport.groupTransport.send([
      { group: 1, message: m(2) },
      { group: 1, message: m(3) },
    ]);
    await waitFor(() => batches.flat().length === 3, 'three messages at n2');
    expect(a.transport.sent).toMatchObject({ messages: 3, batches: 1 });
    expect(batches).toEqual([[0, 1, 1]]);

    // One group: the same turn's sends are one write too, and arrive at a node of one group as plain messages.
    const c = await startNode('n3');
    const d = await startNode('n4');
    mesh(c, d);
    const plain = (term: number): Message => message({ type: MessageType.Heartbeat, from: 'n3', to: 'n4', term });
    c.transport.send([plain(1)]);
    c.transport.send([plain(2)]);
    await waitFor(() => d.received.length === 2, 'two messages at n4');
    expect(c.transport.sent).toMatchObject({ messages: 2, batches: 1 });
    expect(d.batches).toEqual([2]);
  });
});
