// Sagas on a node, over gRPC: `service Sagas` (proto/saga.proto) for clients
// and operators, and the step services' calls. The saga product itself —
// the orchestrator, the status calls that wait for an end, the stuck
// sagas' warn lines — is the pure saga core (src/saga/saga-core.ts), attached
// to the node core by the node's composition (./products.ts), the same one
// the simulator runs; this file only adapts gRPC to it. Writes need the
// leader; a follower answers UNAVAILABLE with the leader's whereabouts, as
// the Coordinator service does. Status and lists are read from this node's
// applied table.
//
// A saga belongs to the client that started it (R9): its starter is
// recorded (clientOf: the certificate's CN under TLS), a client has at most
// sagaClientRunningMax sagas running, and under TLS only the starter and
// admins read a saga (its inputs and outputs are the application's data;
// its step services, which take them anyway, may read its status) or
// repeat its start. ListSagas answers in pages of at most 1,000 sagas and
// about LIST_PAGE_BYTES_MAX bytes.

import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { ParticipantRecord } from '../commit/state.ts';
import {
  EndSagasUnsupported,
  SagaError,
  type SagaEngine,
  type SagaEngineIO,
  type StepAnswer,
  type StepRequest,
} from '../saga/engine.ts';
import type { SagaCore } from '../saga/saga-core.ts';
import { timelineRow, type SagaRecord, type SagaStepDef, type SagaTable } from '../saga/state.ts';
import type { AuthenticatedCall } from '../transport/tls.ts';
import type { Access } from '../transport/auth.ts';
import {
  SAGA_IDS_PER_CALL_MAX,
  SagaStepClient,
  type SagaInfo,
  type SagasHandlers,
  type SagaState,
} from '../transport/saga-rpc.ts';
import { operatorOf } from './coordinator-service.ts';
import { clientOf } from './limits.ts';
import type { Membership } from './membership.ts';
import { notLeader } from './raft-node-service.ts';
import { REASON_CHARS_MAX } from '../domain/text-bounds.ts';
import { traceFromMetadata, traceToMetadata, type TraceContext } from '../transport/trace-context.ts';
import { NO_TRACING, type Tracing } from '../transport/tracing.ts';
import { STATUS_REASON_KEY } from '../transport/coordinator-rpc.ts';
import { engineStatusOf } from '../commit/engine-types.ts';

/** Step service channels kept open; beyond this the least recently used is closed. */
const CHANNELS_MAX = 256;
const LIST_MAX = 1_000;
/**
 * One ListSagas page holds about this many bytes at most (one saga at the most is about 0.8 MiB, so one always fits).
 */
export const LIST_PAGE_BYTES_MAX = 1024 * 1024;
const PAGE_TOKEN = /^[0-9]{1,16}$/;
/** Sagas whose trace context this node remembers (StartSaga's `traceparent`); past it the oldest goes. */
const SAGA_TRACES_MAX = 10_000;

export interface SagaStepLinksOptions {
  clusterId: string;
  log: Logger;
  /** TLS for step service `id` (its server certificate must be `id`'s); plaintext when absent. */
  credentials?: (serviceId: string) => grpc.ChannelCredentials;
  /** Each step call's latency, as it ends (src/node/saga-metrics.ts). */
  observeStep?: (seconds: number, kind: 'action' | 'compensate', answered: boolean) => void;
  /**
   * Spans for each step call, continuing the starter's `traceparent` (docs/operations.md, "Tracing"); off by default.
   */
  tracing?: Tracing;
}

/**
 * The saga core's calls to step services over gRPC: a channel per step
 * service id and endpoint (the id is what its server certificate must
 * name), at most CHANNELS_MAX, and the trace context each saga's calls
 * continue, kept on the node that took StartSaga (as for transactions:
 * src/node/txn-traces.ts).
 */
export class SagaStepLinks implements Pick<SagaEngineIO, 'callStep' | 'endSaga' | 'endSagas'> {
  private readonly channels = new Map<string, SagaStepClient>();
  private readonly traces = new Map<string, TraceContext>();
  private readonly tracing: Tracing;

