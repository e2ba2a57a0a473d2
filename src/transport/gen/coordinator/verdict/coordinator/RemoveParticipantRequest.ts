// Original file: proto/coordinator.proto


export interface RemoveParticipantRequest {
  'clusterId'?: (string);
  'participantId'?: (string);
  'force'?: (boolean);
  'reason'?: (string);
}

export interface RemoveParticipantRequest__Output {
  'clusterId': (string);
  'participantId': (string);
  'force': (boolean);
  'reason': (string);
}
