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
import { raftNodeService } from '../transport/proto.ts';
import { coordinatorService } from '../transport/coordinator-rpc.ts';
import { CoordinatorEngine } from '../commit/engine.ts';
import { encodeCommand, type ApplyResult } from '../commit/state.ts';
import type { NodeConfig } from './config.ts';
import { Driver } from './driver.ts';
import { NodeStateMachine } from './machine.ts';
import { coordinatorApi } from './coordinator-service.ts';
import { ParticipantLink } from './participant-link.ts';
import { raftNodeApi, withTimeout } from './raft-node-service.ts';

const WAITERS_MAX = 16_384;

export class StartupError extends Error {
  constructor(what: string) {
    super(what);
    this.name = 'StartupError';
  }
}

export interface RunningNode {
  driver: Driver<ApplyResult | null>;
  machine: NodeStateMachine;
  engine: CoordinatorEngine;
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
  const machine = new NodeStateMachine();
  let driver: Driver<ApplyResult | null> | null = null;
  // The engine is created below, once the driver exists; applied results reach it from then on.
  let engine: CoordinatorEngine | null = null;
  const transport = new GrpcTransport({
    clusterId: cfg.clusterId,
    selfId: cfg.nodeId,
    peers: cfg.peers,
    onMessages: (msgs) => driver?.receive(msgs),
    onUnreachable: (peer) => driver?.reportUnreachable(peer),
    logger: log,
  });
  let stopping: Promise<void> | null = null;
  const d = new Driver<ApplyResult | null>({
    node: rawNode,
    store,
    transport,
    sm: machine,
    snapshotEntries: cfg.snapshotEntries,
    snapshotKeepEntries: Math.min(1000, cfg.snapshotEntries),
    waitersMax: WAITERS_MAX,
    onFatal: (err) => {
      log.fatal({ err }, 'storage write failed; the node stops because it cannot know what reached the disk');
      void stop().finally(() => process.exit(2));
    },
    onPersisted: (rd) => {
      if (!rd.softState) return;
      log.info({ term: rawNode.raft.term, role: rd.softState.role, leader: rd.softState.leader || null }, 'raft role changed');
      engine?.setLeadership(rd.softState.role === 'leader' ? rawNode.raft.term : 0);
    },
    onApplied: (_entry, result) => {
      if (result) engine?.onApplied(result);
    },
  });
  driver = d;
  const participants = new ParticipantLink(cfg.clusterId);
  engine = new CoordinatorEngine(machine.table, {
    nowMs: () => Date.now(),
    random: () => Math.random(),
    propose: (cmd, cb) =>
      withTimeout<ApplyResult | null>(
        `proposal ${cmd.t}`,
        (done) => d.propose(encodeCommand(cmd), (err, r) => done(err, r?.result)),
        (err, r) => (err ? cb(err) : r ? cb(null, r) : cb(new Error('no result'))),
      ),
    sendPrepare: (to, req, deadlineMs, cb) => participants.prepare(to, req, deadlineMs, cb),
    sendDecision: (to, req, deadlineMs, cb) => participants.decide(to, req, deadlineMs, cb),
  });
  const eng = engine;
  if (d.isLeader()) eng.setLeadership(rawNode.raft.term);
  log.info({ cluster: cfg.clusterId, address, dataDir: cfg.dataDir, term: recovered.hardState.term, commit: recovered.hardState.commit, snapshot: recovered.snapshot.metadata.index, entries: recovered.entries.length }, 'node recovered its log');

  transport.register(server);
  server.addService(raftNodeService, raftNodeApi(cfg, d as Driver<unknown>, machine, address));
  server.addService(coordinatorService, coordinatorApi({ cfg, driver: d as Driver<unknown>, engine: eng, table: machine.table, address }));

  const ticker = setInterval(() => {
    d.tick();
    eng.tick();
  }, cfg.tickMs);

  async function stop(): Promise<void> {
    stopping ??= (async () => {
      clearInterval(ticker);
      eng.setLeadership(0);
      d.stop();
      participants.close();
      await transport.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await store.close();
      log.info("node stopped");
    })();
    return stopping;
  }

  return { driver: d, machine, engine: eng, address, stop };
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

