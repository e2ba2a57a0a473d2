// One Verdict node as a process: its core (src/node/core.ts, the wiring the
// simulator runs too) on LevelDB (synced writes), the gRPC transport, a
// ticking clock and the participant links, with the node's gRPC services on
// top, and what operators use: gRPC health and reflection, Prometheus
// metrics and the web console (./operator-pages.ts).
//
// startNode is composition, in order; each part opened is recorded and
// closed in the reverse order (./open-parts.ts), at stop or at once when the
// start fails. Start-up order matters for bad input: the config is
// validated first, then the listen addresses are bound, and only then is the
// data directory opened, whose identity is checked before LevelDB is (see
// src/storage/level.ts). A failure at any step leaves the data untouched,
// byte for byte.
//
// Reflection and the metrics registry (prom-client) are set up after the node
// is up and ticking, so a restarting node rejoins elections without waiting
// for them; until then a scrape answers 503. Health is registered at once.
// Both gRPC services load their libraries on first use (src/transport/ops.ts).
//
// Shutting down (shutdown()): the node drains (./handover.ts: it refuses new
// work, and a leader settles its commits and hands leadership over), then
// reports NOT_SERVING and closes everything, flushing the log.

import * as grpc from '@grpc/grpc-js';
import { randomInt } from 'node:crypto';
import { format } from 'node:util';
import type { Logger } from 'pino';
import type { CoordinatorEngine } from '../commit/engine.ts';
import type { ApplyResult } from '../commit/state.ts';
import { RawNode } from '../raft/raw-node.ts';
import { Rng } from '../raft/rng.ts';
import { emptyConfState, MessageType } from '../raft/types.ts';
import { nextTurn } from '../util/sleep.ts';
import { checkDataDir, DataDirError, explainOpenError } from '../storage/data-dir.ts';
import type { OpenReport } from '../storage/store.ts';
import type { LogStore, PersistBatch, RecoveredState } from '../storage/types.ts';
import type { GroupMessage, Transport } from '../transport/types.ts';
import { LeaderHistory } from '../console/timeline.ts';
import { clusterGroups } from './groups.ts';
import { openGroupStorage, type GroupStorage } from '../storage/group-store.ts';
import { coreReplica, GroupHost, type GroupReplica, type HandOverResult, type HandOverWhy } from './group-host.ts';
import type { SagaService } from './saga-service.ts';
import type { LeaseTable } from '../lease/state.ts';
import { Access, OPEN_POLICY } from '../transport/auth.ts';
import { coordinatorPackageDefinition } from '../transport/coordinator-rpc.ts';
import { GrpcTransport, SERVER_OPTIONS } from '../transport/grpc.ts';
import { insecureWarning, plaintextRefusal } from '../transport/listen-policy.ts';
import { addHealth, addReflection } from '../transport/ops.ts';
import { packageDefinition as raftPackageDefinition } from '../transport/proto.ts';
import { sagaPackageDefinition } from '../transport/saga-rpc.ts';
import { shutdownServer } from '../transport/server.ts';
import type { NodeConfig } from './config.ts';
import { NodeCore, type NodeCoreIO, type NodeCoreObserver, type ParticipantLinks } from './core.ts';
import { watchCore, watchedLinks, type WatchOptions } from './core-observer.ts';
import { openTracing, otlpEndpointFrom } from '../transport/tracing.ts';
import { TXNS_PER_IN_FLIGHT } from '../commit/engine-types.ts';
import { TxnTraces } from './txn-traces.ts';
import { withTraceIds } from '../util/trace-log.ts';
import { snapshotStagger, UnappliableEntryError, type Driver } from './driver.ts';
import { Handover } from './handover.ts';
import { Refusals } from './limits.ts';
import type { NodeStateMachine } from './machine.ts';
import { HistoriedMachine, historyObserver, historyRow, historyShiftMs, openHistory } from './history-feed.ts';
import { sagaTableFromEnv } from './history-sagas.ts';
import type { HistoryStore } from '../history/store.ts';
import { GroupHistories } from './history-groups.ts';
import { attachProducts, nodeProducts } from './products.ts';
import { raftMembers } from './members.ts';
import { addNodeServices, addStartingGates, type NodeServiceGates } from './node-services.ts';
import { loadNodeTls, type NodeTls } from './node-tls.ts';
import { OpenParts } from './open-parts.ts';
import { OperatorPages } from './operator-pages.ts';
import { ParticipantLink } from './participant-link.ts';
import { REQUEST_TIMEOUT_MS } from './raft-node-service.ts';
import { SagaStepLinks, sagaService } from './saga-service.ts';
import { StartupError } from './startup-error.ts';
import { faultPointFromEnv } from './fault-point.ts';
import type { EngineIO } from '../commit/engine.ts';

