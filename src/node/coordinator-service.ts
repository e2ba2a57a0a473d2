// service Coordinator on every node: gRPC in, the commit engine behind it.
// Writes need the leader; a follower answers UNAVAILABLE with the leader's
// address in the metadata so clients and participants can follow it. Every
// refusal a client must tell apart carries `verdict-reason` (the keys and
// codes: src/transport/coordinator-rpc.ts, docs/protocol-outcomes.md).
// Outcomes already applied are answered by any node from its own table (R1);
// the participant list is read through ReadIndex, so it is never stale.

import * as grpc from '@grpc/grpc-js';
import {
  EngineError,
  type CoordinatorEngine,
  type ListFilter,
  type OutcomeAnswer,
  type TxnView,
} from '../commit/engine.ts';
import { engineStatusOf } from '../commit/engine-types.ts';
import {
  RESOURCE_KIND,
  RESOURCE_KIND_UNKNOWN,
  type DecisionTable,
  type HeuristicRecord,
  type ParticipantRecord,
  type Resolution,
} from '../commit/state.ts';
import { normalServes, servesProblem } from '../domain/protocol.ts';
import { ENDPOINT_CHANGE_WINDOW_MS, ENDPOINT_CHANGES_MAX, EndpointChanges } from './endpoint-changes.ts';
import {
  type OutcomesResponse,
  OPERATOR_KEY,
  RECORDED_OUTCOME_KEY,
  STATUS_REASON_KEY,
  REASON_KEY,
  type ClusterStatusResponse,
  type CoordinatorCoreHandlers,
  type HeuristicInfo,
  type ListParticipantsResponse,
  type ListTransactionsRequest,
  type ListTransactionsResponse,
  type ParticipantInfo,
  type ResolutionInfo,
  type TxnInfo,
  type TxnOutcome,
} from '../transport/coordinator-rpc.ts';
import type { NodeConfig } from './config.ts';
import type { Membership } from './membership.ts';
import type { Access } from '../transport/auth.ts';
import type { Driver } from './driver.ts';
import type { CommitAnswer, NodeMetrics } from './metrics.ts';
import { handingOver, notLeader, toServiceError } from './raft-node-service.ts';
import type { BoundedLog } from './core.ts';
import { ID } from '../domain/id.ts';
import { OPERATOR_CHARS_MAX, REASON_CHARS_MAX } from '../domain/text-bounds.ts';
import {
  decisionFromOutcomeWire,
  decisionToOutcomeWire,
  outcomeToWire,
  recordedOutcomeToWire,
} from '../transport/protocol-wire.ts';
import { traceFromMetadata } from '../transport/trace-context.ts';
import type { TraceSpan } from '../transport/tracing.ts';
import type { TxnTraces } from './txn-traces.ts';

/**
 * The engine's error as the gRPC status a client acts on (engineStatusOf).
 * not-leader is answered by notLeader() where the service knows the
 * leader's whereabouts; here it is UNAVAILABLE with its reason all the same.
 */
function engineStatus(err: EngineError): grpc.ServiceError {
  const md = new grpc.Metadata();
  const status = engineStatusOf(err.code);
  if (status.reason !== undefined) md.set(STATUS_REASON_KEY, status.reason);
  if (err.code === 'exists' && err.recorded !== undefined)
    md.set(RECORDED_OUTCOME_KEY, recordedOutcomeToWire(err.recorded));
  return Object.assign(new Error(err.message), { code: grpc.status[status.code], details: err.message, metadata: md });
}

/** Free text an operator gives (who, why): bounded, so a log entry stays small. */

/** Who performs an operator's act: the `verdict-operator` metadata the CLI sets ($USER@hostname or --operator). */
export function operatorOf(call: grpc.ServerUnaryCall<unknown, unknown>): string {
  const v = call.metadata.get(OPERATOR_KEY)[0];
  const who = typeof v === 'string' ? v.trim() : '';
  return who === '' ? `unknown operator at ${call.getPeer()}` : who.slice(0, OPERATOR_CHARS_MAX);
}