  constructor(private readonly o: SagaStepLinksOptions) {
    this.tracing = o.tracing ?? NO_TRACING;
  }

  /** The trace context saga `sagaId`'s step calls continue; the oldest is forgotten past SAGA_TRACES_MAX. */
  rememberTrace(sagaId: string, ctx: TraceContext): void {
    this.traces.delete(sagaId);
    this.traces.set(sagaId, ctx);
    if (this.traces.size > SAGA_TRACES_MAX) this.traces.delete(this.traces.keys().next().value as string);
  }

  readonly callStep: SagaEngineIO['callStep'] = (to, req, timeoutMs, cb) => {
    const o = this.o;
    const sentAt = process.hrtime.bigint();
    const took = (): number => Number(process.hrtime.bigint() - sentAt) / 1e9;
    const call = {
      clusterId: o.clusterId,
      sagaId: req.sagaId,
      step: req.step,
      key: req.key,
      name: req.name,
      input: req.input,
      outputs: req.outputs.map((x) => x ?? ''),
      attempt: req.attempt,
    };
    const span = this.span(to, req);
    const ctx = span?.context ?? this.traces.get(req.sagaId);
    this.channel(to)
      .call(req.kind, call, timeoutMs, ctx === undefined ? undefined : traceToMetadata(ctx))
      .then(
        (r) => {
          span?.set('verdict.step_status', String(r.status));
          span?.end();
          o.observeStep?.(took(), req.kind, true);
          // Wire enums are translated here; anything else is garbage, which the engine retries.
          const status =
            r.status === 'STEP_DONE'
              ? 'done'
              : r.status === 'STEP_FAILED'
                ? 'failed'
                : (String(r.status) as StepAnswer['status']);
          cb(null, { status, output: r.output, reason: r.reason });
        },
        (err: grpc.ServiceError) => {
          span?.end(err.details ?? err.message);
          o.observeStep?.(took(), req.kind, false);
          o.log.debug(
            {
              sagaId: req.sagaId,
              step: req.step,
              kind: req.kind,
              service: to.id,
              attempt: req.attempt,
              err: err.details ?? err.message,
            },
            'saga step call failed; retrying later',
          );
          cb(new Error(`step service ${to.id}: ${err.details ?? err.message}`));
        },
      );
  };

  readonly endSaga: SagaEngineIO['endSaga'] = (to, sagaId, timeoutMs, cb) => {
    this.channel(to)
      .end({ clusterId: this.o.clusterId, sagaId }, timeoutMs)
      .then(
        () => cb(null),
        (err: grpc.ServiceError) => cb(new Error(err.details ?? err.message)),
      );
  };

  readonly endSagas: SagaEngineIO['endSagas'] = (to, sagaIds, timeoutMs, cb) => {
    this.channel(to)
      .endMany({ clusterId: this.o.clusterId, sagaIds: [...sagaIds] }, timeoutMs)
      .then(
        (ack) => {
          if (ack.problem !== '')
            this.o.log.debug(
              { service: to.id, sagas: sagaIds.length, taken: ack.ended.length, problem: ack.problem },
              'a step service did not take every saga end; the others are sent again later',
            );
          cb(null, ack.ended);
        },
        (err: grpc.ServiceError) => {
          // A step service from before EndSagas: the engine sends it End one saga at a time.
          if (err.code === grpc.status.UNIMPLEMENTED)
            return cb(new EndSagasUnsupported(`step service ${to.id} does not serve EndSagas`));
          cb(new Error(err.details ?? err.message));
        },
      );
  };

  close(): void {
    for (const c of this.channels.values()) c.close();
    this.channels.clear();
  }

  /** A span for one step call when the saga's start carried a trace and tracing is on. */
  private span(to: ParticipantRecord, req: StepRequest): ReturnType<Tracing['start']> | null {
    const parent = this.traces.get(req.sagaId);
    if (parent === undefined || !this.tracing.on) return null;
    return this.tracing.start(`verdict.saga.${req.kind}`, 'client', parent, {
      'verdict.saga_id': req.sagaId,
      'verdict.step': req.step,
      'verdict.step_name': req.name,
      'verdict.attempt': req.attempt,
      'verdict.service': to.id,
    });
  }

