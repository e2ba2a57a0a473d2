// The participant's link to the Verdict cluster: the Coordinator calls a
// participant makes, RegisterParticipant and GetOutcome (with participant_id,
// so a leader that has decided nothing logs ABORT before answering, R3), and
// Abort, which a TCC participant whose reserve expired asks (tcc/expiry.ts).
//
// A minimal gRPC client of its own on the shared wire definitions
// (src/transport/coordinator-rpc.ts), so the participant SDK does not depend
// on the application SDK. It finds the
// leader itself: a follower answers UNAVAILABLE with the leader's address in
// the `verdict-leader-address` metadata, and the link follows it.
import type { ClusterQuestions } from './compose.ts';
import * as grpc from '@grpc/grpc-js';
import { callLeader, namedLeader, NoLeaderError } from '../transport/leader-finder.ts';
import { GroupRoutes, parseGroup } from '../transport/group-routes.ts';
import { GROUP_KEY } from '../transport/coordinator-rpc.ts';
import { unaryCall } from '../transport/unary.ts';
import {
  coordinatorService,
  STATUS_REASON_KEY,
  type AbortRequest,
  type ClusterStatusRequest,
  type ClusterStatusResponse,
  type OutcomeName as OutcomeValue,
  type ParticipantInfo,
  type OutcomeRequest,
  type OutcomesRequest,
  type OutcomesResponse,
  type RegisterParticipantRequest,
  type RegisterParticipantResponse,
  type ReportHeuristicRequest,
  type ReportHeuristicResponse,
  type TxnOutcome,
} from '../transport/coordinator-rpc.ts';
import { raftNodeService, type NodeStatus, type StatusRequest } from '../transport/proto.ts';
import {
  sagasService,
  type SagaInfo,
  type SagaStatesRequest,
  type SagaStatesResponse,
  type SagaStatusRequest,
} from '../transport/saga-rpc.ts';
import { outcomeFromWire } from '../transport/protocol-wire.ts';
import { withDefaults, type AskedOutcome, type AskOutcome, type AskOutcomes, type ClusterOutcome } from './types.ts';

export type { OutcomeValue };

/** The subset of verdict.coordinator.Coordinator a participant uses (and a test's fake cluster serves). */
export interface CoordinatorParticipantHandlers extends grpc.UntypedServiceImplementation {
  RegisterParticipant: grpc.handleUnaryCall<RegisterParticipantRequest, RegisterParticipantResponse>;
  GetOutcome: grpc.handleUnaryCall<OutcomeRequest, TxnOutcome>;
}

/**
 * Only the methods a participant uses; a server built from it leaves the
 * others UNIMPLEMENTED, and so ReportHeuristic when its handlers lack it.
 */
export const coordinatorParticipantService = {
  RegisterParticipant: coordinatorService.RegisterParticipant,
  GetOutcome: coordinatorService.GetOutcome,
  GetOutcomes: coordinatorService.GetOutcomes,
  ReportHeuristic: coordinatorService.ReportHeuristic,
  Abort: coordinatorService.Abort,
} as unknown as grpc.ServiceDefinition<CoordinatorParticipantHandlers>;

type LinkMethod = 'RegisterParticipant' | 'GetOutcome' | 'GetOutcomes' | 'ReportHeuristic' | 'Abort';

/** The outcome a node answered; an unset or unknown enum is not known (asked again later). */
export function toClusterOutcome(o: OutcomeValue): ClusterOutcome {
  return outcomeFromWire(o) ?? 'UNKNOWN';
}

export interface ClusterLinkOptions {
  clusterId: string;
  endpoints: readonly string[];
  callTimeoutMs?: number;
  credentials?: grpc.ChannelCredentials;
}

/** A saga's state as the cluster answers it to a step service: null when it knows no such saga. */
export interface SagaStateAnswer {
  state: string | null;
  /** Why the cluster would not say (the caller may not read the saga); empty when it did. */
  refused: string;
}