export function heuristicInfo(h: HeuristicRecord): HeuristicInfo {
  return {
    participantId: h.participantId,
    outcome: decisionToOutcomeWire(h.outcome),
    kind: h.kind,
    operator: h.operator,
    reason: h.reason,
    atMs: h.atMs,
    gid: h.gid,
    decision: h.decision === null ? outcomeToWire('UNKNOWN') : decisionToOutcomeWire(h.decision),
    index: h.index,
  };
}

function resolutionInfo(r: Resolution): ResolutionInfo {
  return {
    outcome: decisionToOutcomeWire(r.outcome),
    operator: r.operator,
    reason: r.reason,
    atMs: r.atMs,
    decided: r.decided,
    index: r.index,
  };
}

function listFilter(r: ListTransactionsRequest): ListFilter {
  if (r.heuristic) return 'heuristic';
  if (r.unacked) return 'unacked';
  if (r.inDoubt) return 'in-doubt';
  return r.inFlight ? 'in-flight' : 'all';
}
const ENDPOINT = /^[A-Za-z0-9.[\]:-]+:\d{1,5}$/;

/** A refusal with a machine-readable reason (REASON_KEY metadata) beside the text. */
function refuse(code: grpc.status, reason: string, details: string): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  metadata.set(REASON_KEY, reason);
  return { code, details, metadata };
}

export interface CoordinatorServiceDeps {
  cfg: NodeConfig;
  /** The cluster's members as this node knows them (src/node/membership.ts). */
  members: Membership;
  driver: Driver<unknown>;
  /** Linearizable reads, bounded in time (src/node/core.ts). */
  core: BoundedLog;
  engine: CoordinatorEngine;
  table: DecisionTable;
  address: string;
  /** Who may do what (src/transport/auth.ts). */
  access: Access;
  metrics?: Pick<NodeMetrics, 'observeCommit'>;
  /** The leader's connection to a participant endpoint (ParticipantLink.connection); '' when unknown. */
  connection?: (endpoint: string) => string;
  /** Non-null while the node shuts down: the error that Begin and Commit answer instead of taking new work. */
  refusal?: () => grpc.ServiceError | null;
  /** The wall clock, for the bound on endpoint changes (a test moves it); Date.now by default. */
  nowMs?: () => number;
  /**
   * Each transaction's trace context (./txn-traces.ts): Begin, Commit and Abort continue the caller's `traceparent`.
   */
  traces?: TxnTraces;
}

/**
 * The server span of a Begin, Commit or Abort for `txnId` on the leader
 * (null when tracing is off), continuing the call's `traceparent`; a
 * streamed Commit has the stream's metadata, which the SDK never traces.
 */
function receivedSpan(
  traces: TxnTraces | undefined,
  engine: CoordinatorEngine,
  rpc: string,
  txnId: string,
  call: { metadata?: grpc.Metadata },
): TraceSpan | null {
  // A follower only redirects: it has nothing to trace or remember.
  if (traces === undefined || !engine.isLeader()) return null;
  const incoming = call.metadata === undefined ? null : traceFromMetadata(call.metadata);
  if (incoming === null && !traces.tracing.on) return null;
  return traces.received(rpc, txnId, incoming);
}

/**
 * Ends a call's span with the outcome it answered. A refusal (nothing was
 * done) leaves no transaction behind to trace: its context is dropped, so
 * refused calls cannot fill the node's memory of contexts (an id already
 * decided keeps its context: its DECISIONs may still be on their way).
 */
function endSpan(
  traces: TxnTraces | undefined,
  txnId: string,
  span: TraceSpan | null,
  err: EngineError | null,
  a?: OutcomeAnswer,
): void {
  if (err !== null && err.code !== 'outcome-unknown' && err.code !== 'exists') traces?.forget([txnId]);
  if (span === null) return;
  if (a !== undefined) span.set('verdict.outcome', a.outcome);
  span.end(err ? err.message : undefined);
}

/** The commit answer as the metrics label it (docs/operations.md lists the labels). */
const ANSWER: Record<OutcomeAnswer['outcome'], CommitAnswer> = {
  COMMITTED: 'committed',
  ABORTED: 'aborted',
  IN_PROGRESS: 'in_progress',
  UNKNOWN: 'unknown',
};

