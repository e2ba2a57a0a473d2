// Original file: proto/coordinator.proto

import type { Enlistment as _verdict_coordinator_Enlistment, Enlistment__Output as _verdict_coordinator_Enlistment__Output } from '../../verdict/coordinator/Enlistment.ts';
import type { CommitMode as _verdict_coordinator_CommitMode, CommitMode__Output as _verdict_coordinator_CommitMode__Output } from '../../verdict/coordinator/CommitMode.ts';
import type { Long } from '@grpc/proto-loader';

export interface CommitRequest {
  'txnId'?: (string);
  'participants'?: (_verdict_coordinator_Enlistment)[];
  'begin'?: (boolean);
  'timeoutMs'?: (number | string | Long);
  'commitMode'?: (_verdict_coordinator_CommitMode);
}

export interface CommitRequest__Output {
  'txnId': (string);
  'participants': (_verdict_coordinator_Enlistment__Output)[];
  'begin': (boolean);
  'timeoutMs': (number);
  'commitMode': (_verdict_coordinator_CommitMode__Output);
}