/** How long a link whose cluster answered SagaStates UNIMPLEMENTED asks SagaStatus per saga instead. */
const SAGA_STATES_REPROBE_MS = 10 * 60_000;
/** SagaStatus calls at once when a cluster from before SagaStates is asked about many sagas. */
const SAGA_STATUS_AT_ONCE_MAX = 8;

/**
 * One round over the group's leader and the endpoints, following a redirect (every routed call, saga status questions
 * too). Anything but "unreachable" or "not the leader" is the cluster's answer: retrying elsewhere would not change it.
 */
const ONE_ROUND = {
  retryable: (err: unknown) => {
    const e = err as Partial<grpc.ServiceError>;
    if (e.code !== grpc.status.UNAVAILABLE && e.code !== grpc.status.DEADLINE_EXCEEDED) return null;
    return {
      why: e.details || (e.message ?? ''),
      hint: e.code === grpc.status.UNAVAILABLE ? namedLeader(err) : undefined,
    };
  },
  roundsMax: 1,
  pauseMs: () => 0,
};

/** Channels kept open at once: the configured endpoints plus a few leader addresses learned from redirects. */
const EXTRA_CHANNELS_MAX = 8;

export class ClusterLink {
  private readonly o: Required<ClusterLinkOptions>;
  private readonly clients = new Map<string, grpc.Client>();
  /**
   * Per decision group, the configured endpoints and the last address that
   * answered as that group's leader or that a follower named (tried first).
   * One group until a refusal names another (src/transport/group-routes.ts).
   */
  private readonly routes: GroupRoutes;
  private closed = false;
  /**
   * GetOutcomes' per-id UNAVAILABLE made the link ask the cluster's groups (once: a coordinator without ClusterStatus
   * is asked no more).
   */
  private askedGroups = false;
  /** Until then sagaStates asks SagaStatus per saga: the cluster answered SagaStates UNIMPLEMENTED. */
  private sagaStatesUnsupportedUntilAtMs = 0;

  constructor(o: ClusterLinkOptions) {
    if (o.endpoints.length === 0) throw new Error('the cluster link needs at least one endpoint');
    this.o = withDefaults(
      { callTimeoutMs: 3_000, credentials: grpc.credentials.createInsecure() },
      { ...o, endpoints: [...o.endpoints] },
    );
    this.routes = new GroupRoutes(this.o.endpoints, {
      redirectsMax: 2,
      addressesMax: this.o.endpoints.length + EXTRA_CHANNELS_MAX,
    });
  }

  /**
   * `resourceKind`: what the participant keeps its data in (memory, postgres, ...); omitted, the cluster records
   * "unknown". `serves`: the optional protocol methods it serves (src/domain/protocol.ts); omitted, none.
   */
  register(
    participantId: string,
    endpoint: string,
    resourceKind = '',
    serves: readonly string[] = [],
  ): Promise<ParticipantInfo | null> {
    return this.call<RegisterParticipantRequest, RegisterParticipantResponse>('RegisterParticipant', {
      clusterId: this.o.clusterId,
      participantId,
      endpoint,
      resourceKind,
      serves: [...serves],
    }).then((r) => r.participant);
  }

  /** What the cluster says about txnId, asked as participantId (an in-doubt participant). */
  outcome(txnId: string, participantId: string): Promise<TxnOutcome> {
    return this.call<OutcomeRequest, TxnOutcome>('GetOutcome', { txnId, participantId }, txnId).then((r) => {
      if (r.txnId !== '' && r.txnId !== txnId)
        throw new Error(`cluster answered about ${r.txnId} when asked about ${txnId}`);
      return r;
    });
  }

