// Original file: proto/saga.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { SagaEndAck as _verdict_saga_SagaEndAck, SagaEndAck__Output as _verdict_saga_SagaEndAck__Output } from '../../verdict/saga/SagaEndAck.ts';
import type { SagaEndRequest as _verdict_saga_SagaEndRequest, SagaEndRequest__Output as _verdict_saga_SagaEndRequest__Output } from '../../verdict/saga/SagaEndRequest.ts';
import type { SagaEndsAck as _verdict_saga_SagaEndsAck, SagaEndsAck__Output as _verdict_saga_SagaEndsAck__Output } from '../../verdict/saga/SagaEndsAck.ts';
import type { SagaEndsRequest as _verdict_saga_SagaEndsRequest, SagaEndsRequest__Output as _verdict_saga_SagaEndsRequest__Output } from '../../verdict/saga/SagaEndsRequest.ts';
import type { StepRequest as _verdict_saga_StepRequest, StepRequest__Output as _verdict_saga_StepRequest__Output } from '../../verdict/saga/StepRequest.ts';
import type { StepResult as _verdict_saga_StepResult, StepResult__Output as _verdict_saga_StepResult__Output } from '../../verdict/saga/StepResult.ts';

export interface SagaStepClient extends grpc.Client {
  Compensate(argument: _verdict_saga_StepRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  Compensate(argument: _verdict_saga_StepRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  Compensate(argument: _verdict_saga_StepRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  Compensate(argument: _verdict_saga_StepRequest, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  compensate(argument: _verdict_saga_StepRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  compensate(argument: _verdict_saga_StepRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  compensate(argument: _verdict_saga_StepRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  compensate(argument: _verdict_saga_StepRequest, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  
  End(argument: _verdict_saga_SagaEndRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaEndAck__Output>): grpc.ClientUnaryCall;
  End(argument: _verdict_saga_SagaEndRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaEndAck__Output>): grpc.ClientUnaryCall;
  End(argument: _verdict_saga_SagaEndRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaEndAck__Output>): grpc.ClientUnaryCall;
  End(argument: _verdict_saga_SagaEndRequest, callback: grpc.requestCallback<_verdict_saga_SagaEndAck__Output>): grpc.ClientUnaryCall;
  end(argument: _verdict_saga_SagaEndRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaEndAck__Output>): grpc.ClientUnaryCall;
  end(argument: _verdict_saga_SagaEndRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaEndAck__Output>): grpc.ClientUnaryCall;
  end(argument: _verdict_saga_SagaEndRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaEndAck__Output>): grpc.ClientUnaryCall;
  end(argument: _verdict_saga_SagaEndRequest, callback: grpc.requestCallback<_verdict_saga_SagaEndAck__Output>): grpc.ClientUnaryCall;
  
  EndSagas(argument: _verdict_saga_SagaEndsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaEndsAck__Output>): grpc.ClientUnaryCall;
  EndSagas(argument: _verdict_saga_SagaEndsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaEndsAck__Output>): grpc.ClientUnaryCall;
  EndSagas(argument: _verdict_saga_SagaEndsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaEndsAck__Output>): grpc.ClientUnaryCall;
  EndSagas(argument: _verdict_saga_SagaEndsRequest, callback: grpc.requestCallback<_verdict_saga_SagaEndsAck__Output>): grpc.ClientUnaryCall;
  endSagas(argument: _verdict_saga_SagaEndsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaEndsAck__Output>): grpc.ClientUnaryCall;
  endSagas(argument: _verdict_saga_SagaEndsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_SagaEndsAck__Output>): grpc.ClientUnaryCall;
  endSagas(argument: _verdict_saga_SagaEndsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_SagaEndsAck__Output>): grpc.ClientUnaryCall;
  endSagas(argument: _verdict_saga_SagaEndsRequest, callback: grpc.requestCallback<_verdict_saga_SagaEndsAck__Output>): grpc.ClientUnaryCall;
  
  Execute(argument: _verdict_saga_StepRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  Execute(argument: _verdict_saga_StepRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  Execute(argument: _verdict_saga_StepRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  Execute(argument: _verdict_saga_StepRequest, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  execute(argument: _verdict_saga_StepRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  execute(argument: _verdict_saga_StepRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  execute(argument: _verdict_saga_StepRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  execute(argument: _verdict_saga_StepRequest, callback: grpc.requestCallback<_verdict_saga_StepResult__Output>): grpc.ClientUnaryCall;
  
}

export interface SagaStepHandlers extends grpc.UntypedServiceImplementation {
  Compensate: grpc.handleUnaryCall<_verdict_saga_StepRequest__Output, _verdict_saga_StepResult>;
  
  End: grpc.handleUnaryCall<_verdict_saga_SagaEndRequest__Output, _verdict_saga_SagaEndAck>;
  
  EndSagas: grpc.handleUnaryCall<_verdict_saga_SagaEndsRequest__Output, _verdict_saga_SagaEndsAck>;
  
  Execute: grpc.handleUnaryCall<_verdict_saga_StepRequest__Output, _verdict_saga_StepResult>;
  
}

export interface SagaStepDefinition extends grpc.ServiceDefinition {
  Compensate: MethodDefinition<_verdict_saga_StepRequest, _verdict_saga_StepResult, _verdict_saga_StepRequest__Output, _verdict_saga_StepResult__Output>
  End: MethodDefinition<_verdict_saga_SagaEndRequest, _verdict_saga_SagaEndAck, _verdict_saga_SagaEndRequest__Output, _verdict_saga_SagaEndAck__Output>
  EndSagas: MethodDefinition<_verdict_saga_SagaEndsRequest, _verdict_saga_SagaEndsAck, _verdict_saga_SagaEndsRequest__Output, _verdict_saga_SagaEndsAck__Output>
  Execute: MethodDefinition<_verdict_saga_StepRequest, _verdict_saga_StepResult, _verdict_saga_StepRequest__Output, _verdict_saga_StepResult__Output>
}
