// Sagas on a node: the SagaEngine wired to the node's proposals and to step
// services over gRPC, and `service Sagas` (proto/saga.proto) for clients and
// operators. Writes need the leader; a follower answers UNAVAILABLE with the
// leader's whereabouts, as the Coordinator service does. Status and lists are
// read from this node's applied table.

import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { DecisionTable } from '../commit/state.ts';
import { SagaEngine, SagaError, type SagaEngineConfig, type StepAnswer } from '../saga/engine.ts';
import { isTerminal, type SagaApplyResult, type SagaCommand, type SagaRecord, type SagaStepDef } from '../saga/state.ts';
import type { Access } from '../transport/auth.ts';
import { SagaStepClient, type SagaInfo, type SagasHandlers } from '../transport/saga-rpc.ts';
import { operatorOf } from './coordinator-service.ts';
import type { NodeConfig } from './config.ts';
import type { Membership } from './membership.ts';
import { notLeader } from './raft-node-service.ts';

/** Step service channels kept open; beyond this the least recently used is closed. */
const CHANNELS_MAX = 256;
/** SagaStatus calls waiting for an end at once; beyond it they are answered at once. */
const WAITERS_MAX = 10_000;
const WAIT_MS_MAX = 60_000;
const LIST_MAX = 1_000;
const REASON_CHARS_MAX = 1_000;

export interface SagaWiring {
  engine: SagaEngine;
  handlers: SagasHandlers;
  setLeadership(term: number): void;
  onApplied(r: SagaApplyResult): void;
  tick(): void;
  close(): void;
}

export interface SagaWiringOptions {
  cfg: NodeConfig;
  /** The cluster's members as this node knows them (src/node/membership.ts), for redirects. */
  members: Membership;
  table: DecisionTable;
  /** The node's batched proposals (group commit across sagas and commits). */
  propose(cmd: SagaCommand, cb: (err: Error | null, r?: SagaApplyResult) => void): void;
  /** Who this node believes leads, for redirects. */
  leader(): string;
  log: Logger;
  /** Who may do what (src/transport/auth.ts). */
  access: Access;
  /** TLS for step service `id` (its server certificate must be `id`'s); plaintext when absent. */
  credentials?: (serviceId: string) => grpc.ChannelCredentials;
  engine?: Partial<SagaEngineConfig>;
  /** Each step call's latency, as it ends (src/node/saga-metrics.ts). */
  observeStep?: (seconds: number, kind: 'action' | 'compensate', answered: boolean) => void;
}