  /**
   * What the cluster says about each of txnIds (GetOutcomes), asked as an
   * in-doubt participant: one answer per id, in order, an outcome or the
   * error that id alone got. Rejects when the whole call failed (no leader
   * within the call's time, or UNIMPLEMENTED from a coordinator without it).
   */
  async outcomes(txnIds: string[], participantId: string): Promise<(TxnOutcome | Error)[]> {
    if (this.routes.groups === 1) {
      const answers = await this.outcomesOfGroup(txnIds, participantId);
      // A node of a cluster of several groups answers UNAVAILABLE for the ids of groups it does not lead: learn the
      // groups once, so the next question is asked per group.
      const leader = this.routes.base.leader;
      if (
        !this.routes.known &&
        !this.askedGroups &&
        leader !== undefined &&
        answers.some((a) => a instanceof Error && a.message.startsWith(`${grpc.status.UNAVAILABLE} `))
      ) {
        this.askedGroups = true;
        await this.learnGroups(leader);
      }
      return answers;
    }
    // Each group's leader answers for its own ids: one question per group, the answers put back in the order asked.
    const byGroup = new Map<number, number[]>();
    txnIds.forEach((t, i) => {
      const g = this.routes.groupOf(t);
      byGroup.set(g, [...(byGroup.get(g) ?? []), i]);
    });
    const parts = [...byGroup.values()];
    const answers = await Promise.allSettled(
      parts.map((idx) =>
        this.outcomesOfGroup(
          idx.map((i) => txnIds[i] as string),
          participantId,
        ),
      ),
    );
    if (answers.every((a) => a.status === 'rejected')) throw (answers[0] as PromiseRejectedResult).reason;
    const out: (TxnOutcome | Error)[] = new Array(txnIds.length);
    parts.forEach((idx, p) => {
      const a = answers[p] as PromiseSettledResult<(TxnOutcome | Error)[]>;
      idx.forEach((i, k) => {
        out[i] =
          a.status === 'fulfilled'
            ? (a.value[k] as TxnOutcome | Error)
            : a.reason instanceof Error
              ? a.reason
              : new Error(String(a.reason));
      });
    });
    return out;
  }

  /** GetOutcomes for ids of one group (every id at G = 1), at that group's leader. */
  private async outcomesOfGroup(txnIds: string[], participantId: string): Promise<(TxnOutcome | Error)[]> {
    const r = await this.call<OutcomesRequest, OutcomesResponse>('GetOutcomes', { txnIds, participantId }, txnIds[0]);
    if (r.answers.length !== txnIds.length)
      throw new Error(`cluster answered ${r.answers.length} of ${txnIds.length} outcome questions`);
    return r.answers.map((a, i) => {
      if (a.code !== 0 || a.outcome === null) return new Error(`${a.code} ${a.details || 'no outcome'}`);
      if (a.outcome.txnId !== '' && a.outcome.txnId !== txnIds[i])
        return new Error(`cluster answered about ${a.outcome.txnId} when asked about ${txnIds[i]}`);
      return a.outcome;
    });
  }

  /** Asks the cluster to decide ABORT unless T is decided (or being decided); answers what the log says. */
  abort(txnId: string, reason: string): Promise<TxnOutcome> {
    return this.call<AbortRequest, TxnOutcome>('Abort', { txnId, reason }, txnId).then((r) => {
      if (r.txnId !== '' && r.txnId !== txnId)
        throw new Error(`cluster answered about ${r.txnId} when asked to abort ${txnId}`);
      return r;
    });
  }

