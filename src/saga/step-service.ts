// The step service SDK: serves `verdict.saga.SagaStep` (proto/saga.proto)
// for a set of named step handlers, with the inbox (src/saga/inbox.ts) kept
// in a synced journal file, and registers with the cluster like a
// participant. A repeated key is answered from the inbox; a step's effect is
// applied with its inbox record, in one synced write.
//
// A handler decides the step from the request: DONE with an output and an
// effect (a string the service's `apply` turns into its state change, run
// when the record is written and again on recovery), or FAILED. Throwing is a
// transient error: nothing is recorded and the orchestrator retries.
//
// With TLS (`tls`, the same files and checks as a participant's) it serves
// mutual TLS, takes calls only from the nodes of its cluster, and registers
// over TLS; a TLS cluster calls every step service over TLS. Without TLS it
// serves plaintext on loopback only, unless told `insecure`.

import { childLogger } from '../util/child-log.ts';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { participantCertificateProblem } from '../participant/certificate-check.ts';
import { ClusterLink } from '../participant/cluster-link.ts';
import { FileJournal } from '../participant/journal.ts';
import { NodeCallers } from '../participant/node-callers.ts';
import { insecureWarning, plaintextRefusal } from '../transport/listen-policy.ts';
import { loadTls, TlsSetupError, type TlsFiles, type TlsMaterial } from '../transport/tls.ts';
import { nodeChannelCredentials, serverCredentials } from '../transport/tls-credentials.ts';
import { guardService } from '../transport/validate.ts';
import {
  SAGA_IDS_PER_CALL_MAX,
  sagaStepService,
  type SagaEndsAck,
  type SagaStepHandlers,
  type StepRequest as WireStepRequest,
  type StepResult,
} from '../transport/saga-rpc.ts';
import type { StepRequest } from './engine.ts';
import { ENDED_MAX, SagaInbox, type InboxRecord, type StepHandler } from './inbox.ts';
import type { StepAnswer } from './engine.ts';
import type { PgStepHandler } from './postgres-inbox.ts';
import { STEPS_MAX, stepKey, type StepKind } from './state.ts';
import { OldestFirst } from '../util/oldest-first.ts';
import { sagaIdProblem } from '../domain/saga-id.ts';
import { loadWith } from '../util/optional-package.ts';

export interface StepHandlers {
  [name: string]: { action: StepHandler; compensate: StepHandler };
}

/** PostgreSQL step handlers: each runs inside the inbox's local transaction (src/saga/postgres-inbox.ts). */
export interface PgStepHandlers {
  [name: string]: { action: PgStepHandler; compensate: PgStepHandler };
}

export interface StepServiceOptions {
  clusterId: string;
  /** The id it registers under; steps name it as their service. */
  serviceId: string;
  listen: string;
  endpointsOfCluster: string[];
  dataDir: string;
  /** Memory step handlers, with the inbox in a synced journal file under dataDir. */
  handlers?: StepHandlers;
  /** PostgreSQL: the inbox is a table in this database, written in each step's own transaction. */
  postgres?: { url: string; handlers: PgStepHandlers; poolMax?: number };
  /** Applies an effect to the service's state (on each new record and on recovery, in journal order). */
  apply?: (r: InboxRecord) => void;
  logger: Logger;
  registerRetryMs?: number;
  /**
   * Mutual TLS, as a participant's (docs/tls.md): the certificate (CN = the
   * service id, OU = the cluster id, serverAuth and clientAuth, naming the
   * listen address) serves the nodes' calls and presents this service to them.
   */
  tls?: TlsFiles;
  /**
   * Serve and call plaintext: without TLS a step service starts only with this (src/transport/listen-policy.ts), and
   * warns at every start; false by default.
   */
  insecure?: boolean;
}

/** A step service that cannot start as configured (its TLS files, plaintext without insecure); the message says why. */
export class StepServiceStartupError extends Error {
  override name = 'StepServiceStartupError';
}

