// Original file: proto/coordinator.proto

import type { TxnOutcome as _verdict_coordinator_TxnOutcome, TxnOutcome__Output as _verdict_coordinator_TxnOutcome__Output } from '../../verdict/coordinator/TxnOutcome.ts';
import type { Long } from '@grpc/proto-loader';

export interface StreamedOutcome {
  'id'?: (number | string | Long);
  'outcome'?: (_verdict_coordinator_TxnOutcome | null);
  'code'?: (number);
  'details'?: (string);
  'leaderAddress'?: (string);
  'leaderId'?: (string);
  'statusReason'?: (string);
  'recordedOutcome'?: (string);
  'group'?: (number);
}

export interface StreamedOutcome__Output {
  'id': (number);
  'outcome': (_verdict_coordinator_TxnOutcome__Output | null);
  'code': (number);
  'details': (string);
  'leaderAddress': (string);
  'leaderId': (string);
  'statusReason': (string);
  'recordedOutcome': (string);
  'group': (number);
}
