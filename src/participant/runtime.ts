// The real participant process: the journal on disk, the memory resource and
// the engine rebuilt from it, `verdict.participant.Participant` served over
// gRPC, registration with the cluster, and the in-doubt recovery loop asking
// Coordinator.GetOutcome. The engine holds every protocol decision, and
// compose.ts wires it to the resource (as the simulator does); this file
// gives that real time, disk and network, plus what operators use:
// gRPC health and reflection, optional Prometheus metrics, and a graceful
// stop (new PREPAREs get NO, requests in flight finish first).
import { checkDataDir, DataDirError } from '../storage/data-dir.ts';
import { claimDir, StorageIdentityError } from '../storage/dir-identity.ts';
import { guardService, Refusals } from '../transport/validate.ts';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { shutdownServer } from '../transport/server.ts';
import type { Logger } from 'pino';
import {
  PARTICIPANT_MESSAGE_BYTES_MAX,
  participantPackageDefinition,
  participantService,
} from '../transport/participant-rpc.ts';
import { addHealth, addReflection, serveMetrics, MetricsListenError, type MetricsServer } from '../transport/ops.ts';
import { loadTls, TlsSetupError, type TlsFiles, type TlsMaterial } from '../transport/tls.ts';
import { nodeChannelCredentials, serverCredentials } from '../transport/tls-credentials.ts';
import { ClusterLink } from './cluster-link.ts';
import { composeParticipant, type EngineTuning } from './compose.ts';
import type { ParticipantEngine } from './engine.ts';
import { FileJournal } from './journal.ts';
import { MemoryResource } from './memory.ts';
import { MemoryState } from './memory-state.ts';
import { outcomeToWire } from '../transport/protocol-wire.ts';
import {
  isDecisionRecord,
  isJournalRecord,
  type Journal,
  type JournalRecord,
  type Schedule,
  type TxnRecord,
} from './types.ts';
import type { JournalStats } from './journal.ts';
import type { PostgresResource } from './postgres.ts';
import type { PostgresParticipantOptions } from './postgres-recovery.ts';
import type { PreparedSetup } from './prepared-recovery.ts';
import type { MySqlResource } from './resources/mysql/resource.ts';
import type { MySqlParticipantOptions } from './resources/mysql/participant.ts';
import type { HeuristicReporter } from './heuristic.ts';
import type { TccParticipantOptions, TccResource, TccSetup } from './tcc/setup.ts';
import { insecureWarning, plaintextRefusal } from '../transport/listen-policy.ts';
import { participantCertificateProblem } from './certificate-check.ts';
import { classifyRegistrationError, registrationBackoffMs, retryAnyway } from './registration.ts';
import { endExchanges, newGate, participantHandlers, SERVED_OPTIONAL } from './serve.ts';
import { NodeCallers } from './node-callers.ts';
import { loadWith } from '../util/optional-package.ts';
import type { ParticipantTracing } from './serve.ts';
import { openTracing, otlpEndpointFrom, TracingSetupError } from '../transport/tracing.ts';
import { childLogger } from '../util/child-log.ts';
import { TraceIds, withTraceIds } from '../util/trace-log.ts';

/** Transactions whose trace id a participant remembers for its log lines (about the most it holds prepared at once). */
const TRACE_IDS_MAX = 10_000;