  private channel(to: { id: string; endpoint: string }): SagaStepClient {
    const key = `${to.id}\u0000${to.endpoint}`;
    let c = this.channels.get(key);
    if (c) {
      this.channels.delete(key);
      this.channels.set(key, c);
      return c;
    }
    c = new SagaStepClient(to.endpoint, this.o.credentials?.(to.id));
    this.channels.set(key, c);
    if (this.channels.size > CHANNELS_MAX) {
      const [oldest, oc] = this.channels.entries().next().value as [string, SagaStepClient];
      this.channels.delete(oldest);
      oc.close();
    }
    return c;
  }
}

/** The saga product as the node serves it: the core, and `service Sagas` over it. */
export interface SagaService {
  readonly core: SagaCore;
  /** The orchestrator (metrics, the console) and the saga table it reads. */
  readonly engine: SagaEngine;
  readonly table: SagaTable;
  handlers: SagasHandlers;
  /** The step services' links are closed; the core is closed with the node core. */
  close(): void;
}

export interface SagaServiceOptions {
  nodeId: string;
  /** The saga core attached to this node's core (./products.ts). */
  core: SagaCore;
  /** Its step calls over gRPC; StartSaga's trace context is remembered there. */
  links: SagaStepLinks;
  /** The cluster's members as this node knows them (src/node/membership.ts), for redirects. */
  members: Membership;
  /** Who this node believes leads, for redirects. */
  leader(): string;
  /** Who may do what (src/transport/auth.ts). */
  access: Access;
  /** Spans for StartSaga, continuing the starter's `traceparent` (docs/operations.md, "Tracing"); off by default. */
  tracing?: Tracing;
}

