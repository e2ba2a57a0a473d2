// proto/coordinator.proto, loaded once, with hand-written narrow wire shapes
// (camelCase fields, uint64 as number, enums as their names).
import { assert } from '../util/assert.ts';
import { protoFile } from './proto-file.ts';
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export const COORDINATOR_PROTO_PATH = protoFile('coordinator.proto');

const LOAD_OPTIONS: protoLoader.Options = { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true };

export const coordinatorPackageDefinition: protoLoader.PackageDefinition = protoLoader.loadSync(COORDINATOR_PROTO_PATH, LOAD_OPTIONS);

export type OutcomeName = 'OUTCOME_UNSPECIFIED' | 'OUTCOME_COMMITTED' | 'OUTCOME_ABORTED' | 'OUTCOME_IN_PROGRESS' | 'OUTCOME_UNKNOWN';

export interface RegisterParticipantRequest {
  clusterId: string;
  participantId: string;
  endpoint: string;
  /** Empty (or absent) reads as "unknown"; see RESOURCE_KIND in src/commit/state.ts. */
  resourceKind?: string;
}
export interface ParticipantInfo {
  participantId: string;
  endpoint: string;
  registeredAtMs: number;
  /** Filled (defaults 0) on the wire; optional so older fakes and servers still type. */
  lastSeenMs?: number;
  inDoubt?: number;
  /** The leader's connection to it (with activity): connected, connecting, down, idle; '' when not asked. */
  connection?: string;
  resourceKind?: string;
}
export interface RegisterParticipantResponse {
  participant: ParticipantInfo | null;
}
export interface ListParticipantsRequest {
  withActivity?: boolean;
}
export interface ListParticipantsResponse {
  participants: ParticipantInfo[];
}
export interface BeginRequest {
  txnId: string;
  timeoutMs: number;
}
export interface BeginResponse {
  txnId: string;
  deadlineMs: number;
  leaderId: string;
}
export interface Enlistment {
  participantId: string;
  payload: Uint8Array;
}
export interface CommitRequest {
  txnId: string;
  participants: Enlistment[];
  /** Begin and commit in one call (first attempt only; see proto/coordinator.proto). */
  begin?: boolean;
  /** With begin: the transaction's timeout, 0 for the cluster's default. */
  timeoutMs?: number;
}
export interface AbortRequest {
  txnId: string;
  reason: string;
}
export interface OutcomeRequest {
  txnId: string;
  participantId: string;
}
export interface TxnOutcome {
  txnId: string;
  outcome: OutcomeName;
  reason: string;
  decisionIndex: number;
}
export interface ListTransactionsRequest {
  inFlight: boolean;
  limit: number;
  inDoubt?: boolean;
  unacked?: boolean;
  heuristic?: boolean;
  txnId?: string;
}
export interface HeuristicInfo {
  participantId: string;
  outcome: OutcomeName;
  kind: string;
  operator: string;
  reason: string;
  atMs: number;
  gid: string;
  decision: OutcomeName;
  index: number;
}
export interface ResolutionInfo {
  outcome: OutcomeName;
  operator: string;
  reason: string;
  atMs: number;
  decided: boolean;
  index: number;
}
export interface ReportHeuristicRequest {
  clusterId: string;
  participantId: string;
  txnId: string;
  outcome: OutcomeName;
  gid: string;
  operator: string;
  reason: string;
  atMs: number;
}
export interface ReportHeuristicResponse {
  heuristic: HeuristicInfo | null;
}
export interface ResolveTransactionRequest {
  txnId: string;
  outcome: OutcomeName;
  reason: string;
  /** Decide an id the cluster has no record of; optional so older callers still type (defaults false on the wire). */
  forceUnknown?: boolean;
}
export interface RemoveParticipantRequest {
  clusterId: string;
  participantId: string;
}
export interface RemoveParticipantResponse {
  removed: boolean;
}
export interface ResolveTransactionResponse {
  outcome: TxnOutcome | null;
  decided: boolean;
  operator: string;
}
export interface ParticipantState {
  participantId: string;
  vote: string;
  acked: boolean;
  retries: number;
}
export interface TxnInfo {
  txnId: string;
  outcome: OutcomeName;
  reason: string;
  phase: string;
  participants: ParticipantState[];
  ageMs: number;
  decisionIndex: number;
  /** Filled (defaults []) on the wire; optional so older fakes and servers still type. */
  heuristics?: HeuristicInfo[];
  resolutions?: ResolutionInfo[];
}
export interface ListTransactionsResponse {
  transactions: TxnInfo[];
}
export type ClusterStatusRequest = Record<string, never>;
export interface ClusterStatusResponse {
  clusterId: string;
  nodeId: string;
  leaderId: string;
  leaderAddress: string;
  term: number;
  commitIndex: number;
  appliedIndex: number;
  participants: number;
  inFlight: number;
  decided: number;
}

