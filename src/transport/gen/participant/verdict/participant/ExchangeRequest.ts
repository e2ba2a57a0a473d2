// Original file: proto/participant.proto

import type { PrepareRequest as _verdict_participant_PrepareRequest, PrepareRequest__Output as _verdict_participant_PrepareRequest__Output } from '../../verdict/participant/PrepareRequest.ts';
import type { DecideRequest as _verdict_participant_DecideRequest, DecideRequest__Output as _verdict_participant_DecideRequest__Output } from '../../verdict/participant/DecideRequest.ts';
import type { Long } from '@grpc/proto-loader';

export interface ExchangeRequest {
  'id'?: (number | string | Long);
  'prepare'?: (_verdict_participant_PrepareRequest | null);
  'decision'?: (_verdict_participant_DecideRequest | null);
  'body'?: "prepare"|"decision";
}

export interface ExchangeRequest__Output {
  'id': (number);
  'prepare'?: (_verdict_participant_PrepareRequest__Output | null);
  'decision'?: (_verdict_participant_DecideRequest__Output | null);
  'body'?: "prepare"|"decision";
}
