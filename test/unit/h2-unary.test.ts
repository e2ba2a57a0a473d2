// The CLI's gRPC unary call over node:http2 (src/transport/h2-unary.ts)
// against a real grpc-js server serving RaftNode.Status: answers, gRPC
// errors with their code and message, silence within the deadline, a
// refused connection, and answers that are not one gRPC message.
import { createServer as createH2Server, type Http2Server } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterStatus, PEERS_FOLLOWED_MAX, STATUS_ADDRESSES_MAX } from '../../src/cli/status.ts';
import { authority, Code, RESPONSE_BYTES_MAX, unaryH2, type CallError } from '../../src/transport/h2-unary.ts';
import type { NodeStatus } from '../../src/transport/proto.ts';
import { decodeNodeStatus } from '../../src/transport/status-wire.ts';
import { freePorts } from '../free-ports.ts';
import { statusServer } from './fixtures/status-server.ts';

const PATH = '/verdict.raft.RaftNode/Status';
const EMPTY = new Uint8Array(0);
const STATUS: NodeStatus = {
  clusterId: 'c',
  nodeId: 'n1',
  address: '127.0.0.1:1',
  role: 'leader',
  term: 7,
  leaderId: 'n1',
  commitIndex: 12,
  appliedIndex: 11,
  lastIndex: 13,
  firstIndex: 1,
  peers: [{ nodeId: 'n2', address: '127.0.0.1:2', matchIndex: 12, nextIndex: 13, state: 'replicate' }],
  pid: 4242,
  version: '0.1.0',
  consoleUrl: 'http://127.0.0.1:9464/',
};

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((s) => s()));
});

/** A grpc-js server whose Status handler is `handler`; resolves with its address. */
async function grpcServer(handler: grpc.handleUnaryCall<unknown, NodeStatus>): Promise<string> {
  const { address, stop } = await statusServer(handler);
  stops.push(stop);
  return address;
}

/** A bare HTTP/2 server that answers every stream with `respond`. */
async function h2Server(respond: (stream: import('node:http2').ServerHttp2Stream) => void): Promise<string> {
  const server: Http2Server = createH2Server();
  server.on('stream', (stream) => respond(stream));
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  stops.push(() => new Promise((res) => server.close(() => res())));
  const a = server.address();
  if (a === null || typeof a === 'string') throw new Error('no port');
  return `127.0.0.1:${a.port}`;
}

const failure = (p: Promise<unknown>): Promise<CallError> =>
  p.then(
    () => {
      throw new Error('the call succeeded');
    },
    (e: CallError) => e,
  );

