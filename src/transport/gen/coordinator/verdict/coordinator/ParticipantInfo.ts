// Original file: proto/coordinator.proto

import type { Long } from '@grpc/proto-loader';

export interface ParticipantInfo {
  'participantId'?: (string);
  'endpoint'?: (string);
  'registeredAtMs'?: (number | string | Long);
  'lastSeenAtMs'?: (number | string | Long);
  'inDoubt'?: (number);
  'connection'?: (string);
  'resourceKind'?: (string);
  'serves'?: (string)[];
}

export interface ParticipantInfo__Output {
  'participantId': (string);
  'endpoint': (string);
  'registeredAtMs': (number);
  'lastSeenAtMs': (number);
  'inDoubt': (number);
  'connection': (string);
  'resourceKind': (string);
  'serves': (string)[];
}