  /** The two questions as the callbacks the engine and the reserve watcher take (src/participant/compose.ts). */
  questions(participantId: string): ClusterQuestions {
    const askOutcome: AskOutcome = (txnId, cb) =>
      this.outcome(txnId, participantId).then(
        (r) => cb(null, toClusterOutcome(r.outcome)),
        (err: Error) => cb(err, 'UNKNOWN'),
      );
    // One question per round for all in-doubt transactions (GetOutcomes). A
    // coordinator that does not serve it (a minimal one: the tests' doubles)
    // answers UNIMPLEMENTED, and is asked one by one from then on.
    let batched = true;
    const askOutcomes: AskOutcomes = (txnIds, cb) => {
      const oneByOne = (): void => {
        const answers = new Map<string, AskedOutcome>();
        let left = txnIds.length;
        for (const txnId of txnIds)
          askOutcome(txnId, (err, outcome) => {
            answers.set(txnId, { err, outcome });
            if (--left === 0) cb(null, answers);
          });
      };
      if (!batched) return oneByOne();
      this.outcomes(txnIds, participantId).then(
        (rs) =>
          cb(
            null,
            new Map(
              rs.map((r, i) => [
                txnIds[i],
                r instanceof Error
                  ? { err: r, outcome: 'UNKNOWN' }
                  : { err: null, outcome: toClusterOutcome(r.outcome) },
              ]),
            ),
          ),
        (err: Error & { code?: number }) => {
          if (err.code !== grpc.status.UNIMPLEMENTED) return cb(err, new Map());
          batched = false;
          oneByOne();
        },
      );
    };
    return {
      askOutcome,
      askOutcomes,
      askAbort: (txnId, reason, cb) =>
        this.abort(txnId, reason).then(
          (r) => cb(null, toClusterOutcome(r.outcome)),
          (err: Error) => cb(err, 'UNKNOWN'),
        ),
    };
  }

  /** Reports an operator's heuristic act (R4); answers the cluster's comparison (HEURCOM, HEURRB, HEURMIX, HEURHAZ). */
  reportHeuristic(r: Omit<ReportHeuristicRequest, 'clusterId'>): Promise<string> {
    return this.call<ReportHeuristicRequest, ReportHeuristicResponse>(
      'ReportHeuristic',
      { ...r, clusterId: this.o.clusterId },
      r.txnId,
    ).then((res) => {
      if (res.heuristic === null)
        throw new Error(`the cluster answered the heuristic report for ${r.txnId} without its record`);
      return res.heuristic.kind;
    });
  }

  /**
   * The ids of the cluster's nodes, as a majority of the configured
   * endpoints list them in RaftNode.Status (each its own id and its peers').
   * With TLS, the participant accepts PREPARE and DECISION only from these
   * names (src/participant/node-callers.ts). One endpoint alone is not
   * believed when more are configured: a process at a node's address while
   * that node is down (with any certificate of the cluster's CA) could
   * otherwise name itself a node. Rejects when no list has a majority.
   */
  async members(): Promise<string[]> {
    if (this.closed) throw new Error('cluster link is closed');
    const endpoints = [...new Set(this.o.endpoints)];
    const answers = await Promise.all(
      endpoints.map(async (address): Promise<string[] | Error> => {
        try {
          const st = await unaryCall<StatusRequest, NodeStatus>(
            this.client(address),
            raftNodeService.Status as grpc.MethodDefinition<StatusRequest, NodeStatus>,
            {},
            this.o.callTimeoutMs,
          );
          if (st.clusterId !== this.o.clusterId)
            return new Error(`${address} is a node of cluster "${st.clusterId}", not "${this.o.clusterId}"`);
          return [...new Set([st.nodeId, ...st.peers.map((p) => p.nodeId)].filter((id) => id !== ''))].sort();
        } catch (err) {
          return err as Error;
        }
      }),
    );
    const votes = new Map<string, { ids: string[]; count: number }>();
    for (const a of answers) {
      if (a instanceof Error) continue;
      const key = a.join('\u0000');
      const v = votes.get(key) ?? { ids: a, count: 0 };
      v.count += 1;
      votes.set(key, v);
    }
    for (const v of votes.values()) if (v.count * 2 > endpoints.length) return v.ids;
    const errors = answers.filter((a): a is Error => a instanceof Error).map((e) => e.message);
    throw new Error(
      votes.size > 1
        ? `the configured endpoints do not agree on the cluster's nodes (${[...votes.values()].map((v) => `${v.count}× [${v.ids.join(', ')}]`).join('; ')}); asking again later`
        : `fewer than a majority of the ${endpoints.length} configured endpoints answered (${errors.slice(0, 3).join('; ') || 'no answer'})`,
    );
  }

