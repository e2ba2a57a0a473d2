// Original file: proto/saga.proto

import type { Long } from '@grpc/proto-loader';

export interface TimelineEntry {
  'atMs'?: (number | string | Long);
  'index'?: (number | string | Long);
  'what'?: (string);
  'step'?: (number);
  'kind'?: (string);
  'detail'?: (string);
  'operator'?: (string);
}

export interface TimelineEntry__Output {
  'atMs': (number);
  'index': (number);
  'what': (string);
  'step': (number);
  'kind': (string);
  'detail': (string);
  'operator': (string);
}
