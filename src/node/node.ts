// One Verdict node as a process: the driver loop wired to LevelDB (synced
// writes), the gRPC transport, a ticking clock and the node's client API.
//
// Start-up order matters for bad input: the config is validated first, then
// the listen address is bound, and only then is the data directory opened,
// whose identity is checked before LevelDB is (see src/storage/level.ts). A
// failure at any step leaves the data untouched, byte for byte.

import * as grpc from '@grpc/grpc-js';
import { randomInt } from 'node:crypto';
import { format } from 'node:util';
import type { Logger } from 'pino';
import { RawNode } from '../raft/raw-node.ts';
import { Rng } from '../raft/rng.ts';
import { LevelLogStore } from '../storage/level.ts';
import { GrpcTransport, SERVER_OPTIONS } from '../transport/grpc.ts';
import { raftNodeService, type GetRequest, type GetResponse, type NodeStatus, type PutRequest, type PutResponse, type RaftNodeHandlers } from '../transport/proto.ts';
import type { NodeConfig } from './config.ts';
import { Driver, NotLeaderError, OverloadedError } from './driver.ts';
import { encodePut, KvStateMachine } from './kv.ts';

/** How long a client request may wait for its entry to commit. */
const REQUEST_TIMEOUT_MS = 10_000;
const WAITERS_MAX = 16_384;

export class StartupError extends Error {
  constructor(what: string) {
    super(what);
    this.name = 'StartupError';
  }
}

export interface RunningNode {
  driver: Driver<void>;
  kv: KvStateMachine;
  address: string;
  stop(): Promise<void>;
}

export async function startNode(cfg: NodeConfig, log: Logger): Promise<RunningNode> {
  // grpc-js prints its errors on stderr by itself; they also reach us as
  // call or bind failures, which say more. Keep them in the node's log.
  grpc.setLogger({ error: (...args: unknown[]) => log.debug({ component: 'grpc' }, format(...args)) });
  const server = new grpc.Server(SERVER_OPTIONS);
  const port = await bind(server, cfg.listen);
  const host = cfg.listen.slice(0, cfg.listen.lastIndexOf(':'));
  const address = `${host}:${port}`;

  let opened: Awaited<ReturnType<typeof LevelLogStore.open>>;
  try {
    opened = await LevelLogStore.open(cfg.dataDir, { clusterId: cfg.clusterId, nodeId: cfg.nodeId });
  } catch (err) {
    server.forceShutdown();
    throw err;
  }
  const { store, recovered } = opened;

  const rng = new Rng(randomInt(0x7fffffff));
  const rawNode = RawNode.restart(
    { id: cfg.nodeId, random: rng.asRandom(), electionTicks: cfg.electionTicks, heartbeatTicks: cfg.heartbeatTicks },
    recovered,
    { voters: [...cfg.peers.keys()], learners: [], votersOutgoing: [] },
  );
  const kv = new KvStateMachine();
  let driver: Driver<void> | null = null;
  const transport = new GrpcTransport({
    clusterId: cfg.clusterId,
    selfId: cfg.nodeId,
    peers: cfg.peers,
    onMessages: (msgs) => driver?.receive(msgs),
    onUnreachable: (peer) => driver?.reportUnreachable(peer),
    logger: log,
  });
  let stopping: Promise<void> | null = null;
  const d = new Driver<void>({
    node: rawNode,
    store,
    transport,
    sm: kv,
    snapshotEntries: cfg.snapshotEntries,
    snapshotKeepEntries: Math.min(1000, cfg.snapshotEntries),
    waitersMax: WAITERS_MAX,
    onFatal: (err) => {
      log.fatal({ err }, 'storage write failed; the node stops because it cannot know what reached the disk');
      void stop().finally(() => process.exit(2));
    },
    onPersisted: (rd) => {
      if (rd.softState) log.info({ term: rd.hardState?.term ?? rawNode.raft.term, role: rd.softState.role, leader: rd.softState.leader || null }, 'raft role changed');
    },
  });
  driver = d;
  log.info({ cluster: cfg.clusterId, address, dataDir: cfg.dataDir, term: recovered.hardState.term, commit: recovered.hardState.commit, snapshot: recovered.snapshot.metadata.index, entries: recovered.entries.length }, 'node recovered its log');

  transport.register(server);
  server.addService(raftNodeService, clientApi(cfg, d, kv, address));

  const ticker = setInterval(() => d.tick(), cfg.tickMs);

  async function stop(): Promise<void> {
    stopping ??= (async () => {
      clearInterval(ticker);
      d.stop();
      await transport.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await store.close();
      log.info("node stopped");
    })();
    return stopping;
  }

  return { driver: d, kv, address, stop };
}

