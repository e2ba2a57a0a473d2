// Original file: proto/coordinator.proto

import type { StreamedOutcome as _verdict_coordinator_StreamedOutcome, StreamedOutcome__Output as _verdict_coordinator_StreamedOutcome__Output } from '../../verdict/coordinator/StreamedOutcome.ts';

export interface StreamedOutcomes {
  'outcomes'?: (_verdict_coordinator_StreamedOutcome)[];
}

export interface StreamedOutcomes__Output {
  'outcomes': (_verdict_coordinator_StreamedOutcome__Output)[];
}
