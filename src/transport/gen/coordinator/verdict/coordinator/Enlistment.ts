// Original file: proto/coordinator.proto


export interface Enlistment {
  'participantId'?: (string);
  'payload'?: (Buffer | Uint8Array | string);
}

export interface Enlistment__Output {
  'participantId': (string);
  'payload': (Buffer);
}
