// Original file: proto/coordinator.proto

import type { ParticipantInfo as _verdict_coordinator_ParticipantInfo, ParticipantInfo__Output as _verdict_coordinator_ParticipantInfo__Output } from '../../verdict/coordinator/ParticipantInfo.ts';

export interface RegisterParticipantResponse {
  'participant'?: (_verdict_coordinator_ParticipantInfo | null);
}

export interface RegisterParticipantResponse__Output {
  'participant': (_verdict_coordinator_ParticipantInfo__Output | null);
}
