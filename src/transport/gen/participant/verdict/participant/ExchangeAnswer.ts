// Original file: proto/participant.proto

import type { Vote as _verdict_participant_Vote, Vote__Output as _verdict_participant_Vote__Output } from '../../verdict/participant/Vote.ts';
import type { Ack as _verdict_participant_Ack, Ack__Output as _verdict_participant_Ack__Output } from '../../verdict/participant/Ack.ts';
import type { ExchangeError as _verdict_participant_ExchangeError, ExchangeError__Output as _verdict_participant_ExchangeError__Output } from '../../verdict/participant/ExchangeError.ts';
import type { Long } from '@grpc/proto-loader';

export interface ExchangeAnswer {
  'id'?: (number | string | Long);
  'vote'?: (_verdict_participant_Vote | null);
  'ack'?: (_verdict_participant_Ack | null);
  'error'?: (_verdict_participant_ExchangeError | null);
  'body'?: "vote"|"ack"|"error";
}

export interface ExchangeAnswer__Output {
  'id': (number);
  'vote'?: (_verdict_participant_Vote__Output | null);
  'ack'?: (_verdict_participant_Ack__Output | null);
  'error'?: (_verdict_participant_ExchangeError__Output | null);
  'body'?: "vote"|"ack"|"error";
}
