// One Verdict node as a process: the driver loop wired to LevelDB (synced
// writes), the gRPC transport, a ticking clock and the node's client API,
// plus what operators use: gRPC health and reflection, Prometheus metrics.
//
// Start-up order matters for bad input: the config is validated first, then
// the listen addresses are bound, and only then is the data directory opened,
// whose identity is checked before LevelDB is (see src/storage/level.ts). A
// failure at any step leaves the data untouched, byte for byte.
//
// Reflection and the metrics registry (prom-client) are set up after the node
// is up and ticking, so a restarting node rejoins elections without waiting
// for them; until then a scrape answers 503. Health is registered at once.
// Both gRPC services load their libraries on first use (src/transport/ops.ts).
//
// Shutting down (shutdown()): the node stops taking new work and reports
// NOT_SERVING; a leader lets the commits already in PREPARE reach their
// decision, hands leadership to its most up-to-date follower and waits for
// it to take over, so clients see a leader change of a few ticks instead of
// an election timeout; then everything is flushed and closed.

import * as grpc from '@grpc/grpc-js';
import { shutdownServer } from '../transport/server.ts';
import { randomInt } from 'node:crypto';
import { format } from 'node:util';
import type { Logger } from 'pino';
import { emptyConfState, MessageType, NONE } from '../raft/types.ts';
import { RawNode } from '../raft/raw-node.ts';
import { Rng } from '../raft/rng.ts';
import { DiskLogStore, type OpenReport } from '../storage/store.ts';
import { checkDataDir, DataDirError, explainOpenError } from '../storage/data-dir.ts';
import { GrpcTransport, SERVER_OPTIONS } from '../transport/grpc.ts';
import { packageDefinition as raftPackageDefinition } from '../transport/proto.ts';
import { coordinatorPackageDefinition } from '../transport/coordinator-rpc.ts';
import { addHealth, addReflection, MetricsListenError, serveMetrics, type MetricsServer } from '../transport/ops.ts';
import type { LogStore } from '../storage/types.ts';
import { CoordinatorEngine } from '../commit/engine.ts';
import type { ApplyResult } from '../commit/state.ts';
import type { NodeConfig } from './config.ts';
import { UnappliableEntryError, type Driver } from './driver.ts';
import { NodeCore } from './core.ts';
import { watchCore, watchedLinks, type WatchOptions } from './core-observer.ts';
import { entryProblem, NodeStateMachine, snapshotProblem } from './machine.ts';
import { raftMembers } from './members.ts';
import { Refusals } from './limits.ts';
import type { NodeMetrics } from './metrics.ts';
import { ParticipantLink } from './participant-link.ts';
import { loadNodeTls } from './node-tls.ts';
import { Access, OPEN_POLICY } from '../transport/auth.ts';
import { insecureWarning, plaintextRefusal } from '../transport/listen-policy.ts';
import { REQUEST_TIMEOUT_MS, shuttingDown, transferLeadership, transferWaitMs } from './raft-node-service.ts';
import { sagaWiring } from './saga-service.ts';
import { addNodeServices } from './node-services.ts';
import { sagaPackageDefinition } from '../transport/saga-rpc.ts';
import { consoleHandler, type ConsoleDeps } from '../console/api.ts';
import { PeerHealth } from '../console/peer-health.ts';
import { ConsoleListenError, serveConsole, type ConsoleServer } from '../console/server.ts';
import { LeaderHistory, TxnTimeline } from '../console/timeline.ts';
import { faultPointFromEnv } from './fault-point.ts';

const WAITERS_MAX = 16_384;
/** Calls still open after this long at shutdown (a health Watch, say) are cut. */
const SERVER_SHUTDOWN_GRACE_MS = 2_000;

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
  /** host:port of the Prometheus endpoint, when metricsListen is set. */
  metricsAddress: string | null;
  /** Resolves once reflection and the metrics registry are in place (they load after start-up). */
  opsReady: Promise<void>;
  /** Graceful: refuse new work, hand leadership over (if leader), flush, close. */
  shutdown(): Promise<void>;
  /** Immediate: close everything (what a fatal storage error does). */
  stop(): Promise<void>;
  /** The whole cluster is stopping (`verdict cluster up` said so): a leader's failed handover is expected, logged at info. */
  expectClusterStop(): void;
}

/**
 * What the disk looked like on start, in the node's log: torn tails cut,
 * a migration, and — loudest — a log shorter than the node acknowledged.
 */
