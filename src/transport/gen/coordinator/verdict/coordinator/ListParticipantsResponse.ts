// Original file: proto/coordinator.proto

import type { ParticipantInfo as _verdict_coordinator_ParticipantInfo, ParticipantInfo__Output as _verdict_coordinator_ParticipantInfo__Output } from '../../verdict/coordinator/ParticipantInfo.ts';

export interface ListParticipantsResponse {
  'participants'?: (_verdict_coordinator_ParticipantInfo)[];
}

export interface ListParticipantsResponse__Output {
  'participants': (_verdict_coordinator_ParticipantInfo__Output)[];
}
