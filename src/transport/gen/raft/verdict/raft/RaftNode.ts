// Original file: proto/raft.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AddMemberRequest as _verdict_raft_AddMemberRequest, AddMemberRequest__Output as _verdict_raft_AddMemberRequest__Output } from '../../verdict/raft/AddMemberRequest.ts';
import type { HistoryPage as _verdict_raft_HistoryPage, HistoryPage__Output as _verdict_raft_HistoryPage__Output } from '../../verdict/raft/HistoryPage.ts';
import type { HistoryQuery as _verdict_raft_HistoryQuery, HistoryQuery__Output as _verdict_raft_HistoryQuery__Output } from '../../verdict/raft/HistoryQuery.ts';
import type { ListMembersRequest as _verdict_raft_ListMembersRequest, ListMembersRequest__Output as _verdict_raft_ListMembersRequest__Output } from '../../verdict/raft/ListMembersRequest.ts';
import type { Members as _verdict_raft_Members, Members__Output as _verdict_raft_Members__Output } from '../../verdict/raft/Members.ts';
import type { NodeStatus as _verdict_raft_NodeStatus, NodeStatus__Output as _verdict_raft_NodeStatus__Output } from '../../verdict/raft/NodeStatus.ts';
import type { PutRequest as _verdict_raft_PutRequest, PutRequest__Output as _verdict_raft_PutRequest__Output } from '../../verdict/raft/PutRequest.ts';
import type { PutResponse as _verdict_raft_PutResponse, PutResponse__Output as _verdict_raft_PutResponse__Output } from '../../verdict/raft/PutResponse.ts';
import type { RemoveMemberRequest as _verdict_raft_RemoveMemberRequest, RemoveMemberRequest__Output as _verdict_raft_RemoveMemberRequest__Output } from '../../verdict/raft/RemoveMemberRequest.ts';
import type { StatusRequest as _verdict_raft_StatusRequest, StatusRequest__Output as _verdict_raft_StatusRequest__Output } from '../../verdict/raft/StatusRequest.ts';
import type { StreamedPutAnswers as _verdict_raft_StreamedPutAnswers, StreamedPutAnswers__Output as _verdict_raft_StreamedPutAnswers__Output } from '../../verdict/raft/StreamedPutAnswers.ts';
import type { StreamedPuts as _verdict_raft_StreamedPuts, StreamedPuts__Output as _verdict_raft_StreamedPuts__Output } from '../../verdict/raft/StreamedPuts.ts';
import type { TransferLeaderRequest as _verdict_raft_TransferLeaderRequest, TransferLeaderRequest__Output as _verdict_raft_TransferLeaderRequest__Output } from '../../verdict/raft/TransferLeaderRequest.ts';
import type { TransferLeaderResponse as _verdict_raft_TransferLeaderResponse, TransferLeaderResponse__Output as _verdict_raft_TransferLeaderResponse__Output } from '../../verdict/raft/TransferLeaderResponse.ts';