export { StartupError } from './startup-error.ts';

/**
 * One decision group's replica in this process: its node core, with the saga engine, lease table, traces and handover
 * beside it.
 */
type Replica = GroupReplica & {
  core: NodeCore;
  sagas: SagaService;
  leases: LeaseTable;
  traces: TxnTraces;
  handover: Handover;
};

const WAITERS_MAX = 16_384;
/** Calls still open after this long at shutdown (a health Watch, say) are cut. */
const SERVER_SHUTDOWN_GRACE_MS = 2_000;

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
  /**
   * The whole cluster is stopping (`verdict cluster up` said so): a leader's failed handover is expected, logged at
   * info.
   */
  expectClusterStop(): void;
  /**
   * Resolves once the node stopped by itself on a fatal error of its own
   * storage (logged at fatal first); never while it runs. The library does
   * not exit the process: `verdict node` exits with `exitCode`.
   */
  failed: Promise<NodeFailure>;
}

/** Why a node stopped by itself: 2 a failed storage write, 3 a log entry of its own it cannot apply. */
export interface NodeFailure {
  exitCode: 2 | 3;
  error: Error;
}

export async function startNode(cfg: NodeConfig, log: Logger): Promise<RunningNode> {
  keepGrpcLogs(log);
  const faultPoint = testFaultPoint(log);
  const tls = transportSecurity(cfg, log);
  const server = new grpc.Server(SERVER_OPTIONS);
  const address = await listen(server, cfg, tls);
  // Until the log is recovered, every call is told UNAVAILABLE (retry), never UNIMPLEMENTED (give up).
  const gates = addStartingGates(server, cfg.requestBytesMax);
  const open = new OpenParts();
  open.add(() => shutdownServer(server, SERVER_SHUTDOWN_GRACE_MS));
  try {
    const node = await compose(cfg, log, tls, server, gates, address, open, faultPoint);
    // Once started, so a start refused for another reason prints only that reason.
    if (tls === null) log.warn({ listen: cfg.listen, insecure: true }, insecureWarning(cfg.listen));
    return node;
  } catch (err) {
    // The listeners are freed again; the data directory, if it was opened, is closed as it was.
    await open.closeAll();
    throw err;
  }
}

