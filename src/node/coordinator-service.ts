// service Coordinator on every node: gRPC in, the commit engine behind it.
// Writes need the leader; a follower answers UNAVAILABLE with the leader's
// address in the metadata so clients and participants can follow it.
// Outcomes already applied are answered by any node from its own table (R1);
// the participant list is read through ReadIndex, so it is never stale.

import * as grpc from '@grpc/grpc-js';
import { EngineError, type CoordinatorEngine, type OutcomeAnswer } from '../commit/engine.ts';
import type { DecisionTable } from '../commit/state.ts';
import type {
  ClusterStatusResponse,
  CoordinatorHandlers,
  ListParticipantsResponse,
  ListTransactionsResponse,
  OutcomeName,
  ParticipantInfo,
  TxnOutcome,
} from '../transport/coordinator-rpc.ts';
import type { NodeConfig } from './config.ts';
import type { Driver } from './driver.ts';
import type { CommitAnswer, NodeMetrics } from './metrics.ts';
import { notLeader, toServiceError, withTimeout } from './raft-node-service.ts';

const OUTCOME: Record<OutcomeAnswer['outcome'], OutcomeName> = {
  committed: 'OUTCOME_COMMITTED',
  aborted: 'OUTCOME_ABORTED',
  'in-progress': 'OUTCOME_IN_PROGRESS',
  unknown: 'OUTCOME_UNKNOWN',
};

const CODE: Record<EngineError['code'], grpc.status> = {
  'not-leader': grpc.status.UNAVAILABLE,
  exhausted: grpc.status.RESOURCE_EXHAUSTED,
  invalid: grpc.status.INVALID_ARGUMENT,
  precondition: grpc.status.FAILED_PRECONDITION,
  unavailable: grpc.status.UNAVAILABLE,
};

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ENDPOINT = /^[A-Za-z0-9.[\]:-]+:\d{1,5}$/;

export interface CoordinatorServiceDeps {
  cfg: NodeConfig;
  driver: Driver<unknown>;
  engine: CoordinatorEngine;
  table: DecisionTable;
  address: string;
  metrics?: Pick<NodeMetrics, 'observeCommit'>;
  /** Non-null while the node shuts down: the error that Begin and Commit answer instead of taking new work. */
  refusal?: () => grpc.ServiceError | null;
}

const ANSWER: Record<OutcomeAnswer['outcome'], CommitAnswer> = { committed: 'committed', aborted: 'aborted', 'in-progress': 'in_progress', unknown: 'unknown' };

