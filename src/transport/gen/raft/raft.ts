import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { AddMemberRequest as _verdict_raft_AddMemberRequest, AddMemberRequest__Output as _verdict_raft_AddMemberRequest__Output } from './verdict/raft/AddMemberRequest.ts';
import type { Batch as _verdict_raft_Batch, Batch__Output as _verdict_raft_Batch__Output } from './verdict/raft/Batch.ts';
import type { ConfState as _verdict_raft_ConfState, ConfState__Output as _verdict_raft_ConfState__Output } from './verdict/raft/ConfState.ts';
import type { Entry as _verdict_raft_Entry, Entry__Output as _verdict_raft_Entry__Output } from './verdict/raft/Entry.ts';
import type { HistoryAct as _verdict_raft_HistoryAct, HistoryAct__Output as _verdict_raft_HistoryAct__Output } from './verdict/raft/HistoryAct.ts';
import type { HistoryPage as _verdict_raft_HistoryPage, HistoryPage__Output as _verdict_raft_HistoryPage__Output } from './verdict/raft/HistoryPage.ts';
import type { HistoryParticipant as _verdict_raft_HistoryParticipant, HistoryParticipant__Output as _verdict_raft_HistoryParticipant__Output } from './verdict/raft/HistoryParticipant.ts';
import type { HistoryQuery as _verdict_raft_HistoryQuery, HistoryQuery__Output as _verdict_raft_HistoryQuery__Output } from './verdict/raft/HistoryQuery.ts';
import type { HistoryRecord as _verdict_raft_HistoryRecord, HistoryRecord__Output as _verdict_raft_HistoryRecord__Output } from './verdict/raft/HistoryRecord.ts';
import type { HistoryRow as _verdict_raft_HistoryRow, HistoryRow__Output as _verdict_raft_HistoryRow__Output } from './verdict/raft/HistoryRow.ts';
import type { HistorySaga as _verdict_raft_HistorySaga, HistorySaga__Output as _verdict_raft_HistorySaga__Output } from './verdict/raft/HistorySaga.ts';
import type { HistorySagaCall as _verdict_raft_HistorySagaCall, HistorySagaCall__Output as _verdict_raft_HistorySagaCall__Output } from './verdict/raft/HistorySagaCall.ts';
import type { HistorySagaEvent as _verdict_raft_HistorySagaEvent, HistorySagaEvent__Output as _verdict_raft_HistorySagaEvent__Output } from './verdict/raft/HistorySagaEvent.ts';
import type { HistorySagaStep as _verdict_raft_HistorySagaStep, HistorySagaStep__Output as _verdict_raft_HistorySagaStep__Output } from './verdict/raft/HistorySagaStep.ts';
import type { ListMembersRequest as _verdict_raft_ListMembersRequest, ListMembersRequest__Output as _verdict_raft_ListMembersRequest__Output } from './verdict/raft/ListMembersRequest.ts';
import type { LogRange as _verdict_raft_LogRange, LogRange__Output as _verdict_raft_LogRange__Output } from './verdict/raft/LogRange.ts';
import type { Member as _verdict_raft_Member, Member__Output as _verdict_raft_Member__Output } from './verdict/raft/Member.ts';
import type { Members as _verdict_raft_Members, Members__Output as _verdict_raft_Members__Output } from './verdict/raft/Members.ts';
import type { Message as _verdict_raft_Message, Message__Output as _verdict_raft_Message__Output } from './verdict/raft/Message.ts';
import type { NodeStatus as _verdict_raft_NodeStatus, NodeStatus__Output as _verdict_raft_NodeStatus__Output } from './verdict/raft/NodeStatus.ts';
import type { PeerStatus as _verdict_raft_PeerStatus, PeerStatus__Output as _verdict_raft_PeerStatus__Output } from './verdict/raft/PeerStatus.ts';
import type { PutRequest as _verdict_raft_PutRequest, PutRequest__Output as _verdict_raft_PutRequest__Output } from './verdict/raft/PutRequest.ts';
import type { PutResponse as _verdict_raft_PutResponse, PutResponse__Output as _verdict_raft_PutResponse__Output } from './verdict/raft/PutResponse.ts';
import type { RaftClient as _verdict_raft_RaftClient, RaftDefinition as _verdict_raft_RaftDefinition } from './verdict/raft/Raft.ts';
import type { RaftNodeClient as _verdict_raft_RaftNodeClient, RaftNodeDefinition as _verdict_raft_RaftNodeDefinition } from './verdict/raft/RaftNode.ts';
import type { RemoveMemberRequest as _verdict_raft_RemoveMemberRequest, RemoveMemberRequest__Output as _verdict_raft_RemoveMemberRequest__Output } from './verdict/raft/RemoveMemberRequest.ts';
import type { Snapshot as _verdict_raft_Snapshot, Snapshot__Output as _verdict_raft_Snapshot__Output } from './verdict/raft/Snapshot.ts';
import type { SnapshotMetadata as _verdict_raft_SnapshotMetadata, SnapshotMetadata__Output as _verdict_raft_SnapshotMetadata__Output } from './verdict/raft/SnapshotMetadata.ts';
import type { StatusRequest as _verdict_raft_StatusRequest, StatusRequest__Output as _verdict_raft_StatusRequest__Output } from './verdict/raft/StatusRequest.ts';
import type { StreamAck as _verdict_raft_StreamAck, StreamAck__Output as _verdict_raft_StreamAck__Output } from './verdict/raft/StreamAck.ts';
import type { StreamedPut as _verdict_raft_StreamedPut, StreamedPut__Output as _verdict_raft_StreamedPut__Output } from './verdict/raft/StreamedPut.ts';
import type { StreamedPutAnswer as _verdict_raft_StreamedPutAnswer, StreamedPutAnswer__Output as _verdict_raft_StreamedPutAnswer__Output } from './verdict/raft/StreamedPutAnswer.ts';
import type { StreamedPutAnswers as _verdict_raft_StreamedPutAnswers, StreamedPutAnswers__Output as _verdict_raft_StreamedPutAnswers__Output } from './verdict/raft/StreamedPutAnswers.ts';
import type { StreamedPuts as _verdict_raft_StreamedPuts, StreamedPuts__Output as _verdict_raft_StreamedPuts__Output } from './verdict/raft/StreamedPuts.ts';
import type { TransferLeaderRequest as _verdict_raft_TransferLeaderRequest, TransferLeaderRequest__Output as _verdict_raft_TransferLeaderRequest__Output } from './verdict/raft/TransferLeaderRequest.ts';
import type { TransferLeaderResponse as _verdict_raft_TransferLeaderResponse, TransferLeaderResponse__Output as _verdict_raft_TransferLeaderResponse__Output } from './verdict/raft/TransferLeaderResponse.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  verdict: {
    raft: {
      AddMemberRequest: MessageTypeDefinition<_verdict_raft_AddMemberRequest, _verdict_raft_AddMemberRequest__Output>
      Batch: MessageTypeDefinition<_verdict_raft_Batch, _verdict_raft_Batch__Output>
      ConfState: MessageTypeDefinition<_verdict_raft_ConfState, _verdict_raft_ConfState__Output>
      Entry: MessageTypeDefinition<_verdict_raft_Entry, _verdict_raft_Entry__Output>
      EntryType: EnumTypeDefinition
      HistoryAct: MessageTypeDefinition<_verdict_raft_HistoryAct, _verdict_raft_HistoryAct__Output>
      HistoryPage: MessageTypeDefinition<_verdict_raft_HistoryPage, _verdict_raft_HistoryPage__Output>
      HistoryParticipant: MessageTypeDefinition<_verdict_raft_HistoryParticipant, _verdict_raft_HistoryParticipant__Output>
      HistoryQuery: MessageTypeDefinition<_verdict_raft_HistoryQuery, _verdict_raft_HistoryQuery__Output>
      HistoryRecord: MessageTypeDefinition<_verdict_raft_HistoryRecord, _verdict_raft_HistoryRecord__Output>
      HistoryRow: MessageTypeDefinition<_verdict_raft_HistoryRow, _verdict_raft_HistoryRow__Output>
      HistorySaga: MessageTypeDefinition<_verdict_raft_HistorySaga, _verdict_raft_HistorySaga__Output>
      HistorySagaCall: MessageTypeDefinition<_verdict_raft_HistorySagaCall, _verdict_raft_HistorySagaCall__Output>
      HistorySagaEvent: MessageTypeDefinition<_verdict_raft_HistorySagaEvent, _verdict_raft_HistorySagaEvent__Output>
      HistorySagaStep: MessageTypeDefinition<_verdict_raft_HistorySagaStep, _verdict_raft_HistorySagaStep__Output>
      ListMembersRequest: MessageTypeDefinition<_verdict_raft_ListMembersRequest, _verdict_raft_ListMembersRequest__Output>
      LogRange: MessageTypeDefinition<_verdict_raft_LogRange, _verdict_raft_LogRange__Output>
      Member: MessageTypeDefinition<_verdict_raft_Member, _verdict_raft_Member__Output>
      Members: MessageTypeDefinition<_verdict_raft_Members, _verdict_raft_Members__Output>
      Message: MessageTypeDefinition<_verdict_raft_Message, _verdict_raft_Message__Output>
      MessageType: EnumTypeDefinition
      NodeStatus: MessageTypeDefinition<_verdict_raft_NodeStatus, _verdict_raft_NodeStatus__Output>
      PeerStatus: MessageTypeDefinition<_verdict_raft_PeerStatus, _verdict_raft_PeerStatus__Output>
      PutRequest: MessageTypeDefinition<_verdict_raft_PutRequest, _verdict_raft_PutRequest__Output>
      PutResponse: MessageTypeDefinition<_verdict_raft_PutResponse, _verdict_raft_PutResponse__Output>
      Raft: SubtypeConstructor<typeof grpc.Client, _verdict_raft_RaftClient> & { service: _verdict_raft_RaftDefinition }
      RaftNode: SubtypeConstructor<typeof grpc.Client, _verdict_raft_RaftNodeClient> & { service: _verdict_raft_RaftNodeDefinition }
      RemoveMemberRequest: MessageTypeDefinition<_verdict_raft_RemoveMemberRequest, _verdict_raft_RemoveMemberRequest__Output>
      Snapshot: MessageTypeDefinition<_verdict_raft_Snapshot, _verdict_raft_Snapshot__Output>
      SnapshotMetadata: MessageTypeDefinition<_verdict_raft_SnapshotMetadata, _verdict_raft_SnapshotMetadata__Output>
      StatusRequest: MessageTypeDefinition<_verdict_raft_StatusRequest, _verdict_raft_StatusRequest__Output>
      StreamAck: MessageTypeDefinition<_verdict_raft_StreamAck, _verdict_raft_StreamAck__Output>
      StreamedPut: MessageTypeDefinition<_verdict_raft_StreamedPut, _verdict_raft_StreamedPut__Output>
      StreamedPutAnswer: MessageTypeDefinition<_verdict_raft_StreamedPutAnswer, _verdict_raft_StreamedPutAnswer__Output>
      StreamedPutAnswers: MessageTypeDefinition<_verdict_raft_StreamedPutAnswers, _verdict_raft_StreamedPutAnswers__Output>
      StreamedPuts: MessageTypeDefinition<_verdict_raft_StreamedPuts, _verdict_raft_StreamedPuts__Output>
      TransferLeaderRequest: MessageTypeDefinition<_verdict_raft_TransferLeaderRequest, _verdict_raft_TransferLeaderRequest__Output>
      TransferLeaderResponse: MessageTypeDefinition<_verdict_raft_TransferLeaderResponse, _verdict_raft_TransferLeaderResponse__Output>
    }
  }
}

