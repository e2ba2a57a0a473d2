// Original file: proto/coordinator.proto

import type { HeuristicInfo as _verdict_coordinator_HeuristicInfo, HeuristicInfo__Output as _verdict_coordinator_HeuristicInfo__Output } from '../../verdict/coordinator/HeuristicInfo.ts';

export interface ReportHeuristicResponse {
  'heuristic'?: (_verdict_coordinator_HeuristicInfo | null);
}

export interface ReportHeuristicResponse__Output {
  'heuristic': (_verdict_coordinator_HeuristicInfo__Output | null);
}