/** How long the memory resource's PREPARE waits for a locked key by default (ParticipantOptions.lockWaitMs). */
export const LOCK_WAIT_MS_DEFAULT = 1_000;
export interface ParticipantOptions {
  clusterId: string;
  participantId: string;
  /** host:port to serve on; port 0 picks a free one. */
  listen: string;
  /** Where the cluster reaches this participant; defaults to listen's host with the bound port. */
  advertise?: string;
  endpointsOfCluster: string[];
  dataDir: string;
  logger: Logger;
  /** Delay after the first failed registration attempt; it doubles on each failure up to registerRetryMaxMs. */
  registerRetryMs?: number;
  /** The longest delay between registration attempts (default 10 s). */
  registerRetryMaxMs?: number;
  compactAfterRecords?: number;
  /** host:port for Prometheus metrics (GET /metrics); none when absent. */
  metricsListen?: string;
  /** How long stop() waits for PREPAREs and DECISIONs in flight before it closes anyway. */
  drainTimeoutMs?: number;
  /**
   * The memory resource only: how long a PREPARE that finds a key locked by
   * another prepared transaction waits for that transaction's decision
   * before it votes NO (src/participant/memory.ts); 0 votes NO at once.
   * Default LOCK_WAIT_MS_DEFAULT.
   */
  lockWaitMs?: number;
  /** The resource is PostgreSQL (src/participant/postgres.ts) when given; the journaled memory store otherwise. */
  postgres?: PostgresParticipantOptions;
  /** The resource is MySQL/MariaDB with XA (src/participant/resources/mysql/) when given. */
  mysql?: MySqlParticipantOptions;
  /** The resource is TCC (src/participant/tcc/): Try / Confirm / Cancel handlers over memory or PostgreSQL. */
  tcc?: TccParticipantOptions;
  /**
   * TLS: serve mutual TLS (callers need a certificate signed by `ca`: the
   * cluster's nodes present theirs) and reach the cluster over TLS with this
   * certificate. A cluster with TLS calls every participant over TLS.
   */
  tls?: TlsFiles;
  /**
   * Serve and call plaintext: without TLS a participant starts only with this
   * (src/transport/listen-policy.ts), and warns at every start. False by default.
   */
  insecure?: boolean;
  /**
   * How often acts done by hand (`verdict participant resolve`) not yet acknowledged by the cluster are reported again.
   */
  heuristicReportIntervalMs?: number;
  /** Engine bounds and timings (inDoubtAfterMs, askBackoffMinMs, ...). */
  engine?: EngineTuning;
  /**
   * OTLP/HTTP endpoint (e.g. http://127.0.0.1:4318) for spans of the
   * PREPAREs and DECISIONs that arrive with a trace context (docs/operations.md,
   * "Tracing"); OpenTelemetry's packages must be installed. Absent:
   * OTEL_EXPORTER_OTLP_ENDPOINT; neither: no spans (trace ids still go on log lines).
   */
  otlpEndpoint?: string;
}

export interface ParticipantRuntime<R = MemoryResource> {
  /** host:port the participant serves on (the bound port, even when listen asked for 0). */
  address: string;
  engine: ParticipantEngine;
  resource: R;
  /**
   * Resolves once the cluster has accepted the registration; rejects with RegistrationRefusedError when it never will.
   */
  registered: Promise<void>;
  /** host:port of the metrics endpoint, when metricsListen was given. */
  metricsAddress: string | null;
  stop(): Promise<void>;
}

/** A refusal to start, with a reason a person can act on; the CLI prints it as one line. */
export class ParticipantStartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ParticipantStartupError';
  }
}

/** The cluster refused the registration for a reason retrying cannot fix (see registration.ts). */
export class RegistrationRefusedError extends Error {
  constructor(
    /** Machine-readable: `wrong-cluster-id`, `tls-refused`, ... */
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'RegistrationRefusedError';
  }
}

type PostgresKit = typeof import('./postgres-kit.ts');

/**
 * The PostgreSQL half of the runtime, loaded on demand, so that a memory
 * participant (and `verdict/participant`) never loads `pg`. An application
 * that bundles or prunes its dependencies may leave `pg` out: its absence is
 * then a refusal that says what to install.
 */
async function loadPostgresKit(): Promise<PostgresKit> {
  return loadWith(
    'the PostgreSQL resource',
    ['pg'],
    () => import('./postgres-kit.ts'),
    (m) => new ParticipantStartupError(m),
  );
}