function bind(server: grpc.Server, listen: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(listen, grpc.ServerCredentials.createInsecure(), (err, port) => {
      if (!err) return resolve(port);
      const host = listen.slice(0, listen.lastIndexOf(':'));
      const why = /EADDRINUSE/.test(err.message)
        ? 'the address is in use; stop the process that holds it or pick another port for "listen"'
        : /EADDRNOTAVAIL/.test(err.message)
          ? `${host} is not an address of this machine; set "listen" to one of its addresses, e.g. 127.0.0.1:${listen.slice(listen.lastIndexOf(':') + 1)}`
          : /EACCES/.test(err.message)
            ? 'permission denied; pick a port above 1023 for "listen"'
            : `${err.message.replace(/\s+/g, ' ')}; check "listen"`;
      reject(new StartupError(`cannot listen on ${listen}: ${why}`));
    });
  });
}

function notLeader(cfg: NodeConfig, leader: string): grpc.ServiceError {
  const md = new grpc.Metadata();
  if (leader) {
    md.set('verdict-leader', leader);
    md.set('verdict-leader-address', cfg.peers.get(leader) ?? '');
  }
  const where = leader ? `the leader is ${leader} at ${cfg.peers.get(leader) ?? '?'}` : 'no leader is known yet; retry shortly';
  return Object.assign(new Error(`not the leader: ${where}`), { code: grpc.status.UNAVAILABLE, details: `not the leader: ${where}`, metadata: md });
}

function toServiceError(cfg: NodeConfig, err: Error): grpc.ServiceError {
  if (err instanceof NotLeaderError) return notLeader(cfg, err.leader);
  const code = err instanceof OverloadedError ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.UNAVAILABLE;
  return Object.assign(new Error(err.message), { code, details: err.message, metadata: new grpc.Metadata() });
}

function withTimeout<T>(what: string, start: (done: (err: Error | null, v?: T) => void) => void, cb: (err: Error | null, v?: T) => void): void {
  let finished = false;
  const timer = setTimeout(() => {
    if (finished) return;
    finished = true;
    cb(new Error(`${what} did not complete within ${REQUEST_TIMEOUT_MS} ms (no quorum?); retry`));
  }, REQUEST_TIMEOUT_MS);
  start((err, v) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    cb(err, v);
  });
}

function clientApi(cfg: NodeConfig, d: Driver<void>, kv: KvStateMachine, address: string): RaftNodeHandlers {
  return {
    Status: (_call: grpc.ServerUnaryCall<unknown, NodeStatus>, cb: grpc.sendUnaryData<NodeStatus>) => {
      const s = d.node.status();
      cb(null, {
        clusterId: cfg.clusterId,
        nodeId: cfg.nodeId,
        address,
        role: s.softState.role,
        term: s.hardState.term,
        leaderId: s.softState.leader,
        commitIndex: s.hardState.commit,
        appliedIndex: s.applied,
        lastIndex: s.lastIndex,
        firstIndex: s.firstIndex,
        // Only the leader tracks replication progress; any other node lists
        // the members it was configured with, so that `verdict status` finds
        // the whole cluster from any one address.
        peers:
          s.progress.length > 0
            ? s.progress.map((p) => ({ nodeId: p.id, address: cfg.peers.get(p.id) ?? '', matchIndex: p.match, nextIndex: p.next, state: p.state }))
            : [...cfg.peers].map(([id, addr]) => ({ nodeId: id, address: addr, matchIndex: 0, nextIndex: 0, state: 'unknown' })),
      });
    },
    Put: (call: grpc.ServerUnaryCall<PutRequest, PutResponse>, cb: grpc.sendUnaryData<PutResponse>) => {
      const { key, value } = call.request;
      if (typeof key !== 'string' || key === '') return cb({ code: grpc.status.INVALID_ARGUMENT, details: 'key must be a non-empty string' });
      withTimeout<number>(
        `put ${key}`,
        (done) => d.propose(encodePut(key, value ?? new Uint8Array()), (err, r) => done(err, r?.index)),
        (err, index) => {
          if (err) return cb(toServiceError(cfg, err));
          cb(null, { index: index ?? 0, leaderId: cfg.nodeId, leaderAddress: address });
        },
      );
    },
    Get: (call: grpc.ServerUnaryCall<GetRequest, GetResponse>, cb: grpc.sendUnaryData<GetResponse>) => {
      const { key, linearizable } = call.request;
      const answer = (): void => {
        const v = kv.map.get(key);
        cb(null, { found: v !== undefined, value: v ?? new Uint8Array(), appliedIndex: d.applied, leaderId: d.leader(), leaderAddress: cfg.peers.get(d.leader()) ?? '' });
      };
      if (!linearizable) return answer();
      withTimeout<number>(`read ${key}`, (done) => d.read(done), (err) => (err ? cb(toServiceError(cfg, err)) : answer()));
    },
  } as RaftNodeHandlers;
}
