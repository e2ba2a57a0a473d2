// Original file: proto/raft.proto

import type { Long } from '@grpc/proto-loader';

export interface HistoryParticipant {
  'participantId'?: (string);
  'vote'?: (string);
  'acked'?: (boolean);
  'ackedAtMs'?: (number | string | Long);
}

export interface HistoryParticipant__Output {
  'participantId': (string);
  'vote': (string);
  'acked': (boolean);
  'ackedAtMs': (number);
}
