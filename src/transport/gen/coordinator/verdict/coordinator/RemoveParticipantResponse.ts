// Original file: proto/coordinator.proto


export interface RemoveParticipantResponse {
  'removed'?: (boolean);
}

export interface RemoveParticipantResponse__Output {
  'removed': (boolean);
}
