// Original file: proto/coordinator.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AbortRequest as _verdict_coordinator_AbortRequest, AbortRequest__Output as _verdict_coordinator_AbortRequest__Output } from '../../verdict/coordinator/AbortRequest.ts';
import type { BeginRequest as _verdict_coordinator_BeginRequest, BeginRequest__Output as _verdict_coordinator_BeginRequest__Output } from '../../verdict/coordinator/BeginRequest.ts';
import type { BeginResponse as _verdict_coordinator_BeginResponse, BeginResponse__Output as _verdict_coordinator_BeginResponse__Output } from '../../verdict/coordinator/BeginResponse.ts';
import type { ClusterStatusRequest as _verdict_coordinator_ClusterStatusRequest, ClusterStatusRequest__Output as _verdict_coordinator_ClusterStatusRequest__Output } from '../../verdict/coordinator/ClusterStatusRequest.ts';
import type { ClusterStatusResponse as _verdict_coordinator_ClusterStatusResponse, ClusterStatusResponse__Output as _verdict_coordinator_ClusterStatusResponse__Output } from '../../verdict/coordinator/ClusterStatusResponse.ts';
import type { CommitRequest as _verdict_coordinator_CommitRequest, CommitRequest__Output as _verdict_coordinator_CommitRequest__Output } from '../../verdict/coordinator/CommitRequest.ts';
import type { LeaseRequest as _verdict_coordinator_LeaseRequest, LeaseRequest__Output as _verdict_coordinator_LeaseRequest__Output } from '../../verdict/coordinator/LeaseRequest.ts';
import type { LeaseResponse as _verdict_coordinator_LeaseResponse, LeaseResponse__Output as _verdict_coordinator_LeaseResponse__Output } from '../../verdict/coordinator/LeaseResponse.ts';
import type { ListParticipantsRequest as _verdict_coordinator_ListParticipantsRequest, ListParticipantsRequest__Output as _verdict_coordinator_ListParticipantsRequest__Output } from '../../verdict/coordinator/ListParticipantsRequest.ts';
import type { ListParticipantsResponse as _verdict_coordinator_ListParticipantsResponse, ListParticipantsResponse__Output as _verdict_coordinator_ListParticipantsResponse__Output } from '../../verdict/coordinator/ListParticipantsResponse.ts';
import type { ListTransactionsRequest as _verdict_coordinator_ListTransactionsRequest, ListTransactionsRequest__Output as _verdict_coordinator_ListTransactionsRequest__Output } from '../../verdict/coordinator/ListTransactionsRequest.ts';
import type { ListTransactionsResponse as _verdict_coordinator_ListTransactionsResponse, ListTransactionsResponse__Output as _verdict_coordinator_ListTransactionsResponse__Output } from '../../verdict/coordinator/ListTransactionsResponse.ts';
import type { OutcomeRequest as _verdict_coordinator_OutcomeRequest, OutcomeRequest__Output as _verdict_coordinator_OutcomeRequest__Output } from '../../verdict/coordinator/OutcomeRequest.ts';
import type { OutcomesRequest as _verdict_coordinator_OutcomesRequest, OutcomesRequest__Output as _verdict_coordinator_OutcomesRequest__Output } from '../../verdict/coordinator/OutcomesRequest.ts';
import type { OutcomesResponse as _verdict_coordinator_OutcomesResponse, OutcomesResponse__Output as _verdict_coordinator_OutcomesResponse__Output } from '../../verdict/coordinator/OutcomesResponse.ts';
import type { RegisterParticipantRequest as _verdict_coordinator_RegisterParticipantRequest, RegisterParticipantRequest__Output as _verdict_coordinator_RegisterParticipantRequest__Output } from '../../verdict/coordinator/RegisterParticipantRequest.ts';
import type { RegisterParticipantResponse as _verdict_coordinator_RegisterParticipantResponse, RegisterParticipantResponse__Output as _verdict_coordinator_RegisterParticipantResponse__Output } from '../../verdict/coordinator/RegisterParticipantResponse.ts';
import type { RemoveParticipantRequest as _verdict_coordinator_RemoveParticipantRequest, RemoveParticipantRequest__Output as _verdict_coordinator_RemoveParticipantRequest__Output } from '../../verdict/coordinator/RemoveParticipantRequest.ts';
import type { RemoveParticipantResponse as _verdict_coordinator_RemoveParticipantResponse, RemoveParticipantResponse__Output as _verdict_coordinator_RemoveParticipantResponse__Output } from '../../verdict/coordinator/RemoveParticipantResponse.ts';
import type { ReportHeuristicRequest as _verdict_coordinator_ReportHeuristicRequest, ReportHeuristicRequest__Output as _verdict_coordinator_ReportHeuristicRequest__Output } from '../../verdict/coordinator/ReportHeuristicRequest.ts';
import type { ReportHeuristicResponse as _verdict_coordinator_ReportHeuristicResponse, ReportHeuristicResponse__Output as _verdict_coordinator_ReportHeuristicResponse__Output } from '../../verdict/coordinator/ReportHeuristicResponse.ts';
import type { ResolveTransactionRequest as _verdict_coordinator_ResolveTransactionRequest, ResolveTransactionRequest__Output as _verdict_coordinator_ResolveTransactionRequest__Output } from '../../verdict/coordinator/ResolveTransactionRequest.ts';
import type { ResolveTransactionResponse as _verdict_coordinator_ResolveTransactionResponse, ResolveTransactionResponse__Output as _verdict_coordinator_ResolveTransactionResponse__Output } from '../../verdict/coordinator/ResolveTransactionResponse.ts';
import type { StreamedCommits as _verdict_coordinator_StreamedCommits, StreamedCommits__Output as _verdict_coordinator_StreamedCommits__Output } from '../../verdict/coordinator/StreamedCommits.ts';
import type { StreamedOutcomes as _verdict_coordinator_StreamedOutcomes, StreamedOutcomes__Output as _verdict_coordinator_StreamedOutcomes__Output } from '../../verdict/coordinator/StreamedOutcomes.ts';
import type { TxnOutcome as _verdict_coordinator_TxnOutcome, TxnOutcome__Output as _verdict_coordinator_TxnOutcome__Output } from '../../verdict/coordinator/TxnOutcome.ts';