  /**
   * A saga's state as the cluster's applied log has it (running,
   * compensating, finished, compensated), asked of the leader first; null
   * when the cluster knows no such saga. Rejects when no node answered.
   */
  async sagaState(sagaId: string): Promise<string | null> {
    try {
      const info = await callLeader(
        this.routes.finderFor(sagaId),
        (address) => {
          if (this.closed) throw new Error('cluster link is closed');
          return unaryCall<SagaStatusRequest, SagaInfo>(
            this.client(address),
            sagasService.SagaStatus as grpc.MethodDefinition<SagaStatusRequest, SagaInfo>,
            { sagaId, waitMs: 0 },
            this.o.callTimeoutMs,
          );
        },
        ONE_ROUND,
      );
      if (info.sagaId !== sagaId)
        throw new Error(`the cluster answered about saga ${info.sagaId} when asked about ${sagaId}`);
      return info.state;
    } catch (err) {
      if ((err as Partial<grpc.ServiceError>).code === grpc.status.NOT_FOUND) return null;
      throw err instanceof NoLeaderError && err.last instanceof Error ? err.last : err;
    }
  }

  /**
   * The states of many sagas (SagaStates), one call per decision group, asked
   * of each group's leader first: per id its state, or null when the cluster
   * knows no such saga, or the reason it refused to say. A cluster from before
   * SagaStates (UNIMPLEMENTED) is asked SagaStatus for each id, a few at a
   * time, and for SAGA_STATES_REPROBE_MS no more SagaStates. Rejects when no
   * node answered.
   */
  async sagaStates(sagaIds: readonly string[]): Promise<Map<string, SagaStateAnswer>> {
    const out = new Map<string, SagaStateAnswer>();
    const byGroup = new Map<number, string[]>();
    for (const id of new Set(sagaIds)) {
      const g = this.routes.groupOf(id);
      const ids = byGroup.get(g);
      if (ids) ids.push(id);
      else byGroup.set(g, [id]);
    }
    for (const ids of byGroup.values()) {
      if (Date.now() >= this.sagaStatesUnsupportedUntilAtMs) {
        try {
          const r = await this.sagaStatesOf(ids);
          for (const a of r.sagas)
            if (ids.includes(a.sagaId))
              out.set(a.sagaId, { state: a.state === '' ? null : a.state, refused: a.refused });
          continue;
        } catch (err) {
          if ((err as Partial<grpc.ServiceError>).code !== grpc.status.UNIMPLEMENTED) throw err;
          this.sagaStatesUnsupportedUntilAtMs = Date.now() + SAGA_STATES_REPROBE_MS;
        }
      }
      for (let i = 0; i < ids.length; i += SAGA_STATUS_AT_ONCE_MAX) {
        const part = ids.slice(i, i + SAGA_STATUS_AT_ONCE_MAX);
        const states = await Promise.all(part.map((id) => this.sagaState(id)));
        part.forEach((id, k) => out.set(id, { state: states[k] ?? null, refused: '' }));
      }
    }
    return out;
  }

  private async sagaStatesOf(sagaIds: string[]): Promise<SagaStatesResponse> {
    try {
      return await callLeader(
        this.routes.finderFor(sagaIds[0]),
        (address) => {
          if (this.closed) throw new Error('cluster link is closed');
          return unaryCall<SagaStatesRequest, SagaStatesResponse>(
            this.client(address),
            sagasService.SagaStates as grpc.MethodDefinition<SagaStatesRequest, SagaStatesResponse>,
            { sagaIds },
            this.o.callTimeoutMs,
          );
        },
        ONE_ROUND,
      );
    } catch (err) {
      throw err instanceof NoLeaderError && err.last instanceof Error ? err.last : err;
    }
  }