/** Everything on the bound server, in order; each part opened is added to `open`. */
async function compose(
  cfg: NodeConfig,
  log: Logger,
  tls: NodeTls | null,
  server: grpc.Server,
  gates: NodeServiceGates,
  address: string,
  open: OpenParts,
  faultPoint: EngineIO['faultPoint'],
): Promise<RunningNode> {
  const access = new Access(tls?.auth ?? OPEN_POLICY);
  // NOT_SERVING until the log is recovered and every service is in place.
  const health = addHealth(server, ['verdict.coordinator.Coordinator', 'verdict.raft.RaftNode']);
  let failWith: (f: NodeFailure) => void = () => {};
  const failed = new Promise<NodeFailure>((resolve) => (failWith = resolve));
  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      health.set('NOT_SERVING');
      await open.closeAll();
      log.info('node stopped');
    })();
    return stopping;
  };

  const pages = await OperatorPages.serve(cfg, tls, access, log);
  open.add(() => pages.close());
  // Decision groups (docs/architecture.md, "Decision groups"): one replica of each, group 0 in today's place and
  // layout.
  const groupCount = clusterGroups(cfg);
  const storage = await openLogs(cfg, groupCount, address, log);
  open.add(() => storage.close());
  const logs = storage.groups;

  // The product tables (sagas, leases) beside each group's decision table: ./products.ts.
  const states = logs.map(() => {
    const products = nodeProducts(sagaTableFromEnv());
    const machine = new HistoriedMachine(products.tables);
    machine.sagas = products.sagas;
    return { products, machine };
  });
  const { products, machine } = states[0];
  // The transaction history (src/history/), in its own LevelDB beside the log, one store per group
  // (./history-groups.ts): open before the cores restore their snapshots.
  const shiftMs = historyShiftMs();
  const histories: (HistoryStore | null)[] = [];
  for (const [g, { machine: gMachine }] of states.entries()) {
    gMachine.shiftMs = shiftMs;
    const h = await openHistory(cfg, gMachine, groupCount === 1 ? log : log.child({ group: g }), g, groupCount);
    if (h !== null) open.add(() => h.close());
    gMachine.history = h;
    histories.push(h);
  }
  const history = histories[0];
  const groupHistories = history === null ? null : new GroupHistories(histories);
  const rawNodes = logs.map((l, g) => {
    const rawNode = restartRaft(cfg, l.recovered);
    if (rawNode.raft.rejoining) {
      log.warn(
        { dataDir: cfg.dataDir, ...(groupCount > 1 ? { group: g } : {}) },
        'rejoining: this data directory holds no Raft state of this node (new, emptied or replaced); it will not vote or campaign until a leader has caught it up. A new cluster is founded with `verdict cluster init` instead (docs/storage.md)',
      );
    }
    return rawNode;
  });
  // The transport delivers to the host of the cores, which are built on the transport: until then nothing reaches them.
  let host: GroupHost<Replica> | null = null;
  const transport = raftTransport(cfg, rawNodes, machine, tls, log, () => host);
  open.add(() => transport.close());
  // One link per participant for every group: one Exchange stream carries every group's PREPAREs and DECISIONs.
  const link = new ParticipantLink(cfg.clusterId, tls ? (id) => tls.participant(id) : undefined, cfg.decisionLingerMs);
  open.add(() => link.close());
  // Spans over OTLP when an endpoint is configured (docs/operations.md, "Tracing"); off, nothing is loaded or made.
  const otlpEndpoint = otlpEndpointFrom(cfg.otlpEndpoint ?? undefined);
  const tracing = await openTracing({
    serviceName: 'verdict-node',
    instanceId: cfg.nodeId,
    ...(otlpEndpoint !== undefined ? { otlpEndpoint } : {}),
  });
  open.add(() => tracing.shutdown());
  if (otlpEndpoint !== undefined) log.info({ otlpEndpoint }, 'tracing: spans are exported over OTLP');
  const traces = new TxnTraces(tracing, cfg.inFlightMax * TXNS_PER_IN_FLIGHT);
  // From here on, a log line about a transaction with a trace carries its trace id.
  log = withTraceIds(log, (txnId) => traces.traceIdOf(txnId));
  const nodeLog = log;
  const stopFatal = stopOnFatal(log, stop, failWith);
  const historyWatches = histories.map((h) => (h === null ? null : historyObserver(h, shiftMs)));

  // The products' engines (./products.ts) ride each group's core, on the same clock: the saga core hears its
  // leadership, applied results and ticks, and calls step services over gRPC (./saga-service.ts), one set of links for
  // every group.
  const stepLinks = new SagaStepLinks({
    clusterId: cfg.clusterId,
    log,
    credentials: tls ? (id) => tls.participant(id) : undefined,
    observeStep: (seconds, kind, answered) => pages.sagaMetrics?.observeStep(seconds, kind, answered),
    tracing,
  });
  open.add(() => stepLinks.close());

  /** Group g's replica: today's node core on its own log, Raft core, state machine and engines, sending through `t`. */
  const replicaOf = (g: number, t: Transport): Replica => {
    const glog = g === 0 ? nodeLog : nodeLog.child({ group: g });
    const gTraces = g === 0 ? traces : new TxnTraces(tracing, cfg.inFlightMax * TXNS_PER_IN_FLIGHT);
    const gRaw = rawNodes[g];
    const { machine: gMachine, products: gProducts } = states[g];
    const watch: WatchOptions = {
      log: glog,
      timeline: historied(pages.timeline, histories[g], shiftMs),
      leaders: g === 0 ? pages.leaders : new LeaderHistory(),
      gaps: pages.gaps,
      observePrepare: (p, seconds, vote) => pages.metrics?.observePrepare(p, seconds, vote),
      term: () => gRaw.raft.term,
      nowMs: () => Date.now(),
      traces: gTraces,
    };
    const watched = watchCore(watch);
    const gHistory = historyWatches[g];
    let core: NodeCore | null = null;
    // The node's core (src/node/core.ts), the same one the simulator runs, on the real clock, disk, network and links.
    const io = processIO(
      timed(logs[g].store, (seconds, batch) => pages.metrics?.observePersist(seconds, batch)),
      t,
      watchedLinks(link, watch, (txnId) => core?.engine.view(txnId)?.ageMs ?? 0),
      faultPoint,
    );
    const c = new NodeCore({
      id: cfg.nodeId,
      node: gRaw,
      machine: gMachine,
      io,
      seedPeers: cfg.peers,
      selfAddress: address,
      driver: {
        snapshotEntries: cfg.snapshotEntries,
        snapshotLogRatio: cfg.snapshotLogRatio,
        snapshotStagger: snapshotStagger(cfg.nodeId),
        snapshotKeepEntries: Math.min(1000, cfg.snapshotEntries),
        waitersMax: WAITERS_MAX,
      },
      engine: {
        inFlightMax: cfg.inFlightMax,
        payloadBytesMax: cfg.requestBytesMax,
        parallelCommit: cfg.parallelCommit,
        explicitCommitLingerMs: cfg.explicitCommitLingerMs,
      },
      commitNoticeMs: cfg.commitNoticeMs,
      proposeTimeoutMs: REQUEST_TIMEOUT_MS,
      traceOf: (txnId) => gTraces.traceparentOf(txnId),
      observe: {
        ...watched,
        onEntryApplied: gHistory?.onEntryApplied,
        onResult: (entry, result) => {
          watched.onResult?.(entry, result);
          gHistory?.onResult?.(entry, result);
        },
        onFatal: stopFatal,
        onRefused: (m, why) =>
          transport.refusals.refuse(m.from, {
            reason: 'state',
            field: MessageType[m.type] ?? String(m.type),
            detail: why,
          }),
        onCaughtUp: (lastIndex) =>
          glog.warn(
            { lastIndex, highWater: logs[g].recovered.recoverIndex },
            'recovering: the leader caught this node up past its high-water mark; it votes and may campaign again',
          ),
        onRejoined: (leader, lastIndex) =>
          glog.warn(
            { leader, lastIndex },
            'rejoined: the leader caught this node up and proved it whole; it votes and may campaign again',
          ),
        // The transport follows group 0's members: every group has the same nodes.
        ...(g === 0 ? { onMembership: followMembership(cfg, log, transport) } : {}),
        onSnapshot: logSnapshots(glog),
      },
    });
    core = c;
    open.add(() => {
      c.engine.setLeadership(0);
      c.stop();
    });

    const attached = attachProducts(
      c,
      gProducts,
      { nowMs: io.nowMs, random: io.random, after: io.after, steps: stepLinks, log: glog },
      {
        saga: {
          stuckAfterAttempts: cfg.sagaStuckAfterAttempts,
          actionAttemptsMax: cfg.sagaActionAttemptsMax,
          actionAbandonAfterMs: cfg.sagaActionAbandonAfterMs,
          clientRunningMax: cfg.sagaClientRunningMax,
          rpcTimeoutMs: cfg.sagaCallTimeoutMs,
          retryMinMs: cfg.sagaRetryMinMs,
          retryMaxMs: cfg.sagaRetryMaxMs,
        },
        sagaStuckLogIntervalMs: cfg.sagaStuckLogIntervalMs,
        observeSagas: { stuckFlagged: (type) => pages.sagaMetrics?.stuckFlagged(type) },
      },
    );
    open.add(() => attached.sagas.close());
    const sagas = sagaService({
      nodeId: cfg.nodeId,
      core: attached.sagas,
      links: stepLinks,
      members: c.membership,
      leader: () => c.driver.leader(),
      access,
      tracing,
    });
    const handover = new Handover(cfg, c, glog);
    return { ...coreReplica(c), sagas, leases: gProducts.leases, traces: gTraces, handover };
  };
  // One group: its core sends straight through the transport, as before groups.
  const h = new GroupHost<Replica>({
    groups: groupCount,
    spread: cfg.spreadLeaders ? {} : false,
    onTransfer: (g, from, to, why, inFlight) =>
      log.info(
        { group: g, from, to, why, inFlight },
        inFlight > 0
          ? `handing the group over with ${inFlight} transaction(s) still in flight (they may abort)`
          : why === 'spread'
            ? 'leaders spread: handing the group over'
            : 'handing the group over',
      ),
    transport: transport.groupTransport,
    replica: (g, t) => replicaOf(g, groupCount === 1 ? transport : t),
  });
  host = h;
  // An operator's transfer (`verdict leader transfer`, of group 0 or the group it names; the console's, of group 0)
  // and a leader's own removal (`member remove`, group 0) move a group, draining it first.
  const operatorHandOver = (
    to: string,
    force: boolean,
    why: HandOverWhy = 'operator',
    group = 0,
  ): Promise<HandOverResult> => new Promise((done) => h.handOver(group, to, { why, force, done }));
  const zero = h.replica(0);
  const c = zero.core;
  const sagas = zero.sagas;
  pages.show(
    c,
    link,
    groupHistories,
    h.replicas.map((r) => r.core),
    operatorHandOver,
  );
  pages.showProducts(
    sagas,
    products.leases,
    h.replicas.map((r) => r.sagas),
    h.replicas.map((r) => r.leases),
  );

  const refusals = new Refusals(log);
  transport.register(server);
  const streams = addNodeServices({
    cfg,
    gates,
    core: c,
    history: groupHistories,
    leases: products.leases,
    address,
    access,
    refusals,
    sagas,
    refusal: () => zero.handover.refusal(),
    connection: (endpoint) => link.connection(endpoint),
    traces,
    observeCommit: (seconds, answer) => pages.observeCommit(seconds, answer),
    handOver: operatorHandOver,
    otherGroups: h.replicas.slice(1).map((r) => ({
      core: r.core,
      sagas: r.sagas,
      leases: r.leases,
      traces: r.traces,
      refusal: () => r.handover.refusal(),
    })),
  });
  // Clients' commit streams would otherwise hold the server for its whole grace period.
  open.add(() => streams.endAll());

  const ticker = setInterval(() => h.tick(), cfg.tickMs);
  open.add(() => clearInterval(ticker));
  health.set('SERVING');

  const opsReady = (async () => {
    await nextTurn();
    if (stopping) return;
    addReflection(server, [raftPackageDefinition, coordinatorPackageDefinition, sagaPackageDefinition]);
    await pages.loadMetrics({
      core: c,
      sagas,
      groupSagas: h.replicas.map((r) => r.sagas),
      raftRefusals: () => transport.refusals.totals(),
      raftSent: () => transport.sent,
      storage: () => storage.stats(),
      requestRefusals: refusals,
      access,
    });
  })();
  opsReady.catch((err: unknown) =>
    log.error({ err }, 'reflection or metrics failed to start; the node runs without them'),
  );

  let shuttingDown: Promise<void> | null = null;
  const shutdown = (): Promise<void> => {
    shuttingDown ??= (async () => {
      health.set('NOT_SERVING');
      await Promise.all(h.replicas.map((r) => r.handover.drain()));
      await stop();
    })();
    return shuttingDown;
  };

  return {
    driver: c.driver,
    machine,
    engine: c.engine,
    address,
    metricsAddress: pages.metricsAddress,
    opsReady: opsReady.catch(() => {}),
    shutdown,
    stop,
    expectClusterStop: () => {
      for (const r of h.replicas) r.handover.expectClusterStop();
    },
    failed,
  };
}