export interface CoordinatorClient extends grpc.Client {
  Abort(argument: _verdict_coordinator_AbortRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  Abort(argument: _verdict_coordinator_AbortRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  Abort(argument: _verdict_coordinator_AbortRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  Abort(argument: _verdict_coordinator_AbortRequest, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  abort(argument: _verdict_coordinator_AbortRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  abort(argument: _verdict_coordinator_AbortRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  abort(argument: _verdict_coordinator_AbortRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  abort(argument: _verdict_coordinator_AbortRequest, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  
  AcquireLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  AcquireLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  AcquireLease(argument: _verdict_coordinator_LeaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  AcquireLease(argument: _verdict_coordinator_LeaseRequest, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  acquireLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  acquireLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  acquireLease(argument: _verdict_coordinator_LeaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  acquireLease(argument: _verdict_coordinator_LeaseRequest, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  
  Begin(argument: _verdict_coordinator_BeginRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_BeginResponse__Output>): grpc.ClientUnaryCall;
  Begin(argument: _verdict_coordinator_BeginRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_BeginResponse__Output>): grpc.ClientUnaryCall;
  Begin(argument: _verdict_coordinator_BeginRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_BeginResponse__Output>): grpc.ClientUnaryCall;
  Begin(argument: _verdict_coordinator_BeginRequest, callback: grpc.requestCallback<_verdict_coordinator_BeginResponse__Output>): grpc.ClientUnaryCall;
  begin(argument: _verdict_coordinator_BeginRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_BeginResponse__Output>): grpc.ClientUnaryCall;
  begin(argument: _verdict_coordinator_BeginRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_BeginResponse__Output>): grpc.ClientUnaryCall;
  begin(argument: _verdict_coordinator_BeginRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_BeginResponse__Output>): grpc.ClientUnaryCall;
  begin(argument: _verdict_coordinator_BeginRequest, callback: grpc.requestCallback<_verdict_coordinator_BeginResponse__Output>): grpc.ClientUnaryCall;
  
  ClusterStatus(argument: _verdict_coordinator_ClusterStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  ClusterStatus(argument: _verdict_coordinator_ClusterStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  ClusterStatus(argument: _verdict_coordinator_ClusterStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  ClusterStatus(argument: _verdict_coordinator_ClusterStatusRequest, callback: grpc.requestCallback<_verdict_coordinator_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  clusterStatus(argument: _verdict_coordinator_ClusterStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  clusterStatus(argument: _verdict_coordinator_ClusterStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  clusterStatus(argument: _verdict_coordinator_ClusterStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  clusterStatus(argument: _verdict_coordinator_ClusterStatusRequest, callback: grpc.requestCallback<_verdict_coordinator_ClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  
  Commit(argument: _verdict_coordinator_CommitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  Commit(argument: _verdict_coordinator_CommitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  Commit(argument: _verdict_coordinator_CommitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  Commit(argument: _verdict_coordinator_CommitRequest, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  commit(argument: _verdict_coordinator_CommitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  commit(argument: _verdict_coordinator_CommitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  commit(argument: _verdict_coordinator_CommitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  commit(argument: _verdict_coordinator_CommitRequest, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  
  CommitStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_coordinator_StreamedCommits, _verdict_coordinator_StreamedOutcomes__Output>;
  CommitStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_coordinator_StreamedCommits, _verdict_coordinator_StreamedOutcomes__Output>;
  commitStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_coordinator_StreamedCommits, _verdict_coordinator_StreamedOutcomes__Output>;
  commitStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_coordinator_StreamedCommits, _verdict_coordinator_StreamedOutcomes__Output>;
  
  GetOutcome(argument: _verdict_coordinator_OutcomeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  GetOutcome(argument: _verdict_coordinator_OutcomeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  GetOutcome(argument: _verdict_coordinator_OutcomeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  GetOutcome(argument: _verdict_coordinator_OutcomeRequest, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  getOutcome(argument: _verdict_coordinator_OutcomeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  getOutcome(argument: _verdict_coordinator_OutcomeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  getOutcome(argument: _verdict_coordinator_OutcomeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  getOutcome(argument: _verdict_coordinator_OutcomeRequest, callback: grpc.requestCallback<_verdict_coordinator_TxnOutcome__Output>): grpc.ClientUnaryCall;
  
  GetOutcomes(argument: _verdict_coordinator_OutcomesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_OutcomesResponse__Output>): grpc.ClientUnaryCall;
  GetOutcomes(argument: _verdict_coordinator_OutcomesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_OutcomesResponse__Output>): grpc.ClientUnaryCall;
  GetOutcomes(argument: _verdict_coordinator_OutcomesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_OutcomesResponse__Output>): grpc.ClientUnaryCall;
  GetOutcomes(argument: _verdict_coordinator_OutcomesRequest, callback: grpc.requestCallback<_verdict_coordinator_OutcomesResponse__Output>): grpc.ClientUnaryCall;
  getOutcomes(argument: _verdict_coordinator_OutcomesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_OutcomesResponse__Output>): grpc.ClientUnaryCall;
  getOutcomes(argument: _verdict_coordinator_OutcomesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_OutcomesResponse__Output>): grpc.ClientUnaryCall;
  getOutcomes(argument: _verdict_coordinator_OutcomesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_OutcomesResponse__Output>): grpc.ClientUnaryCall;
  getOutcomes(argument: _verdict_coordinator_OutcomesRequest, callback: grpc.requestCallback<_verdict_coordinator_OutcomesResponse__Output>): grpc.ClientUnaryCall;
  
  ListParticipants(argument: _verdict_coordinator_ListParticipantsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ListParticipantsResponse__Output>): grpc.ClientUnaryCall;
  ListParticipants(argument: _verdict_coordinator_ListParticipantsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_ListParticipantsResponse__Output>): grpc.ClientUnaryCall;
  ListParticipants(argument: _verdict_coordinator_ListParticipantsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ListParticipantsResponse__Output>): grpc.ClientUnaryCall;
  ListParticipants(argument: _verdict_coordinator_ListParticipantsRequest, callback: grpc.requestCallback<_verdict_coordinator_ListParticipantsResponse__Output>): grpc.ClientUnaryCall;
  listParticipants(argument: _verdict_coordinator_ListParticipantsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ListParticipantsResponse__Output>): grpc.ClientUnaryCall;
  listParticipants(argument: _verdict_coordinator_ListParticipantsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_ListParticipantsResponse__Output>): grpc.ClientUnaryCall;
  listParticipants(argument: _verdict_coordinator_ListParticipantsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ListParticipantsResponse__Output>): grpc.ClientUnaryCall;
  listParticipants(argument: _verdict_coordinator_ListParticipantsRequest, callback: grpc.requestCallback<_verdict_coordinator_ListParticipantsResponse__Output>): grpc.ClientUnaryCall;
  
  ListTransactions(argument: _verdict_coordinator_ListTransactionsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ListTransactionsResponse__Output>): grpc.ClientUnaryCall;
  ListTransactions(argument: _verdict_coordinator_ListTransactionsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_ListTransactionsResponse__Output>): grpc.ClientUnaryCall;
  ListTransactions(argument: _verdict_coordinator_ListTransactionsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ListTransactionsResponse__Output>): grpc.ClientUnaryCall;
  ListTransactions(argument: _verdict_coordinator_ListTransactionsRequest, callback: grpc.requestCallback<_verdict_coordinator_ListTransactionsResponse__Output>): grpc.ClientUnaryCall;
  listTransactions(argument: _verdict_coordinator_ListTransactionsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ListTransactionsResponse__Output>): grpc.ClientUnaryCall;
  listTransactions(argument: _verdict_coordinator_ListTransactionsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_ListTransactionsResponse__Output>): grpc.ClientUnaryCall;
  listTransactions(argument: _verdict_coordinator_ListTransactionsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ListTransactionsResponse__Output>): grpc.ClientUnaryCall;
  listTransactions(argument: _verdict_coordinator_ListTransactionsRequest, callback: grpc.requestCallback<_verdict_coordinator_ListTransactionsResponse__Output>): grpc.ClientUnaryCall;
  
  RegisterParticipant(argument: _verdict_coordinator_RegisterParticipantRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_RegisterParticipantResponse__Output>): grpc.ClientUnaryCall;
  RegisterParticipant(argument: _verdict_coordinator_RegisterParticipantRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_RegisterParticipantResponse__Output>): grpc.ClientUnaryCall;
  RegisterParticipant(argument: _verdict_coordinator_RegisterParticipantRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_RegisterParticipantResponse__Output>): grpc.ClientUnaryCall;
  RegisterParticipant(argument: _verdict_coordinator_RegisterParticipantRequest, callback: grpc.requestCallback<_verdict_coordinator_RegisterParticipantResponse__Output>): grpc.ClientUnaryCall;
  registerParticipant(argument: _verdict_coordinator_RegisterParticipantRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_RegisterParticipantResponse__Output>): grpc.ClientUnaryCall;
  registerParticipant(argument: _verdict_coordinator_RegisterParticipantRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_RegisterParticipantResponse__Output>): grpc.ClientUnaryCall;
  registerParticipant(argument: _verdict_coordinator_RegisterParticipantRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_RegisterParticipantResponse__Output>): grpc.ClientUnaryCall;
  registerParticipant(argument: _verdict_coordinator_RegisterParticipantRequest, callback: grpc.requestCallback<_verdict_coordinator_RegisterParticipantResponse__Output>): grpc.ClientUnaryCall;
  
  ReleaseLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  ReleaseLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  ReleaseLease(argument: _verdict_coordinator_LeaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  ReleaseLease(argument: _verdict_coordinator_LeaseRequest, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  releaseLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  releaseLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  releaseLease(argument: _verdict_coordinator_LeaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  releaseLease(argument: _verdict_coordinator_LeaseRequest, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  
  RemoveParticipant(argument: _verdict_coordinator_RemoveParticipantRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_RemoveParticipantResponse__Output>): grpc.ClientUnaryCall;
  RemoveParticipant(argument: _verdict_coordinator_RemoveParticipantRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_RemoveParticipantResponse__Output>): grpc.ClientUnaryCall;
  RemoveParticipant(argument: _verdict_coordinator_RemoveParticipantRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_RemoveParticipantResponse__Output>): grpc.ClientUnaryCall;
  RemoveParticipant(argument: _verdict_coordinator_RemoveParticipantRequest, callback: grpc.requestCallback<_verdict_coordinator_RemoveParticipantResponse__Output>): grpc.ClientUnaryCall;
  removeParticipant(argument: _verdict_coordinator_RemoveParticipantRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_RemoveParticipantResponse__Output>): grpc.ClientUnaryCall;
  removeParticipant(argument: _verdict_coordinator_RemoveParticipantRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_RemoveParticipantResponse__Output>): grpc.ClientUnaryCall;
  removeParticipant(argument: _verdict_coordinator_RemoveParticipantRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_RemoveParticipantResponse__Output>): grpc.ClientUnaryCall;
  removeParticipant(argument: _verdict_coordinator_RemoveParticipantRequest, callback: grpc.requestCallback<_verdict_coordinator_RemoveParticipantResponse__Output>): grpc.ClientUnaryCall;
  
  RenewLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  RenewLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  RenewLease(argument: _verdict_coordinator_LeaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  RenewLease(argument: _verdict_coordinator_LeaseRequest, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  renewLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  renewLease(argument: _verdict_coordinator_LeaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  renewLease(argument: _verdict_coordinator_LeaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  renewLease(argument: _verdict_coordinator_LeaseRequest, callback: grpc.requestCallback<_verdict_coordinator_LeaseResponse__Output>): grpc.ClientUnaryCall;
  
  ReportHeuristic(argument: _verdict_coordinator_ReportHeuristicRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ReportHeuristicResponse__Output>): grpc.ClientUnaryCall;
  ReportHeuristic(argument: _verdict_coordinator_ReportHeuristicRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_ReportHeuristicResponse__Output>): grpc.ClientUnaryCall;
  ReportHeuristic(argument: _verdict_coordinator_ReportHeuristicRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ReportHeuristicResponse__Output>): grpc.ClientUnaryCall;
  ReportHeuristic(argument: _verdict_coordinator_ReportHeuristicRequest, callback: grpc.requestCallback<_verdict_coordinator_ReportHeuristicResponse__Output>): grpc.ClientUnaryCall;
  reportHeuristic(argument: _verdict_coordinator_ReportHeuristicRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ReportHeuristicResponse__Output>): grpc.ClientUnaryCall;
  reportHeuristic(argument: _verdict_coordinator_ReportHeuristicRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_ReportHeuristicResponse__Output>): grpc.ClientUnaryCall;
  reportHeuristic(argument: _verdict_coordinator_ReportHeuristicRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ReportHeuristicResponse__Output>): grpc.ClientUnaryCall;
  reportHeuristic(argument: _verdict_coordinator_ReportHeuristicRequest, callback: grpc.requestCallback<_verdict_coordinator_ReportHeuristicResponse__Output>): grpc.ClientUnaryCall;
  
  ResolveTransaction(argument: _verdict_coordinator_ResolveTransactionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ResolveTransactionResponse__Output>): grpc.ClientUnaryCall;
  ResolveTransaction(argument: _verdict_coordinator_ResolveTransactionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_ResolveTransactionResponse__Output>): grpc.ClientUnaryCall;
  ResolveTransaction(argument: _verdict_coordinator_ResolveTransactionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ResolveTransactionResponse__Output>): grpc.ClientUnaryCall;
  ResolveTransaction(argument: _verdict_coordinator_ResolveTransactionRequest, callback: grpc.requestCallback<_verdict_coordinator_ResolveTransactionResponse__Output>): grpc.ClientUnaryCall;
  resolveTransaction(argument: _verdict_coordinator_ResolveTransactionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ResolveTransactionResponse__Output>): grpc.ClientUnaryCall;
  resolveTransaction(argument: _verdict_coordinator_ResolveTransactionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_coordinator_ResolveTransactionResponse__Output>): grpc.ClientUnaryCall;
  resolveTransaction(argument: _verdict_coordinator_ResolveTransactionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_coordinator_ResolveTransactionResponse__Output>): grpc.ClientUnaryCall;
  resolveTransaction(argument: _verdict_coordinator_ResolveTransactionRequest, callback: grpc.requestCallback<_verdict_coordinator_ResolveTransactionResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface CoordinatorHandlers extends grpc.UntypedServiceImplementation {
  Abort: grpc.handleUnaryCall<_verdict_coordinator_AbortRequest__Output, _verdict_coordinator_TxnOutcome>;
  
  AcquireLease: grpc.handleUnaryCall<_verdict_coordinator_LeaseRequest__Output, _verdict_coordinator_LeaseResponse>;
  
  Begin: grpc.handleUnaryCall<_verdict_coordinator_BeginRequest__Output, _verdict_coordinator_BeginResponse>;
  
  ClusterStatus: grpc.handleUnaryCall<_verdict_coordinator_ClusterStatusRequest__Output, _verdict_coordinator_ClusterStatusResponse>;
  
  Commit: grpc.handleUnaryCall<_verdict_coordinator_CommitRequest__Output, _verdict_coordinator_TxnOutcome>;
  
  CommitStream: grpc.handleBidiStreamingCall<_verdict_coordinator_StreamedCommits__Output, _verdict_coordinator_StreamedOutcomes>;
  
  GetOutcome: grpc.handleUnaryCall<_verdict_coordinator_OutcomeRequest__Output, _verdict_coordinator_TxnOutcome>;
  
  GetOutcomes: grpc.handleUnaryCall<_verdict_coordinator_OutcomesRequest__Output, _verdict_coordinator_OutcomesResponse>;
  
  ListParticipants: grpc.handleUnaryCall<_verdict_coordinator_ListParticipantsRequest__Output, _verdict_coordinator_ListParticipantsResponse>;
  
  ListTransactions: grpc.handleUnaryCall<_verdict_coordinator_ListTransactionsRequest__Output, _verdict_coordinator_ListTransactionsResponse>;
  
  RegisterParticipant: grpc.handleUnaryCall<_verdict_coordinator_RegisterParticipantRequest__Output, _verdict_coordinator_RegisterParticipantResponse>;
  
  ReleaseLease: grpc.handleUnaryCall<_verdict_coordinator_LeaseRequest__Output, _verdict_coordinator_LeaseResponse>;
  
  RemoveParticipant: grpc.handleUnaryCall<_verdict_coordinator_RemoveParticipantRequest__Output, _verdict_coordinator_RemoveParticipantResponse>;
  
  RenewLease: grpc.handleUnaryCall<_verdict_coordinator_LeaseRequest__Output, _verdict_coordinator_LeaseResponse>;
  
  ReportHeuristic: grpc.handleUnaryCall<_verdict_coordinator_ReportHeuristicRequest__Output, _verdict_coordinator_ReportHeuristicResponse>;
  
  ResolveTransaction: grpc.handleUnaryCall<_verdict_coordinator_ResolveTransactionRequest__Output, _verdict_coordinator_ResolveTransactionResponse>;
  
}

export interface CoordinatorDefinition extends grpc.ServiceDefinition {
  Abort: MethodDefinition<_verdict_coordinator_AbortRequest, _verdict_coordinator_TxnOutcome, _verdict_coordinator_AbortRequest__Output, _verdict_coordinator_TxnOutcome__Output>
  AcquireLease: MethodDefinition<_verdict_coordinator_LeaseRequest, _verdict_coordinator_LeaseResponse, _verdict_coordinator_LeaseRequest__Output, _verdict_coordinator_LeaseResponse__Output>
  Begin: MethodDefinition<_verdict_coordinator_BeginRequest, _verdict_coordinator_BeginResponse, _verdict_coordinator_BeginRequest__Output, _verdict_coordinator_BeginResponse__Output>
  ClusterStatus: MethodDefinition<_verdict_coordinator_ClusterStatusRequest, _verdict_coordinator_ClusterStatusResponse, _verdict_coordinator_ClusterStatusRequest__Output, _verdict_coordinator_ClusterStatusResponse__Output>
  Commit: MethodDefinition<_verdict_coordinator_CommitRequest, _verdict_coordinator_TxnOutcome, _verdict_coordinator_CommitRequest__Output, _verdict_coordinator_TxnOutcome__Output>
  CommitStream: MethodDefinition<_verdict_coordinator_StreamedCommits, _verdict_coordinator_StreamedOutcomes, _verdict_coordinator_StreamedCommits__Output, _verdict_coordinator_StreamedOutcomes__Output>
  GetOutcome: MethodDefinition<_verdict_coordinator_OutcomeRequest, _verdict_coordinator_TxnOutcome, _verdict_coordinator_OutcomeRequest__Output, _verdict_coordinator_TxnOutcome__Output>
  GetOutcomes: MethodDefinition<_verdict_coordinator_OutcomesRequest, _verdict_coordinator_OutcomesResponse, _verdict_coordinator_OutcomesRequest__Output, _verdict_coordinator_OutcomesResponse__Output>
  ListParticipants: MethodDefinition<_verdict_coordinator_ListParticipantsRequest, _verdict_coordinator_ListParticipantsResponse, _verdict_coordinator_ListParticipantsRequest__Output, _verdict_coordinator_ListParticipantsResponse__Output>
  ListTransactions: MethodDefinition<_verdict_coordinator_ListTransactionsRequest, _verdict_coordinator_ListTransactionsResponse, _verdict_coordinator_ListTransactionsRequest__Output, _verdict_coordinator_ListTransactionsResponse__Output>
  RegisterParticipant: MethodDefinition<_verdict_coordinator_RegisterParticipantRequest, _verdict_coordinator_RegisterParticipantResponse, _verdict_coordinator_RegisterParticipantRequest__Output, _verdict_coordinator_RegisterParticipantResponse__Output>
  ReleaseLease: MethodDefinition<_verdict_coordinator_LeaseRequest, _verdict_coordinator_LeaseResponse, _verdict_coordinator_LeaseRequest__Output, _verdict_coordinator_LeaseResponse__Output>
  RemoveParticipant: MethodDefinition<_verdict_coordinator_RemoveParticipantRequest, _verdict_coordinator_RemoveParticipantResponse, _verdict_coordinator_RemoveParticipantRequest__Output, _verdict_coordinator_RemoveParticipantResponse__Output>
  RenewLease: MethodDefinition<_verdict_coordinator_LeaseRequest, _verdict_coordinator_LeaseResponse, _verdict_coordinator_LeaseRequest__Output, _verdict_coordinator_LeaseResponse__Output>
  ReportHeuristic: MethodDefinition<_verdict_coordinator_ReportHeuristicRequest, _verdict_coordinator_ReportHeuristicResponse, _verdict_coordinator_ReportHeuristicRequest__Output, _verdict_coordinator_ReportHeuristicResponse__Output>
  ResolveTransaction: MethodDefinition<_verdict_coordinator_ResolveTransactionRequest, _verdict_coordinator_ResolveTransactionResponse, _verdict_coordinator_ResolveTransactionRequest__Output, _verdict_coordinator_ResolveTransactionResponse__Output>
}
