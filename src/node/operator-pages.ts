// What an operator sees of a node over HTTP: the Prometheus metrics and the
// web console (src/console/): without TLS both on `metricsListen`, the
// console also on `consoleListen`; with TLS the console only on
// `consoleListen` (HTTPS), `metricsListen` serving /metrics alone. The listeners are bound at start, like
// `listen`, so a bad address is refused before the data directory is
// touched; the console shows the node once its core exists (show()), and the
// metrics registry (prom-client, loaded by the node command only) comes after
// the node is up and ticking (loadMetrics()): until then a scrape answers 503.
//
// What the console shows of transactions and leaders is kept in memory,
// bounded (src/console/timeline.ts), and fed by the core's watchers
// (src/node/core-observer.ts).

import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { consoleHandler, type ConsoleGroup, type ConsoleNodeState } from '../console/api.ts';
import { ConsoleActError, type ConsoleLeases, type ConsoleSaga, type ConsoleSagas } from '../console/product-api.ts';
import type { LeaseTable } from '../lease/state.ts';
import type { SagaError } from '../saga/engine.ts';
import { timelineRow, type SagaRecord } from '../saga/state.ts';
import { PeerHealth } from '../console/peer-health.ts';
import { ConsoleListenError, serveConsole, type ConsoleServer } from '../console/server.ts';
import { LeaderHistory, TxnTimeline } from '../console/timeline.ts';
import { ProtocolGaps } from './protocol-gaps.ts';
import { CHART_EVERY_MS, CommitCharts } from '../console/charts.ts';
import type { CommitAnswer } from './metrics.ts';
import type { Access } from '../transport/auth.ts';
import type { GroupStorageStats } from '../storage/group-store.ts';
import type { GroupHistories } from './history-groups.ts';
import { MetricsListenError, serveMetrics, type MetricsServer } from '../transport/ops.ts';
import type { NodeConfig } from './config.ts';
import type { NodeCore } from './core.ts';
import type { Driver } from './driver.ts';
import type { Refusals } from './limits.ts';
import type { NodeMetrics } from './metrics.ts';
import type { NodeTls } from './node-tls.ts';
import type { ParticipantLink } from './participant-link.ts';
import { handOverRefusal, transferLeadership, transferWaitMs } from './raft-node-service.ts';
import type { HandOverResult } from './group-host.ts';
import { HttpError } from '../console/http-error.ts';
import type { SagaMetrics } from './saga-metrics.ts';
import type { SagaService } from './saga-service.ts';
import { StartupError } from './startup-error.ts';
import { groupOf } from '../domain/group.ts';

/** Where the metrics read from, once the node runs. */
export interface MetricSources {
  core: NodeCore;
  sagas: SagaService;
  /** Raft messages refused at the transport's edge, by reason (src/transport/refusal-log.ts). */
  raftRefusals: () => ReadonlyMap<string, number>;
  /** Client-facing requests refused at the edge (./limits.ts). */
  requestRefusals: Refusals;
  /** Calls refused PERMISSION_DENIED, by role. */
  access: Access;
  /** Raft messages sent to peers, every group together (src/transport/grpc.ts). */
  raftSent?: () => { messages: number; batches: number; bytes: number };
  /** The shared storage writer's batches and syncs; null at one group. */
  storage?: () => GroupStorageStats | null;
  /** Every decision group's saga product, group 0's first (absent: one group, `sagas`). */
  groupSagas?: readonly SagaService[];
}

export class OperatorPages {
  readonly timeline = new TxnTimeline();
  readonly leaders = new LeaderHistory();
  /** Participants answering UNIMPLEMENTED to a method the cluster needs (./protocol-gaps.ts). */
  readonly gaps = new ProtocolGaps();
  /**
   * The last 15 minutes of commits, latencies, aborts, in doubt and unacked, sampled every 5 s (src/console/charts.ts).
   */
  readonly charts = new CommitCharts();
  private chartTimer: NodeJS.Timeout | null = null;
  /** Null until loadMetrics(). */
  metrics: NodeMetrics | null = null;
  sagaMetrics: SagaMetrics | null = null;
  private core: NodeCore | null = null;
  private link: ParticipantLink | null = null;
  private history: GroupHistories | null = null;
  private sagas: ConsoleSagas | undefined;
  private leases: (() => ConsoleLeases) | undefined;
  private readonly peerHealth: PeerHealth | null;
  private metricsServer: MetricsServer | null = null;
  private consoleServer: ConsoleServer | null = null;

  private constructor(
    private readonly cfg: NodeConfig,
    private readonly tls: NodeTls | null,
    private readonly log: Logger,
  ) {
    const wanted = cfg.metricsListen !== null || cfg.consoleListen !== null;
    this.peerHealth = wanted
      ? new PeerHealth(
          cfg.nodeId,
          () => this.core?.membership.peers() ?? cfg.peers,
          (id) => tls?.peer(id),
        )
      : null;
  }