export async function startParticipant(
  o: ParticipantOptions & { postgres: PostgresParticipantOptions },
): Promise<ParticipantRuntime<PostgresResource>>;
export async function startParticipant(
  o: ParticipantOptions & { mysql: MySqlParticipantOptions },
): Promise<ParticipantRuntime<MySqlResource>>;
export async function startParticipant(
  o: ParticipantOptions & { tcc: TccParticipantOptions },
): Promise<ParticipantRuntime<TccResource>>;
export async function startParticipant(o: ParticipantOptions): Promise<ParticipantRuntime>;
export async function startParticipant(
  o: ParticipantOptions,
): Promise<ParticipantRuntime<MemoryResource | PostgresResource | MySqlResource | TccResource>> {
  const traceIds = new TraceIds(TRACE_IDS_MAX);
  const log = withTraceIds(childLogger(o.logger, { participantId: o.participantId, clusterId: o.clusterId }), (txnId) =>
    traceIds.get(txnId),
  );
  if (o.clusterId === '' || o.participantId === '')
    throw new ParticipantStartupError('cluster id and participant id must not be empty');
  const tracing = await openParticipantTracing(o);
  if (o.endpointsOfCluster.length === 0) throw new ParticipantStartupError('at least one cluster endpoint is needed');
  const tls = loadParticipantTls(o);
  await claimDataDirectory(o);
  const opened = await openResource(o, log);
  const { resource, journal, db, tcc } = opened;

  // With TLS the servers at the endpoints must hold node certificates of this cluster (the node mark and OU).
  const link = new ClusterLink({
    clusterId: o.clusterId,
    endpoints: o.endpointsOfCluster,
    ...(tls ? { credentials: nodeChannelCredentials(tls, { clusterId: o.clusterId }) } : {}),
  });
  const timers = realTimers();
  if (resource instanceof MemoryResource) resource.waitForLocks(timers.schedule, o.lockWaitMs ?? LOCK_WAIT_MS_DEFAULT);
  const cluster = link.questions(o.participantId);
  const parts = composeParticipant({
    clusterId: o.clusterId,
    participantId: o.participantId,
    resource,
    journal,
    records: opened.records,
    clock: { nowMs: () => Date.now() },
    schedule: timers.schedule,
    cluster,
    log,
    engine: o.engine,
    ...(tcc !== null ? { tcc: { reserves: tcc.resource } } : {}),
  });
  const { engine } = parts;

  const served = serveParticipant(o, engine, tls, link, log, { tracing, ids: traceIds });
  let metricsServer: MetricsServer | null = null;
  let port: number;
  try {
    port = await bind(served.server, o.listen, tls ? serverCredentials(tls) : grpc.ServerCredentials.createInsecure());
    if (o.metricsListen !== undefined) {
      const { participantMetrics } = await loadWith(
        'metricsListen',
        ['prom-client'],
        () => import('./metrics.ts'),
        (m) => new ParticipantStartupError(m),
      );
      metricsServer = await serveMetrics(
        o.metricsListen,
        participantMetrics(
          o.participantId,
          engine,
          Date.now,
          () => served.callers?.refused ?? 0,
          db !== null ? () => db.resource.preparedStats() : undefined,
          tcc?.counts,
        ),
      );
    }
  } catch (err) {
    served.server.forceShutdown();
    await opened.close();
    link.close();
    await tracing.shutdown();
    if (err instanceof MetricsListenError) throw new ParticipantStartupError(`${err.message}; check --metrics-listen`);
    throw err;
  }
  const address = `${o.listen.slice(0, o.listen.lastIndexOf(':'))}:${port}`;
  if (tls === null && o.insecure === true) log.warn({ listen: o.listen, insecure: true }, insecureWarning(o.listen));
  const advertise = o.advertise ?? address;
  parts.start();
  db?.start(engine, cluster.askOutcome);
  if (tcc !== null && parts.watcher !== null) tcc.start(parts.watcher);
  served.health.set('SERVING');
  log.info(
    {
      address,
      advertise,
      metrics: metricsServer ? `http://${metricsServer.address}/metrics` : undefined,
      inDoubt: engine.inDoubt().length,
      journal: journal.stats(),
    },
    'participant started',
  );

  const registration = register(o, link, advertise, tls !== null, timers.schedule, log);
  registration.registered.then(
    () => void served.callers?.refresh(),
    () => {},
  );
  const reporter = reportHeuristics(o, opened, link, registration, log);

  let stopped: Promise<void> | null = null;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      registration.stop();
      // Drain: new PREPAREs are answered NO, PREPAREs and DECISIONs already
      // in flight finish (their journal records land), then everything stops.
      // Transactions left prepared stay in the journal and are resolved with
      // the cluster after the next start (R4).
      const { gate } = served;
      gate.draining = true;
      served.health.set('NOT_SERVING');
      const drainBy = Date.now() + (o.drainTimeoutMs ?? 5_000);
      while ((gate.inFlight > 0 || engine.counts().preparing > 0) && Date.now() < drainBy)
        await new Promise((r) => setTimeout(r, 10));
      if (gate.inFlight > 0) log.warn({ inFlight: gate.inFlight }, 'stopping with requests still in flight');
      // The leaders' Exchange streams end now, so the server below need not wait out its grace for them.
      endExchanges(gate);
      parts.stop();
      await reporter.stop();
      timers.clearAll();
      await shutdownServer(served.server, 2_000);
      await opened.close();
      link.close();
      await metricsServer?.close();
      await tracing
        .shutdown()
        .catch((err: unknown) => log.warn({ err: String(err) }, 'tracing: the last spans could not be exported'));
      log.info({ prepared: engine.counts().prepared }, 'participant stopped');
    })());

  return {
    address,
    engine,
    resource,
    registered: registration.registered,
    metricsAddress: metricsServer?.address ?? null,
    stop,
  };
}