/** The step service's TLS material, checked as a participant's; null without TLS (refused unless insecure). */
function stepServiceTls(o: StepServiceOptions): TlsMaterial | null {
  if (o.tls === undefined) {
    const refusal = plaintextRefusal({
      listen: o.listen,
      insecure: o.insecure === true,
      tlsHow: 'tls (ca, cert and key; --ca, --cert and --key)',
      insecureHow: 'insecure: true (--insecure)',
    });
    if (refusal !== null) throw new StepServiceStartupError(`step service ${o.serviceId}: ${refusal}`);
    return null;
  }
  let tls: TlsMaterial;
  try {
    tls = loadTls(o.tls, (k) => `tls.${k}`);
  } catch (err) {
    if (err instanceof TlsSetupError) throw new StepServiceStartupError(`step service ${o.serviceId}: ${err.message}`);
    throw err;
  }
  if (tls.leaf === null)
    throw new StepServiceStartupError(
      `step service ${o.serviceId}: with TLS it serves the nodes' calls: give tls.cert and tls.key with tls.ca`,
    );
  const problem = participantCertificateProblem(tls.leaf, o.tls.cert ?? '', o.serviceId, o.listen);
  if (problem !== null) throw new StepServiceStartupError(`step service ${o.serviceId}: ${problem}`);
  return tls;
}

export interface EndCounts {
  /** End calls (one saga each) and EndSagas calls (many) answered. */
  endCalls: number;
  endSagasCalls: number;
  /** Sagas named in those calls. */
  sagas: number;
  /** Calls to the cluster to confirm ends: SagaStatus for End, SagaStates for EndSagas. */
  confirmCalls: number;
}

/** End calls being confirmed with the cluster at once; beyond, RESOURCE_EXHAUSTED (the orchestrator retries). */
const END_CONFIRMATIONS_MAX = 64;

export interface StepService {
  address: string;
  /** The memory inbox (absent with postgres). */
  inbox: SagaInbox | null;
  /** End notices this service took so far, and the status calls it made to confirm them (for operators and bench/). */
  endCounts(): EndCounts;
  registered: Promise<void>;
  stop(): Promise<void>;
}

/**
 * What a compaction keeps: every step record of a saga not yet ended, and the
 * newest ENDED_MAX ends (later refusals rest on them; the inbox remembers no
 * more). Per saga, so an end costs its own records and not the whole journal's.
 */
class InboxFold {
  private readonly live = new Map<string, InboxRecord[]>();
  private readonly ends = new Map<string, InboxRecord>();
  private readonly oldestEnd = new OldestFirst(this.ends);
  add(r: InboxRecord): void {
    if (r.t === 'end') {
      this.live.delete(r.sagaId);
      this.ends.delete(r.sagaId);
      this.ends.set(r.sagaId, r);
      this.oldestEnd.trimTo(ENDED_MAX);
      return;
    }
    const list = this.live.get(r.sagaId);
    if (list) list.push(r);
    else this.live.set(r.sagaId, [r]);
  }
  snapshot(): InboxRecord[] {
    // Ends first: a saga ended and started again under the same id is refused by the inbox anyway.
    return [...this.ends.values(), ...[...this.live.values()].flat()];
  }
}

const isInboxRecord = (v: unknown): v is InboxRecord => {
  const r = v as InboxRecord | null;
  return (
    r !== null &&
    typeof r === 'object' &&
    (r.t === 'step' || r.t === 'end') &&
    typeof r.sagaId === 'string' &&
    typeof r.key === 'string' &&
    typeof r.status === 'string'
  );
};

