// Original file: proto/participant.proto

import type { DecisionValue as _verdict_participant_DecisionValue, DecisionValue__Output as _verdict_participant_DecisionValue__Output } from '../../verdict/participant/DecisionValue.ts';

export interface DecideRequest {
  'clusterId'?: (string);
  'txnId'?: (string);
  'participantId'?: (string);
  'decision'?: (_verdict_participant_DecisionValue);
  'reason'?: (string);
}

export interface DecideRequest__Output {
  'clusterId': (string);
  'txnId': (string);
  'participantId': (string);
  'decision': (_verdict_participant_DecisionValue__Output);
  'reason': (string);
}