  /** Binds metricsListen and consoleListen (when set); on a refusal, whatever was bound is closed again. */
  static async serve(cfg: NodeConfig, tls: NodeTls | null, access: Access, log: Logger): Promise<OperatorPages> {
    const pages = new OperatorPages(cfg, tls, log);
    if (pages.peerHealth === null) return pages;
    const page = consoleHandler({
      cfg,
      tls: tls !== null,
      access,
      httpsConsole: () => (tls !== null ? (pages.consoleServer?.address ?? null) : null),
      state: () => pages.state(),
      history: () => pages.history,
      timeline: pages.timeline,
      leaders: pages.leaders,
      health: pages.peerHealth,
      connection: (endpoint) => pages.link?.connection(endpoint) ?? '',
      unansweredSinceAtMs: (endpoint) => pages.link?.unansweredSinceAtMs(endpoint) ?? 0,
      charts: pages.charts,
    });
    try {
      // With TLS the console's data goes only over its HTTPS listener: the plain-HTTP metrics listener serves /metrics
      // alone.
      if (cfg.metricsListen !== null)
        pages.metricsServer = await serveMetrics(
          cfg.metricsListen,
          () => pages.metrics?.registry ?? null,
          cfg.tls === null ? page : consoleElsewhere(cfg.consoleListen),
        );
      // Without TLS the node got here only with "insecure" (node.ts): every listener is plaintext by the operator's
      // choice.
      if (cfg.consoleListen !== null) pages.consoleServer = await serveConsole(cfg.consoleListen, page, cfg.tls);
    } catch (err) {
      await pages.close();
      if (err instanceof MetricsListenError) throw new StartupError(`${err.message}; check "metricsListen"`);
      if (err instanceof ConsoleListenError) throw new StartupError(err.message);
      throw err;
    }
    return pages;
  }

  get metricsAddress(): string | null {
    return this.metricsServer?.address ?? null;
  }

  /** From now on the console shows this core, and the leader's connections through `link`. */
  show(
    core: NodeCore,
    link: ParticipantLink,
    history: GroupHistories | null = null,
    groupCores: readonly NodeCore[] = [core],
    handOver: ((to: string, force: boolean) => Promise<HandOverResult>) | null = null,
  ): void {
    this.groupCores = groupCores;
    this.handOver = handOver;
    this.history = history;
    this.core = core;
    this.link = link;
    if (this.peerHealth !== null && this.chartTimer === null) {
      this.charts.begin(Date.now());
      this.chartTimer = setInterval(() => this.sampleCharts(), CHART_EVERY_MS);
      this.chartTimer.unref();
    }
  }

  /** A commit answered by this node: into the metrics, and the console's latency chart. */
  observeCommit(seconds: number, answer: CommitAnswer): void {
    this.metrics?.observeCommit(seconds, answer);
    this.charts.observeLatency(seconds * 1000);
  }

  /** One sample of the charts, summed over every group; in doubt and unacked over the groups this node leads. */
  private sampleCharts(): void {
    if (this.core === null) return;
    const cores = this.groupCores.length > 0 ? this.groupCores : [this.core];
    let committed = 0;
    const aborted: Record<string, number> = {};
    let inDoubt = 0;
    let unacked = 0;
    for (const c of cores) {
      const e = c.engine;
      const counters = e.counters();
      committed += counters.committed;
      for (const [k, v] of Object.entries(counters.aborted)) aborted[k] = (aborted[k] ?? 0) + v;
      if (!e.isLeader()) continue;
      inDoubt += e.list('in-doubt', IN_DOUBT_COUNTED_MAX).length;
      unacked += e.phases().delivering;
    }
    this.charts.sample(Date.now(), {
      committed,
      aborted: aborted as ReturnType<NodeCore['engine']['counters']>['aborted'],
      inDoubt,
      unacked,
      // The page's "leader" line: this node leads some group (group 0's, with one group).
      leader: cores.some((c) => c.engine.isLeader()),
    });
  }

  /**
   * From now on the console shows these products: sagas (list, one saga, retry, resolve) and leases; `groupSagas`,
   * every decision group's saga product (group 0's first), when there is more than one.
   */
  showProducts(
    sagas: SagaService,
    leases: LeaseTable,
    groupSagas: readonly SagaService[] = [sagas],
    groupLeases: readonly LeaseTable[] = [leases],
  ): void {
    this.sagas =
      groupSagas.length > 1 && this.groupCores.length === groupSagas.length
        ? groupedSagas(
            groupSagas,
            this.groupCores.map((c) => c.driver),
          )
        : consoleSagas(sagas);
    this.leases =
      groupLeases.length > 1
        ? () => groupedLeases(groupLeases)
        : () => ({ clockAtMs: leases.clockAtMs, leases: [...leases.leases.values()].map((l) => ({ ...l })) });
  }