export async function startStepService(o: StepServiceOptions): Promise<StepService> {
  const log = childLogger(o.logger, { stepService: o.serviceId });
  const tls = stepServiceTls(o);
  mkdirSync(o.dataDir, { recursive: true });
  const link = new ClusterLink({
    clusterId: o.clusterId,
    endpoints: o.endpointsOfCluster,
    ...(tls ? { credentials: nodeChannelCredentials(tls, { clusterId: o.clusterId }) } : {}),
  });
  // With TLS, only the nodes of this cluster may ask for a step's effect.
  const callers =
    tls === null
      ? null
      : new NodeCallers({ clusterId: o.clusterId, fetchMembers: () => link.members(), nowMs: () => Date.now(), log });
  const backend = o.postgres ? await pgBackend(o.postgres) : await memoryBackend(o);
  const counts: EndCounts = { endCalls: 0, endSagasCalls: 0, sagas: 0, confirmCalls: 0 };
  const handlers = stepHandlers(o, backend, link, nodesOnly(callers, o.serviceId, log), log, counts);
  const server = new grpc.Server();
  const guarded = guardService(sagaStepService, handlers, {
    requestBytesMax: 4 * 1024 * 1024,
    onRefused: (method, details) => log.warn({ method, details }, 'request refused'),
  });
  server.addService(guarded.definition, guarded.implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(o.listen, tls ? serverCredentials(tls) : grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const address = `${o.listen.slice(0, o.listen.lastIndexOf(':'))}:${port}`;
  if (tls === null && o.insecure === true) log.warn({ listen: o.listen, insecure: true }, insecureWarning(o.listen));
  const registration = registerUntilDone(o, link, address, callers, log);
  return {
    address,
    inbox: backend.inbox,
    endCounts: () => ({ ...counts }),
    registered: registration.registered,
    stop: async () => {
      registration.stop();
      link.close();
      await new Promise<void>((r) => server.tryShutdown(() => r()));
      await backend.close();
    },
  };
}

type NodesOnly = <Req, Res>(what: string, handler: grpc.handleUnaryCall<Req, Res>) => grpc.handleUnaryCall<Req, Res>;

/**
 * With TLS, a handler that takes calls only from the nodes of the cluster (PERMISSION_DENIED otherwise); without, the
 * handler itself.
 */
function nodesOnly(callers: NodeCallers | null, serviceId: string, log: Logger): NodesOnly {
  return <Req, Res>(what: string, handler: grpc.handleUnaryCall<Req, Res>): grpc.handleUnaryCall<Req, Res> =>
    callers === null
      ? handler
      : (call, cb) =>
          callers.check(call, (refusal) => {
            if (refusal === null) return handler(call, cb);
            log.warn({ peer: call.getPeer() }, `${what} refused: ${refusal}`);
            cb({
              code: grpc.status.PERMISSION_DENIED,
              details: `step service ${serviceId} takes ${what} only from a node of its cluster: ${refusal}`,
            });
          });
}

/** Execute or Compensate: checks the call at the edge and runs the step through the backend. */
function stepCall(
  o: StepServiceOptions,
  backend: Backend,
  log: Logger,
  kind: StepKind,
): grpc.handleUnaryCall<WireStepRequest, StepResult> {
  return (call, cb) => {
    const r = call.request;
    const bad = (details: string): void => cb({ code: grpc.status.INVALID_ARGUMENT, details });
    if (r.clusterId !== o.clusterId)
      return cb({
        code: grpc.status.FAILED_PRECONDITION,
        details: `the call is for cluster "${r.clusterId}", this step service is in cluster "${o.clusterId}"`,
      });
    if (r.step >= STEPS_MAX) return bad(`saga ${r.sagaId}: step ${r.step} is beyond the limit of ${STEPS_MAX} steps`);
    // The key is the saga's, the step's and the kind's: one rule, checked here.
    if (r.key !== stepKey(r.sagaId, r.step, kind))
      return bad(
        `saga ${r.sagaId} step ${r.step}: key ${JSON.stringify(r.key.slice(0, 80))} is not ${stepKey(r.sagaId, r.step, kind)}`,
      );
    if (!backend.has(r.name))
      return cb({
        code: grpc.status.UNIMPLEMENTED,
        details: `saga ${r.sagaId} step ${r.step}: step service ${o.serviceId} has no handler named ${JSON.stringify(r.name.slice(0, 80))}`,
      });
    const req: StepRequest = {
      sagaId: r.sagaId,
      step: r.step,
      kind,
      key: r.key,
      name: r.name,
      input: r.input,
      outputs: r.outputs,
      attempt: r.attempt,
    };
    backend.handle(req, (err, a) => {
      if (err || !a) {
        log.info(
          { sagaId: r.sagaId, step: r.step, kind, err: err?.message },
          'saga step failed; the orchestrator retries it',
        );
        return cb({
          code: grpc.status.UNAVAILABLE,
          details: `saga ${r.sagaId} step ${r.step} ${kind}: ${err?.message ?? 'no answer'}`,
        });
      }
      cb(null, { status: a.status === 'done' ? 'STEP_DONE' : 'STEP_FAILED', output: a.output, reason: a.reason });
    });
  };
}

/**
 * The SagaStep service's handlers: Execute and Compensate run a step through the backend, End (and EndSagas, for many
 * sagas) drops a saga's keys once the cluster confirms its end.
 */
function stepHandlers(
  o: StepServiceOptions,
  backend: Backend,
  link: ClusterLink,
  fromNode: NodesOnly,
  log: Logger,
  counts: EndCounts,
): SagaStepHandlers {
  const serve = (kind: StepKind): grpc.handleUnaryCall<WireStepRequest, StepResult> => stepCall(o, backend, log, kind);
  const confirmations = { n: 0 };
  const endConfirmed = endConfirmer(o, backend, link, log, confirmations, counts);
  const endsConfirmed = endsConfirmer(o, backend, link, log, confirmations, counts);
  return {
    Execute: fromNode('Execute', serve('action')),
    Compensate: fromNode('Compensate', serve('compensate')),
    End: fromNode('End', (call, cb) => {
      if (call.request.clusterId !== o.clusterId)
        return cb({
          code: grpc.status.FAILED_PRECONDITION,
          details: `the call is for cluster "${call.request.clusterId}"`,
        });
      counts.endCalls++;
      counts.sagas++;
      endConfirmed(call.request.sagaId, cb);
    }),
    EndSagas: fromNode('EndSagas', (call, cb) => {
      const r = call.request;
      if (r.clusterId !== o.clusterId)
        return cb({ code: grpc.status.FAILED_PRECONDITION, details: `the call is for cluster "${r.clusterId}"` });
      if (r.sagaIds.length > SAGA_IDS_PER_CALL_MAX)
        return cb({
          code: grpc.status.INVALID_ARGUMENT,
          details: `EndSagas takes at most ${SAGA_IDS_PER_CALL_MAX} saga ids; ${r.sagaIds.length} were sent`,
        });
      const bad = r.sagaIds.find((id) => sagaIdProblem(id) !== null);
      if (bad !== undefined) return cb({ code: grpc.status.INVALID_ARGUMENT, details: sagaIdProblem(bad) ?? '' });
      counts.endSagasCalls++;
      counts.sagas += r.sagaIds.length;
      endsConfirmed(r.sagaIds, cb);
    }),
  };
}

/** The answer while END_CONFIRMATIONS_MAX confirmations are in flight: the leader retries the End later. */
function confirmationsFull(serviceId: string): Partial<grpc.StatusObject> {
  return {
    code: grpc.status.RESOURCE_EXHAUSTED,
    details: `step service ${serviceId} is confirming ${END_CONFIRMATIONS_MAX} saga ends with the cluster; retry later`,
  };
}

/**
 * EndSagas: End for many sagas, confirmed with the cluster in one SagaStates
 * call and recorded in one durable write (the journal's group commit; for
 * PostgreSQL, one transaction). A saga whose end is recorded here already is
 * taken without asking; one the cluster does not have ended is left out of the
 * answer, with the reason in `problem`, and the orchestrator sends it again.
 * It counts as one confirmation toward END_CONFIRMATIONS_MAX, shared with End.
 */
function endsConfirmer(
  o: StepServiceOptions,
  backend: Backend,
  link: ClusterLink,
  log: Logger,
  confirmations: { n: number },
  counts: EndCounts,
): (sagaIds: readonly string[], cb: grpc.sendUnaryData<SagaEndsAck>) => void {
  return (sagaIds, cb) => {
    const ended: string[] = [];
    const ask: string[] = [];
    for (const id of new Set(sagaIds)) (backend.hasEnded(id) ? ended : ask).push(id);
    if (ask.length === 0) return cb(null, { ended, problem: '' });
    if (confirmations.n >= END_CONFIRMATIONS_MAX) return cb(confirmationsFull(o.serviceId));
    confirmations.n++;
    counts.confirmCalls++;
    link.sagaStates(ask).then(
      (states) => {
        confirmations.n--;
        const confirmed: string[] = [];
        const refused: string[] = [];
        for (const id of ask) {
          const a = states.get(id);
          if (a?.state === 'finished' || a?.state === 'compensated') confirmed.push(id);
          else
            refused.push(
              `saga ${id} is ${a === undefined ? 'not answered for' : a.refused !== '' ? `not readable (${a.refused})` : a.state === null ? 'unknown to the cluster' : `${a.state} on the cluster`}`,
            );
        }
        if (refused.length > 0)
          log.warn(
            { sagas: refused.length, first: refused[0] },
            'End refused for some sagas: the cluster does not have them ended',
          );
        const problem = (extra: string): string =>
          [refused.length > 0 ? `${refused.length} not ended, their keys stay (${refused[0]})` : '', extra]
            .filter((x) => x !== '')
            .join('; ');
        backend.endMany(confirmed, (err, done) =>
          cb(null, {
            ended: [...ended, ...done],
            problem: problem(err ? `the ends could not all be recorded (${err.message})` : ''),
          }),
        );
      },
      (err: Error) => {
        confirmations.n--;
        cb({
          code: grpc.status.UNAVAILABLE,
          details: `the ends of ${ask.length} sagas could not be confirmed with the cluster (${err.message}); retry`,
        });
      },
    );
  };
}

/**
 * End drops a saga's keys and refuses every later call of it, so an End
 * for a saga still running would wedge it: its next step could never run
 * here. The orchestrator sends End only once the saga's end is applied in
 * the log, so the end is confirmed with the cluster first (SagaStatus);
 * anything but FINISHED or COMPENSATED is refused, and the orchestrator,
 * which retries End until it is acknowledged, asks again. Without TLS this
 * is what stops a caller that is not a node; with TLS only nodes get here.
 */
function endConfirmer(
  o: StepServiceOptions,
  backend: Backend,
  link: ClusterLink,
  log: Logger,
  confirmations: { n: number },
  counts: EndCounts,
): (sagaId: string, cb: grpc.sendUnaryData<Record<string, never>>) => void {
  return (sagaId, cb) => {
    const bad = sagaIdProblem(sagaId);
    if (bad !== null) return cb({ code: grpc.status.INVALID_ARGUMENT, details: bad });
    if (confirmations.n >= END_CONFIRMATIONS_MAX) return cb(confirmationsFull(o.serviceId));
    confirmations.n++;
    counts.confirmCalls++;
    link.sagaState(sagaId).then(
      (state) => {
        confirmations.n--;
        if (state !== 'finished' && state !== 'compensated') {
          log.warn({ sagaId, state }, 'End refused: the cluster does not have the saga ended');
          return cb({
            code: grpc.status.FAILED_PRECONDITION,
            details: `saga ${sagaId} is ${state === null ? 'unknown to the cluster' : `${state} on the cluster`}: not ended, its keys stay`,
          });
        }
        backend.end(sagaId, (err) =>
          err ? cb({ code: grpc.status.UNAVAILABLE, details: err.message }) : cb(null, {}),
        );
      },
      (err: Error) => {
        confirmations.n--;
        cb({
          code: grpc.status.UNAVAILABLE,
          details: `saga ${sagaId}: its end could not be confirmed with the cluster (${err.message}); retry`,
        });
      },
    );
  };
}

/**
 * Registers the step service with the cluster, retrying every registerRetryMs until it is taken or the service stops.
 */
function registerUntilDone(
  o: StepServiceOptions,
  link: ClusterLink,
  address: string,
  callers: NodeCallers | null,
  log: Logger,
): { registered: Promise<void>; stop(): void } {
  let stopping = false;
  let timer: NodeJS.Timeout | null = null;
  const registered = new Promise<void>((resolve) => {
    const attempt = (): void => {
      if (stopping) return;
      link.register(o.serviceId, address, o.postgres ? 'saga-postgres' : 'saga-memory').then(
        () => {
          log.info({ address }, 'step service registered with the cluster');
          void callers?.refresh();
          resolve();
        },
        (err: Error) => {
          log.debug({ err: err.message }, 'registration failed; retrying');
          timer = setTimeout(attempt, o.registerRetryMs ?? 500);
        },
      );
    };
    attempt();
  });
  return {
    registered,
    stop: () => {
      stopping = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/** Where a step service keeps its inbox and runs its handlers. */
interface Backend {
  inbox: SagaInbox | null;
  has(name: string): boolean;
  handle(req: StepRequest, cb: (err: Error | null, a?: StepAnswer) => void): void;
  end(sagaId: string, cb: (err: Error | null) => void): void;
  /** end() for many sagas in one durable write: the ids recorded; err when some were not. */
  endMany(sagaIds: readonly string[], cb: (err: Error | null, ended: string[]) => void): void;
  /** Whether the saga's end is recorded here, as far as this process knows without asking its store. */
  hasEnded(sagaId: string): boolean;
  close(): Promise<void>;
}

async function memoryBackend(o: StepServiceOptions): Promise<Backend> {
  const handlers = o.handlers ?? {};
  const fold = new InboxFold();
  const journal = await FileJournal.open<InboxRecord>({
    path: join(o.dataDir, 'saga-inbox.journal'),
    fold,
    isRecord: isInboxRecord,
  });
  const inbox = SagaInbox.recover(fold.snapshot(), journal, o.apply);
  return {
    inbox,
    has: (name) => Object.hasOwn(handlers, name),
    handle: (req, cb) =>
      inbox.handle(req, req.kind === 'action' ? handlers[req.name].action : handlers[req.name].compensate, cb),
    end: (sagaId, cb) => inbox.end(sagaId, cb),
    endMany: (sagaIds, cb) => inbox.endMany(sagaIds, cb),
    hasEnded: (sagaId) => inbox.hasEnded(sagaId),
    close: () => journal.close(),
  };
}

async function pgBackend(o: NonNullable<StepServiceOptions['postgres']>): Promise<Backend> {
  // Loaded only for a PostgreSQL step service: the memory one never loads pg.
  const [{ default: pg }, { PgSagaInbox }] = await loadWith(
    'a PostgreSQL step service',
    ['pg'],
    () => Promise.all([import('pg'), import('./postgres-inbox.ts')]),
    (m) => new StepServiceStartupError(m),
  );
  const pool = new pg.Pool({ connectionString: o.url, max: o.poolMax ?? 8 });
  pool.on('error', () => {});
  const inbox = await PgSagaInbox.open(pool);
  return {
    inbox: null,
    has: (name) => Object.hasOwn(o.handlers, name),
    handle: (req, cb) => {
      const h = o.handlers[req.name];
      inbox.handle(req, req.kind === 'action' ? h.action : h.compensate).then(
        (a) => cb(null, a),
        (err: Error) => cb(err),
      );
    },
    end: (sagaId, cb) =>
      void inbox.end(sagaId).then(
        () => cb(null),
        (err: Error) => cb(err),
      ),
    // One transaction: all the batch's ends or none.
    endMany: (sagaIds, cb) =>
      void inbox.endMany(sagaIds).then(
        () => cb(null, [...sagaIds]),
        (err: Error) => cb(err, []),
      ),
    hasEnded: () => false,
    close: () => pool.end(),
  };
}
