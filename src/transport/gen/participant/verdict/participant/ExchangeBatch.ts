// Original file: proto/participant.proto

import type { ExchangeRequest as _verdict_participant_ExchangeRequest, ExchangeRequest__Output as _verdict_participant_ExchangeRequest__Output } from '../../verdict/participant/ExchangeRequest.ts';

export interface ExchangeBatch {
  'requests'?: (_verdict_participant_ExchangeRequest)[];
}

export interface ExchangeBatch__Output {
  'requests': (_verdict_participant_ExchangeRequest__Output)[];
}
