import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { CallAttempts as _verdict_saga_CallAttempts, CallAttempts__Output as _verdict_saga_CallAttempts__Output } from './verdict/saga/CallAttempts.ts';
import type { ListSagasRequest as _verdict_saga_ListSagasRequest, ListSagasRequest__Output as _verdict_saga_ListSagasRequest__Output } from './verdict/saga/ListSagasRequest.ts';
import type { ListSagasResponse as _verdict_saga_ListSagasResponse, ListSagasResponse__Output as _verdict_saga_ListSagasResponse__Output } from './verdict/saga/ListSagasResponse.ts';
import type { ResolveSagaRequest as _verdict_saga_ResolveSagaRequest, ResolveSagaRequest__Output as _verdict_saga_ResolveSagaRequest__Output } from './verdict/saga/ResolveSagaRequest.ts';
import type { RetrySagaRequest as _verdict_saga_RetrySagaRequest, RetrySagaRequest__Output as _verdict_saga_RetrySagaRequest__Output } from './verdict/saga/RetrySagaRequest.ts';
import type { SagaEndAck as _verdict_saga_SagaEndAck, SagaEndAck__Output as _verdict_saga_SagaEndAck__Output } from './verdict/saga/SagaEndAck.ts';
import type { SagaEndRequest as _verdict_saga_SagaEndRequest, SagaEndRequest__Output as _verdict_saga_SagaEndRequest__Output } from './verdict/saga/SagaEndRequest.ts';
import type { SagaEndsAck as _verdict_saga_SagaEndsAck, SagaEndsAck__Output as _verdict_saga_SagaEndsAck__Output } from './verdict/saga/SagaEndsAck.ts';
import type { SagaEndsRequest as _verdict_saga_SagaEndsRequest, SagaEndsRequest__Output as _verdict_saga_SagaEndsRequest__Output } from './verdict/saga/SagaEndsRequest.ts';
import type { SagaInfo as _verdict_saga_SagaInfo, SagaInfo__Output as _verdict_saga_SagaInfo__Output } from './verdict/saga/SagaInfo.ts';
import type { SagaState as _verdict_saga_SagaState, SagaState__Output as _verdict_saga_SagaState__Output } from './verdict/saga/SagaState.ts';
import type { SagaStatesRequest as _verdict_saga_SagaStatesRequest, SagaStatesRequest__Output as _verdict_saga_SagaStatesRequest__Output } from './verdict/saga/SagaStatesRequest.ts';
import type { SagaStatesResponse as _verdict_saga_SagaStatesResponse, SagaStatesResponse__Output as _verdict_saga_SagaStatesResponse__Output } from './verdict/saga/SagaStatesResponse.ts';
import type { SagaStatusRequest as _verdict_saga_SagaStatusRequest, SagaStatusRequest__Output as _verdict_saga_SagaStatusRequest__Output } from './verdict/saga/SagaStatusRequest.ts';
import type { SagaStepClient as _verdict_saga_SagaStepClient, SagaStepDefinition as _verdict_saga_SagaStepDefinition } from './verdict/saga/SagaStep.ts';
import type { SagasClient as _verdict_saga_SagasClient, SagasDefinition as _verdict_saga_SagasDefinition } from './verdict/saga/Sagas.ts';
import type { StartSagaRequest as _verdict_saga_StartSagaRequest, StartSagaRequest__Output as _verdict_saga_StartSagaRequest__Output } from './verdict/saga/StartSagaRequest.ts';
import type { StepDef as _verdict_saga_StepDef, StepDef__Output as _verdict_saga_StepDef__Output } from './verdict/saga/StepDef.ts';
import type { StepRequest as _verdict_saga_StepRequest, StepRequest__Output as _verdict_saga_StepRequest__Output } from './verdict/saga/StepRequest.ts';
import type { StepResult as _verdict_saga_StepResult, StepResult__Output as _verdict_saga_StepResult__Output } from './verdict/saga/StepResult.ts';
import type { TimelineEntry as _verdict_saga_TimelineEntry, TimelineEntry__Output as _verdict_saga_TimelineEntry__Output } from './verdict/saga/TimelineEntry.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  verdict: {
    saga: {
      CallAttempts: MessageTypeDefinition<_verdict_saga_CallAttempts, _verdict_saga_CallAttempts__Output>
      ListSagasRequest: MessageTypeDefinition<_verdict_saga_ListSagasRequest, _verdict_saga_ListSagasRequest__Output>
      ListSagasResponse: MessageTypeDefinition<_verdict_saga_ListSagasResponse, _verdict_saga_ListSagasResponse__Output>
      ResolveSagaRequest: MessageTypeDefinition<_verdict_saga_ResolveSagaRequest, _verdict_saga_ResolveSagaRequest__Output>
      RetrySagaRequest: MessageTypeDefinition<_verdict_saga_RetrySagaRequest, _verdict_saga_RetrySagaRequest__Output>
      SagaEndAck: MessageTypeDefinition<_verdict_saga_SagaEndAck, _verdict_saga_SagaEndAck__Output>
      SagaEndRequest: MessageTypeDefinition<_verdict_saga_SagaEndRequest, _verdict_saga_SagaEndRequest__Output>
      SagaEndsAck: MessageTypeDefinition<_verdict_saga_SagaEndsAck, _verdict_saga_SagaEndsAck__Output>
      SagaEndsRequest: MessageTypeDefinition<_verdict_saga_SagaEndsRequest, _verdict_saga_SagaEndsRequest__Output>
      SagaInfo: MessageTypeDefinition<_verdict_saga_SagaInfo, _verdict_saga_SagaInfo__Output>
      SagaState: MessageTypeDefinition<_verdict_saga_SagaState, _verdict_saga_SagaState__Output>
      SagaStatesRequest: MessageTypeDefinition<_verdict_saga_SagaStatesRequest, _verdict_saga_SagaStatesRequest__Output>
      SagaStatesResponse: MessageTypeDefinition<_verdict_saga_SagaStatesResponse, _verdict_saga_SagaStatesResponse__Output>
      SagaStatusRequest: MessageTypeDefinition<_verdict_saga_SagaStatusRequest, _verdict_saga_SagaStatusRequest__Output>
      SagaStep: SubtypeConstructor<typeof grpc.Client, _verdict_saga_SagaStepClient> & { service: _verdict_saga_SagaStepDefinition }
      Sagas: SubtypeConstructor<typeof grpc.Client, _verdict_saga_SagasClient> & { service: _verdict_saga_SagasDefinition }
      StartSagaRequest: MessageTypeDefinition<_verdict_saga_StartSagaRequest, _verdict_saga_StartSagaRequest__Output>
      StepDef: MessageTypeDefinition<_verdict_saga_StepDef, _verdict_saga_StepDef__Output>
      StepRequest: MessageTypeDefinition<_verdict_saga_StepRequest, _verdict_saga_StepRequest__Output>
      StepResult: MessageTypeDefinition<_verdict_saga_StepResult, _verdict_saga_StepResult__Output>
      StepStatus: EnumTypeDefinition
      TimelineEntry: MessageTypeDefinition<_verdict_saga_TimelineEntry, _verdict_saga_TimelineEntry__Output>
    }
  }
}

