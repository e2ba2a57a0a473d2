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

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { ClusterLink } from '../participant/cluster-link.ts';
import { FileJournal } from '../participant/journal.ts';
import { guardService } from '../transport/validate.ts';
import { sagaStepService, type SagaStepHandlers, type StepCall, type StepResult } from '../transport/saga-rpc.ts';
import type { StepRequest } from './engine.ts';
import { SagaInbox, type InboxRecord, type StepHandler } from './inbox.ts';
import type { StepAnswer } from './engine.ts';
import type { PgStepHandler } from './postgres-inbox.ts';
import { STEPS_MAX, stepKey, type StepKind } from './state.ts';

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
}

export interface StepService {
  address: string;
  /** The memory inbox (absent with postgres). */
  inbox: SagaInbox | null;
  registered: Promise<void>;
  stop(): Promise<void>;
}

/** The journal keeps every step record of a saga not yet ended, and each end (which later refusals rest on). */
class InboxFold {
  private records: InboxRecord[] = [];
  add(r: InboxRecord): void {
    if (r.t === 'end') this.records = this.records.filter((x) => x.sagaId !== r.sagaId);
    this.records.push(r);
  }
  snapshot(): InboxRecord[] {
    return [...this.records];
  }
}

const isInboxRecord = (v: unknown): v is InboxRecord => {
  const r = v as InboxRecord | null;
  return r !== null && typeof r === 'object' && (r.t === 'step' || r.t === 'end') && typeof r.sagaId === 'string' && typeof r.key === 'string' && typeof r.status === 'string';
};

export async function startStepService(o: StepServiceOptions): Promise<StepService> {
  const log = o.logger.child({ stepService: o.serviceId });
  mkdirSync(o.dataDir, { recursive: true });
  const backend = o.postgres ? await pgBackend(o.postgres) : await memoryBackend(o);

  const serve =
    (kind: StepKind): grpc.handleUnaryCall<StepCall, StepResult> =>
    (call, cb) => {
      const r = call.request;
      const bad = (details: string): void => cb({ code: grpc.status.INVALID_ARGUMENT, details });
      if (r.clusterId !== o.clusterId) return cb({ code: grpc.status.FAILED_PRECONDITION, details: `the call is for cluster "${r.clusterId}", this step service is in cluster "${o.clusterId}"` });
      if (r.step >= STEPS_MAX) return bad(`saga ${r.sagaId}: step ${r.step} is beyond the limit of ${STEPS_MAX} steps`);
      // The key is the saga's, the step's and the kind's: one rule, checked here.
      if (r.key !== stepKey(r.sagaId, r.step, kind)) return bad(`saga ${r.sagaId} step ${r.step}: key ${JSON.stringify(r.key.slice(0, 80))} is not ${stepKey(r.sagaId, r.step, kind)}`);
      if (!backend.has(r.name))
        return cb({ code: grpc.status.UNIMPLEMENTED, details: `saga ${r.sagaId} step ${r.step}: step service ${o.serviceId} has no handler named ${JSON.stringify(r.name.slice(0, 80))}` });
      const req: StepRequest = { sagaId: r.sagaId, step: r.step, kind, key: r.key, name: r.name, input: r.input, outputs: r.outputs, attempt: r.attempt };
      backend.handle(req, (err, a) => {
        if (err || !a) {
          log.info({ sagaId: r.sagaId, step: r.step, kind, err: err?.message }, 'saga step failed; the orchestrator retries it');
          return cb({ code: grpc.status.UNAVAILABLE, details: `saga ${r.sagaId} step ${r.step} ${kind}: ${err?.message ?? 'no answer'}` });
        }
        cb(null, { status: a.status === 'done' ? 'STEP_DONE' : 'STEP_FAILED', output: a.output, reason: a.reason });
      });
    };
  const handlers: SagaStepHandlers = {
    Execute: serve('action'),
    Compensate: serve('compensate'),
    End: (call, cb) => {
      if (call.request.clusterId !== o.clusterId) return cb({ code: grpc.status.FAILED_PRECONDITION, details: `the call is for cluster "${call.request.clusterId}"` });
      backend.end(call.request.sagaId, (err) => (err ? cb({ code: grpc.status.UNAVAILABLE, details: err.message }) : cb(null, {})));
    },
  };
  const server = new grpc.Server();
  const guarded = guardService(sagaStepService, handlers, { requestBytesMax: 4 * 1024 * 1024, onRefused: (method, details) => log.warn({ method, details }, 'request refused') });
  server.addService(guarded.definition, guarded.implementation);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync(o.listen, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  const address = `${o.listen.slice(0, o.listen.lastIndexOf(':'))}:${port}`;

  const link = new ClusterLink({ clusterId: o.clusterId, endpoints: o.endpointsOfCluster });
  let stopping = false;
  let timer: NodeJS.Timeout | null = null;
  const registered = new Promise<void>((resolve) => {
    const attempt = (): void => {
      if (stopping) return;
      link.register(o.serviceId, address, o.postgres ? 'saga-postgres' : 'saga-memory').then(
        () => {
          log.info({ address }, 'step service registered with the cluster');
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
    address,
    inbox: backend.inbox,
    registered,
    stop: async () => {
      stopping = true;
      if (timer) clearTimeout(timer);
      link.close();
      await new Promise<void>((r) => server.tryShutdown(() => r()));
      await backend.close();
    },
  };
}

/** Where a step service keeps its inbox and runs its handlers. */
interface Backend {
  inbox: SagaInbox | null;
  has(name: string): boolean;
  handle(req: StepRequest, cb: (err: Error | null, a?: StepAnswer) => void): void;
  end(sagaId: string, cb: (err: Error | null) => void): void;
  close(): Promise<void>;
}

async function memoryBackend(o: StepServiceOptions): Promise<Backend> {
  const handlers = o.handlers ?? {};
  const fold = new InboxFold();
  const journal = await FileJournal.open<InboxRecord>({ path: join(o.dataDir, 'saga-inbox.journal'), fold, isRecord: isInboxRecord });
  const inbox = SagaInbox.recover(fold.snapshot(), journal, o.apply);
  return {
    inbox,
    has: (name) => Object.hasOwn(handlers, name),
    handle: (req, cb) => inbox.handle(req, req.kind === 'action' ? handlers[req.name].action : handlers[req.name].compensate, cb),
    end: (sagaId, cb) => inbox.end(sagaId, cb),
    close: () => journal.close(),
  };
}

async function pgBackend(o: NonNullable<StepServiceOptions['postgres']>): Promise<Backend> {
  // Loaded only for a PostgreSQL step service: the memory one never loads pg.
  const [{ default: pg }, { PgSagaInbox }] = await Promise.all([import('pg'), import('./postgres-inbox.ts')]);
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
    close: () => pool.end(),
  };
}
