// Original file: proto/coordinator.proto


export interface RemoveParticipantResponse {
  'removed'?: (boolean);
  'owed'?: (string)[];
}

export interface RemoveParticipantResponse__Output {
  'removed': (boolean);
  'owed': (string)[];
}
