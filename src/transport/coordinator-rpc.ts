// proto/coordinator.proto, loaded once, with its wire shapes generated under
// the same options (camelCase fields, uint64 as number, enums as their names).
import { protoFile, protoService } from './proto-file.ts';
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { RegisterParticipantRequest__Output as GenRegisterParticipantRequest } from './gen/coordinator/verdict/coordinator/RegisterParticipantRequest.ts';
import type { ParticipantInfo__Output as GenParticipantInfo } from './gen/coordinator/verdict/coordinator/ParticipantInfo.ts';
import type { RegisterParticipantResponse__Output as GenRegisterParticipantResponse } from './gen/coordinator/verdict/coordinator/RegisterParticipantResponse.ts';
import type { ListParticipantsRequest__Output as GenListParticipantsRequest } from './gen/coordinator/verdict/coordinator/ListParticipantsRequest.ts';
import type { ListParticipantsResponse__Output as GenListParticipantsResponse } from './gen/coordinator/verdict/coordinator/ListParticipantsResponse.ts';
import type { BeginRequest__Output as GenBeginRequest } from './gen/coordinator/verdict/coordinator/BeginRequest.ts';
import type { BeginResponse__Output as GenBeginResponse } from './gen/coordinator/verdict/coordinator/BeginResponse.ts';
import type { Enlistment__Output as GenEnlistment } from './gen/coordinator/verdict/coordinator/Enlistment.ts';
import type { CommitRequest__Output as GenCommitRequest } from './gen/coordinator/verdict/coordinator/CommitRequest.ts';
import type { AbortRequest__Output as GenAbortRequest } from './gen/coordinator/verdict/coordinator/AbortRequest.ts';
import type { OutcomeRequest__Output as GenOutcomeRequest } from './gen/coordinator/verdict/coordinator/OutcomeRequest.ts';
import type { OutcomesRequest__Output as GenOutcomesRequest } from './gen/coordinator/verdict/coordinator/OutcomesRequest.ts';
import type { OutcomesResponse__Output as GenOutcomesResponse } from './gen/coordinator/verdict/coordinator/OutcomesResponse.ts';
import type { OutcomeAnswer__Output as GenOutcomeAnswer } from './gen/coordinator/verdict/coordinator/OutcomeAnswer.ts';
import type { TxnOutcome__Output as GenTxnOutcome } from './gen/coordinator/verdict/coordinator/TxnOutcome.ts';
import type { ListTransactionsRequest__Output as GenListTransactionsRequest } from './gen/coordinator/verdict/coordinator/ListTransactionsRequest.ts';
import type { HeuristicInfo__Output as GenHeuristicInfo } from './gen/coordinator/verdict/coordinator/HeuristicInfo.ts';
import type { RemovalInfo__Output as GenRemovalInfo } from './gen/coordinator/verdict/coordinator/RemovalInfo.ts';
import type { ResolutionInfo__Output as GenResolutionInfo } from './gen/coordinator/verdict/coordinator/ResolutionInfo.ts';
import type { ReportHeuristicRequest__Output as GenReportHeuristicRequest } from './gen/coordinator/verdict/coordinator/ReportHeuristicRequest.ts';
import type { ReportHeuristicResponse__Output as GenReportHeuristicResponse } from './gen/coordinator/verdict/coordinator/ReportHeuristicResponse.ts';
import type { ResolveTransactionRequest__Output as GenResolveTransactionRequest } from './gen/coordinator/verdict/coordinator/ResolveTransactionRequest.ts';
import type { RemoveParticipantRequest__Output as GenRemoveParticipantRequest } from './gen/coordinator/verdict/coordinator/RemoveParticipantRequest.ts';
import type { RemoveParticipantResponse__Output as GenRemoveParticipantResponse } from './gen/coordinator/verdict/coordinator/RemoveParticipantResponse.ts';
import type { ResolveTransactionResponse__Output as GenResolveTransactionResponse } from './gen/coordinator/verdict/coordinator/ResolveTransactionResponse.ts';
import type { ParticipantState__Output as GenParticipantState } from './gen/coordinator/verdict/coordinator/ParticipantState.ts';
import type { TxnInfo__Output as GenTxnInfo } from './gen/coordinator/verdict/coordinator/TxnInfo.ts';
import type { ListTransactionsResponse__Output as GenListTransactionsResponse } from './gen/coordinator/verdict/coordinator/ListTransactionsResponse.ts';
import type { ClusterStatusRequest__Output as GenClusterStatusRequest } from './gen/coordinator/verdict/coordinator/ClusterStatusRequest.ts';
import type { ClusterStatusResponse__Output as GenClusterStatusResponse } from './gen/coordinator/verdict/coordinator/ClusterStatusResponse.ts';
import type { LeaseRequest__Output as GenLeaseRequest } from './gen/coordinator/verdict/coordinator/LeaseRequest.ts';
import type { LeaseResponse__Output as GenLeaseResponse } from './gen/coordinator/verdict/coordinator/LeaseResponse.ts';
import type { StreamedCommit__Output as GenStreamedCommit } from './gen/coordinator/verdict/coordinator/StreamedCommit.ts';
import type { StreamedOutcome__Output as GenStreamedOutcome } from './gen/coordinator/verdict/coordinator/StreamedOutcome.ts';
import type { StreamedCommits__Output as GenStreamedCommits } from './gen/coordinator/verdict/coordinator/StreamedCommits.ts';
import type { StreamedOutcomes__Output as GenStreamedOutcomes } from './gen/coordinator/verdict/coordinator/StreamedOutcomes.ts';
import type { Lease__Output as GenLease } from './gen/coordinator/verdict/coordinator/Lease.ts';
import type { Outcome__Output } from './gen/coordinator/verdict/coordinator/Outcome.ts';
import type {
  CoordinatorDefinition,
  CoordinatorHandlers as GenCoordinatorHandlers,
} from './gen/coordinator/verdict/coordinator/Coordinator.ts';
import type { Wire, WireHandlers } from './wire.ts';

