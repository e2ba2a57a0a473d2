// Original file: proto/raft.proto

import type { PutResponse as _verdict_raft_PutResponse, PutResponse__Output as _verdict_raft_PutResponse__Output } from '../../verdict/raft/PutResponse.ts';
import type { Long } from '@grpc/proto-loader';

export interface StreamedPutAnswer {
  'id'?: (number | string | Long);
  'response'?: (_verdict_raft_PutResponse | null);
  'code'?: (number);
  'details'?: (string);
  'leaderAddress'?: (string);
  'leaderId'?: (string);
  'statusReason'?: (string);
}

export interface StreamedPutAnswer__Output {
  'id': (number);
  'response': (_verdict_raft_PutResponse__Output | null);
  'code': (number);
  'details': (string);
  'leaderAddress': (string);
  'leaderId': (string);
  'statusReason': (string);
}
