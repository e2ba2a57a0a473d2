// Original file: proto/saga.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ListSagasRequest as _verdict_saga_ListSagasRequest, ListSagasRequest__Output as _verdict_saga_ListSagasRequest__Output } from '../../verdict/saga/ListSagasRequest.ts';
import type { ListSagasResponse as _verdict_saga_ListSagasResponse, ListSagasResponse__Output as _verdict_saga_ListSagasResponse__Output } from '../../verdict/saga/ListSagasResponse.ts';
import type { ResolveSagaRequest as _verdict_saga_ResolveSagaRequest, ResolveSagaRequest__Output as _verdict_saga_ResolveSagaRequest__Output } from '../../verdict/saga/ResolveSagaRequest.ts';
import type { RetrySagaRequest as _verdict_saga_RetrySagaRequest, RetrySagaRequest__Output as _verdict_saga_RetrySagaRequest__Output } from '../../verdict/saga/RetrySagaRequest.ts';
import type { SagaInfo as _verdict_saga_SagaInfo, SagaInfo__Output as _verdict_saga_SagaInfo__Output } from '../../verdict/saga/SagaInfo.ts';
import type { SagaStatesRequest as _verdict_saga_SagaStatesRequest, SagaStatesRequest__Output as _verdict_saga_SagaStatesRequest__Output } from '../../verdict/saga/SagaStatesRequest.ts';
import type { SagaStatesResponse as _verdict_saga_SagaStatesResponse, SagaStatesResponse__Output as _verdict_saga_SagaStatesResponse__Output } from '../../verdict/saga/SagaStatesResponse.ts';
import type { SagaStatusRequest as _verdict_saga_SagaStatusRequest, SagaStatusRequest__Output as _verdict_saga_SagaStatusRequest__Output } from '../../verdict/saga/SagaStatusRequest.ts';
import type { StartSagaRequest as _verdict_saga_StartSagaRequest, StartSagaRequest__Output as _verdict_saga_StartSagaRequest__Output } from '../../verdict/saga/StartSagaRequest.ts';

export interface SagasClient extends grpc.Client {
  ListSagas(argument: _verdict_saga_ListSagasRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_ListSagasResponse__Output>): grpc.ClientUnaryCall;
  ListSagas(argument: _verdict_saga_ListSagasRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_ListSagasResponse__Output>): grpc.ClientUnaryCall;
  ListSagas(argument: _verdict_saga_ListSagasRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_ListSagasResponse__Output>): grpc.ClientUnaryCall;
  ListSagas(argument: _verdict_saga_ListSagasRequest, callback: grpc.requestCallback<_verdict_saga_ListSagasResponse__Output>): grpc.ClientUnaryCall;
  listSagas(argument: _verdict_saga_ListSagasRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_ListSagasResponse__Output>): grpc.ClientUnaryCall;
  listSagas(argument: _verdict_saga_ListSagasRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_ListSagasResponse__Output>): grpc.ClientUnaryCall;
  listSagas(argument: _verdict_saga_ListSagasRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_ListSagasResponse__Output>): grpc.ClientUnaryCall;
  listSagas(argument: _verdict_saga_ListSagasRequest, callback: grpc.requestCallback<_verdict_saga_ListSagasResponse__Output>): grpc.ClientUnaryCall;
  