export function sagaService(o: SagaServiceOptions): SagaService {
  const core = o.core;
  const tracing = o.tracing ?? NO_TRACING;
  const fail = (err: SagaError): grpc.ServiceError => {
    if (err.code === 'not-leader') return notLeader(o.members, o.leader());
    const status = engineStatusOf(err.code);
    const metadata = new grpc.Metadata();
    if (status.reason !== undefined) metadata.set(STATUS_REASON_KEY, status.reason);
    return Object.assign(new Error(err.message), { code: grpc.status[status.code], details: err.message, metadata });
  };
  const invalid = (details: string): grpc.ServiceError =>
    Object.assign(new Error(details), { code: grpc.status.INVALID_ARGUMENT, details, metadata: new grpc.Metadata() });
  const answer = (cb: grpc.sendUnaryData<SagaInfo>) => (err: SagaError | null, s?: SagaRecord) =>
    err ? cb(fail(err)) : s ? cb(null, sagaInfo(s)) : cb(fail(new SagaError('outcome-unknown', 'no answer')));

  const who = (call: unknown): string => clientOf(call as AuthenticatedCall & { getPeer(): string });
  /** PERMISSION_DENIED unless the caller started `s` or is an admin (anyone without TLS). */
  const mayRead = (call: unknown, s: SagaRecord, what: string): grpc.ServiceError | null =>
    o.access.starterOrAdmin(call as AuthenticatedCall, s.owner, `${what} of saga ${s.id}`);

  /** One saga's state for SagaStates: as SagaStatus answers it (its starter, an admin, or a step service of it). */
  const sagaStateFor = (call: unknown, sagaId: string): SagaState => {
    const s = core.table.sagas.get(sagaId);
    if (!s) return { sagaId, state: '', refused: '' };
    const stepService = o.access.isOneOf(
      call as AuthenticatedCall,
      s.steps.map((d) => d.service),
    );
    const refused = stepService ? null : mayRead(call, s, 'the status');
    return refused ? { sagaId, state: '', refused: refused.details } : { sagaId, state: s.state, refused: '' };
  };

  const handlers: SagasHandlers = {
    StartSaga: (call, cb) => {
      const r = call.request;
      const steps: SagaStepDef[] = r.steps.map((s) => ({ service: s.service, name: s.name, input: s.input }));
      const pivot = r.pivotPlusOne === 0 ? null : r.pivotPlusOne - 1;
      const labels = r.labels ?? {};
      const tags = {
        type: r.type === '' ? undefined : r.type,
        labels: Object.keys(labels).length > 0 ? { ...labels } : undefined,
      };
      // A repeated start answers with the saga as it is: only to whoever may read it.
      const existing = core.table.sagas.get(r.sagaId);
      const refused = existing ? mayRead(call, existing, 'a repeated start') : null;
      if (refused) return cb(refused);
      const incoming = traceFromMetadata(call.metadata);
      const span = tracing.on
        ? tracing.start('verdict.node.saga.start', 'server', incoming ?? undefined, {
            'verdict.saga_id': r.sagaId,
            'verdict.steps': steps.length,
          })
        : null;
      const ctx = span?.context ?? incoming;
      if (ctx !== null) o.links.rememberTrace(r.sagaId, ctx);
      const reply = answer(cb);
      core.start(
        r.sagaId,
        steps,
        pivot,
        (err, info) => {
          span?.end(err ? err.message : undefined);
          reply(err, info);
        },
        who(call),
        tags,
      );
    },
    SagaStatus: (call, cb) => {
      const { sagaId, waitMs } = call.request;
      const now = (): void => {
        const s = core.table.sagas.get(sagaId);
        if (!s)
          return cb(
            fail(
              new SagaError(
                'not-found',
                `no saga ${sagaId} on node ${o.nodeId} (it may not be applied here yet, or the id is wrong)`,
              ),
            ),
          );
        cb(null, sagaInfo(s));
      };
      const s = core.table.sagas.get(sagaId);
      // The starter never changes, so one check before any wait covers the answer after it. A step service
      // of the saga may read its status too: it confirms a saga's end with the cluster before taking End.
      const stepService =
        s !== undefined &&
        o.access.isOneOf(
          call as unknown as AuthenticatedCall,
          s.steps.map((d) => d.service),
        );
      const refused = s && !stepService ? mayRead(call, s, 'the status') : null;
      if (refused) return cb(refused);
      core.whenEnded(sagaId, waitMs, now);
    },
    SagaStates: (call, cb) => {
      const ids = call.request.sagaIds;
      if (ids.length > SAGA_IDS_PER_CALL_MAX)
        return cb(invalid(`SagaStates takes at most ${SAGA_IDS_PER_CALL_MAX} saga ids; ${ids.length} were asked`));
      cb(null, { sagas: ids.map((id) => sagaStateFor(call, id)) });
    },
    ListSagas: (call, cb) => {
      const { pageToken, stuckOnly } = call.request;
      if (pageToken !== '' && !PAGE_TOKEN.test(pageToken))
        return cb(
          invalid(
            `page_token ${JSON.stringify(pageToken.slice(0, 40))} is not one this node gave: pass next_page_token of the page before, or nothing for the first page`,
          ),
        );
      const page = sagaPage(core.table.sagas.values(), {
        afterIndex: pageToken === '' ? -1 : Number(pageToken),
        limit: Math.min(call.request.limit || LIST_MAX, LIST_MAX),
        bytesMax: LIST_PAGE_BYTES_MAX,
        stuckOnly,
        owner: o.access.seesAll(call as unknown as AuthenticatedCall) ? null : who(call),
      });
      cb(null, page);
    },
    RetrySaga: (call, cb) => {
      const refused = o.access.adminOnly(call, 'saga retry');
      if (refused) return cb(refused);
      const reason = call.request.reason.trim();
      if (reason.length > REASON_CHARS_MAX)
        return cb(invalid(`the reason is limited to ${REASON_CHARS_MAX} characters`));
      core.retry(call.request.sagaId, operatorOf(call as grpc.ServerUnaryCall<unknown, unknown>), reason, answer(cb));
    },
    ResolveSaga: (call, cb) => {
      const refused = o.access.adminOnly(call, 'saga resolve');
      if (refused) return cb(refused);
      const r = call.request;
      const reason = r.reason.trim();
      if (reason === '')
        return cb(
          invalid(
            `saga resolve ${r.sagaId} needs a reason (--reason TEXT): it is recorded in the log with who asked and when`,
          ),
        );
      if (reason.length > REASON_CHARS_MAX)
        return cb(invalid(`the reason is limited to ${REASON_CHARS_MAX} characters`));
      core.resolve(
        r.sagaId,
        r.step,
        r.done ? 'done' : 'compensated',
        operatorOf(call as grpc.ServerUnaryCall<unknown, unknown>),
        reason,
        answer(cb),
      );
    },
  };

  return { core, engine: core.engine, table: core.table, handlers, close: () => o.links.close() };
}