/** The console's timeline, with what this node sees also written to the history (./history-feed.ts). */
function historied(
  timeline: WatchOptions['timeline'],
  history: HistoryStore | null,
  shiftMs: number,
): WatchOptions['timeline'] {
  if (history === null) return timeline;
  const row = historyRow(history, shiftMs);
  return {
    has: (txnId) => timeline.has(txnId),
    record: (txnId, e) => {
      timeline.record(txnId, e);
      row(txnId, e);
    },
  };
}

/**
 * A test's fault point from the environment (src/node/fault-point.ts); unset in production, refused before anything is
 * bound when unknown.
 */
function testFaultPoint(log: Logger): EngineIO['faultPoint'] {
  try {
    return faultPointFromEnv(process.env, log);
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
}

/**
 * grpc-js prints its errors on stderr by itself; they also reach us as call or bind failures, which say more. Keep them
 * in the node's log.
 */
function keepGrpcLogs(log: Logger): void {
  grpc.setLogger({ error: (...args: unknown[]) => log.debug({ component: 'grpc' }, format(...args)) });
}

/**
 * The node's TLS, its files checked before anything is bound (a ConfigError naming the key); null serves plaintext,
 * only with "insecure".
 */
function transportSecurity(cfg: NodeConfig, log: Logger): NodeTls | null {
  const tls = loadNodeTls(cfg);
  if (tls === null) {
    const refusal = plaintextRefusal({
      listen: cfg.listen,
      insecure: cfg.insecure,
      tlsHow: '"tls" in the config (`verdict certs` makes certificates)',
      insecureHow: '"insecure": true (or --insecure)',
    });
    if (refusal !== null) throw new StartupError(refusal);
  } else if (cfg.insecure) {
    log.info({ insecure: true }, '"insecure" has no effect: this node serves mutual TLS');
  }
  if (tls !== null && tls.auth.tls?.adminNames.length === 0)
    log.warn(
      'tls.adminNames is not set: admin operations (leader transfer, membership, txn resolve, put/get) are refused to every certificate',
    );
  return tls;
}

/** Binds `listen`; resolves with the address served (host:port, the port picked when it was 0). */
async function listen(server: grpc.Server, cfg: NodeConfig, tls: NodeTls | null): Promise<string> {
  const port = await bind(server, cfg.listen, tls?.server ?? grpc.ServerCredentials.createInsecure());
  return `${cfg.listen.slice(0, cfg.listen.lastIndexOf(':'))}:${port}`;
}

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

/**
 * Opens the data directory (its identity checked first) and recovers every group's log, logging what the disk looked
 * like.
 */
async function openLogs(cfg: NodeConfig, groups: number, address: string, log: Logger): Promise<GroupStorage> {
  let storage: GroupStorage;
  try {
    // One line naming the path and the cause (src/storage/data-dir.ts), before LevelDB can say only "Database failed to
    // open".
    await checkDataDir(cfg.dataDir);
    // One writer for every group: one batch and one fdatasync per turn, whatever G is (src/storage/group-store.ts).
    storage = await openGroupStorage(cfg.dataDir, { clusterId: cfg.clusterId, nodeId: cfg.nodeId }, groups);
  } catch (err) {
    if (err instanceof DataDirError) throw new StartupError(err.message);
    throw explainOpenError(cfg.dataDir, err);
  }
  for (const [g, { recovered, report }] of storage.groups.entries()) {
    const glog = groups === 1 ? log : log.child({ group: g });
    logStorageReport(glog, report, recovered.recoverIndex);
    const { hardState, snapshot, entries } = recovered;
    glog.info(
      {
        cluster: cfg.clusterId,
        address,
        dataDir: cfg.dataDir,
        term: hardState.term,
        commit: hardState.commit,
        snapshot: snapshot.metadata.index,
        entries: entries.length,
      },
      'node recovered its log',
    );
  }
  return storage;
}

/**
 * What the disk looked like on start, in the node's log: torn tails cut
 * and — loudest — a log shorter than the node acknowledged.
 */
function logStorageReport(log: Logger, report: OpenReport, recoverIndex: number): void {
  for (const t of report.truncated) {
    const fields = {
      file: t.file,
      offset: t.offset,
      index: t.index,
      detail: t.detail,
      savedAs: t.savedAs ?? undefined,
    };
    if (t.belowHighWater)
      log.error(
        fields,
        'raft log cut short below the high-water mark: records this node synced and acknowledged are gone',
      );
    else log.info(fields, 'torn tail of the raft log cut off (a write that was never synced)');
  }
  for (const problem of report.markProblems) {
    log.warn(
      { problem },
      'a slot of the high-water mark file holds no valid record (a write a crash cut short, or damage); the other slot holds the mark (docs/storage.md)',
    );
  }
  if (recoverIndex > 0) {
    log.error(
      { lastIndex: report.lastIndex, highWater: recoverIndex },
      'recovering: the raft log ends below what this node acknowledged; it will not vote or campaign until the leader has caught it up (docs/storage.md)',
    );
  }
}

/**
 * The store with each synced batch's latency and size observed: measured
 * here, where the disk meets the driver, so the pure core stays free of clocks.
 */
function timed(store: LogStore, observe: (seconds: number, batch: PersistBatch) => void): LogStore {
  return {
    persist(batch, onSynced) {
      const startedAtNs = process.hrtime.bigint();
      store.persist(batch, (err) => {
        if (!err) observe(Number(process.hrtime.bigint() - startedAtNs) / 1e9, batch);
        onSynced(err);
      });
    },
  };
}

/** The Raft core restarted from what the disk recovered, its election timeouts drawn from a crypto-seeded generator. */
function restartRaft(cfg: NodeConfig, recovered: RecoveredState): RawNode {
  const rng = new Rng(randomInt(0x7fffffff));
  return RawNode.restart(
    {
      id: cfg.nodeId,
      random: rng.asRandom(),
      electionTicks: cfg.electionTicks,
      heartbeatTicks: cfg.heartbeatTicks,
      commitNoticeLazy: cfg.commitNoticeMs > 0,
      // Idle groups quiesce (src/raft/raft.ts, Raft.quiesced); the group host keeps every peer hearing this node.
      quiesce: clusterGroups(cfg) > 1,
    },
    recovered,
    // A joining node starts with no membership: it never campaigns and learns the cluster from the leader.
    cfg.join ? emptyConfState() : { voters: [...cfg.peers.keys()], learners: [], votersOutgoing: [] },
  );
}

/** Raft traffic goes where peerDial says (a proxy, a tunnel); everything else names the members' addresses. */
function dialed(cfg: NodeConfig, peers: ReadonlyMap<string, string>): Map<string, string> {
  return new Map([...peers].map(([id, a]) => [id, cfg.peerDial.get(id) ?? a]));
}

/** The gRPC transport to the other nodes, delivering to the host of the group cores once there is one. */
function raftTransport(
  cfg: NodeConfig,
  rawNodes: readonly RawNode[],
  machine: NodeStateMachine,
  tls: NodeTls | null,
  log: Logger,
  host: () => GroupHost<Replica> | null,
): GrpcTransport {
  const groups = rawNodes.length;
  return new GrpcTransport({
    clusterId: cfg.clusterId,
    selfId: cfg.nodeId,
    peers: dialed(cfg, cfg.peers),
    onMessages: (msgs) => host()?.replicas[0].receive(msgs),
    // Every group's messages on one stream per peer; the edge refuses a group this node does not host.
    // Any frame from a peer says its node is alive, and names the groups it leads quiesced: their followers hear that
    // in place of heartbeats (./group-host.ts).
    ...(groups > 1
      ? {
          groups,
          onGroupMessages: (gms: GroupMessage[]) => host()?.receive(gms),
          onHeard: (peer: string, quiesced: readonly number[]) => host()?.heard(peer, quiesced),
          quiescedGroups: (): readonly number[] => host()?.quiescedLeading() ?? [],
        }
      : {}),
    onUnreachable: (peer) => host()?.reportUnreachable(peer),
    // The edge (src/transport/raft-edge.ts) checks every inbound message against these before the core sees it:
    // who may send us Raft traffic (src/node/members.ts); the config file's peers until a configuration is known.
    // Every group has the same members: group 0's configuration stands for all.
    members: raftMembers(rawNodes[0], () => new Set(cfg.peers.keys())),
    // The bound on a peer's term is taken from this node's highest term over its groups.
    term: groups === 1 ? () => rawNodes[0].raft.term : () => Math.max(...rawNodes.map((r) => r.raft.term)),
    // What this node's state machine (its product tables included) can apply and restore: the same in every group.
    entryProblem: (type, data) => machine.entryProblem(type, data),
    snapshotProblem: (data) => machine.snapshotProblem(data),
    logger: log,
    ...(tls ? { credentialsFor: tls.peer, authorizePeer: tls.authorizePeer } : {}),
  });
}

/**
 * The real world for the core: the wall clock, Math.random, setImmediate and setTimeout, the disk, the network and the
 * links.
 */
function processIO(
  store: LogStore,
  transport: Transport,
  links: ParticipantLinks,
  faultPoint: EngineIO['faultPoint'],
): NodeCoreIO {
  return {
    nowMs: () => Date.now(),
    random: () => Math.random(),
    endOfTurn: (fn) => setImmediate(fn),
    after: (ms, fn) => {
      const timer = setTimeout(fn, ms);
      return () => clearTimeout(timer);
    },
    store,
    transport,
    links,
    ...(faultPoint ? { faultPoint } : {}),
  };
}

/**
 * A failed write or a damaged log of this node's own: one line, then stop, and `failed` says why (with a distinct exit
 * code).
 */
function stopOnFatal(
  log: Logger,
  stop: () => Promise<void>,
  failWith: (f: NodeFailure) => void,
): NodeCoreObserver['onFatal'] {
  return (err) => {
    if (err instanceof UnappliableEntryError) {
      // Damage to this node's own log (peers' entries are checked on arrival): no stack.
      log.fatal(
        { index: err.index, why: err.why },
        `${err.message}; this node's log is damaged, so it stops rather than diverge from the others. Run \`verdict node repair --config <this node's config>\`: it rejoins from its peers (docs/storage.md)`,
      );
      void stop().finally(() => failWith({ exitCode: 3, error: err }));
      return;
    }
    log.fatal({ err }, 'storage write failed; the node stops because it cannot know what reached the disk');
    void stop().finally(() => failWith({ exitCode: 2, error: err instanceof Error ? err : new Error(String(err)) }));
  };
}

/** The transport's links follow the members the node knows (src/node/membership.ts); a change is logged. */
function followMembership(cfg: NodeConfig, log: Logger, transport: GrpcTransport): NodeCoreObserver['onMembership'] {
  return (members, cs) => {
    transport.updatePeers(dialed(cfg, members.peers()));
    if (cs === null) return;
    log.info({ voters: cs.voters, learners: cs.learners }, 'membership changed');
    const member = cs.voters.includes(cfg.nodeId) || cs.learners.includes(cfg.nodeId);
    if (!member && (cs.voters.length > 0 || cs.learners.length > 0))
      log.warn('this node was removed from the cluster; it takes no part any more and can be stopped');
  };
}

/** Each local snapshot at info: its size, the time taken on the loop and the time its write held the log. */
function logSnapshots(log: Logger): NodeCoreObserver['onSnapshot'] {
  let began = 0;
  let taken = 0;
  return (phase, index, bytes) => {
    const now = performance.now();
    if (phase === 'begin') began = now;
    else if (phase === 'taken') taken = now;
    else
      log.info(
        { index, bytes, takeMs: Math.round(taken - began), writeMs: Math.round(now - taken) },
        'snapshot written; the log behind it is compacted',
      );
  };
}
