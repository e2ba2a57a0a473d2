// The real participant process: the journal on disk, the memory resource and
// the engine rebuilt from it, `verdict.participant.Participant` served over
// gRPC, registration with the cluster, and the in-doubt recovery loop asking
// Coordinator.GetOutcome. The engine holds every protocol decision; this file
// only wires real time, disk and network to it, plus what operators use:
// gRPC health and reflection, optional Prometheus metrics, and a graceful
// stop (new PREPAREs get NO, requests in flight finish first).
import { readFile, writeFile, rename } from 'node:fs/promises';
import { checkDataDir, DataDirError } from '../storage/data-dir.ts';
import { guardService, Refusals } from '../transport/validate.ts';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { shutdownServer } from '../transport/server.ts';
import type { Logger } from 'pino';
import { PARTICIPANT_MESSAGE_BYTES_MAX, participantPackageDefinition, participantService } from '../transport/participant-rpc.ts';
import { addHealth, addReflection, serveMetrics, MetricsListenError, type MetricsServer } from '../transport/ops.ts';
import { loadTls, TlsSetupError, type TlsFiles, type TlsMaterial } from '../transport/tls.ts';
import { channelCredentials, serverCredentials } from '../transport/tls-credentials.ts';
import { ClusterLink, toClusterOutcome } from './cluster-link.ts';
import { ParticipantEngine, type EngineOptions } from './engine.ts';
import { FileJournal } from './journal.ts';
import { MemoryResource } from './memory.ts';
import { MemoryState } from './memory-state.ts';
import { isDecisionRecord, isParticipantRecord, type AskedOutcome, type AskOutcome, type AskOutcomes, type Journal, type ParticipantRecord, type Schedule } from './types.ts';
import type { JournalStats } from './journal.ts';
import type { PostgresResource } from './postgres.ts';
import type { PostgresParticipantOptions } from './postgres-recovery.ts';
import type { PreparedSetup } from './prepared-recovery.ts';
import type { MySqlResource } from './resources/mysql/resource.ts';
import type { MySqlParticipantOptions } from './resources/mysql/participant.ts';
import type { HeuristicReporter } from './heuristic.ts';
import type { TccParticipantOptions, TccResource, TccSetup } from './tcc/setup.ts';
import type { AskAbort } from './tcc/expiry.ts';
import { insecureWarning, plaintextRefusal } from '../transport/listen-policy.ts';
import { participantCertificateProblem } from './certificate-check.ts';
import { classifyRegistrationError, registrationBackoffMs, TLS_REFUSALS_BEFORE_GIVING_UP } from './registration.ts';
import { endExchanges, newGate, participantHandlers } from './serve.ts';
import { NodeCallers } from './node-callers.ts';

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
   * Without TLS, serve plaintext beyond loopback anyway (src/transport/listen-policy.ts);
   * the participant warns at every start. False by default.
   */
  insecure?: boolean;
  /** How often acts done by hand (`verdict participant resolve`) not yet acknowledged by the cluster are reported again. */
  heuristicReportIntervalMs?: number;
  /** Engine bounds and timings (inDoubtAfterMs, askBackoffMinMs, ...). */
  engine?: Partial<Omit<EngineOptions, 'clusterId' | 'participantId' | 'resource' | 'journal' | 'clock' | 'schedule' | 'askOutcome' | 'log'>>;
}