/** Every Coordinator RPC but the lease ones (src/node/lease-service.ts). */
export function coordinatorApi(deps: CoordinatorServiceDeps): CoordinatorCoreHandlers {
  const { cfg, members, driver, core, engine, table, metrics, access, traces } = deps;
  const refusal = deps.refusal ?? (() => null);
  const nowMs = deps.nowMs ?? Date.now;
  const endpointChanges = new EndpointChanges();

  const fail = (err: EngineError): grpc.ServiceError => {
    if (err.code !== 'not-leader') return engineStatus(err);
    // An engine that leads and still says not-leader is handing its group over (EngineIO.handingOverTo).
    return engine.isLeader() ? handingOver(members, err.message) : notLeader(members, driver.leader());
  };

  const invalid = (what: string): Partial<grpc.StatusObject> => ({ code: grpc.status.INVALID_ARGUMENT, details: what });

  const outcomeReply = (cb: grpc.sendUnaryData<TxnOutcome>) => (err: EngineError | null, a?: OutcomeAnswer) => {
    if (err || !a) return cb(fail(err ?? new EngineError('outcome-unknown', 'no answer')));
    cb(null, { txnId: a.txnId, outcome: outcomeToWire(a.outcome), reason: a.reason, decisionIndex: a.decisionIndex });
  };

  const leaderOnly = (): EngineError | null =>
    engine.isLeader() ? null : new EngineError('not-leader', 'not the leader');

  const participantInfo = (p: ParticipantRecord): ParticipantInfo => ({
    participantId: p.id,
    endpoint: p.endpoint,
    registeredAtMs: p.registeredAtMs,
    lastSeenAtMs: 0,
    inDoubt: 0,
    resourceKind: p.resourceKind,
    connection: '',
    serves: [...p.serves],
  });

  const txnInfo = (t: TxnView): TxnInfo => ({
    txnId: t.txnId,
    outcome: outcomeToWire(t.outcome),
    reason: t.reason,
    phase: t.phase,
    ageMs: Math.max(0, t.ageMs),
    decisionIndex: t.decisionIndex,
    participants: t.participants.map((p) => ({
      participantId: p.id,
      vote: p.vote ?? '',
      acked: p.acked,
      retries: p.retries,
      unimplemented: p.unimplemented,
    })),
    heuristics: t.heuristics.map(heuristicInfo),
    resolutions: t.resolutions.map(resolutionInfo),
    removals: t.removals,
  });

  return {
    RegisterParticipant: (call, cb) => {
      const { clusterId, participantId, endpoint } = call.request;
      // The kind is optional in the protocol (a participant of one's own may leave it out): empty reads as "unknown".
      const kind = call.request.resourceKind || RESOURCE_KIND_UNKNOWN;
      // Each refusal names its reason in `verdict-reason` metadata: the participant tells a fixable setting from a
      // passing outage by it.
      if (clusterId !== cfg.clusterId)
        return cb(
          refuse(
            grpc.status.FAILED_PRECONDITION,
            'wrong-cluster-id',
            `participant belongs to cluster "${clusterId}", this is cluster "${cfg.clusterId}"`,
          ),
        );
      if (!ID.test(participantId))
        return cb(
          refuse(
            grpc.status.INVALID_ARGUMENT,
            'invalid-participant-id',
            `participant id ${JSON.stringify(participantId)} must be 1–64 letters, digits, ".", "_" or "-"`,
          ),
        );
      if (!ENDPOINT.test(endpoint))
        return cb(
          refuse(
            grpc.status.INVALID_ARGUMENT,
            'invalid-endpoint',
            `endpoint ${JSON.stringify(endpoint)} must be host:port`,
          ),
        );
      if (!RESOURCE_KIND.test(kind))
        return cb(
          refuse(
            grpc.status.INVALID_ARGUMENT,
            'invalid-resource-kind',
            `participant ${participantId}: resource kind ${JSON.stringify(kind.slice(0, 40))} must be 1–32 of a-z, 0-9 and "-", starting with a letter`,
          ),
        );
      // Absent (a participant written before the field existed): it serves nothing optional, and its transactions
      // commit the classic way.
      const servesRefusal = servesProblem(call.request.serves);
      if (servesRefusal !== null)
        return cb(
          refuse(grpc.status.INVALID_ARGUMENT, 'invalid-serves', `participant ${participantId}: ${servesRefusal}`),
        );
      const serves = normalServes(call.request.serves);
      // With TLS, a participant id belongs to the certificate named after it (src/transport/auth.ts); one
      // namespace with node ids, so that a participant's certificate is never taken for a node's.
      const refused = access.participantOnly(call, participantId, `registering participant "${participantId}"`);
      if (refused) return cb(refused);
      if (members.has(participantId))
        return cb(
          invalid(
            `participant id "${participantId}" is the id of a node of cluster "${cfg.clusterId}"; node and participant ids must differ`,
          ),
        );
      const existing = table.participants.get(participantId);
      // Re-registration at the same endpoint (and kind, and methods served) is a no-op, so a restarted participant
      // costs no log write.
      if (
        existing &&
        existing.endpoint === endpoint &&
        existing.resourceKind === kind &&
        existing.serves.join(',') === serves.join(',')
      ) {
        engine.heardFrom(participantId);
        return cb(null, { participant: participantInfo(existing) });
      }
      // Counted where the change is made: on the leader (a follower's answer is a redirect).
      if (existing?.endpoint !== endpoint && engine.isLeader() && !endpointChanges.allow(participantId, nowMs()))
        return cb(
          refuse(
            grpc.status.RESOURCE_EXHAUSTED,
            'endpoint-changes',
            `participant ${participantId} registered ${ENDPOINT_CHANGES_MAX} new endpoints in the last ${ENDPOINT_CHANGE_WINDOW_MS / 1000} s (the limit); retry later`,
          ),
        );
      engine.registerParticipant(participantId, endpoint, kind, serves, (err, p) =>
        err || !p
          ? cb(fail(err ?? new EngineError('outcome-unknown', 'no answer')))
          : cb(null, { participant: participantInfo(p) }),
      );
    },
    // Linearizable (ReadIndex): a registration acknowledged by the leader is
    // listed by whichever node answers, even one that has not applied it yet.
    // With activity (last seen, in doubt), only the leader knows: a follower redirects.
    ListParticipants: (call, cb) => {
      const notLeaderErr = call.request.withActivity ? leaderOnly() : null;
      if (notLeaderErr) return cb(fail(notLeaderErr));
      core.read('list participants', (err) => {
        if (err) return cb(toServiceError(members, err));
        const activity = new Map(call.request.withActivity ? engine.participantActivity().map((a) => [a.id, a]) : []);
        const out: ListParticipantsResponse = {
          participants: [...table.participants.values()].map((p) => ({
            ...participantInfo(p),
            lastSeenAtMs: activity.get(p.id)?.lastSeenAtMs ?? 0,
            inDoubt: activity.get(p.id)?.inDoubt ?? 0,
            connection: call.request.withActivity ? (deps.connection?.(p.endpoint) ?? '') : '',
          })),
        };
        cb(null, out);
      });
    },
    Begin: (call, cb) => {
      const refused = refusal();
      if (refused) return cb(refused);
      const span = receivedSpan(traces, engine, 'begin', call.request.txnId, call);
      try {
        const { deadlineAtMs } = engine.begin(call.request.txnId, call.request.timeoutMs);
        span?.end();
        cb(null, { txnId: call.request.txnId, deadlineAtMs, leaderId: cfg.nodeId });
      } catch (err) {
        if (err instanceof EngineError) endSpan(traces, call.request.txnId, span, err);
        else span?.end(String(err));
        if (err instanceof EngineError) return cb(fail(err));
        throw err;
      }
    },
    Commit: (call, cb) => {
      const refused = refusal();
      if (refused) return cb(refused);
      const startedAtNs = process.hrtime.bigint();
      const reply = outcomeReply(cb);
      const span = receivedSpan(traces, engine, 'commit', call.request.txnId, call);
      engine.commit(
        call.request.txnId,
        call.request.participants.map((e) => ({
          participantId: e.participantId,
          payload: e.payload ?? new Uint8Array(),
        })),
        (err, a) => {
          metrics?.observeCommit(
            Number(process.hrtime.bigint() - startedAtNs) / 1e9,
            err || !a ? 'error' : ANSWER[a.outcome],
          );
          endSpan(traces, call.request.txnId, span, err, a);
          reply(err, a);
        },
        call.request.begin === true ? { timeoutMs: call.request.timeoutMs ?? 0 } : undefined,
        call.request.commitMode === 'COMMIT_MODE_PARALLEL'
          ? true
          : call.request.commitMode === 'COMMIT_MODE_CLASSIC'
            ? false
            : undefined,
      );
    },
    Abort: (call, cb) => {
      const span = receivedSpan(traces, engine, 'abort', call.request.txnId, call);
      const reply = outcomeReply(cb);
      engine.abort(call.request.txnId, call.request.reason, (err, a) => {
        endSpan(traces, call.request.txnId, span, err, a);
        reply(err, a);
      });
    },
    GetOutcome: (call, cb) => {
      // Asked as a participant, the question may make the leader log ABORT (R3): only that participant may ask so.
      const p = call.request.participantId;
      const refused =
        p === ''
          ? null
          : access.participantOnly(call, p, `asking about a transaction as participant "${p.slice(0, 64)}"`);
      if (refused) return cb(refused);
      engine.outcome(call.request.txnId, p, outcomeReply(cb));
    },
    GetOutcomes: (call, cb) => {
      // The batched question of a participant in doubt (src/participant/in-doubt.ts): each id as GetOutcome would
      // answer it (R3).
      const { txnIds, participantId: p } = call.request;
      const refused = access.participantOnly(call, p, `asking about transactions as participant "${p.slice(0, 64)}"`);
      if (refused) return cb(refused);
      const notLeaderErr = leaderOnly();
      if (notLeaderErr) return cb(fail(notLeaderErr));
      const answers: OutcomesResponse['answers'] = new Array(txnIds.length);
      let left = txnIds.length;
      txnIds.forEach((txnId, i) =>
        engine.outcome(txnId, p, (err, a) => {
          if (err || !a) {
            const st = fail(err ?? new EngineError('outcome-unknown', 'no answer'));
            answers[i] = { outcome: null, code: st.code, details: st.details };
          } else {
            answers[i] = {
              outcome: {
                txnId: a.txnId,
                outcome: outcomeToWire(a.outcome),
                reason: a.reason,
                decisionIndex: a.decisionIndex,
              },
              code: 0,
              details: '',
            };
          }
          if (--left === 0) cb(null, { answers });
        }),
      );
    },
    ListTransactions: (call, cb) => {
      const notLeaderErr = leaderOnly();
      if (notLeaderErr) return cb(fail(notLeaderErr));
      const limit = call.request.limit > 0 ? Math.min(call.request.limit, 10_000) : 1_000;
      const one = call.request.txnId ?? '';
      const views =
        one !== ''
          ? [engine.view(one)].filter((v): v is TxnView => v !== null)
          : engine.list(listFilter(call.request), limit);
      const out: ListTransactionsResponse = { transactions: views.map(txnInfo) };
      cb(null, out);
    },
    ReportHeuristic: (call, cb) => {
      const r = call.request;
      if (r.clusterId !== cfg.clusterId)
        return cb({
          code: grpc.status.FAILED_PRECONDITION,
          details: `participant belongs to cluster "${r.clusterId}", this is cluster "${cfg.clusterId}"`,
        });
      const refused = access.participantOnly(
        call,
        r.participantId,
        `reporting a heuristic outcome for participant "${r.participantId.slice(0, 64)}"`,
      );
      if (refused) return cb(refused);
      const outcome = decisionFromOutcomeWire(r.outcome);
      if (outcome === null) return cb(invalid('a heuristic report needs outcome OUTCOME_COMMITTED or OUTCOME_ABORTED'));
      if (r.operator.length > OPERATOR_CHARS_MAX || r.reason.length > REASON_CHARS_MAX)
        return cb(
          invalid(`operator and reason are limited to ${OPERATOR_CHARS_MAX} and ${REASON_CHARS_MAX} characters`),
        );
      engine.reportHeuristic(
        {
          txnId: r.txnId,
          participantId: r.participantId,
          outcome,
          gid: r.gid.slice(0, 200),
          operator: r.operator,
          reason: r.reason,
          atMs: r.atMs,
        },
        (err, h) =>
          err || !h
            ? cb(fail(err ?? new EngineError('outcome-unknown', 'no answer')))
            : cb(null, { heuristic: heuristicInfo(h) }),
      );
    },
    ResolveTransaction: (call, cb) => {
      // An operator's act: with tls.adminNames, only an admin certificate may (src/transport/auth.ts).
      const refused = access.adminOnly(call, 'txn resolve');
      if (refused) return cb(refused);
      const r = call.request;
      const outcome = decisionFromOutcomeWire(r.outcome);
      if (outcome === null)
        return cb(invalid('txn resolve needs outcome OUTCOME_COMMITTED (--commit) or OUTCOME_ABORTED (--abort)'));
      const reason = r.reason.trim();
      if (reason === '')
        return cb(
          invalid('txn resolve needs a reason (--reason TEXT): it is recorded in the log with who asked and when'),
        );
      if (reason.length > REASON_CHARS_MAX)
        return cb(invalid(`the reason is limited to ${REASON_CHARS_MAX} characters`));
      const operator = operatorOf(call as grpc.ServerUnaryCall<unknown, unknown>);
      engine.resolve(r.txnId, outcome, { operator, reason, forceUnknown: r.forceUnknown === true }, (err, res) => {
        if (err || !res) return cb(fail(err ?? new EngineError('outcome-unknown', 'no answer')));
        const a = res.answer;
        cb(null, {
          outcome: {
            txnId: a.txnId,
            outcome: outcomeToWire(a.outcome),
            reason: a.reason,
            decisionIndex: a.decisionIndex,
          },
          decided: res.decided,
          operator,
        });
      });
    },
    RemoveParticipant: (call, cb) => {
      // An operator's act like txn resolve: with tls.adminNames, only an admin certificate may.
      const refused = access.adminOnly(call, 'participant remove');
      if (refused) return cb(refused);
      const { clusterId, participantId, force } = call.request;
      if (clusterId !== cfg.clusterId)
        return cb({
          code: grpc.status.FAILED_PRECONDITION,
          details: `the request is for cluster "${clusterId}", this is cluster "${cfg.clusterId}"`,
        });
      if (!ID.test(participantId))
        return cb(
          invalid(`participant id ${JSON.stringify(participantId)} must be 1–64 letters, digits, ".", "_" or "-"`),
        );
      const reason = call.request.reason.trim();
      if (force && reason === '')
        return cb(
          invalid(
            'participant remove --force needs a reason (--reason TEXT): it is recorded in the log with who asked and when',
          ),
        );
      if (reason.length > REASON_CHARS_MAX)
        return cb(invalid(`the reason is limited to ${REASON_CHARS_MAX} characters`));
      const operator = operatorOf(call as grpc.ServerUnaryCall<unknown, unknown>);
      engine.unregisterParticipant(
        participantId,
        operator,
        (err, removed, owed) => {
          if (err) return cb(fail(err));
          cb(null, { removed: removed === true, owed: owed ?? [] });
        },
        force ? { reason } : undefined,
      );
    },
    ClusterStatus: (_call, cb) => {
      const s = driver.node.status();
      const leader = s.softState.leader;
      const out: ClusterStatusResponse = {
        clusterId: cfg.clusterId,
        nodeId: cfg.nodeId,
        leaderId: leader,
        leaderAddress: members.get(leader) ?? '',
        term: s.hardState.term,
        commitIndex: s.hardState.commit,
        appliedIndex: s.applied,
        participants: table.participants.size,
        inFlight: engine.inFlight(),
        decided: table.decisions.size,
        groupCount: 1,
        groups: [
          {
            group: 0,
            leaderId: leader,
            leaderAddress: members.get(leader) ?? '',
            term: s.hardState.term,
            commitIndex: s.hardState.commit,
            appliedIndex: s.applied,
            inFlight: engine.inFlight(),
          },
        ],
      };
      cb(null, out);
    },
  };
}