export function coordinatorApi(deps: CoordinatorServiceDeps): CoordinatorHandlers {
  const { cfg, driver, engine, table, metrics } = deps;
  const refusal = deps.refusal ?? (() => null);

  const fail = (err: EngineError): grpc.ServiceError =>
    err.code === 'not-leader' ? notLeader(cfg, driver.leader()) : Object.assign(new Error(err.message), { code: CODE[err.code], details: err.message, metadata: new grpc.Metadata() });

  const invalid = (what: string): Partial<grpc.StatusObject> => ({ code: grpc.status.INVALID_ARGUMENT, details: what });

  const outcomeReply = (cb: grpc.sendUnaryData<TxnOutcome>) => (err: EngineError | null, a?: OutcomeAnswer) => {
    if (err || !a) return cb(fail(err ?? new EngineError('unavailable', 'no answer')));
    cb(null, { txnId: a.txnId, outcome: OUTCOME[a.outcome], reason: a.reason, decisionIndex: a.decisionIndex });
  };

  const leaderOnly = (): EngineError | null => (engine.isLeader() ? null : new EngineError('not-leader', 'not the leader'));

  const participantInfo = (p: { id: string; endpoint: string; registeredAtMs: number }): ParticipantInfo => ({ participantId: p.id, endpoint: p.endpoint, registeredAtMs: p.registeredAtMs });

  return {
    RegisterParticipant: (call, cb) => {
      const { clusterId, participantId, endpoint } = call.request;
      if (clusterId !== cfg.clusterId) return cb({ code: grpc.status.FAILED_PRECONDITION, details: `participant belongs to cluster "${clusterId}", this is cluster "${cfg.clusterId}"` });
      if (!ID.test(participantId)) return cb(invalid(`participant id ${JSON.stringify(participantId)} must be 1–64 letters, digits, ".", "_" or "-"`));
      if (!ENDPOINT.test(endpoint)) return cb(invalid(`endpoint ${JSON.stringify(endpoint)} must be host:port`));
      const existing = table.participants.get(participantId);
      // Re-registration at the same endpoint is a no-op, so a restarted participant costs no log write.
      if (existing && existing.endpoint === endpoint) return cb(null, { participant: participantInfo(existing) });
      engine.registerParticipant(participantId, endpoint, (err, p) => (err || !p ? cb(fail(err ?? new EngineError('unavailable', 'no answer'))) : cb(null, { participant: participantInfo(p) })));
    },
    // Linearizable (ReadIndex): a registration acknowledged by the leader is
    // listed by whichever node answers, even one that has not applied it yet.
    ListParticipants: (_call, cb) =>
      withTimeout<number>('list participants', (done) => driver.read(done), (err) => {
        if (err) return cb(toServiceError(cfg, err));
        const out: ListParticipantsResponse = { participants: [...table.participants.values()].map(participantInfo) };
        cb(null, out);
      }),
    Begin: (call, cb) => {
      const refused = refusal();
      if (refused) return cb(refused);
      try {
        const { deadlineMs } = engine.begin(call.request.txnId, call.request.timeoutMs);
        cb(null, { txnId: call.request.txnId, deadlineMs, leaderId: cfg.nodeId });
      } catch (err) {
        if (err instanceof EngineError) return cb(fail(err));
        throw err;
      }
    },
    Commit: (call, cb) => {
      const refused = refusal();
      if (refused) return cb(refused);
      const startedAt = process.hrtime.bigint();
      const reply = outcomeReply(cb);
      engine.commit(
        call.request.txnId,
        call.request.participants.map((e) => ({ participantId: e.participantId, payload: e.payload ?? new Uint8Array() })),
        (err, a) => {
          metrics?.observeCommit(Number(process.hrtime.bigint() - startedAt) / 1e9, err || !a ? 'error' : ANSWER[a.outcome]);
          reply(err, a);
        },
      );
    },
    Abort: (call, cb) => engine.abort(call.request.txnId, call.request.reason, outcomeReply(cb)),
    GetOutcome: (call, cb) => engine.outcome(call.request.txnId, call.request.participantId, outcomeReply(cb)),
    ListTransactions: (call, cb) => {
      const notLeaderErr = leaderOnly();
      if (notLeaderErr) return cb(fail(notLeaderErr));
      const limit = call.request.limit > 0 ? Math.min(call.request.limit, 10_000) : 1_000;
      const out: ListTransactionsResponse = {
        transactions: engine.list(call.request.inFlight, limit).map((t) => ({
          txnId: t.txnId,
          outcome: OUTCOME[t.outcome],
          reason: t.reason,
          phase: t.phase,
          ageMs: Math.max(0, t.ageMs),
          decisionIndex: t.decisionIndex,
          participants: t.participants.map((p) => ({ participantId: p.id, vote: p.vote ?? '', acked: p.acked, retries: p.retries })),
        })),
      };
      cb(null, out);
    },
    ClusterStatus: (_call, cb) => {
      const s = driver.node.status();
      const leader = s.softState.leader;
      const out: ClusterStatusResponse = {
        clusterId: cfg.clusterId,
        nodeId: cfg.nodeId,
        leaderId: leader,
        leaderAddress: cfg.peers.get(leader) ?? '',
        term: s.hardState.term,
        commitIndex: s.hardState.commit,
        appliedIndex: s.applied,
        participants: table.participants.size,
        inFlight: engine.inFlight(),
        decided: table.decisions.size,
      };
      cb(null, out);
    },
  };
}