export const COORDINATOR_PROTO_PATH = protoFile('coordinator.proto');

export const COORDINATOR_LOAD_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

export const coordinatorPackageDefinition: protoLoader.PackageDefinition = protoLoader.loadSync(
  COORDINATOR_PROTO_PATH,
  COORDINATOR_LOAD_OPTIONS,
);

// ---- Wire shapes: the generated types (src/transport/gen/coordinator/) ----

export type OutcomeName = Outcome__Output;
export type RegisterParticipantRequest = Wire<GenRegisterParticipantRequest>;
export type ParticipantInfo = Wire<GenParticipantInfo>;
export type RegisterParticipantResponse = Wire<GenRegisterParticipantResponse>;
export type ListParticipantsRequest = Wire<GenListParticipantsRequest>;
export type ListParticipantsResponse = Wire<GenListParticipantsResponse>;
export type BeginRequest = Wire<GenBeginRequest>;
export type BeginResponse = Wire<GenBeginResponse>;
export type Enlistment = Wire<GenEnlistment>;
export type CommitRequest = Wire<GenCommitRequest>;
export type AbortRequest = Wire<GenAbortRequest>;
export type OutcomeRequest = Wire<GenOutcomeRequest>;
export type TxnOutcome = Wire<GenTxnOutcome>;
export type OutcomesRequest = Wire<GenOutcomesRequest>;
export type OutcomesResponse = Wire<GenOutcomesResponse>;
export type OutcomeAnswer = Wire<GenOutcomeAnswer>;
export type ListTransactionsRequest = Wire<GenListTransactionsRequest>;
export type HeuristicInfo = Wire<GenHeuristicInfo>;
export type ResolutionInfo = Wire<GenResolutionInfo>;
export type RemovalInfo = Wire<GenRemovalInfo>;
export type ReportHeuristicRequest = Wire<GenReportHeuristicRequest>;
export type ReportHeuristicResponse = Wire<GenReportHeuristicResponse>;
export type ResolveTransactionRequest = Wire<GenResolveTransactionRequest>;
export type RemoveParticipantRequest = Wire<GenRemoveParticipantRequest>;
export type RemoveParticipantResponse = Wire<GenRemoveParticipantResponse>;
export type ResolveTransactionResponse = Wire<GenResolveTransactionResponse>;
export type ParticipantState = Wire<GenParticipantState>;
export type TxnInfo = Wire<GenTxnInfo>;
export type ListTransactionsResponse = Wire<GenListTransactionsResponse>;
export type ClusterStatusRequest = Wire<GenClusterStatusRequest>;
export type ClusterStatusResponse = Wire<GenClusterStatusResponse>;
export type LeaseRequest = Wire<GenLeaseRequest>;
export type LeaseResponse = Wire<GenLeaseResponse>;
export type StreamedCommit = Wire<GenStreamedCommit>;
export type StreamedOutcome = Wire<GenStreamedOutcome>;
export type StreamedCommits = Wire<GenStreamedCommits>;
export type StreamedOutcomes = Wire<GenStreamedOutcomes>;
export type LeaseInfo = Wire<GenLease>;

