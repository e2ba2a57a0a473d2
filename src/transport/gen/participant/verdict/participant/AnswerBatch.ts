// Original file: proto/participant.proto

import type { ExchangeAnswer as _verdict_participant_ExchangeAnswer, ExchangeAnswer__Output as _verdict_participant_ExchangeAnswer__Output } from '../../verdict/participant/ExchangeAnswer.ts';

export interface AnswerBatch {
  'answers'?: (_verdict_participant_ExchangeAnswer)[];
  'closing'?: (boolean);
}

export interface AnswerBatch__Output {
  'answers': (_verdict_participant_ExchangeAnswer__Output)[];
  'closing': (boolean);
}
