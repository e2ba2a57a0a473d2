// Original file: proto/coordinator.proto


export interface ListParticipantsRequest {
  'withActivity'?: (boolean);
}

export interface ListParticipantsRequest__Output {
  'withActivity': (boolean);
}