describe('gRPC unary over node:http2', () => {
  it('reads the status a grpc-js server answers, as the node encodes it', async () => {
    const addr = await grpcServer((_call, cb) => cb(null, STATUS));
    expect(decodeNodeStatus(await unaryH2(addr, PATH, EMPTY, null, 10_000))).toEqual(STATUS);
  });

  it('rejects with the gRPC code and the message the server gave, percent-decoding undone', async () => {
    const details = 'needs an admin certificate: CN=alice é 100%';
    const addr = await grpcServer((_call, cb) => cb({ code: grpc.status.PERMISSION_DENIED, details }));
    const e = await failure(unaryH2(addr, PATH, EMPTY, null, 10_000));
    expect(e.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(e.details).toBe(details);
  });

  it('rejects with DEADLINE_EXCEEDED when the server says nothing', async () => {
    const addr = await grpcServer(() => undefined);
    const e = await failure(unaryH2(addr, PATH, EMPTY, null, 300));
    expect(e.code).toBe(Code.DEADLINE_EXCEEDED);
    expect(e.details).toBe('no answer within 300 ms');
  });

  it('rejects with UNAVAILABLE naming ECONNREFUSED when nobody listens', async () => {
    const [port] = await freePorts(1);
    const e = await failure(unaryH2(`127.0.0.1:${port}`, PATH, EMPTY, null, 10_000));
    expect(e.code).toBe(Code.UNAVAILABLE);
    expect(e.details).toMatch(/ECONNREFUSED/);
  });

  it('refuses an address that is not host:port before dialling', async () => {
    for (const bad of ['127.0.0.1', 'a:b:c', 'host:1/path', 'user@host:1', '']) {
      expect(authority(bad, false), bad).toBeNull();
      const e = await failure(unaryH2(bad, PATH, EMPTY, null, 1_000));
      expect(e.details).toMatch(/is not a host:port address/);
    }
    expect(authority('[::1]:7001', true)).toBe('https://[::1]:7001');
    expect(authority('localhost:7001', false)).toBe('http://localhost:7001');
  });

  it('refuses answers that are not one gRPC message: not HTTP 200, no grpc-status, two messages, compressed, too large', async () => {
    const frame = (flag: number, body: Buffer): Buffer => {
      const prefix = Buffer.alloc(5);
      prefix[0] = flag;
      prefix.writeUInt32BE(body.length, 1);
      return Buffer.concat([prefix, body]);
    };
    const cases: [string, (s: import('node:http2').ServerHttp2Stream) => void, number, RegExp][] = [
      ['HTTP 404', (s) => s.respond({ ':status': 404 }, { endStream: true }), Code.UNKNOWN, /HTTP 404, not gRPC/],
      [
        'no grpc-status',
        (s) => {
          s.respond({ ':status': 200, 'content-type': 'application/grpc' });
          s.end(frame(0, Buffer.alloc(0)));
        },
        Code.INTERNAL,
        /no valid grpc-status/,
      ],
      [
        'two messages',
        (s) => {
          s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
          s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
          s.end(Buffer.concat([frame(0, Buffer.from([8, 1])), frame(0, Buffer.from([8, 2]))]));
        },
        Code.INTERNAL,
        /not one unary response/,
      ],
      [
        'compressed',
        (s) => {
          s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
          s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
          s.end(frame(1, Buffer.from([8, 1])));
        },
        Code.INTERNAL,
        /compressed/,
      ],
      [
        'too large',
        (s) => {
          s.respond({ ':status': 200, 'content-type': 'application/grpc' });
          s.on('error', () => undefined);
          s.end(Buffer.alloc(RESPONSE_BYTES_MAX + 64 * 1024));
        },
        Code.RESOURCE_EXHAUSTED,
        /larger than/,
      ],
    ];
    for (const [name, respond, code, details] of cases) {
      const addr = await h2Server(respond);
      const e = await failure(unaryH2(addr, PATH, EMPTY, null, 10_000));
      expect(e.code, name).toBe(code);
      expect(e.details, name).toMatch(details);
    }
  });
});

describe('verdict status against a node that names thousands of peers', () => {
  it(`asks at most ${STATUS_ADDRESSES_MAX} addresses and says how many it left out`, async () => {
    let asked = 0;
    // Loopback addresses where nothing listens (port 9 of 127.1.x.y): each refuses at once.
    const peers = Array.from({ length: 3_001 }, (_, i) => ({
      nodeId: `p${i}`,
      address: `127.1.${i >> 8}.${(i & 255) + 1}:9`,
      matchIndex: 0,
      nextIndex: 0,
      state: 'probe',
    }));
    const address = await grpcServer((_call, cb) => {
      asked += 1;
      cb(null, { ...STATUS, peers });
    });
    const st = await clusterStatus([address], 1_000);
    expect(asked).toBe(1);
    // PEERS_FOLLOWED_MAX of them are asked (and refuse); the rest are counted as left out.
    expect(st.nodes.length).toBe(1 + PEERS_FOLLOWED_MAX);
    expect(st.skippedAddresses).toBe(3_001 - PEERS_FOLLOWED_MAX);
    expect(PEERS_FOLLOWED_MAX).toBeLessThan(STATUS_ADDRESSES_MAX);
  });

  it('follows peers one hop from the addresses given, and a peer that answers as another node or cluster is not taken for the member', async () => {
    let farAsked = 0;
    const far = await grpcServer((_call, cb) => {
      farAsked += 1;
      cb(null, { ...STATUS, nodeId: 'far', role: 'follower', peers: [] });
    });
    // n2 as n1 names it, but it answers for another cluster, and names "far" as its peer.
    const stranger = await grpcServer((_call, cb) =>
      cb(null, {
        ...STATUS,
        clusterId: 'other',
        nodeId: 'n2',
        role: 'leader',
        term: 99,
        peers: [{ ...STATUS.peers[0], nodeId: 'far', address: far }],
      }),
    );
    const n1 = await grpcServer((_call, cb) =>
      cb(null, {
        ...STATUS,
        peers: [{ nodeId: 'n2', address: stranger, matchIndex: 0, nextIndex: 0, state: 'replicate' }],
      }),
    );
    const st = await clusterStatus([n1], 2_000);
    expect(farAsked).toBe(0);
    expect(st.nodes.map((n) => [n.id, n.reachable])).toEqual([
      ['n1', true],
      ['n2', false],
    ]);
    expect(st.nodes[1].error).toMatch(
      /not the member named here: it answers as node "n2" of cluster "other", not "n2" of "c"/,
    );
    // Its claim to lead a later term is not believed.
    expect(st.leader).toBe('n1');
  });
});
