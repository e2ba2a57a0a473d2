// Original file: proto/raft.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { Batch as _verdict_raft_Batch, Batch__Output as _verdict_raft_Batch__Output } from '../../verdict/raft/Batch.ts';
import type { StreamAck as _verdict_raft_StreamAck, StreamAck__Output as _verdict_raft_StreamAck__Output } from '../../verdict/raft/StreamAck.ts';

export interface RaftClient extends grpc.Client {
  Stream(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_StreamAck__Output>): grpc.ClientWritableStream<_verdict_raft_Batch>;
  Stream(metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_StreamAck__Output>): grpc.ClientWritableStream<_verdict_raft_Batch>;
  Stream(options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_StreamAck__Output>): grpc.ClientWritableStream<_verdict_raft_Batch>;
  Stream(callback: grpc.requestCallback<_verdict_raft_StreamAck__Output>): grpc.ClientWritableStream<_verdict_raft_Batch>;
  stream(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_StreamAck__Output>): grpc.ClientWritableStream<_verdict_raft_Batch>;
  stream(metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_raft_StreamAck__Output>): grpc.ClientWritableStream<_verdict_raft_Batch>;
  stream(options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_raft_StreamAck__Output>): grpc.ClientWritableStream<_verdict_raft_Batch>;
  stream(callback: grpc.requestCallback<_verdict_raft_StreamAck__Output>): grpc.ClientWritableStream<_verdict_raft_Batch>;
  
}

export interface RaftHandlers extends grpc.UntypedServiceImplementation {
  Stream: grpc.handleClientStreamingCall<_verdict_raft_Batch__Output, _verdict_raft_StreamAck>;
  
}

export interface RaftDefinition extends grpc.ServiceDefinition {
  Stream: MethodDefinition<_verdict_raft_Batch, _verdict_raft_StreamAck, _verdict_raft_Batch__Output, _verdict_raft_StreamAck__Output>
}
