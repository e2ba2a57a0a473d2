import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { Ack as _verdict_participant_Ack, Ack__Output as _verdict_participant_Ack__Output } from './verdict/participant/Ack.ts';
import type { AnswerBatch as _verdict_participant_AnswerBatch, AnswerBatch__Output as _verdict_participant_AnswerBatch__Output } from './verdict/participant/AnswerBatch.ts';
import type { DecideRequest as _verdict_participant_DecideRequest, DecideRequest__Output as _verdict_participant_DecideRequest__Output } from './verdict/participant/DecideRequest.ts';
import type { ExchangeAnswer as _verdict_participant_ExchangeAnswer, ExchangeAnswer__Output as _verdict_participant_ExchangeAnswer__Output } from './verdict/participant/ExchangeAnswer.ts';
import type { ExchangeBatch as _verdict_participant_ExchangeBatch, ExchangeBatch__Output as _verdict_participant_ExchangeBatch__Output } from './verdict/participant/ExchangeBatch.ts';
import type { ExchangeError as _verdict_participant_ExchangeError, ExchangeError__Output as _verdict_participant_ExchangeError__Output } from './verdict/participant/ExchangeError.ts';
import type { ExchangeRequest as _verdict_participant_ExchangeRequest, ExchangeRequest__Output as _verdict_participant_ExchangeRequest__Output } from './verdict/participant/ExchangeRequest.ts';
import type { ParticipantClient as _verdict_participant_ParticipantClient, ParticipantDefinition as _verdict_participant_ParticipantDefinition } from './verdict/participant/Participant.ts';
import type { PrepareRequest as _verdict_participant_PrepareRequest, PrepareRequest__Output as _verdict_participant_PrepareRequest__Output } from './verdict/participant/PrepareRequest.ts';
import type { StatusAnswer as _verdict_participant_StatusAnswer, StatusAnswer__Output as _verdict_participant_StatusAnswer__Output } from './verdict/participant/StatusAnswer.ts';
import type { StatusRequest as _verdict_participant_StatusRequest, StatusRequest__Output as _verdict_participant_StatusRequest__Output } from './verdict/participant/StatusRequest.ts';
import type { Vote as _verdict_participant_Vote, Vote__Output as _verdict_participant_Vote__Output } from './verdict/participant/Vote.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  verdict: {
    participant: {
      Ack: MessageTypeDefinition<_verdict_participant_Ack, _verdict_participant_Ack__Output>
      AnswerBatch: MessageTypeDefinition<_verdict_participant_AnswerBatch, _verdict_participant_AnswerBatch__Output>
      DecideRequest: MessageTypeDefinition<_verdict_participant_DecideRequest, _verdict_participant_DecideRequest__Output>
      DecisionValue: EnumTypeDefinition
      ExchangeAnswer: MessageTypeDefinition<_verdict_participant_ExchangeAnswer, _verdict_participant_ExchangeAnswer__Output>
      ExchangeBatch: MessageTypeDefinition<_verdict_participant_ExchangeBatch, _verdict_participant_ExchangeBatch__Output>
      ExchangeError: MessageTypeDefinition<_verdict_participant_ExchangeError, _verdict_participant_ExchangeError__Output>
      ExchangeRequest: MessageTypeDefinition<_verdict_participant_ExchangeRequest, _verdict_participant_ExchangeRequest__Output>
      Participant: SubtypeConstructor<typeof grpc.Client, _verdict_participant_ParticipantClient> & { service: _verdict_participant_ParticipantDefinition }
      PrepareRequest: MessageTypeDefinition<_verdict_participant_PrepareRequest, _verdict_participant_PrepareRequest__Output>
      StatusAnswer: MessageTypeDefinition<_verdict_participant_StatusAnswer, _verdict_participant_StatusAnswer__Output>
      StatusRequest: MessageTypeDefinition<_verdict_participant_StatusRequest, _verdict_participant_StatusRequest__Output>
      TxnStatusValue: EnumTypeDefinition
      Vote: MessageTypeDefinition<_verdict_participant_Vote, _verdict_participant_Vote__Output>
      VoteValue: EnumTypeDefinition
    }
  }
}

