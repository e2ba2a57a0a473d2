// Original file: proto/participant.proto

import type { Prepare as _verdict_participant_Prepare, Prepare__Output as _verdict_participant_Prepare__Output } from '../../verdict/participant/Prepare.ts';
import type { Decision as _verdict_participant_Decision, Decision__Output as _verdict_participant_Decision__Output } from '../../verdict/participant/Decision.ts';
import type { Long } from '@grpc/proto-loader';

export interface ExchangeRequest {
  'id'?: (number | string | Long);
  'prepare'?: (_verdict_participant_Prepare | null);
  'decision'?: (_verdict_participant_Decision | null);
  'body'?: "prepare"|"decision";
}

export interface ExchangeRequest__Output {
  'id': (number);
  'prepare'?: (_verdict_participant_Prepare__Output | null);
  'decision'?: (_verdict_participant_Decision__Output | null);
  'body'?: "prepare"|"decision";
}