export interface ParticipantRuntime<R = MemoryResource> {
  /** host:port the participant serves on (the bound port, even when listen asked for 0). */
  address: string;
  engine: ParticipantEngine;
  resource: R;
  /** Resolves once the cluster has accepted the registration; rejects with RegistrationRefusedError when it never will. */
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

const IDENTITY_FILE = 'participant.json';

type PostgresKit = typeof import('./postgres-kit.ts');

/**
 * The PostgreSQL half of the runtime, loaded on demand, so that a memory
 * participant (and `verdict/participant`) never loads `pg`. An application
 * that bundles or prunes its dependencies may leave `pg` out: its absence is
 * then a refusal that says what to install.
 */
async function loadPostgresKit(): Promise<PostgresKit> {
  try {
    return await import('./postgres-kit.ts');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if ((e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'MODULE_NOT_FOUND') && /'pg'/.test(e.message)) {
      throw new ParticipantStartupError('the PostgreSQL resource needs the `pg` package, which is not installed: run `npm install pg` in your project');
    }
    throw err;
  }
}

export async function startParticipant(o: ParticipantOptions & { postgres: PostgresParticipantOptions }): Promise<ParticipantRuntime<PostgresResource>>;
export async function startParticipant(o: ParticipantOptions & { mysql: MySqlParticipantOptions }): Promise<ParticipantRuntime<MySqlResource>>;
export async function startParticipant(o: ParticipantOptions & { tcc: TccParticipantOptions }): Promise<ParticipantRuntime<TccResource>>;
export async function startParticipant(o: ParticipantOptions): Promise<ParticipantRuntime>;
export async function startParticipant(o: ParticipantOptions): Promise<ParticipantRuntime<MemoryResource | PostgresResource | MySqlResource | TccResource>> {
  const log = o.logger.child({ participantId: o.participantId, clusterId: o.clusterId });
  if (o.clusterId === '' || o.participantId === '') throw new ParticipantStartupError('cluster id and participant id must not be empty');
  if (o.endpointsOfCluster.length === 0) throw new ParticipantStartupError('at least one cluster endpoint is needed');
  let tls: TlsMaterial | null = null;
  if (o.tls !== undefined) {
    try {
      tls = loadTls(o.tls, (k) => `--${k}`);
    } catch (err) {
      if (err instanceof TlsSetupError) throw new ParticipantStartupError(err.message);
      throw err;
    }
    if (tls.leaf === null) throw new ParticipantStartupError('a participant with TLS serves it: give --cert and --key with --ca');
    const problem = participantCertificateProblem(tls.leaf, o.tls.cert ?? '', o.participantId, o.advertise ?? o.listen);
    if (problem !== null) throw new ParticipantStartupError(problem);
  } else {
    const refusal = plaintextRefusal({ listen: o.listen, insecure: o.insecure === true, tlsHow: '--ca, --cert and --key', insecureHow: '--insecure' });
    if (refusal !== null) throw new ParticipantStartupError(refusal);
  }
  try {
    // The same check as a node's (src/storage/data-dir.ts): one line naming the path and the cause.
    await checkDataDir(o.dataDir);
  } catch (err) {
    if (err instanceof DataDirError) throw new ParticipantStartupError(err.message);
    throw err;
  }
  await checkIdentity(o.dataDir, o.clusterId, o.participantId);

  // A database resource (PostgreSQL, MySQL) holds the prepared state itself; its journal holds no data.
  if ([o.postgres, o.mysql, o.tcc].filter((r) => r !== undefined).length > 1) throw new ParticipantStartupError('a participant has one resource: give one of postgres, mysql and tcc');
  let db: PreparedSetup<PostgresResource | MySqlResource> | null = null;
  const opened = { clusterId: o.clusterId, participantId: o.participantId, dataDir: o.dataDir, log, compactAfterRecords: o.compactAfterRecords };
  // Loaded only for a database participant: a memory participant needs neither `pg` nor `mysql2`.
  const pgKit = o.postgres !== undefined ? await loadPostgresKit() : null;
  const myKit = o.mysql !== undefined ? await import('./resources/mysql/kit.ts') : null;
  try {
    if (o.postgres !== undefined && pgKit !== null) db = await pgKit.openPostgresParticipant({ ...o.postgres, ...opened });
    if (o.mysql !== undefined && myKit !== null) db = await myKit.openMySqlParticipant({ ...o.mysql, ...opened });
  } catch (err) {
    if ((pgKit !== null && err instanceof pgKit.PostgresConfigError) || (myKit !== null && err instanceof myKit.MySqlConfigError)) throw new ParticipantStartupError((err as Error).message);
    throw err;
  }
  let tcc: TccSetup | null = null;
  if (o.tcc !== undefined) {
    try {
      tcc = await (await import('./tcc/setup.ts')).openTccParticipant({ ...o.tcc, ...opened });
    } catch (err) {
      // The PostgreSQL half's refusal (PostgresConfigError), loaded on demand like the resource itself.
      if ((err as Error).name === 'PostgresConfigError') throw new ParticipantStartupError((err as Error).message);
      throw err;
    }
  }
  const state = new MemoryState();
  const journal: Journal & { close(): Promise<void>; stats(): JournalStats } =
    tcc !== null
      ? tcc.journal
      : db !== null
        ? db.journal
        : await FileJournal.open<ParticipantRecord>({
            path: join(o.dataDir, 'journal.log'),
            fold: state,
            isRecord: isParticipantRecord,
            compactAfterRecords: o.compactAfterRecords,
            deferred: isDecisionRecord,
            log,
          });
  const resource: MemoryResource | PostgresResource | MySqlResource | TccResource =
    tcc !== null ? tcc.resource : db !== null ? db.resource : MemoryResource.restore(state.data, state.preparedWrites(), (txnId, writes) => state.offerWrites(txnId, writes));
  // With TLS the servers at the endpoints must hold certificates of this cluster (OU).
  const link = new ClusterLink({ clusterId: o.clusterId, endpoints: o.endpointsOfCluster, ...(tls ? { credentials: channelCredentials(tls, { clusterId: o.clusterId }) } : {}) });
  const timers = new Set<NodeJS.Timeout>();
  const schedule: Schedule = (delayMs, fn) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, delayMs);
    timers.add(t);
    return () => {
      clearTimeout(t);
      timers.delete(t);
    };
  };
  const askOutcome: AskOutcome = (txnId, cb) =>
    link.outcome(txnId, o.participantId).then(
      (r) => cb(null, toClusterOutcome(r.outcome)),
      (err: Error) => cb(err, 'unknown'),
    );
  // One question per round for all in-doubt transactions (GetOutcomes); a cluster that does not know it yet is asked one by one.
  let batchedAsks = true;
  const askOutcomes: AskOutcomes = (txnIds, cb) => {
    const single = (): void => {
      const answers = new Map<string, AskedOutcome>();
      let left = txnIds.length;
      for (const txnId of txnIds)
        askOutcome(txnId, (err, outcome) => {
          answers.set(txnId, { err, outcome });
          if (--left === 0) cb(null, answers);
        });
    };
    if (!batchedAsks) return single();
    link.outcomes(txnIds, o.participantId).then(
      (rs) => cb(null, new Map(rs.map((r, i) => [txnIds[i], r instanceof Error ? { err: r, outcome: 'unknown' } : { err: null, outcome: toClusterOutcome(r.outcome) }]))),
      (err: Error & { code?: number }) => {
        if (err.code !== grpc.status.UNIMPLEMENTED) return cb(err, new Map());
        batchedAsks = false;
        log.warn('the cluster does not answer GetOutcomes (an older version): asking about in-doubt transactions one by one');
        single();
      },
    );
  };
  const askAbort: AskAbort = (txnId, reason, cb) =>
    link.abort(txnId, reason).then(
      (r) => cb(null, toClusterOutcome(r.outcome)),
      (err: Error) => cb(err, 'unknown'),
    );
  const engine = new ParticipantEngine({
    ...o.engine,
    clusterId: o.clusterId,
    participantId: o.participantId,
    resource,
    journal,
    clock: { nowMs: () => Date.now() },
    schedule,
    askOutcome,
    askOutcomes,
    log,
  });
  engine.recover(tcc !== null ? tcc.records : db !== null ? db.records : state.txnRecords());

  const server = new grpc.Server({
    'grpc.max_receive_message_length': PARTICIPANT_MESSAGE_BYTES_MAX,
    'grpc.max_send_message_length': PARTICIPANT_MESSAGE_BYTES_MAX,
  });
  const gate = newGate();
  // With TLS only the cluster's nodes may send PREPARE and DECISION; their ids are learned from the cluster.
  const callers = tls === null ? null : new NodeCallers({ clusterId: o.clusterId, fetchMembers: () => link.members(), nowMs: () => Date.now(), log });
  // Oversized and undecodable requests are answered INVALID_ARGUMENT at the edge (src/transport/validate.ts); the log lines about them are rate-limited.
  const refusals = new Refusals(log);
  const guarded = guardService(participantService, participantHandlers(engine, gate, log, callers?.check ?? null), {
    requestBytesMax: PARTICIPANT_MESSAGE_BYTES_MAX,
    onRefused: (method, details, peer) => refusals.refuse(/exceeds the limit/.test(details) ? 'too_large' : 'undecodable', { method, peer }, `request refused: ${details}`),
  });
  server.addService(guarded.definition, guarded.implementation);
  const health = addHealth(server, ['verdict.participant.Participant']);
  addReflection(server, [participantPackageDefinition]);
  let port: number;
  let metricsServer: MetricsServer | null = null;
  try {
    port = await bind(server, o.listen, tls ? serverCredentials(tls) : grpc.ServerCredentials.createInsecure());
    if (o.metricsListen !== undefined) {
      const { participantMetrics } = await import('./metrics.ts');
      const dbSetup = db;
      metricsServer = await serveMetrics(
        o.metricsListen,
        participantMetrics(o.participantId, engine, Date.now, () => callers?.refused ?? 0, dbSetup !== null ? () => dbSetup.resource.preparedStats() : undefined, tcc?.counts),
      );
    }
  } catch (err) {
    server.forceShutdown();
    await journal.close();
    await db?.close();
    await tcc?.close();
    link.close();
    if (err instanceof MetricsListenError) throw new ParticipantStartupError(`${err.message}; check --metrics-listen`);
    throw err;
  }
  const address = `${o.listen.slice(0, o.listen.lastIndexOf(':'))}:${port}`;
  if (tls === null && o.insecure === true) log.warn({ listen: o.listen, insecure: true }, insecureWarning(o.listen));
  const advertise = o.advertise ?? address;
  engine.start();
  db?.start(engine, askOutcome);
  tcc?.start(engine, askAbort, schedule);
  health.set('SERVING');
  log.info({ address, advertise, metrics: metricsServer ? `http://${metricsServer.address}/metrics` : undefined, inDoubt: engine.inDoubt().length, journal: journal.stats() }, 'participant started');

  // Registration, one attempt at a time: what retrying can fix (a node down,
  // no leader yet) is retried with capped exponential backoff and a log line;
  // what it cannot (a wrong cluster id, a refused certificate) rejects
  // `registered` with the reason, and the CLI stops with one line.
  let stopping = false;
  let attempts = 0;
  let tlsRefusals = 0;
  const retryMs = o.registerRetryMs ?? 500;
  const retryMaxMs = Math.max(retryMs, o.registerRetryMaxMs ?? 10_000);
  const registered = new Promise<void>((resolve, reject) => {
    const attempt = (): void => {
      if (stopping) return;
      attempts += 1;
      link.register(o.participantId, advertise, resourceKindOf(o)).then(
        () => {
          log.info({ endpoint: advertise, attempts }, 'registered with the cluster');
          void callers?.refresh();
          resolve();
        },
        (err: Error) => {
          if (stopping) return;
          const f = classifyRegistrationError(err as grpc.ServiceError, tls !== null);
          const fromTls = f.reason.startsWith('tls-');
          tlsRefusals = fromTls ? tlsRefusals + 1 : 0;
          if (f.permanent && (!fromTls || tlsRefusals >= TLS_REFUSALS_BEFORE_GIVING_UP)) {
            log.error({ attempts, reason: f.reason, err: f.message }, 'the cluster refused the registration; retrying cannot fix this');
            reject(new RegistrationRefusedError(f.reason, `the cluster refused to register participant ${o.participantId}: ${f.message}`));
            return;
          }
          const waitMs = registrationBackoffMs(attempts, retryMs, retryMaxMs);
          if (attempts <= 5 || attempts % 10 === 0) log.warn({ attempts, reason: f.reason, err: f.message, retryInMs: waitMs }, 'registration with the cluster failed; retrying');
          schedule(waitMs, attempt);
        },
      );
    };
    attempt();
  });
  // Callers that never await it (the CLI does) must not see an unhandled rejection.
  registered.catch(() => {});

  // Heuristic acts done by hand while the cluster was unreachable are reported
  // once it is reachable and this participant is registered (R4).
  let reporter: HeuristicReporter | null = null;
  const kit = pgKit ?? myKit;
  if (db !== null && kit !== null) {
    const resourceDb = db.resource;
    const { HeuristicReporter } = kit;
    void registered.then(() => {
      if (stopping) return;
      reporter = new HeuristicReporter({
        unreported: () => resourceDb.unreportedHeuristics(),
        markReported: (act) => resourceDb.markHeuristicReported(act.gid),
        report: (act) =>
          link.reportHeuristic({
            participantId: o.participantId,
            txnId: act.txnId,
            outcome: act.outcome === 'committed' ? 'OUTCOME_COMMITTED' : 'OUTCOME_ABORTED',
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

  let stopped: Promise<void> | null = null;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      stopping = true;
      // Drain: new PREPAREs are answered NO, PREPAREs and DECISIONs already
      // in flight finish (their journal records land), then everything stops.
      // Transactions left prepared stay in the journal and are resolved with
      // the cluster after the next start (R4).
      gate.draining = true;
      health.set('NOT_SERVING');
      const drainBy = Date.now() + (o.drainTimeoutMs ?? 5_000);
      while ((gate.inFlight > 0 || engine.counts().preparing > 0) && Date.now() < drainBy) await new Promise((r) => setTimeout(r, 10));
      if (gate.inFlight > 0) log.warn({ inFlight: gate.inFlight }, 'stopping with requests still in flight');
      // The leaders' Exchange streams end now, so the server below need not wait out its grace for them.
      endExchanges(gate);
      engine.stop();
      await reporter?.stop();
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await shutdownServer(server, 2_000);
      await db?.close();
      await tcc?.close();
      link.close();
      await journal.close();
      await metricsServer?.close();
      log.info({ prepared: engine.counts().prepared }, 'participant stopped');
    })());

  return { address, engine, resource, registered, metricsAddress: metricsServer?.address ?? null, stop };
}

/** R7: a data directory belongs to one (cluster id, participant id); another identity is refused before anything is touched. */
async function checkIdentity(dataDir: string, clusterId: string, participantId: string): Promise<void> {
  const path = join(dataDir, IDENTITY_FILE);
  let text: string | null = null;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (text === null) {
    const tmp = `${path}.tmp`;
    await writeFile(tmp, `${JSON.stringify({ clusterId, participantId })}\n`, { flush: true });
    await rename(tmp, path);
    return;
  }
  let id: { clusterId?: unknown; participantId?: unknown };
  try {
    id = JSON.parse(text) as typeof id;
  } catch {
    throw new ParticipantStartupError(`${path} is not valid JSON; it names the participant this data directory belongs to`);
  }
  if (id.clusterId !== clusterId || id.participantId !== participantId) {
    throw new ParticipantStartupError(
      `data directory ${dataDir} belongs to participant "${String(id.participantId)}" of cluster "${String(id.clusterId)}", not "${participantId}" of "${clusterId}"; use another --data directory`,
    );
  }
}

function bind(server: grpc.Server, listen: string, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => {
    if (!/^.+:\d+$/.test(listen)) return reject(new ParticipantStartupError(`listen address "${listen}" is not HOST:PORT`));
    server.bindAsync(listen, credentials, (err, port) => {
      if (!err) return resolve(port);
      const why = /EADDRINUSE/.test(err.message) ? 'the address is in use; pick another port' : err.message.replace(/\s+/g, ' ');
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