/** Every Coordinator RPC but CommitStream, whose messages are the unary calls the SDK retries. */
export type CoordinatorHandlers = WireHandlers<GenCoordinatorHandlers, CoordinatorDefinition, 'CommitStream'>;
/** Every Coordinator RPC but CommitStream and the lease ones (src/node/coordinator-service.ts). */
export type CoordinatorCoreHandlers = WireHandlers<
  GenCoordinatorHandlers,
  CoordinatorDefinition,
  'CommitStream' | LeaseMethod
>;

/** The lease RPCs (handlers: src/node/lease-service.ts). */
export const LEASE_METHODS = ['AcquireLease', 'RenewLease', 'ReleaseLease'] as const;
export type LeaseMethod = (typeof LEASE_METHODS)[number];
export const COORDINATOR_METHODS = [
  'RegisterParticipant',
  'ListParticipants',
  'Begin',
  'Commit',
  'Abort',
  'GetOutcome',
  'GetOutcomes',
  'ListTransactions',
  'ClusterStatus',
  'ReportHeuristic',
  'ResolveTransaction',
  'RemoveParticipant',
  ...LEASE_METHODS,
] as const;
export type CoordinatorMethod = (typeof COORDINATOR_METHODS)[number];

const def = protoService<CoordinatorHandlers & { CommitStream: unknown }>(
  coordinatorPackageDefinition,
  COORDINATOR_PROTO_PATH,
  'verdict.coordinator.Coordinator',
  [...COORDINATOR_METHODS, 'CommitStream'],
);

export const coordinatorService = def as unknown as grpc.ServiceDefinition<CoordinatorHandlers>;

/** Coordinator.CommitStream (kept out of CoordinatorHandlers, whose methods are the unary calls the SDK retries). */
export const commitStreamMethod = def.CommitStream as unknown as grpc.MethodDefinition<
  StreamedCommits,
  StreamedOutcomes
>;

/** Metadata key under which a node names, machine-readably, why it refused a request (e.g. `wrong-cluster-id`). */
export const REASON_KEY = 'verdict-reason';

/** Metadata keys by which a follower points at the leader. */
export const LEADER_ID_KEY = 'verdict-leader-id';
export const LEADER_ADDRESS_KEY = 'verdict-leader-address';
/**
 * Metadata key naming the decision group a NOT_LEADER or NO_LEADER redirect is about (a cluster of more than one group;
 * docs/architecture.md).
 */
export const GROUP_KEY = 'verdict-group';
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
