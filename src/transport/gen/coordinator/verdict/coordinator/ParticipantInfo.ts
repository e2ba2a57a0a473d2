// Original file: proto/coordinator.proto

import type { Long } from '@grpc/proto-loader';

export interface ParticipantInfo {
  'participantId'?: (string);
  'endpoint'?: (string);
  'registeredAtMs'?: (number | string | Long);
  'lastSeenMs'?: (number | string | Long);
  'inDoubt'?: (number);
  'connection'?: (string);
  'resourceKind'?: (string);
}

export interface ParticipantInfo__Output {
  'participantId': (string);
  'endpoint': (string);
  'registeredAtMs': (number);
  'lastSeenMs': (number);
  'inDoubt': (number);
  'connection': (string);
  'resourceKind': (string);
}