  /** Loads prom-client and the node's metrics (after start-up: see the top of this file). */
  async loadMetrics(src: MetricSources): Promise<void> {
    const { core } = src;
    const { NodeMetrics } = await import('./metrics.ts');
    this.metrics = new NodeMetrics({
      nodeId: this.cfg.nodeId,
      driver: () => core.driver as Driver<unknown>,
      engine: () => core.engine,
      table: () => core.machine.table,
      refusals: src.raftRefusals,
      raftSent: src.raftSent,
      participantExchange: () => this.link?.exchangeCounts ?? null,
      storage: src.storage,
      requestRefusals: () => src.requestRefusals,
      access: src.access,
      leadersSeen: () => this.leaders.leadersSeenTotal,
      unimplemented: () => this.gaps.counts(),
      dataDir: this.cfg.dataDir,
      groups: () =>
        this.groupCores.map((g) => ({ engine: g.engine, table: g.machine.table, driver: g.driver as Driver<unknown> })),
      ...(this.cfg.tls === null ? {} : { certificateNotAfterAtMs: certificateNotAfterAtMs(this.cfg.tls.cert) }),
    });
    const { SagaMetrics } = await import('./saga-metrics.ts');
    this.sagaMetrics = new SagaMetrics(this.metrics.registry, {
      engine: () => src.sagas.engine,
      table: () => src.sagas.table,
      ...(src.groupSagas !== undefined
        ? { groups: () => (src.groupSagas ?? []).map((w) => ({ engine: w.engine, table: w.table })) }
        : {}),
    });
    const m = this.metricsServer;
    if (m && this.cfg.tls === null)
      this.log.info(
        { metrics: `http://${m.address}/metrics`, console: `http://${m.address}/` },
        'serving Prometheus metrics and the web console',
      );
    else if (m)
      this.log.info(
        { metrics: `http://${m.address}/metrics` },
        'serving Prometheus metrics (with TLS, the console only on consoleListen)',
      );
    const c = this.consoleServer;
    if (c)
      this.log.info({ console: `${this.tls !== null ? 'https' : 'http'}://${c.address}/` }, 'serving the web console');
  }

  async close(): Promise<void> {
    if (this.chartTimer !== null) clearInterval(this.chartTimer);
    this.chartTimer = null;
    this.peerHealth?.close();
    await this.metricsServer?.close();
    await this.consoleServer?.close();
  }

  /** An operator's transfer of group 0 through the group host (GroupHost.handOver); null: it starts at once. */
  private handOver: ((to: string, force: boolean) => Promise<HandOverResult>) | null = null;

  /** Every decision group's core, group 0's first (the one `core` shows); one with a cluster of one group. */
  private groupCores: readonly NodeCore[] = [];

  /** The node as the console reads it (src/console/api.ts ConsoleNodeState); null until the core is up. */
  private state(): ConsoleNodeState | null {
    const c = this.core;
    if (c === null) return null;
    const driver = c.driver as Driver<unknown>;
    return {
      driver,
      engine: c.engine,
      table: c.machine.table,
      members: c.membership,
      transferWaitMs: transferWaitMs(this.cfg),
      transferLeader: async (to, timeoutMs) => {
        // As `verdict leader transfer` without --force: new transactions refused, those in flight decide first.
        const h = this.handOver === null ? null : await this.handOver(to, false);
        const refused = h === null ? null : handOverRefusal(this.cfg, h);
        if (refused !== null) throw new HttpError(503, refused);
        return transferLeadership(this.cfg, driver, to, timeoutMs);
      },
      ...(this.sagas !== undefined ? { sagas: this.sagas } : {}),
      ...(this.leases !== undefined ? { leases: this.leases } : {}),
      ...(this.groupCores.length > 1
        ? {
            groups: () => this.groupCores.map((g, group) => groupRow(group, g)),
            groupViews: () =>
              this.groupCores.map((g, group) => ({
                group,
                driver: g.driver as Driver<unknown>,
                engine: g.engine,
                table: g.machine.table,
              })),
          }
        : {}),
    };
  }
}

/** The in-doubt chart counts up to this many (a list of them is built each sample). */
const IN_DOUBT_COUNTED_MAX = 10_000;

