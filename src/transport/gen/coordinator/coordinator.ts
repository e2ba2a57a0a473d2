import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { AbortRequest as _verdict_coordinator_AbortRequest, AbortRequest__Output as _verdict_coordinator_AbortRequest__Output } from './verdict/coordinator/AbortRequest.ts';
import type { BeginRequest as _verdict_coordinator_BeginRequest, BeginRequest__Output as _verdict_coordinator_BeginRequest__Output } from './verdict/coordinator/BeginRequest.ts';
import type { BeginResponse as _verdict_coordinator_BeginResponse, BeginResponse__Output as _verdict_coordinator_BeginResponse__Output } from './verdict/coordinator/BeginResponse.ts';
import type { ClusterStatusRequest as _verdict_coordinator_ClusterStatusRequest, ClusterStatusRequest__Output as _verdict_coordinator_ClusterStatusRequest__Output } from './verdict/coordinator/ClusterStatusRequest.ts';
import type { ClusterStatusResponse as _verdict_coordinator_ClusterStatusResponse, ClusterStatusResponse__Output as _verdict_coordinator_ClusterStatusResponse__Output } from './verdict/coordinator/ClusterStatusResponse.ts';
import type { CommitRequest as _verdict_coordinator_CommitRequest, CommitRequest__Output as _verdict_coordinator_CommitRequest__Output } from './verdict/coordinator/CommitRequest.ts';
import type { CoordinatorClient as _verdict_coordinator_CoordinatorClient, CoordinatorDefinition as _verdict_coordinator_CoordinatorDefinition } from './verdict/coordinator/Coordinator.ts';
import type { Enlistment as _verdict_coordinator_Enlistment, Enlistment__Output as _verdict_coordinator_Enlistment__Output } from './verdict/coordinator/Enlistment.ts';
import type { GroupStatus as _verdict_coordinator_GroupStatus, GroupStatus__Output as _verdict_coordinator_GroupStatus__Output } from './verdict/coordinator/GroupStatus.ts';
import type { HeuristicInfo as _verdict_coordinator_HeuristicInfo, HeuristicInfo__Output as _verdict_coordinator_HeuristicInfo__Output } from './verdict/coordinator/HeuristicInfo.ts';
import type { Lease as _verdict_coordinator_Lease, Lease__Output as _verdict_coordinator_Lease__Output } from './verdict/coordinator/Lease.ts';
import type { LeaseRequest as _verdict_coordinator_LeaseRequest, LeaseRequest__Output as _verdict_coordinator_LeaseRequest__Output } from './verdict/coordinator/LeaseRequest.ts';
import type { LeaseResponse as _verdict_coordinator_LeaseResponse, LeaseResponse__Output as _verdict_coordinator_LeaseResponse__Output } from './verdict/coordinator/LeaseResponse.ts';
import type { ListParticipantsRequest as _verdict_coordinator_ListParticipantsRequest, ListParticipantsRequest__Output as _verdict_coordinator_ListParticipantsRequest__Output } from './verdict/coordinator/ListParticipantsRequest.ts';
import type { ListParticipantsResponse as _verdict_coordinator_ListParticipantsResponse, ListParticipantsResponse__Output as _verdict_coordinator_ListParticipantsResponse__Output } from './verdict/coordinator/ListParticipantsResponse.ts';
import type { ListTransactionsRequest as _verdict_coordinator_ListTransactionsRequest, ListTransactionsRequest__Output as _verdict_coordinator_ListTransactionsRequest__Output } from './verdict/coordinator/ListTransactionsRequest.ts';
import type { ListTransactionsResponse as _verdict_coordinator_ListTransactionsResponse, ListTransactionsResponse__Output as _verdict_coordinator_ListTransactionsResponse__Output } from './verdict/coordinator/ListTransactionsResponse.ts';
import type { OutcomeAnswer as _verdict_coordinator_OutcomeAnswer, OutcomeAnswer__Output as _verdict_coordinator_OutcomeAnswer__Output } from './verdict/coordinator/OutcomeAnswer.ts';
import type { OutcomeRequest as _verdict_coordinator_OutcomeRequest, OutcomeRequest__Output as _verdict_coordinator_OutcomeRequest__Output } from './verdict/coordinator/OutcomeRequest.ts';
import type { OutcomesRequest as _verdict_coordinator_OutcomesRequest, OutcomesRequest__Output as _verdict_coordinator_OutcomesRequest__Output } from './verdict/coordinator/OutcomesRequest.ts';
import type { OutcomesResponse as _verdict_coordinator_OutcomesResponse, OutcomesResponse__Output as _verdict_coordinator_OutcomesResponse__Output } from './verdict/coordinator/OutcomesResponse.ts';
import type { ParticipantInfo as _verdict_coordinator_ParticipantInfo, ParticipantInfo__Output as _verdict_coordinator_ParticipantInfo__Output } from './verdict/coordinator/ParticipantInfo.ts';
import type { ParticipantState as _verdict_coordinator_ParticipantState, ParticipantState__Output as _verdict_coordinator_ParticipantState__Output } from './verdict/coordinator/ParticipantState.ts';
import type { RegisterParticipantRequest as _verdict_coordinator_RegisterParticipantRequest, RegisterParticipantRequest__Output as _verdict_coordinator_RegisterParticipantRequest__Output } from './verdict/coordinator/RegisterParticipantRequest.ts';
import type { RegisterParticipantResponse as _verdict_coordinator_RegisterParticipantResponse, RegisterParticipantResponse__Output as _verdict_coordinator_RegisterParticipantResponse__Output } from './verdict/coordinator/RegisterParticipantResponse.ts';
import type { RemovalInfo as _verdict_coordinator_RemovalInfo, RemovalInfo__Output as _verdict_coordinator_RemovalInfo__Output } from './verdict/coordinator/RemovalInfo.ts';
import type { RemoveParticipantRequest as _verdict_coordinator_RemoveParticipantRequest, RemoveParticipantRequest__Output as _verdict_coordinator_RemoveParticipantRequest__Output } from './verdict/coordinator/RemoveParticipantRequest.ts';
import type { RemoveParticipantResponse as _verdict_coordinator_RemoveParticipantResponse, RemoveParticipantResponse__Output as _verdict_coordinator_RemoveParticipantResponse__Output } from './verdict/coordinator/RemoveParticipantResponse.ts';
import type { ReportHeuristicRequest as _verdict_coordinator_ReportHeuristicRequest, ReportHeuristicRequest__Output as _verdict_coordinator_ReportHeuristicRequest__Output } from './verdict/coordinator/ReportHeuristicRequest.ts';
import type { ReportHeuristicResponse as _verdict_coordinator_ReportHeuristicResponse, ReportHeuristicResponse__Output as _verdict_coordinator_ReportHeuristicResponse__Output } from './verdict/coordinator/ReportHeuristicResponse.ts';
import type { ResolutionInfo as _verdict_coordinator_ResolutionInfo, ResolutionInfo__Output as _verdict_coordinator_ResolutionInfo__Output } from './verdict/coordinator/ResolutionInfo.ts';
import type { ResolveTransactionRequest as _verdict_coordinator_ResolveTransactionRequest, ResolveTransactionRequest__Output as _verdict_coordinator_ResolveTransactionRequest__Output } from './verdict/coordinator/ResolveTransactionRequest.ts';
import type { ResolveTransactionResponse as _verdict_coordinator_ResolveTransactionResponse, ResolveTransactionResponse__Output as _verdict_coordinator_ResolveTransactionResponse__Output } from './verdict/coordinator/ResolveTransactionResponse.ts';
import type { StreamedCommit as _verdict_coordinator_StreamedCommit, StreamedCommit__Output as _verdict_coordinator_StreamedCommit__Output } from './verdict/coordinator/StreamedCommit.ts';
import type { StreamedCommits as _verdict_coordinator_StreamedCommits, StreamedCommits__Output as _verdict_coordinator_StreamedCommits__Output } from './verdict/coordinator/StreamedCommits.ts';
import type { StreamedOutcome as _verdict_coordinator_StreamedOutcome, StreamedOutcome__Output as _verdict_coordinator_StreamedOutcome__Output } from './verdict/coordinator/StreamedOutcome.ts';
import type { StreamedOutcomes as _verdict_coordinator_StreamedOutcomes, StreamedOutcomes__Output as _verdict_coordinator_StreamedOutcomes__Output } from './verdict/coordinator/StreamedOutcomes.ts';
import type { TxnInfo as _verdict_coordinator_TxnInfo, TxnInfo__Output as _verdict_coordinator_TxnInfo__Output } from './verdict/coordinator/TxnInfo.ts';
import type { TxnOutcome as _verdict_coordinator_TxnOutcome, TxnOutcome__Output as _verdict_coordinator_TxnOutcome__Output } from './verdict/coordinator/TxnOutcome.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  verdict: {
    coordinator: {
      AbortRequest: MessageTypeDefinition<_verdict_coordinator_AbortRequest, _verdict_coordinator_AbortRequest__Output>
      BeginRequest: MessageTypeDefinition<_verdict_coordinator_BeginRequest, _verdict_coordinator_BeginRequest__Output>
      BeginResponse: MessageTypeDefinition<_verdict_coordinator_BeginResponse, _verdict_coordinator_BeginResponse__Output>
      ClusterStatusRequest: MessageTypeDefinition<_verdict_coordinator_ClusterStatusRequest, _verdict_coordinator_ClusterStatusRequest__Output>
      ClusterStatusResponse: MessageTypeDefinition<_verdict_coordinator_ClusterStatusResponse, _verdict_coordinator_ClusterStatusResponse__Output>
      CommitMode: EnumTypeDefinition
      CommitRequest: MessageTypeDefinition<_verdict_coordinator_CommitRequest, _verdict_coordinator_CommitRequest__Output>
      Coordinator: SubtypeConstructor<typeof grpc.Client, _verdict_coordinator_CoordinatorClient> & { service: _verdict_coordinator_CoordinatorDefinition }
      Enlistment: MessageTypeDefinition<_verdict_coordinator_Enlistment, _verdict_coordinator_Enlistment__Output>
      GroupStatus: MessageTypeDefinition<_verdict_coordinator_GroupStatus, _verdict_coordinator_GroupStatus__Output>
      HeuristicInfo: MessageTypeDefinition<_verdict_coordinator_HeuristicInfo, _verdict_coordinator_HeuristicInfo__Output>
      Lease: MessageTypeDefinition<_verdict_coordinator_Lease, _verdict_coordinator_Lease__Output>
      LeaseRequest: MessageTypeDefinition<_verdict_coordinator_LeaseRequest, _verdict_coordinator_LeaseRequest__Output>
      LeaseResponse: MessageTypeDefinition<_verdict_coordinator_LeaseResponse, _verdict_coordinator_LeaseResponse__Output>
      ListParticipantsRequest: MessageTypeDefinition<_verdict_coordinator_ListParticipantsRequest, _verdict_coordinator_ListParticipantsRequest__Output>
      ListParticipantsResponse: MessageTypeDefinition<_verdict_coordinator_ListParticipantsResponse, _verdict_coordinator_ListParticipantsResponse__Output>
      ListTransactionsRequest: MessageTypeDefinition<_verdict_coordinator_ListTransactionsRequest, _verdict_coordinator_ListTransactionsRequest__Output>
      ListTransactionsResponse: MessageTypeDefinition<_verdict_coordinator_ListTransactionsResponse, _verdict_coordinator_ListTransactionsResponse__Output>
      Outcome: EnumTypeDefinition
      OutcomeAnswer: MessageTypeDefinition<_verdict_coordinator_OutcomeAnswer, _verdict_coordinator_OutcomeAnswer__Output>
      OutcomeRequest: MessageTypeDefinition<_verdict_coordinator_OutcomeRequest, _verdict_coordinator_OutcomeRequest__Output>
      OutcomesRequest: MessageTypeDefinition<_verdict_coordinator_OutcomesRequest, _verdict_coordinator_OutcomesRequest__Output>
      OutcomesResponse: MessageTypeDefinition<_verdict_coordinator_OutcomesResponse, _verdict_coordinator_OutcomesResponse__Output>
      ParticipantInfo: MessageTypeDefinition<_verdict_coordinator_ParticipantInfo, _verdict_coordinator_ParticipantInfo__Output>
      ParticipantState: MessageTypeDefinition<_verdict_coordinator_ParticipantState, _verdict_coordinator_ParticipantState__Output>
      RegisterParticipantRequest: MessageTypeDefinition<_verdict_coordinator_RegisterParticipantRequest, _verdict_coordinator_RegisterParticipantRequest__Output>
      RegisterParticipantResponse: MessageTypeDefinition<_verdict_coordinator_RegisterParticipantResponse, _verdict_coordinator_RegisterParticipantResponse__Output>
      RemovalInfo: MessageTypeDefinition<_verdict_coordinator_RemovalInfo, _verdict_coordinator_RemovalInfo__Output>
      RemoveParticipantRequest: MessageTypeDefinition<_verdict_coordinator_RemoveParticipantRequest, _verdict_coordinator_RemoveParticipantRequest__Output>
      RemoveParticipantResponse: MessageTypeDefinition<_verdict_coordinator_RemoveParticipantResponse, _verdict_coordinator_RemoveParticipantResponse__Output>
      ReportHeuristicRequest: MessageTypeDefinition<_verdict_coordinator_ReportHeuristicRequest, _verdict_coordinator_ReportHeuristicRequest__Output>
      ReportHeuristicResponse: MessageTypeDefinition<_verdict_coordinator_ReportHeuristicResponse, _verdict_coordinator_ReportHeuristicResponse__Output>
      ResolutionInfo: MessageTypeDefinition<_verdict_coordinator_ResolutionInfo, _verdict_coordinator_ResolutionInfo__Output>
      ResolveTransactionRequest: MessageTypeDefinition<_verdict_coordinator_ResolveTransactionRequest, _verdict_coordinator_ResolveTransactionRequest__Output>
      ResolveTransactionResponse: MessageTypeDefinition<_verdict_coordinator_ResolveTransactionResponse, _verdict_coordinator_ResolveTransactionResponse__Output>
      StreamedCommit: MessageTypeDefinition<_verdict_coordinator_StreamedCommit, _verdict_coordinator_StreamedCommit__Output>
      StreamedCommits: MessageTypeDefinition<_verdict_coordinator_StreamedCommits, _verdict_coordinator_StreamedCommits__Output>
      StreamedOutcome: MessageTypeDefinition<_verdict_coordinator_StreamedOutcome, _verdict_coordinator_StreamedOutcome__Output>
      StreamedOutcomes: MessageTypeDefinition<_verdict_coordinator_StreamedOutcomes, _verdict_coordinator_StreamedOutcomes__Output>
      TxnInfo: MessageTypeDefinition<_verdict_coordinator_TxnInfo, _verdict_coordinator_TxnInfo__Output>
      TxnOutcome: MessageTypeDefinition<_verdict_coordinator_TxnOutcome, _verdict_coordinator_TxnOutcome__Output>
    }
  }
}

