// Original file: proto/coordinator.proto

import type { OutcomeAnswer as _verdict_coordinator_OutcomeAnswer, OutcomeAnswer__Output as _verdict_coordinator_OutcomeAnswer__Output } from '../../verdict/coordinator/OutcomeAnswer.ts';

export interface OutcomesResponse {
  'answers'?: (_verdict_coordinator_OutcomeAnswer)[];
}

export interface OutcomesResponse__Output {
  'answers': (_verdict_coordinator_OutcomeAnswer__Output)[];
}