/** A saga record in the console's words (src/console/api.ts ConsoleSaga). */
function consoleSaga(s: SagaRecord): ConsoleSaga {
  return {
    sagaId: s.id,
    state: s.state,
    type: s.type ?? '',
    labels: { ...(s.labels ?? {}) },
    startedAtMs: s.startedAtMs,
    endedAtMs: s.endedAtMs,
    stuck: s.stuck === null ? null : { ...s.stuck },
    steps: s.steps.map((d, k) => {
      // A step's failed calls: its compensation's once it is being compensated, else its action's.
      const tries = (s.tries ?? [])
        .filter((t) => t.step === k)
        .sort((a, b) => b.lastFailureAtMs - a.lastFailureAtMs)[0];
      return {
        service: d.service,
        name: d.name,
        status: s.status[k] ?? 'pending',
        attempts: tries?.attempts ?? 0,
        lastError: tries?.lastError ?? '',
        lastFailureAtMs: tries?.lastFailureAtMs ?? 0,
      };
    }),
    timeline: s.timeline.map(timelineRow),
  };
}

/** The saga product as the console reads it and acts on it. */
function consoleSagas(w: SagaService): ConsoleSagas {
  const act = (run: (cb: (err: SagaError | null, saga?: SagaRecord) => void) => void): Promise<ConsoleSaga | null> =>
    new Promise((ok, fail) =>
      run((err, saga) => {
        if (err === null) return ok(saga === undefined ? null : consoleSaga(saga));
        fail(new ConsoleActError(err.code === 'exhausted' ? 'precondition' : err.code, err.message));
      }),
    );
  return {
    isLeader: () => w.engine.isLeader(),
    list: () => [...w.table.sagas.values()].map(consoleSaga),
    get: (id) => {
      const s = w.table.sagas.get(id);
      return s === undefined ? null : consoleSaga(s);
    },
    retry: (id, operator, reason) => act((cb) => w.engine.retry(id, operator, reason, cb)),
    resolve: (id, step, as, operator, reason) => act((cb) => w.engine.resolve(id, step, as, operator, reason, cb)),
  };
}

/**
 * Every decision group's leases as one table: each group keeps its own
 * cluster clock (the time its leader logged last), so a lease's expiry is
 * told on group 0's clock, as far from it as from its own group's.
 */
function groupedLeases(tables: readonly LeaseTable[]): ConsoleLeases {
  const clockAtMs = tables[0].clockAtMs;
  return {
    clockAtMs,
    leases: tables.flatMap((t) =>
      [...t.leases.values()].map((l) => ({ ...l, expiresAtMs: l.expiresAtMs - t.clockAtMs + clockAtMs })),
    ),
  };
}

/**
 * The saga product of every decision group as the console reads it: a list
 * of every group's sagas (each with its group), one saga and its acts from
 * the group that decides it (groupOf of its id), whose leader acts on it.
 */
function groupedSagas(
  ws: readonly SagaService[],
  drivers: readonly Pick<Driver<unknown>, 'leader' | 'isLeader'>[],
): ConsoleSagas {
  const each = ws.map(consoleSagas);
  const of = (id: string): number => groupOf(id, ws.length);
  return {
    isLeader: () => ws.every((w) => w.engine.isLeader()),
    list: () =>
      each.flatMap((c, group) => c.list().map((x) => ({ ...x, group }))).sort((a, b) => a.startedAtMs - b.startedAtMs),
    get: (id) => {
      const x = each[of(id)].get(id);
      return x === null ? null : { ...x, group: of(id) };
    },
    driverOf: (id) => drivers[of(id)],
    retry: (id, operator, reason) => each[of(id)].retry(id, operator, reason),
    resolve: (id, step, as, operator, reason) => each[of(id)].resolve(id, step, as, operator, reason),
  };
}

/**
 * A TLS node's metrics listener, for any path but /metrics: plain HTTP
 * serves no console data, so it says where the console is instead.
 */
function consoleElsewhere(consoleListen: string | null): (req: IncomingMessage, res: ServerResponse) => boolean {
  const where =
    consoleListen === null
      ? 'this node serves no console: set "consoleListen" for its HTTPS console'
      : `the console is served over HTTPS with client certificates on ${consoleListen} (https://${consoleListen}/)`;
  return (_req, res) => {
    res
      .writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Frame-Options': 'DENY' })
      .end(`not found: on a node with TLS this plain-HTTP listener serves /metrics only; ${where}\n`);
    return true;
  };
}

/** When the certificate in `file` stops being valid, in ms since the epoch; the node checked the file at start. */
function certificateNotAfterAtMs(file: string): number {
  return Date.parse(new X509Certificate(readFileSync(file)).validTo);
}

/** Group `group`'s row on the console's cluster page, from its core's Raft status. */
function groupRow(group: number, core: NodeCore): ConsoleGroup {
  const s = core.driver.node.status();
  const leads = core.driver.isLeader();
  const p = core.engine.phases();
  return {
    group,
    leaderId: s.softState.leader,
    term: s.hardState.term,
    commitIndex: s.hardState.commit,
    appliedIndex: s.applied,
    inFlight: leads ? p.begun + p.preparing + p.deciding : null,
    unacked: leads ? p.delivering : null,
  };
}