export function sagaWiring(o: SagaWiringOptions): SagaWiring {
  const channels = new Map<string, SagaStepClient>();
  // A channel per step service id and endpoint: the id is what its server certificate must name.
  const channel = (to: { id: string; endpoint: string }): SagaStepClient => {
    const key = `${to.id}\u0000${to.endpoint}`;
    let c = channels.get(key);
    if (c) {
      channels.delete(key);
      channels.set(key, c);
      return c;
    }
    c = new SagaStepClient(to.endpoint, o.credentials?.(to.id));
    channels.set(key, c);
    if (channels.size > CHANNELS_MAX) {
      const [oldest, oc] = channels.entries().next().value as [string, SagaStepClient];
      channels.delete(oldest);
      oc.close();
    }
    return c;
  };
  const engine = new SagaEngine(
    o.table.sagas,
    o.table.participants,
    {
      nowMs: () => Date.now(),
      random: () => Math.random(),
      propose: o.propose,
      callStep: (to, req, timeoutMs, cb) => {
        const sentAt = process.hrtime.bigint();
        const took = (): number => Number(process.hrtime.bigint() - sentAt) / 1e9;
        const call = { clusterId: o.cfg.clusterId, sagaId: req.sagaId, step: req.step, key: req.key, name: req.name, input: req.input, outputs: req.outputs.map((x) => x ?? ''), attempt: req.attempt };
        channel(to)
          .call(req.kind, call, timeoutMs)
          .then(
            (r) => {
              o.observeStep?.(took(), req.kind, true);
              // Wire enums are translated here; anything else is garbage, which the engine retries.
              const status = r.status === 'STEP_DONE' ? 'done' : r.status === 'STEP_FAILED' ? 'failed' : (String(r.status) as StepAnswer['status']);
              cb(null, { status, output: r.output, reason: r.reason });
            },
            (err: grpc.ServiceError) => {
              o.observeStep?.(took(), req.kind, false);
              o.log.debug({ sagaId: req.sagaId, step: req.step, kind: req.kind, service: to.id, attempt: req.attempt, err: err.details ?? err.message }, 'saga step call failed; retrying later');
              cb(new Error(`step service ${to.id}: ${err.details ?? err.message}`));
            },
          );
      },
      endSaga: (to, sagaId, timeoutMs, cb) => {
        channel(to)
          .end({ clusterId: o.cfg.clusterId, sagaId }, timeoutMs)
          .then(
            () => cb(null),
            (err: grpc.ServiceError) => cb(new Error(err.details ?? err.message)),
          );
      },
    },
    o.engine,
  );

  /** SagaStatus calls waiting for their saga to end. */
  const waiters = new Map<string, (() => void)[]>();
  let waiting = 0;

  const fail = (err: SagaError): grpc.ServiceError => {
    if (err.code === 'not-leader') return notLeader(o.members, o.leader());
    const code = {
      invalid: grpc.status.INVALID_ARGUMENT,
      precondition: grpc.status.FAILED_PRECONDITION,
      'not-found': grpc.status.NOT_FOUND,
      exhausted: grpc.status.RESOURCE_EXHAUSTED,
      'outcome-unknown': grpc.status.DEADLINE_EXCEEDED,
    }[err.code];
    return Object.assign(new Error(err.message), { code, details: err.message, metadata: new grpc.Metadata() });
  };
  const invalid = (details: string): grpc.ServiceError => Object.assign(new Error(details), { code: grpc.status.INVALID_ARGUMENT, details, metadata: new grpc.Metadata() });
  const answer = (cb: grpc.sendUnaryData<SagaInfo>) => (err: SagaError | null, s?: SagaRecord) =>
    err ? cb(fail(err)) : s ? cb(null, sagaInfo(s)) : cb(fail(new SagaError('outcome-unknown', 'no answer')));

  const handlers: SagasHandlers = {
    StartSaga: (call, cb) => {
      const r = call.request;
      const steps: SagaStepDef[] = r.steps.map((s) => ({ service: s.service, name: s.name, input: s.input }));
      const pivot = r.pivotPlusOne === 0 ? null : r.pivotPlusOne - 1;
      engine.start(r.sagaId, steps, pivot, answer(cb));
    },
    SagaStatus: (call, cb) => {
      const { sagaId, waitMs } = call.request;
      const now = (): void => {
        const s = o.table.sagas.sagas.get(sagaId);
        if (!s) return cb(fail(new SagaError('not-found', `no saga ${sagaId} on node ${o.cfg.nodeId} (it may not be applied here yet, or the id is wrong)`)));
        cb(null, sagaInfo(s));
      };
      const s = o.table.sagas.sagas.get(sagaId);
      if (!s || isTerminal(s.state) || waitMs === 0 || waiting >= WAITERS_MAX) return now();
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        waiting--;
        clearTimeout(timer);
        now();
      };
      const timer = setTimeout(finish, Math.min(waitMs, WAIT_MS_MAX));
      waiting++;
      const list = waiters.get(sagaId) ?? [];
      list.push(finish);
      waiters.set(sagaId, list);
    },
    ListSagas: (call, cb) => {
      const limit = Math.min(call.request.limit || LIST_MAX, LIST_MAX);
      const out: SagaInfo[] = [];
      for (const s of o.table.sagas.sagas.values()) {
        if (out.length >= limit) break;
        if (call.request.stuckOnly && s.stuck === null) continue;
        out.push(sagaInfo(s));
      }
      cb(null, { sagas: out });
    },
    RetrySaga: (call, cb) => {
      const refused = o.access.adminOnly(call, 'saga retry');
      if (refused) return cb(refused);
      const reason = call.request.reason.trim();
      if (reason.length > REASON_CHARS_MAX) return cb(invalid(`the reason is limited to ${REASON_CHARS_MAX} characters`));
      engine.retry(call.request.sagaId, operatorOf(call as grpc.ServerUnaryCall<unknown, unknown>), reason, answer(cb));
    },
    ResolveSaga: (call, cb) => {
      const refused = o.access.adminOnly(call, 'saga resolve');
      if (refused) return cb(refused);
      const r = call.request;
      const reason = r.reason.trim();
      if (reason === '') return cb(invalid(`saga resolve ${r.sagaId} needs a reason (--reason TEXT): it is recorded in the log with who asked and when`));
      if (reason.length > REASON_CHARS_MAX) return cb(invalid(`the reason is limited to ${REASON_CHARS_MAX} characters`));
      engine.resolve(r.sagaId, r.step, r.done ? 'done' : 'compensated', operatorOf(call as grpc.ServerUnaryCall<unknown, unknown>), reason, answer(cb));
    },
  };

  return {
    engine,
    handlers,
    setLeadership: (term) => engine.setLeadership(term),
    onApplied: (r) => {
      engine.onApplied(r);
      const s = r.saga;
      if (!s || !isTerminal(s.state)) return;
      const list = waiters.get(s.id);
      if (!list) return;
      waiters.delete(s.id);
      for (const f of list) f();
    },
    tick: () => engine.tick(),
    close: () => {
      engine.setLeadership(0);
      for (const list of waiters.values()) for (const f of list) f();
      waiters.clear();
      for (const c of channels.values()) c.close();
      channels.clear();
    },
  };
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
    timeline: s.timeline.map((e) => ({ atMs: e.atMs, index: e.index, what: e.what, step: e.step ?? -1, kind: e.kind ?? '', detail: e.detail ?? '', operator: e.operator ?? '' })),
    startedAtMs: s.startedAtMs,
    steps: s.steps.map((d) => ({ ...d })),
  };
}