export interface RaftNodeClient extends grpc.Client {
  AddMember(argument: _verdict_raft_AddMemberRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  AddMember(argument: _verdict_raft_AddMemberRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  AddMember(argument: _verdict_raft_AddMemberRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  AddMember(argument: _verdict_raft_AddMemberRequest, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  addMember(argument: _verdict_raft_AddMemberRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  addMember(argument: _verdict_raft_AddMemberRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  addMember(argument: _verdict_raft_AddMemberRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  addMember(argument: _verdict_raft_AddMemberRequest, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  
  History(argument: _verdict_raft_HistoryQuery, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_HistoryPage__Output>): grpc.ClientUnaryCall;
  History(argument: _verdict_raft_HistoryQuery, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_HistoryPage__Output>): grpc.ClientUnaryCall;
  History(argument: _verdict_raft_HistoryQuery, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_HistoryPage__Output>): grpc.ClientUnaryCall;
  History(argument: _verdict_raft_HistoryQuery, callback: grpc.requestCallback<_verdict_raft_HistoryPage__Output>): grpc.ClientUnaryCall;
  history(argument: _verdict_raft_HistoryQuery, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_HistoryPage__Output>): grpc.ClientUnaryCall;
  history(argument: _verdict_raft_HistoryQuery, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_HistoryPage__Output>): grpc.ClientUnaryCall;
  history(argument: _verdict_raft_HistoryQuery, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_HistoryPage__Output>): grpc.ClientUnaryCall;
  history(argument: _verdict_raft_HistoryQuery, callback: grpc.requestCallback<_verdict_raft_HistoryPage__Output>): grpc.ClientUnaryCall;
  
  ListMembers(argument: _verdict_raft_ListMembersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  ListMembers(argument: _verdict_raft_ListMembersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  ListMembers(argument: _verdict_raft_ListMembersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  ListMembers(argument: _verdict_raft_ListMembersRequest, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  listMembers(argument: _verdict_raft_ListMembersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  listMembers(argument: _verdict_raft_ListMembersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  listMembers(argument: _verdict_raft_ListMembersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  listMembers(argument: _verdict_raft_ListMembersRequest, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  
  Put(argument: _verdict_raft_PutRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_PutResponse__Output>): grpc.ClientUnaryCall;
  Put(argument: _verdict_raft_PutRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_PutResponse__Output>): grpc.ClientUnaryCall;
  Put(argument: _verdict_raft_PutRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_PutResponse__Output>): grpc.ClientUnaryCall;
  Put(argument: _verdict_raft_PutRequest, callback: grpc.requestCallback<_verdict_raft_PutResponse__Output>): grpc.ClientUnaryCall;
  put(argument: _verdict_raft_PutRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_PutResponse__Output>): grpc.ClientUnaryCall;
  put(argument: _verdict_raft_PutRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_PutResponse__Output>): grpc.ClientUnaryCall;
  put(argument: _verdict_raft_PutRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_PutResponse__Output>): grpc.ClientUnaryCall;
  put(argument: _verdict_raft_PutRequest, callback: grpc.requestCallback<_verdict_raft_PutResponse__Output>): grpc.ClientUnaryCall;
  
  PutStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_raft_StreamedPuts, _verdict_raft_StreamedPutAnswers__Output>;
  PutStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_raft_StreamedPuts, _verdict_raft_StreamedPutAnswers__Output>;
  putStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_raft_StreamedPuts, _verdict_raft_StreamedPutAnswers__Output>;
  putStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_raft_StreamedPuts, _verdict_raft_StreamedPutAnswers__Output>;
  
  RemoveMember(argument: _verdict_raft_RemoveMemberRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  RemoveMember(argument: _verdict_raft_RemoveMemberRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  RemoveMember(argument: _verdict_raft_RemoveMemberRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  RemoveMember(argument: _verdict_raft_RemoveMemberRequest, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  removeMember(argument: _verdict_raft_RemoveMemberRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  removeMember(argument: _verdict_raft_RemoveMemberRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  removeMember(argument: _verdict_raft_RemoveMemberRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  removeMember(argument: _verdict_raft_RemoveMemberRequest, callback: grpc.requestCallback<_verdict_raft_Members__Output>): grpc.ClientUnaryCall;
  
  Status(argument: _verdict_raft_StatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_NodeStatus__Output>): grpc.ClientUnaryCall;
  Status(argument: _verdict_raft_StatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_NodeStatus__Output>): grpc.ClientUnaryCall;
  Status(argument: _verdict_raft_StatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_NodeStatus__Output>): grpc.ClientUnaryCall;
  Status(argument: _verdict_raft_StatusRequest, callback: grpc.requestCallback<_verdict_raft_NodeStatus__Output>): grpc.ClientUnaryCall;
  status(argument: _verdict_raft_StatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_NodeStatus__Output>): grpc.ClientUnaryCall;
  status(argument: _verdict_raft_StatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_NodeStatus__Output>): grpc.ClientUnaryCall;
  status(argument: _verdict_raft_StatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_NodeStatus__Output>): grpc.ClientUnaryCall;
  status(argument: _verdict_raft_StatusRequest, callback: grpc.requestCallback<_verdict_raft_NodeStatus__Output>): grpc.ClientUnaryCall;
  
  TransferLeader(argument: _verdict_raft_TransferLeaderRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  TransferLeader(argument: _verdict_raft_TransferLeaderRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  TransferLeader(argument: _verdict_raft_TransferLeaderRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  TransferLeader(argument: _verdict_raft_TransferLeaderRequest, callback: grpc.requestCallback<_verdict_raft_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  transferLeader(argument: _verdict_raft_TransferLeaderRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  transferLeader(argument: _verdict_raft_TransferLeaderRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  transferLeader(argument: _verdict_raft_TransferLeaderRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  transferLeader(argument: _verdict_raft_TransferLeaderRequest, callback: grpc.requestCallback<_verdict_raft_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface RaftNodeHandlers extends grpc.UntypedServiceImplementation {
  AddMember: grpc.handleUnaryCall<_verdict_raft_AddMemberRequest__Output, _verdict_raft_Members>;
  
  History: grpc.handleUnaryCall<_verdict_raft_HistoryQuery__Output, _verdict_raft_HistoryPage>;
  
  ListMembers: grpc.handleUnaryCall<_verdict_raft_ListMembersRequest__Output, _verdict_raft_Members>;
  
  Put: grpc.handleUnaryCall<_verdict_raft_PutRequest__Output, _verdict_raft_PutResponse>;
  
  PutStream: grpc.handleBidiStreamingCall<_verdict_raft_StreamedPuts__Output, _verdict_raft_StreamedPutAnswers>;
  
  RemoveMember: grpc.handleUnaryCall<_verdict_raft_RemoveMemberRequest__Output, _verdict_raft_Members>;
  
  Status: grpc.handleUnaryCall<_verdict_raft_StatusRequest__Output, _verdict_raft_NodeStatus>;
  
  TransferLeader: grpc.handleUnaryCall<_verdict_raft_TransferLeaderRequest__Output, _verdict_raft_TransferLeaderResponse>;
  
}

export interface RaftNodeDefinition extends grpc.ServiceDefinition {
  AddMember: MethodDefinition<_verdict_raft_AddMemberRequest, _verdict_raft_Members, _verdict_raft_AddMemberRequest__Output, _verdict_raft_Members__Output>
  History: MethodDefinition<_verdict_raft_HistoryQuery, _verdict_raft_HistoryPage, _verdict_raft_HistoryQuery__Output, _verdict_raft_HistoryPage__Output>
  ListMembers: MethodDefinition<_verdict_raft_ListMembersRequest, _verdict_raft_Members, _verdict_raft_ListMembersRequest__Output, _verdict_raft_Members__Output>
  Put: MethodDefinition<_verdict_raft_PutRequest, _verdict_raft_PutResponse, _verdict_raft_PutRequest__Output, _verdict_raft_PutResponse__Output>
  PutStream: MethodDefinition<_verdict_raft_StreamedPuts, _verdict_raft_StreamedPutAnswers, _verdict_raft_StreamedPuts__Output, _verdict_raft_StreamedPutAnswers__Output>
  RemoveMember: MethodDefinition<_verdict_raft_RemoveMemberRequest, _verdict_raft_Members, _verdict_raft_RemoveMemberRequest__Output, _verdict_raft_Members__Output>
  Status: MethodDefinition<_verdict_raft_StatusRequest, _verdict_raft_NodeStatus, _verdict_raft_StatusRequest__Output, _verdict_raft_NodeStatus__Output>
  TransferLeader: MethodDefinition<_verdict_raft_TransferLeaderRequest, _verdict_raft_TransferLeaderResponse, _verdict_raft_TransferLeaderRequest__Output, _verdict_raft_TransferLeaderResponse__Output>
}
