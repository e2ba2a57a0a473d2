// Original file: proto/participant.proto

import type { TxnStatusValue as _verdict_participant_TxnStatusValue, TxnStatusValue__Output as _verdict_participant_TxnStatusValue__Output } from '../../verdict/participant/TxnStatusValue.ts';

export interface StatusAnswer {
  'txnId'?: (string);
  'participantId'?: (string);
  'status'?: (_verdict_participant_TxnStatusValue);
}

export interface StatusAnswer__Output {
  'txnId': (string);
  'participantId': (string);
  'status': (_verdict_participant_TxnStatusValue__Output);
}
