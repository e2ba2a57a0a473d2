// Original file: proto/coordinator.proto

import type { Outcome as _verdict_coordinator_Outcome, Outcome__Output as _verdict_coordinator_Outcome__Output } from '../../verdict/coordinator/Outcome.ts';
import type { ParticipantState as _verdict_coordinator_ParticipantState, ParticipantState__Output as _verdict_coordinator_ParticipantState__Output } from '../../verdict/coordinator/ParticipantState.ts';
import type { HeuristicInfo as _verdict_coordinator_HeuristicInfo, HeuristicInfo__Output as _verdict_coordinator_HeuristicInfo__Output } from '../../verdict/coordinator/HeuristicInfo.ts';
import type { ResolutionInfo as _verdict_coordinator_ResolutionInfo, ResolutionInfo__Output as _verdict_coordinator_ResolutionInfo__Output } from '../../verdict/coordinator/ResolutionInfo.ts';
import type { RemovalInfo as _verdict_coordinator_RemovalInfo, RemovalInfo__Output as _verdict_coordinator_RemovalInfo__Output } from '../../verdict/coordinator/RemovalInfo.ts';
import type { Long } from '@grpc/proto-loader';

export interface TxnInfo {
  'txnId'?: (string);
  'outcome'?: (_verdict_coordinator_Outcome);
  'reason'?: (string);
  'phase'?: (string);
  'participants'?: (_verdict_coordinator_ParticipantState)[];
  'ageMs'?: (number | string | Long);
  'decisionIndex'?: (number | string | Long);
  'heuristics'?: (_verdict_coordinator_HeuristicInfo)[];
  'resolutions'?: (_verdict_coordinator_ResolutionInfo)[];
  'removals'?: (_verdict_coordinator_RemovalInfo)[];
}

export interface TxnInfo__Output {
  'txnId': (string);
  'outcome': (_verdict_coordinator_Outcome__Output);
  'reason': (string);
  'phase': (string);
  'participants': (_verdict_coordinator_ParticipantState__Output)[];
  'ageMs': (number);
  'decisionIndex': (number);
  'heuristics': (_verdict_coordinator_HeuristicInfo__Output)[];
  'resolutions': (_verdict_coordinator_ResolutionInfo__Output)[];
  'removals': (_verdict_coordinator_RemovalInfo__Output)[];
}