/** TLS material for serving and for reaching the cluster, or null for plaintext (refused without insecure). */
function loadParticipantTls(o: ParticipantOptions): TlsMaterial | null {
  if (o.tls === undefined) {
    const refusal = plaintextRefusal({
      listen: o.listen,
      insecure: o.insecure === true,
      tlsHow: 'tls (--ca, --cert and --key)',
      insecureHow: 'insecure: true (--insecure)',
    });
    if (refusal !== null) throw new ParticipantStartupError(refusal);
    return null;
  }
  let tls: TlsMaterial;
  try {
    tls = loadTls(o.tls, (k) => `--${k}`);
  } catch (err) {
    if (err instanceof TlsSetupError) throw new ParticipantStartupError(err.message);
    throw err;
  }
  if (tls.leaf === null)
    throw new ParticipantStartupError('a participant with TLS serves it: give --cert and --key with --ca');
  const problem = participantCertificateProblem(tls.leaf, o.tls.cert ?? '', o.participantId, o.advertise ?? o.listen);
  if (problem !== null) throw new ParticipantStartupError(problem);
  return tls;
}

/** The data directory is usable (the node's check, src/storage/data-dir.ts) and belongs to this participant (R7). */
async function claimDataDirectory(o: ParticipantOptions): Promise<void> {
  try {
    await checkDataDir(o.dataDir);
    await claimDir(
      o.dataDir,
      { clusterId: o.clusterId, role: 'participant', id: o.participantId },
      'use another --data directory',
    );
  } catch (err) {
    if (err instanceof DataDirError || err instanceof StorageIdentityError)
      throw new ParticipantStartupError(err.message);
    throw err;
  }
}

interface OpenedResource {
  resource: MemoryResource | PostgresResource | MySqlResource | TccResource;
  journal: Journal & { close(): Promise<void>; stats(): JournalStats };
  records: readonly TxnRecord[];
  /** A database resource (PostgreSQL, MySQL), which holds the prepared state itself; its journal holds no data. */
  db: PreparedSetup<PostgresResource | MySqlResource> | null;
  tcc: TccSetup | null;
  /** The loaded database kit, for its heuristic reporter. */
  kit: { HeuristicReporter: typeof HeuristicReporter } | null;
  close(): Promise<void>;
}

/** Opens the one resource the options name (memory by default), with its journal and the records recovery replays. */
async function openResource(o: ParticipantOptions, log: Logger): Promise<OpenedResource> {
  if ([o.postgres, o.mysql, o.tcc].filter((r) => r !== undefined).length > 1)
    throw new ParticipantStartupError('a participant has one resource: give one of postgres, mysql and tcc');
  const opened = {
    clusterId: o.clusterId,
    participantId: o.participantId,
    dataDir: o.dataDir,
    log,
    compactAfterRecords: o.compactAfterRecords,
  };
  // Loaded only for a database participant: a memory participant needs neither `pg` nor `mysql2`.
  const pgKit = o.postgres !== undefined ? await loadPostgresKit() : null;
  const myKit =
    o.mysql !== undefined
      ? await loadWith(
          'the MySQL resource',
          ['mysql2'],
          () => import('./resources/mysql/kit.ts'),
          (m) => new ParticipantStartupError(m),
        )
      : null;
  let db: PreparedSetup<PostgresResource | MySqlResource> | null = null;
  try {
    if (o.postgres !== undefined && pgKit !== null)
      db = await pgKit.openPostgresParticipant({ ...o.postgres, ...opened });
    if (o.mysql !== undefined && myKit !== null) db = await myKit.openMySqlParticipant({ ...o.mysql, ...opened });
  } catch (err) {
    if (
      (pgKit !== null && err instanceof pgKit.PostgresConfigError) ||
      (myKit !== null && err instanceof myKit.MySqlConfigError)
    )
      throw new ParticipantStartupError((err as Error).message);
    throw err;
  }
  let tcc: TccSetup | null = null;
  if (o.tcc !== undefined) {
    try {
      const tccOptions = { ...o.tcc, ...opened };
      const { openTccParticipant } = await import('./tcc/setup.ts');
      tcc = await loadWith(
        'TCC on PostgreSQL',
        ['pg'],
        () => openTccParticipant(tccOptions),
        (m) => new ParticipantStartupError(m),
      );
    } catch (err) {
      // The PostgreSQL half's refusal (PostgresConfigError), loaded on demand like the resource itself.
      if ((err as Error).name === 'PostgresConfigError') throw new ParticipantStartupError((err as Error).message);
      throw err;
    }
  }
  const kit = pgKit ?? myKit;
  const closeSetups = async (): Promise<void> => {
    await db?.close();
    await tcc?.close();
  };
  const setup = tcc ?? db;
  if (setup !== null) {
    const journal = setup.journal;
    return {
      resource: setup.resource,
      journal,
      records: setup.records,
      db,
      tcc,
      kit,
      close: async () => (await closeSetups(), await journal.close()),
    };
  }
  const state = new MemoryState();
  const journal = await FileJournal.open<JournalRecord>({
    path: join(o.dataDir, 'journal.log'),
    fold: state,
    isRecord: isJournalRecord,
    compactAfterRecords: o.compactAfterRecords,
    deferred: isDecisionRecord,
    log,
  });
  const resource = MemoryResource.restore(state.data, state.preparedWrites(), (txnId, writes) =>
    state.offerWrites(txnId, writes),
  );
  return { resource, journal, records: state.txnRecords(), db, tcc, kit, close: () => journal.close() };
}