  ResolveSaga(argument: _verdict_saga_ResolveSagaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  ResolveSaga(argument: _verdict_saga_ResolveSagaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  ResolveSaga(argument: _verdict_saga_ResolveSagaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  ResolveSaga(argument: _verdict_saga_ResolveSagaRequest, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  resolveSaga(argument: _verdict_saga_ResolveSagaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  resolveSaga(argument: _verdict_saga_ResolveSagaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  resolveSaga(argument: _verdict_saga_ResolveSagaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  resolveSaga(argument: _verdict_saga_ResolveSagaRequest, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  
  RetrySaga(argument: _verdict_saga_RetrySagaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  RetrySaga(argument: _verdict_saga_RetrySagaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  RetrySaga(argument: _verdict_saga_RetrySagaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  RetrySaga(argument: _verdict_saga_RetrySagaRequest, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  retrySaga(argument: _verdict_saga_RetrySagaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  retrySaga(argument: _verdict_saga_RetrySagaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  retrySaga(argument: _verdict_saga_RetrySagaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  retrySaga(argument: _verdict_saga_RetrySagaRequest, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  
  SagaStates(argument: _verdict_saga_SagaStatesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaStatesResponse__Output>): grpc.ClientUnaryCall;
  SagaStates(argument: _verdict_saga_SagaStatesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaStatesResponse__Output>): grpc.ClientUnaryCall;
  SagaStates(argument: _verdict_saga_SagaStatesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaStatesResponse__Output>): grpc.ClientUnaryCall;
  SagaStates(argument: _verdict_saga_SagaStatesRequest, callback: grpc.requestCallback<_verdict_saga_SagaStatesResponse__Output>): grpc.ClientUnaryCall;
  sagaStates(argument: _verdict_saga_SagaStatesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaStatesResponse__Output>): grpc.ClientUnaryCall;
  sagaStates(argument: _verdict_saga_SagaStatesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaStatesResponse__Output>): grpc.ClientUnaryCall;
  sagaStates(argument: _verdict_saga_SagaStatesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaStatesResponse__Output>): grpc.ClientUnaryCall;
  sagaStates(argument: _verdict_saga_SagaStatesRequest, callback: grpc.requestCallback<_verdict_saga_SagaStatesResponse__Output>): grpc.ClientUnaryCall;
  
  SagaStatus(argument: _verdict_saga_SagaStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  SagaStatus(argument: _verdict_saga_SagaStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  SagaStatus(argument: _verdict_saga_SagaStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  SagaStatus(argument: _verdict_saga_SagaStatusRequest, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  sagaStatus(argument: _verdict_saga_SagaStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  sagaStatus(argument: _verdict_saga_SagaStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  sagaStatus(argument: _verdict_saga_SagaStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  sagaStatus(argument: _verdict_saga_SagaStatusRequest, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  
  StartSaga(argument: _verdict_saga_StartSagaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  StartSaga(argument: _verdict_saga_StartSagaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  StartSaga(argument: _verdict_saga_StartSagaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  StartSaga(argument: _verdict_saga_StartSagaRequest, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  startSaga(argument: _verdict_saga_StartSagaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  startSaga(argument: _verdict_saga_StartSagaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  startSaga(argument: _verdict_saga_StartSagaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  startSaga(argument: _verdict_saga_StartSagaRequest, callback: grpc.requestCallback<_verdict_saga_SagaInfo__Output>): grpc.ClientUnaryCall;
  
}

export interface SagasHandlers extends grpc.UntypedServiceImplementation {
  ListSagas: grpc.handleUnaryCall<_verdict_saga_ListSagasRequest__Output, _verdict_saga_ListSagasResponse>;
  
  ResolveSaga: grpc.handleUnaryCall<_verdict_saga_ResolveSagaRequest__Output, _verdict_saga_SagaInfo>;
  
  RetrySaga: grpc.handleUnaryCall<_verdict_saga_RetrySagaRequest__Output, _verdict_saga_SagaInfo>;
  
  SagaStates: grpc.handleUnaryCall<_verdict_saga_SagaStatesRequest__Output, _verdict_saga_SagaStatesResponse>;
  
  SagaStatus: grpc.handleUnaryCall<_verdict_saga_SagaStatusRequest__Output, _verdict_saga_SagaInfo>;
  
  StartSaga: grpc.handleUnaryCall<_verdict_saga_StartSagaRequest__Output, _verdict_saga_SagaInfo>;
  
}

export interface SagasDefinition extends grpc.ServiceDefinition {
  ListSagas: MethodDefinition<_verdict_saga_ListSagasRequest, _verdict_saga_ListSagasResponse, _verdict_saga_ListSagasRequest__Output, _verdict_saga_ListSagasResponse__Output>
  ResolveSaga: MethodDefinition<_verdict_saga_ResolveSagaRequest, _verdict_saga_SagaInfo, _verdict_saga_ResolveSagaRequest__Output, _verdict_saga_SagaInfo__Output>
  RetrySaga: MethodDefinition<_verdict_saga_RetrySagaRequest, _verdict_saga_SagaInfo, _verdict_saga_RetrySagaRequest__Output, _verdict_saga_SagaInfo__Output>
  SagaStates: MethodDefinition<_verdict_saga_SagaStatesRequest, _verdict_saga_SagaStatesResponse, _verdict_saga_SagaStatesRequest__Output, _verdict_saga_SagaStatesResponse__Output>
  SagaStatus: MethodDefinition<_verdict_saga_SagaStatusRequest, _verdict_saga_SagaInfo, _verdict_saga_SagaStatusRequest__Output, _verdict_saga_SagaInfo__Output>
  StartSaga: MethodDefinition<_verdict_saga_StartSagaRequest, _verdict_saga_SagaInfo, _verdict_saga_StartSagaRequest__Output, _verdict_saga_SagaInfo__Output>
}
