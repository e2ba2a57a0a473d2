// Original file: proto/participant.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { Ack as _verdict_participant_Ack, Ack__Output as _verdict_participant_Ack__Output } from '../../verdict/participant/Ack.ts';
import type { AnswerBatch as _verdict_participant_AnswerBatch, AnswerBatch__Output as _verdict_participant_AnswerBatch__Output } from '../../verdict/participant/AnswerBatch.ts';
import type { DecideRequest as _verdict_participant_DecideRequest, DecideRequest__Output as _verdict_participant_DecideRequest__Output } from '../../verdict/participant/DecideRequest.ts';
import type { ExchangeBatch as _verdict_participant_ExchangeBatch, ExchangeBatch__Output as _verdict_participant_ExchangeBatch__Output } from '../../verdict/participant/ExchangeBatch.ts';
import type { PrepareRequest as _verdict_participant_PrepareRequest, PrepareRequest__Output as _verdict_participant_PrepareRequest__Output } from '../../verdict/participant/PrepareRequest.ts';
import type { StatusAnswer as _verdict_participant_StatusAnswer, StatusAnswer__Output as _verdict_participant_StatusAnswer__Output } from '../../verdict/participant/StatusAnswer.ts';
import type { StatusRequest as _verdict_participant_StatusRequest, StatusRequest__Output as _verdict_participant_StatusRequest__Output } from '../../verdict/participant/StatusRequest.ts';
import type { Vote as _verdict_participant_Vote, Vote__Output as _verdict_participant_Vote__Output } from '../../verdict/participant/Vote.ts';

export interface ParticipantClient extends grpc.Client {
  Decide(argument: _verdict_participant_DecideRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_Ack__Output>): grpc.ClientUnaryCall;
  Decide(argument: _verdict_participant_DecideRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_participant_Ack__Output>): grpc.ClientUnaryCall;
  Decide(argument: _verdict_participant_DecideRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_Ack__Output>): grpc.ClientUnaryCall;
  Decide(argument: _verdict_participant_DecideRequest, callback: grpc.requestCallback<_verdict_participant_Ack__Output>): grpc.ClientUnaryCall;
  decide(argument: _verdict_participant_DecideRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_Ack__Output>): grpc.ClientUnaryCall;
  decide(argument: _verdict_participant_DecideRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_participant_Ack__Output>): grpc.ClientUnaryCall;
  decide(argument: _verdict_participant_DecideRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_Ack__Output>): grpc.ClientUnaryCall;
  decide(argument: _verdict_participant_DecideRequest, callback: grpc.requestCallback<_verdict_participant_Ack__Output>): grpc.ClientUnaryCall;
  
  Exchange(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_participant_ExchangeBatch, _verdict_participant_AnswerBatch__Output>;
  Exchange(options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_participant_ExchangeBatch, _verdict_participant_AnswerBatch__Output>;
  exchange(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_participant_ExchangeBatch, _verdict_participant_AnswerBatch__Output>;
  exchange(options?: grpc.CallOptions): grpc.ClientDuplexStream<_verdict_participant_ExchangeBatch, _verdict_participant_AnswerBatch__Output>;
  
  Prepare(argument: _verdict_participant_PrepareRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_Vote__Output>): grpc.ClientUnaryCall;
  Prepare(argument: _verdict_participant_PrepareRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_participant_Vote__Output>): grpc.ClientUnaryCall;
  Prepare(argument: _verdict_participant_PrepareRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_Vote__Output>): grpc.ClientUnaryCall;
  Prepare(argument: _verdict_participant_PrepareRequest, callback: grpc.requestCallback<_verdict_participant_Vote__Output>): grpc.ClientUnaryCall;
  prepare(argument: _verdict_participant_PrepareRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_Vote__Output>): grpc.ClientUnaryCall;
  prepare(argument: _verdict_participant_PrepareRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_participant_Vote__Output>): grpc.ClientUnaryCall;
  prepare(argument: _verdict_participant_PrepareRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_Vote__Output>): grpc.ClientUnaryCall;
  prepare(argument: _verdict_participant_PrepareRequest, callback: grpc.requestCallback<_verdict_participant_Vote__Output>): grpc.ClientUnaryCall;
  
  Status(argument: _verdict_participant_StatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_StatusAnswer__Output>): grpc.ClientUnaryCall;
  Status(argument: _verdict_participant_StatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_participant_StatusAnswer__Output>): grpc.ClientUnaryCall;
  Status(argument: _verdict_participant_StatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_StatusAnswer__Output>): grpc.ClientUnaryCall;
  Status(argument: _verdict_participant_StatusRequest, callback: grpc.requestCallback<_verdict_participant_StatusAnswer__Output>): grpc.ClientUnaryCall;
  status(argument: _verdict_participant_StatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_StatusAnswer__Output>): grpc.ClientUnaryCall;
  status(argument: _verdict_participant_StatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_participant_StatusAnswer__Output>): grpc.ClientUnaryCall;
  status(argument: _verdict_participant_StatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_participant_StatusAnswer__Output>): grpc.ClientUnaryCall;
  status(argument: _verdict_participant_StatusRequest, callback: grpc.requestCallback<_verdict_participant_StatusAnswer__Output>): grpc.ClientUnaryCall;
  
}

export interface ParticipantHandlers extends grpc.UntypedServiceImplementation {
  Decide: grpc.handleUnaryCall<_verdict_participant_DecideRequest__Output, _verdict_participant_Ack>;
  
  Exchange: grpc.handleBidiStreamingCall<_verdict_participant_ExchangeBatch__Output, _verdict_participant_AnswerBatch>;
  
  Prepare: grpc.handleUnaryCall<_verdict_participant_PrepareRequest__Output, _verdict_participant_Vote>;
  
  Status: grpc.handleUnaryCall<_verdict_participant_StatusRequest__Output, _verdict_participant_StatusAnswer>;
  
}

export interface ParticipantDefinition extends grpc.ServiceDefinition {
  Decide: MethodDefinition<_verdict_participant_DecideRequest, _verdict_participant_Ack, _verdict_participant_DecideRequest__Output, _verdict_participant_Ack__Output>
  Exchange: MethodDefinition<_verdict_participant_ExchangeBatch, _verdict_participant_AnswerBatch, _verdict_participant_ExchangeBatch__Output, _verdict_participant_AnswerBatch__Output>
  Prepare: MethodDefinition<_verdict_participant_PrepareRequest, _verdict_participant_Vote, _verdict_participant_PrepareRequest__Output, _verdict_participant_Vote__Output>
  Status: MethodDefinition<_verdict_participant_StatusRequest, _verdict_participant_StatusAnswer, _verdict_participant_StatusRequest__Output, _verdict_participant_StatusAnswer__Output>
}