  close(): void {
    this.closed = true;
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  /**
   * One attempt: the known leader of `routeId`'s group (group 0's when
   * absent) first, then every endpoint once, following up to two redirects
   * (src/transport/leader-finder.ts). A redirect that names a group this link
   * does not route by makes it ask that node for the cluster's groups once
   * and start again in the id's group. Rejects with the last error; the
   * caller decides when to try again.
   */
  private async call<Req, Res>(name: LinkMethod, req: Req, routeId?: string): Promise<Res> {
    try {
      return await this.callRouted<Req, Res>(name, req, routeId, routeId !== undefined);
    } catch (err) {
      if (!(err instanceof StaleRouting)) throw err;
      await this.learnGroups(err.address);
      if (err.hint !== undefined) this.routes.finderOfGroup(err.group)?.learn(err.hint);
      return this.callRouted<Req, Res>(name, req, routeId, false);
    }
  }

  private async callRouted<Req, Res>(
    name: LinkMethod,
    req: Req,
    routeId: string | undefined,
    checkStale: boolean,
  ): Promise<Res> {
    try {
      return await callLeader(
        this.routes.finderFor(routeId),
        async (address) => {
          if (this.closed) throw new Error('cluster link is closed');
          try {
            return await this.unary<Req, Res>(address, name, req);
          } catch (err) {
            const group = checkStale ? staleGroup(err, this.routes) : undefined;
            throw group === undefined ? err : new StaleRouting(address, group, namedLeader(err));
          }
        },
        ONE_ROUND,
      );
    } catch (err) {
      throw err instanceof NoLeaderError && err.last instanceof Error ? err.last : err;
    }
  }

  /**
   * One ClusterStatus at `address`, routed by when it answers; a failure (a coordinator without it) leaves routing as
   * it was.
   */
  private async learnGroups(address: string): Promise<void> {
    try {
      const st = await unaryCall<ClusterStatusRequest, ClusterStatusResponse>(
        this.client(address),
        coordinatorService.ClusterStatus as grpc.MethodDefinition<ClusterStatusRequest, ClusterStatusResponse>,
        {},
        this.o.callTimeoutMs,
      );
      this.routes.learn(st);
    } catch {
      // The call goes on by the redirect it was given.
    }
  }

  private client(address: string): grpc.Client {
    let c = this.clients.get(address);
    if (c !== undefined) return c;
    if (this.clients.size >= this.o.endpoints.length + EXTRA_CHANNELS_MAX) {
      // Drop the oldest learned address that is not a configured endpoint.
      for (const [a, old] of this.clients) {
        if (this.o.endpoints.includes(a)) continue;
        old.close();
        this.clients.delete(a);
        break;
      }
    }
    c = new grpc.Client(address, this.o.credentials, {
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2_000,
    });
    this.clients.set(address, c);
    return c;
  }

  private unary<Req, Res>(address: string, name: LinkMethod, req: Req): Promise<Res> {
    return unaryCall(
      this.client(address),
      coordinatorParticipantService[name] as grpc.MethodDefinition<Req, Res>,
      req,
      this.o.callTimeoutMs,
    );
  }
}

/** A NOT_LEADER refusal naming a group the link does not route by: learn the groups, then ask again. */
class StaleRouting extends Error {
  constructor(
    readonly address: string,
    readonly group: number,
    readonly hint: string | undefined,
  ) {
    super(`${address} refused naming decision group ${group}, which this link does not route by`);
  }
}

/** The group a NOT_LEADER refusal names when it shows the routing stale, else undefined. */
function staleGroup(err: unknown, routes: GroupRoutes): number | undefined {
  const md = (err as { metadata?: { get(key: string): unknown[] } } | null)?.metadata;
  if (typeof md?.get !== 'function' || md.get(STATUS_REASON_KEY)[0] !== 'NOT_LEADER') return undefined;
  const v = md.get(GROUP_KEY)[0];
  const text = typeof v === 'string' ? v : undefined;
  return routes.stale(text) ? parseGroup(text) : undefined;
}