export interface PageOptions {
  /** Sagas started at or before this log index were on earlier pages. */
  afterIndex: number;
  limit: number;
  bytesMax: number;
  stuckOnly: boolean;
  /** Only this starter's sagas; null: every saga. */
  owner: string | null;
}

/**
 * One page of sagas, oldest start first (the table's order, which is the
 * order of their start indexes): at most `limit` sagas and, past the first,
 * about `bytesMax` bytes. The token of the next page is the start index of
 * the last saga given, so a saga evicted between pages loses no other.
 */
export function sagaPage(sagas: Iterable<SagaRecord>, p: PageOptions): { sagas: SagaInfo[]; nextPageToken: string } {
  const out: SagaInfo[] = [];
  let bytes = 0;
  let last = -1;
  for (const s of sagas) {
    if (s.index <= p.afterIndex) continue;
    if ((p.stuckOnly && s.stuck === null) || (p.owner !== null && s.owner !== p.owner)) continue;
    const info = sagaInfo(s);
    const size = sagaInfoBytes(info);
    if (out.length >= p.limit || (out.length > 0 && bytes + size > p.bytesMax))
      return { sagas: out, nextPageToken: String(last) };
    out.push(info);
    bytes += size;
    last = s.index;
  }
  return { sagas: out, nextPageToken: '' };
}

/** About the bytes a SagaInfo takes on the wire: its strings, and a few bytes per field. */
export function sagaInfoBytes(i: SagaInfo): number {
  let n = 64 + Buffer.byteLength(i.sagaId) + Buffer.byteLength(i.stuckError) + i.type.length;
  for (const [k, v] of Object.entries(i.labels)) n += 8 + k.length + Buffer.byteLength(v);
  for (const a of i.attempts) n += 40 + Buffer.byteLength(a.lastError);
  for (const x of i.stepStatus) n += 4 + x.length;
  for (const x of i.outputs) n += 4 + Buffer.byteLength(x);
  for (const d of i.steps)
    n += 12 + Buffer.byteLength(d.service) + Buffer.byteLength(d.name) + Buffer.byteLength(d.input);
  for (const e of i.timeline)
    n +=
      40 +
      Buffer.byteLength(e.what) +
      Buffer.byteLength(e.kind) +
      Buffer.byteLength(e.detail) +
      Buffer.byteLength(e.operator);
  return n;
}

/** A saga record as the wire carries it. */
export function sagaInfo(s: SagaRecord): SagaInfo {
  return {
    sagaId: s.id,
    state: s.state,
    stepStatus: [...s.status],
    outputs: s.outputs.map((x) => x ?? ''),
    pivotPlusOne: s.pivot === null ? 0 : s.pivot + 1,
    stuck: s.stuck !== null,
    stuckStep: s.stuck?.step ?? -1,
    stuckKind: s.stuck?.kind ?? '',
    stuckAttempts: s.stuck?.attempts ?? 0,
    stuckError: s.stuck?.lastError ?? '',
    timeline: s.timeline.map(timelineRow),
    startedAtMs: s.startedAtMs,
    steps: s.steps.map((d) => ({ ...d })),
    type: s.type ?? '',
    labels: { ...(s.labels ?? {}) },
    attempts: (s.tries ?? []).map((t) => ({
      step: t.step,
      kind: t.kind,
      attempts: t.attempts,
      firstFailureAtMs: t.firstFailureAtMs ?? 0,
      lastFailureAtMs: t.lastFailureAtMs,
      lastError: t.lastError,
    })),
  };
}
