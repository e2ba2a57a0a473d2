// Original file: proto/coordinator.proto


export interface ParticipantState {
  'participantId'?: (string);
  'vote'?: (string);
  'acked'?: (boolean);
  'retries'?: (number);
  'unimplemented'?: (string);
}

export interface ParticipantState__Output {
  'participantId': (string);
  'vote': (string);
  'acked': (boolean);
  'retries': (number);
  'unimplemented': (string);
}