/** Every Coordinator RPC but the lease ones (src/node/coordinator-service.ts). */
export interface CoordinatorCoreHandlers extends grpc.UntypedServiceImplementation {
  RegisterParticipant: grpc.handleUnaryCall<RegisterParticipantRequest, RegisterParticipantResponse>;
  ListParticipants: grpc.handleUnaryCall<ListParticipantsRequest, ListParticipantsResponse>;
  Begin: grpc.handleUnaryCall<BeginRequest, BeginResponse>;
  Commit: grpc.handleUnaryCall<CommitRequest, TxnOutcome>;
  Abort: grpc.handleUnaryCall<AbortRequest, TxnOutcome>;
  GetOutcome: grpc.handleUnaryCall<OutcomeRequest, TxnOutcome>;
  ListTransactions: grpc.handleUnaryCall<ListTransactionsRequest, ListTransactionsResponse>;
  ClusterStatus: grpc.handleUnaryCall<ClusterStatusRequest, ClusterStatusResponse>;
  ReportHeuristic: grpc.handleUnaryCall<ReportHeuristicRequest, ReportHeuristicResponse>;
  ResolveTransaction: grpc.handleUnaryCall<ResolveTransactionRequest, ResolveTransactionResponse>;
  RemoveParticipant: grpc.handleUnaryCall<RemoveParticipantRequest, RemoveParticipantResponse>;
}

export interface CoordinatorHandlers extends CoordinatorCoreHandlers {
  AcquireLease: grpc.handleUnaryCall<LeaseRequest, LeaseResponse>;
  RenewLease: grpc.handleUnaryCall<LeaseRequest, LeaseResponse>;
  ReleaseLease: grpc.handleUnaryCall<LeaseRequest, LeaseResponse>;
}

/** The lease RPCs (handlers: src/node/lease-service.ts). */
export const LEASE_METHODS = ['AcquireLease', 'RenewLease', 'ReleaseLease'] as const;
export type LeaseMethod = (typeof LEASE_METHODS)[number];
export interface LeaseInfo {
  name: string;
  holder: string;
  epoch: number;
  expiresAtMs: number;
}
export interface LeaseRequest {
  name: string;
  holder: string;
  epoch: number;
  ttlMs: number;
}
export interface LeaseResponse {
  granted: boolean;
  reason: string;
  lease: LeaseInfo | null;
  clockMs: number;
}

export const COORDINATOR_METHODS = [
  'RegisterParticipant',
  'ListParticipants',
  'Begin',
  'Commit',
  'Abort',
  'GetOutcome',
  'ListTransactions',
  'ClusterStatus',
  'ReportHeuristic',
  'ResolveTransaction',
  'RemoveParticipant',
  ...LEASE_METHODS,
] as const;
export type CoordinatorMethod = (typeof COORDINATOR_METHODS)[number];

const def = coordinatorPackageDefinition['verdict.coordinator.Coordinator'];
assert(def !== undefined && !('format' in def), `verdict.coordinator.Coordinator is a service in ${COORDINATOR_PROTO_PATH}`);
for (const m of COORDINATOR_METHODS) assert((def as protoLoader.ServiceDefinition)[m] !== undefined, `Coordinator.${m} is defined`);

export const coordinatorService = def as unknown as grpc.ServiceDefinition<CoordinatorHandlers>;

/** One Commit on Coordinator.CommitStream. */
export interface StreamedCommit {
  id: number;
  commit: CommitRequest | null;
}

/** Its answer: `outcome` when code is 0, else the status the unary Commit would have failed with. */
export interface StreamedOutcome {
  id: number;
  outcome: TxnOutcome | null;
  code: number;
  details: string;
  leaderAddress: string;
  leaderId: string;
  /** STATUS_REASON_KEY's value on a refusal, '' when none. */
  statusReason: string;
  /** RECORDED_OUTCOME_KEY's value on an ALREADY_DECIDED refusal, '' otherwise. */
  recordedOutcome: string;
}

export interface StreamedCommits {
  commits: StreamedCommit[];
}

export interface StreamedOutcomes {
  outcomes: StreamedOutcome[];
}

/** Coordinator.CommitStream (kept out of CoordinatorHandlers, whose methods are the unary calls the SDK retries). */
export const commitStreamMethod = (() => {
  const m = (def as protoLoader.ServiceDefinition)['CommitStream'];
  assert(m !== undefined, 'Coordinator.CommitStream is defined');
  return m as unknown as grpc.MethodDefinition<StreamedCommits, StreamedOutcomes>;
})();

/** Metadata key under which a node names, machine-readably, why it refused a request (e.g. `wrong-cluster-id`). */
export const REASON_KEY = 'verdict-reason';

/** Metadata keys by which a follower points at the leader. */
export const LEADER_ID_KEY = 'verdict-leader-id';
export const LEADER_ADDRESS_KEY = 'verdict-leader-address';
/**
 * Metadata key of a refusal's machine-readable reason, one of STATUS_REASONS:
 *   NOT_LEADER       UNAVAILABLE: not done here; the leader is in verdict-leader-id / -address
 *   NO_LEADER        UNAVAILABLE: not done; no leader is known yet, retry after a pause
 *   UNKNOWN_OUTCOME  DEADLINE_EXCEEDED: may have reached a leader and taken effect; retry with
 *                    the same id (a Commit never again with begin) or ask the outcome
 *   ALREADY_DECIDED  ALREADY_EXISTS: the id is decided; verdict-outcome says how; use a new id
 */
export const STATUS_REASON_KEY = 'verdict-reason';
export const STATUS_REASONS = ['NOT_LEADER', 'NO_LEADER', 'UNKNOWN_OUTCOME', 'ALREADY_DECIDED'] as const;
export type StatusReason = (typeof STATUS_REASONS)[number];
/** Metadata key of the outcome recorded for an ALREADY_DECIDED id: COMMITTED or ABORTED. */
export const RECORDED_OUTCOME_KEY = 'verdict-outcome';
/** Metadata key naming the person behind an operator's call (`verdict txn resolve`), e.g. alice@host. */
export const OPERATOR_KEY = 'verdict-operator';