/** setTimeout as the engine's Schedule, every pending timer cleared at stop. */
function realTimers(): { schedule: Schedule; clearAll(): void } {
  const timers = new Set<NodeJS.Timeout>();
  return {
    schedule: (delayMs, fn) => {
      const t = setTimeout(() => {
        timers.delete(t);
        fn();
      }, delayMs);
      timers.add(t);
      return () => {
        clearTimeout(t);
        timers.delete(t);
      };
    },
    clearAll() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}

/** `verdict.participant.Participant` served from the engine, with health, reflection and the edge's refusals. */
/** Spans over OTLP when an endpoint is configured; off (nothing loaded) otherwise. */
async function openParticipantTracing(o: ParticipantOptions): Promise<ParticipantTracing['tracing']> {
  try {
    const otlpEndpoint = otlpEndpointFrom(o.otlpEndpoint);
    return await openTracing({
      serviceName: 'verdict-participant',
      instanceId: o.participantId,
      ...(otlpEndpoint !== undefined ? { otlpEndpoint } : {}),
    });
  } catch (err) {
    if (err instanceof TracingSetupError) throw new ParticipantStartupError(err.message);
    throw err;
  }
}

function serveParticipant(
  o: ParticipantOptions,
  engine: ParticipantEngine,
  tls: TlsMaterial | null,
  link: ClusterLink,
  log: Logger,
  traced: ParticipantTracing,
) {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': PARTICIPANT_MESSAGE_BYTES_MAX,
    'grpc.max_send_message_length': PARTICIPANT_MESSAGE_BYTES_MAX,
  });
  const gate = newGate();
  // With TLS only the cluster's nodes may send PREPARE and DECISION; their ids are learned from the cluster.
  const callers =
    tls === null
      ? null
      : new NodeCallers({ clusterId: o.clusterId, fetchMembers: () => link.members(), nowMs: () => Date.now(), log });
  // Oversized and undecodable requests are answered INVALID_ARGUMENT at the edge (src/transport/validate.ts); the log
  // lines about them are rate-limited.
  const refusals = new Refusals(log);
  const guarded = guardService(
    participantService,
    participantHandlers(engine, gate, log, callers?.check ?? null, traced),
    {
      requestBytesMax: PARTICIPANT_MESSAGE_BYTES_MAX,
      onRefused: (method, details, peer) =>
        refusals.refuse(
          /exceeds the limit/.test(details) ? 'too_large' : 'undecodable',
          { method, peer },
          `request refused: ${details}`,
        ),
    },
  );
  server.addService(guarded.definition, guarded.implementation);
  const health = addHealth(server, ['verdict.participant.Participant']);
  addReflection(server, [participantPackageDefinition]);
  return { server, gate, callers, health };
}

/**
 * Registration, one attempt at a time: what retrying can fix (a node down,
 * no leader yet) is retried with capped exponential backoff and a log line;
 * what it cannot (a wrong cluster id, a refused certificate) rejects
 * `registered` with the reason, and the CLI stops with one line.
 */
