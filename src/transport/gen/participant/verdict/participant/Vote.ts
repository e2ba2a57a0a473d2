// Original file: proto/participant.proto

import type { VoteValue as _verdict_participant_VoteValue, VoteValue__Output as _verdict_participant_VoteValue__Output } from '../../verdict/participant/VoteValue.ts';
import type { Long } from '@grpc/proto-loader';

export interface Vote {
  'txnId'?: (string);
  'participantId'?: (string);
  'vote'?: (_verdict_participant_VoteValue);
  'reason'?: (string);
  'reserveTtlMs'?: (number | string | Long);
}

export interface Vote__Output {
  'txnId': (string);
  'participantId': (string);
  'vote': (_verdict_participant_VoteValue__Output);
  'reason': (string);
  'reserveTtlMs': (number);
}
