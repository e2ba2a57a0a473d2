// Original file: proto/coordinator.proto


export interface RegisterParticipantRequest {
  'clusterId'?: (string);
  'participantId'?: (string);
  'endpoint'?: (string);
  'resourceKind'?: (string);
  'serves'?: (string)[];
}

export interface RegisterParticipantRequest__Output {
  'clusterId': (string);
  'participantId': (string);
  'endpoint': (string);
  'resourceKind': (string);
  'serves': (string)[];
}