function register(
  o: ParticipantOptions,
  link: ClusterLink,
  advertise: string,
  withTls: boolean,
  schedule: Schedule,
  log: Logger,
): { registered: Promise<void>; stopping(): boolean; stop(): void } {
  let stopping = false;
  let attempts = 0;
  // The same permanent-looking reason in a row (a TLS refusal, an UNIMPLEMENTED): retried up to a bound (retryAnyway).
  let lastReason = '';
  let sameInARow = 0;
  const retryMs = o.registerRetryMs ?? 500;
  const retryMaxMs = Math.max(retryMs, o.registerRetryMaxMs ?? 10_000);
  const registered = new Promise<void>((resolve, reject) => {
    const attempt = (): void => {
      if (stopping) return;
      attempts += 1;
      link.register(o.participantId, advertise, resourceKindOf(o), SERVED_OPTIONAL).then(
        () => {
          log.info({ endpoint: advertise, attempts }, 'registered with the cluster');
          resolve();
        },
        (err: Error) => {
          if (stopping) return;
          const f = classifyRegistrationError(err as grpc.ServiceError, withTls);
          const kind = f.reason.startsWith('tls-') ? 'tls' : f.reason;
          sameInARow = kind === lastReason ? sameInARow + 1 : 1;
          lastReason = kind;
          if (f.permanent && !retryAnyway(f.reason, sameInARow)) {
            log.error(
              { attempts, reason: f.reason, err: f.message },
              'the cluster refused the registration; retrying cannot fix this',
            );
            reject(
              new RegistrationRefusedError(
                f.reason,
                `the cluster refused to register participant ${o.participantId}: ${f.message}`,
              ),
            );
            return;
          }
          const waitMs = registrationBackoffMs(attempts, retryMs, retryMaxMs);
          if (attempts <= 5 || attempts % 10 === 0)
            log.warn(
              { attempts, reason: f.reason, err: f.message, retryInMs: waitMs },
              'registration with the cluster failed; retrying',
            );
          schedule(waitMs, attempt);
        },
      );
    };
    attempt();
  });
  // Callers that never await it (the CLI does) must not see an unhandled rejection.
  registered.catch(() => {});
  return {
    registered,
    stopping: () => stopping,
    stop: () => {
      stopping = true;
    },
  };
}

/**
 * Heuristic acts done by hand on a database participant while the cluster was
 * unreachable are reported once it is reachable and this participant is
 * registered (R4).
 */
function reportHeuristics(
  o: ParticipantOptions,
  opened: OpenedResource,
  link: ClusterLink,
  registration: ReturnType<typeof register>,
  log: Logger,
): { stop(): Promise<void> } {
  let reporter: HeuristicReporter | null = null;
  const { db, kit } = opened;
  if (db !== null && kit !== null) {
    const resourceDb = db.resource;
    void registration.registered.then(() => {
      if (registration.stopping()) return;
      reporter = new kit.HeuristicReporter({
        unreported: () => resourceDb.unreportedHeuristics(),
        markReported: (act) => resourceDb.markHeuristicReported(act.gid),
        report: (act) =>
          link.reportHeuristic({
            participantId: o.participantId,
            txnId: act.txnId,
            outcome: outcomeToWire(act.outcome),
            gid: act.gid,
            operator: act.operator,
            reason: act.reason,
            atMs: act.atMs,
          }),
        log,
        intervalMs: o.heuristicReportIntervalMs,
      });
      reporter.start();
    });
  }
  return { stop: async () => await reporter?.stop() };
}

function bind(server: grpc.Server, listen: string, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => {
    if (!/^.+:\d+$/.test(listen))
      return reject(new ParticipantStartupError(`listen address "${listen}" is not HOST:PORT`));
    server.bindAsync(listen, credentials, (err, port) => {
      if (!err) return resolve(port);
      const why = /EADDRINUSE/.test(err.message)
        ? 'the address is in use; pick another port'
        : err.message.replace(/\s+/g, ' ');
      reject(new ParticipantStartupError(`cannot listen on ${listen}: ${why}`));
    });
  });
}

/** The resource kind the participant registers with (shown by `verdict participants` and the console). */
export function resourceKindOf(o: Pick<ParticipantOptions, 'postgres' | 'mysql' | 'tcc'>): string {
  if (o.postgres) return 'postgres';
  if (o.mysql) return 'mysql';
  if (o.tcc) return o.tcc.postgres ? 'tcc-postgres' : 'tcc-memory';
  return 'memory';
}
