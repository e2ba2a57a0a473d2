// Original file: proto/participant.proto

import type { Long } from '@grpc/proto-loader';

export interface PrepareRequest {
  'clusterId'?: (string);
  'txnId'?: (string);
  'participantId'?: (string);
  'participants'?: (string)[];
  'payload'?: (Buffer | Uint8Array | string);
  'timeoutMs'?: (number | string | Long);
}

export interface PrepareRequest__Output {
  'clusterId': (string);
  'txnId': (string);
  'participantId': (string);
  'participants': (string)[];
  'payload': (Buffer);
  'timeoutMs': (number);
}