function logStorageReport(log: Logger, report: OpenReport, recoverIndex: number): void {
  if (report.migratedFrom !== null) log.info({ from: report.migratedFrom }, 'storage migrated to the segment log format');
  for (const t of report.truncated) {
    const fields = { file: t.file, offset: t.offset, index: t.index, detail: t.detail, savedAs: t.savedAs ?? undefined };
    if (t.belowHighWater) log.error(fields, 'raft log cut short below the high-water mark: records this node synced and acknowledged are gone');
    else log.info(fields, 'torn tail of the raft log cut off (a write that was never synced)');
  }
  if (recoverIndex > 0) {
    log.error(
      { lastIndex: report.lastIndex, highWater: recoverIndex },
      'recovering: the raft log ends below what this node acknowledged; it will not vote or campaign until the leader has caught it up (docs/storage.md)',
    );
  }
}

export async function startNode(cfg: NodeConfig, log: Logger): Promise<RunningNode> {
  // grpc-js prints its errors on stderr by itself; they also reach us as
  // call or bind failures, which say more. Keep them in the node's log.
  grpc.setLogger({ error: (...args: unknown[]) => log.debug({ component: 'grpc' }, format(...args)) });
  // Unset in production; a test arms it from the environment only (src/node/fault-point.ts). Refused before anything is bound.
  let faultPoint: ReturnType<typeof faultPointFromEnv>;
  try {
    faultPoint = faultPointFromEnv(process.env, log);
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
  // TLS files are checked first (a ConfigError naming the key), before anything is bound.
  const tls = loadNodeTls(cfg);
  if (tls === null) {
    const refusal = plaintextRefusal({ listen: cfg.listen, insecure: cfg.insecure, tlsHow: '"tls" in the config', insecureHow: '"insecure": true (or --insecure)' });
    if (refusal !== null) throw new StartupError(refusal);
  } else if (cfg.insecure) {
    log.info({ insecure: true }, '"insecure" has no effect: this node serves mutual TLS');
  }
  if (tls !== null && tls.auth.tls?.adminNames.length === 0)
    log.warn('tls.adminNames is not set: admin operations (leader transfer, membership, txn resolve, put/get) are refused to every certificate');
  const access = new Access(tls?.auth ?? OPEN_POLICY);
  const server = new grpc.Server(SERVER_OPTIONS);
  const port = await bind(server, cfg.listen, tls?.server ?? grpc.ServerCredentials.createInsecure());
  const host = cfg.listen.slice(0, cfg.listen.lastIndexOf(':'));
  const address = `${host}:${port}`;
  // Once serving, so a start refused for another reason prints only that reason.
  if (tls === null && cfg.insecure) log.warn({ listen: cfg.listen, insecure: true }, insecureWarning(cfg.listen));
  // NOT_SERVING until the log is recovered and every service is in place.
  const health = addHealth(server, ['verdict.coordinator.Coordinator', 'verdict.raft.RaftNode']);

  // The node's core is created once the log is recovered (below); until then nothing reaches it.
  let core: NodeCore | null = null;
  let participants: ParticipantLink | null = null;
  const machine = new NodeStateMachine();
  // Null until the operator-side libraries are loaded (see the top of this file).
  let metrics: NodeMetrics | null = null;
  let sagaMetrics: import('./saga-metrics.ts').SagaMetrics | null = null;
  let metricsServer: MetricsServer | null = null;
  // The web console (src/console/) is served on the metrics listener and on consoleListen (HTTPS with TLS);
  // what it shows of transactions and leaders is kept in memory, bounded.
  const timeline = new TxnTimeline();
  const leaders = new LeaderHistory();
  let consoleState: ReturnType<ConsoleDeps['state']> = null;
  let peerHealth: PeerHealth | null = null;
  let consoleServer: ConsoleServer | null = null;
  if (cfg.metricsListen !== null || cfg.consoleListen !== null) {
    peerHealth = new PeerHealth(
      cfg.nodeId,
      () => core?.membership.peers() ?? cfg.peers,
      (id) => tls?.peer(id),
    );
    const page = consoleHandler({
      cfg,
      tls: tls !== null,
      access,
      httpsConsole: () => (tls !== null ? (consoleServer?.address ?? null) : null),
      state: () => consoleState,
      timeline,
      leaders,
      health: peerHealth,
      connection: (endpoint) => participants?.connection(endpoint) ?? '',
    });
    try {
      // Bound now, like "listen", so a bad address is refused before the data directory is touched.
      if (cfg.metricsListen !== null) metricsServer = await serveMetrics(cfg.metricsListen, () => metrics?.registry ?? null, page);
      if (cfg.consoleListen !== null) {
        if (tls === null) {
          const refusal = plaintextRefusal({ listen: cfg.consoleListen, insecure: cfg.insecure, tlsHow: '"tls" in the config', insecureHow: '"insecure": true (or --insecure)' });
          if (refusal !== null) throw new StartupError(refusal.replace(/^refusing to serve plaintext/, 'refusing to serve the console in plaintext'));
        }
        consoleServer = await serveConsole(cfg.consoleListen, page, cfg.tls);
      }
    } catch (err) {
      server.forceShutdown();
      peerHealth.close();
      await metricsServer?.close();
      if (err instanceof MetricsListenError) throw new StartupError(`${err.message}; check "metricsListen"`);
      if (err instanceof ConsoleListenError) throw new StartupError(err.message);
      throw err;
    }
  }

  let opened: Awaited<ReturnType<typeof DiskLogStore.open>>;
  try {
    // One line naming the path and the cause (src/storage/data-dir.ts), before LevelDB can say only "Database failed to open".
    await checkDataDir(cfg.dataDir);
    opened = await DiskLogStore.open(cfg.dataDir, { clusterId: cfg.clusterId, nodeId: cfg.nodeId });
  } catch (err) {
    server.forceShutdown();
    peerHealth?.close();
    await metricsServer?.close();
    await consoleServer?.close();
    if (err instanceof DataDirError) throw new StartupError(err.message);
    throw explainOpenError(cfg.dataDir, err);
  }
  const { store, recovered, report } = opened;
  logStorageReport(log, report, recovered.recoverIndex);
  // Persist latency and group-commit batch sizes are measured here, where the
  // disk meets the driver, so the pure core stays free of clocks.
  const timedStore: LogStore = {
    persist(batch, onSynced) {
      const startedAt = process.hrtime.bigint();
      store.persist(batch, (err) => {
        if (!err) metrics?.observePersist(Number(process.hrtime.bigint() - startedAt) / 1e9, batch);
        onSynced(err);
      });
    },
  };

  const rng = new Rng(randomInt(0x7fffffff));
  const rawNode = RawNode.restart(
    { id: cfg.nodeId, random: rng.asRandom(), electionTicks: cfg.electionTicks, heartbeatTicks: cfg.heartbeatTicks },
    recovered,
    // A joining node starts with no membership: it never campaigns and learns the cluster from the leader.
    cfg.join ? emptyConfState() : { voters: [...cfg.peers.keys()], learners: [], votersOutgoing: [] },
  );
  // Raft traffic goes where peerDial says (a proxy, a tunnel); everything else names the members' addresses.
  const dialed = (peers: ReadonlyMap<string, string>): Map<string, string> => new Map([...peers].map(([id, a]) => [id, cfg.peerDial.get(id) ?? a]));
  const transport = new GrpcTransport({
    clusterId: cfg.clusterId,
    selfId: cfg.nodeId,
    peers: dialed(cfg.peers),
    onMessages: (msgs) => core?.driver.receive(msgs),
    onUnreachable: (peer) => core?.driver.reportUnreachable(peer),
    // The edge (src/transport/raft-edge.ts) checks every inbound message against these before the core sees it:
    // who may send us Raft traffic (src/node/members.ts); the config file's peers until a configuration is known.
    members: raftMembers(rawNode, () => new Set(cfg.peers.keys())),
    term: () => rawNode.raft.term,
    entryProblem,
    snapshotProblem,
    logger: log,
    ...(tls ? { credentialsFor: tls.peer, authorizePeer: tls.authorizePeer } : {}),
  });
  let stopping: Promise<void> | null = null;
  const link = new ParticipantLink(cfg.clusterId, tls?.participants);
  participants = link;
  const watch: WatchOptions = { log, timeline, leaders, term: () => rawNode.raft.term, nowMs: () => Date.now() };
  // The node's core (src/node/core.ts), the same one the simulator runs, on the real clock, disk, network and links.
  const c = new NodeCore({
    id: cfg.nodeId,
    node: rawNode,
    machine,
    io: {
      nowMs: () => Date.now(),
      random: () => Math.random(),
      endOfTurn: (fn) => setImmediate(fn),
      after: (ms, fn) => {
        const timer = setTimeout(fn, ms);
        return () => clearTimeout(timer);
      },
      store: timedStore,
      transport,
      links: watchedLinks(link, watch, (txnId) => core?.engine.view(txnId)?.ageMs ?? 0),
      ...(faultPoint ? { faultPoint } : {}),
    },
    seedPeers: cfg.peers,
    selfAddress: address,
    driver: { snapshotEntries: cfg.snapshotEntries, snapshotKeepEntries: Math.min(1000, cfg.snapshotEntries), waitersMax: WAITERS_MAX },
    engine: { inFlightMax: cfg.inFlightMax, payloadBytesMax: cfg.requestBytesMax, parallelCommit: cfg.parallelCommit },
    proposeTimeoutMs: REQUEST_TIMEOUT_MS,
    observe: {
      ...watchCore(watch),
      onFatal: (err) => {
        if (err instanceof UnappliableEntryError) {
          // Damage to this node's own log (peers' entries are checked on arrival): one line, no stack, a distinct exit code.
          log.fatal(
            { index: err.index, why: err.why },
            `${err.message}; this node's log is damaged, so it stops rather than diverge from the others. Replace it as a node whose disk is gone (docs/hardening-raft.md)`,
          );
          void stop().finally(() => process.exit(3));
          return;
        }
        log.fatal({ err }, 'storage write failed; the node stops because it cannot know what reached the disk');
        void stop().finally(() => process.exit(2));
      },
      onRefused: (m, why) => transport.refusals.refuse(m.from, { reason: 'state', field: MessageType[m.type] ?? String(m.type), detail: why }),
      onCaughtUp: (lastIndex) => log.warn({ lastIndex, highWater: recovered.recoverIndex }, 'recovering: the leader caught this node up past its high-water mark; it votes and may campaign again'),
      // The transport's links follow the members the node knows (src/node/membership.ts).
      onMembership: (members, cs) => {
        transport.updatePeers(dialed(members.peers()));
        if (cs === null) return;
        log.info({ voters: cs.voters, learners: cs.learners }, 'membership changed');
        const member = cs.voters.includes(cfg.nodeId) || cs.learners.includes(cfg.nodeId);
        if (!member && (cs.voters.length > 0 || cs.learners.length > 0)) log.warn('this node was removed from the cluster; it takes no part any more and can be stopped');
      },
    },
  });
  core = c;
  const d = c.driver;
  const eng = c.engine;
  const members = c.membership;
  const refusals = new Refusals(log);
  const sagaSide = sagaWiring({
    cfg,
    members,
    access,
    table: machine.table,
    propose: (cmd, cb) => c.propose(cmd, (err, r) => (err ? cb(err) : r && r.t === 'saga' ? cb(null, r) : cb(new Error('no result')))),
    leader: () => d.leader(),
    log,
    credentials: tls?.participants,
    observeStep: (seconds, kind, answered) => sagaMetrics?.observeStep(seconds, kind, answered),
    engine: { stuckAfterAttempts: cfg.sagaStuckAfterAttempts, actionAttemptsMax: cfg.sagaActionAttemptsMax },
  });
  // Sagas (src/node/saga-service.ts) ride the same core: its leadership, applied results and ticks.
  c.attach(sagaSide);
  consoleState = { driver: d as Driver<unknown>, engine: eng, table: machine.table, members };
  log.info(
    {
      cluster: cfg.clusterId,
      address,
      dataDir: cfg.dataDir,
      term: recovered.hardState.term,
      commit: recovered.hardState.commit,
      snapshot: recovered.snapshot.metadata.index,
      entries: recovered.entries.length,
    },
    'node recovered its log',
  );

  // Set while shutting down: new work is refused, pointing at whoever leads (or is taking over).
  let draining = false;
  let handOffTo = '';
  const refusal = (): grpc.ServiceError | null => (draining ? shuttingDown(members, d.isLeader() ? handOffTo : d.leader()) : null);

  transport.register(server);
  const streams = addNodeServices(server, {
    cfg,
    core: c,
    address,
    access,
    refusals,
    sagas: sagaSide,
    refusal,
    connection: (endpoint) => link.connection(endpoint),
    observeCommit: (seconds, answer) => metrics?.observeCommit(seconds, answer),
  });

  const ticker = setInterval(() => c.tick(), cfg.tickMs);

  health.set('SERVING');
  const opsReady = (async () => {
    await new Promise((r) => setImmediate(r));
    if (stopping) return;
    addReflection(server, [raftPackageDefinition, coordinatorPackageDefinition, sagaPackageDefinition]);
    // prom-client is loaded by the node command only, not by every CLI command, and after start-up.
    const { NodeMetrics } = await import('./metrics.ts');
    metrics = new NodeMetrics({
      nodeId: cfg.nodeId,
      driver: () => d as Driver<unknown>,
      engine: () => eng,
      table: () => machine.table,
      refusals: () => transport.refusals.totals(),
      requestRefusals: () => refusals,
      access,
    });
    const { SagaMetrics } = await import('./saga-metrics.ts');
    sagaMetrics = new SagaMetrics(metrics.registry, { engine: () => sagaSide.engine, table: () => machine.table.sagas });
    if (metricsServer) log.info({ metrics: `http://${metricsServer.address}/metrics`, console: `http://${metricsServer.address}/` }, 'serving Prometheus metrics and the web console');
    if (consoleServer) log.info({ console: `${tls !== null ? 'https' : 'http'}://${consoleServer.address}/` }, 'serving the web console');
  })();
  opsReady.catch((err: unknown) => log.error({ err }, 'reflection or metrics failed to start; the node runs without them'));

  async function stop(): Promise<void> {
    stopping ??= (async () => {
      health.set('NOT_SERVING');
      clearInterval(ticker);
      eng.setLeadership(0);
      sagaSide.close();
      c.stop();
      link.close();
      peerHealth?.close();
      await transport.close();
      // Clients' commit streams would otherwise hold the server for its whole grace period.
      streams.endAll();
      await shutdownServer(server, SERVER_SHUTDOWN_GRACE_MS);
      // Waits for every batch already handed to LevelDB to be synced.
      await store.close();
      await metricsServer?.close();
      await consoleServer?.close();
      log.info('node stopped');
    })();
    return stopping;
  }

  /** The follower to hand leadership to: caught up (replicating), with the highest match index. */
  function bestFollower(): string {
    const others = d.node.status().progress.filter((p) => p.id !== cfg.nodeId && !p.learner && members.has(p.id));
    others.sort((a, b) => Number(b.state === 'replicate') - Number(a.state === 'replicate') || b.match - a.match);
    return others[0]?.id ?? NONE;
  }

  async function handOff(): Promise<void> {
    const waitMs = transferWaitMs(cfg);
    // Commits already in PREPARE or proposed get their answer from this leader
    // rather than an abort from the next one (R2); bounded by one election timeout.
    const settleBy = Date.now() + waitMs / 2;
    for (let p = eng.phases(); p.preparing + p.deciding > 0 && d.isLeader() && Date.now() < settleBy; p = eng.phases()) await sleep(cfg.tickMs);
    if (!d.isLeader()) return;
    const to = bestFollower();
    if (to === NONE) {
      if (clusterStopping) log.info('the whole cluster is stopping; stopping as leader without a handover (expected)');
      else log.warn('no follower to transfer leadership to; stopping as leader (the others elect one after an election timeout)');
      return;
    }
    handOffTo = to;
    log.info({ to, term: rawNode.raft.term }, 'transferring leadership before shutdown');
    const leader = await transferLeadership(cfg, d as Driver<unknown>, to, waitMs);
    if (leader !== '' && leader !== cfg.nodeId) log.info({ to: leader, term: rawNode.raft.term }, `transferred leadership to ${leader}`);
    // When the launcher stops every node at once, the follower is stopping too: no handover is expected.
    else if (clusterStopping) log.info({ to, waitedMs: waitMs }, 'leadership transfer did not complete: the whole cluster is stopping (expected)');
    else log.warn({ to, waitedMs: waitMs }, 'leadership transfer did not complete in time; stopping as leader (the others elect one after an election timeout)');
  }

  /** Set by `verdict cluster up` when it stops every node: a leader that cannot hand over is then expected, not a problem. */
  let clusterStopping = false;
  const expectClusterStop = (): void => {
    clusterStopping = true;
  };

  let shuttingDownP: Promise<void> | null = null;
  function shutdown(): Promise<void> {
    shuttingDownP ??= (async () => {
      draining = true;
      health.set('NOT_SERVING');
      if (d.isLeader() && members.size > 1) await handOff();
      await stop();
    })();
    return shuttingDownP;
  }

  return { driver: d, machine, engine: eng, address, metricsAddress: metricsServer?.address ?? null, opsReady: opsReady.catch(() => {}), shutdown, stop, expectClusterStop };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function bind(server: grpc.Server, listen: string, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(listen, credentials, (err, port) => {
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
