// Original file: proto/raft.proto

import type { HistoryRecord as _verdict_raft_HistoryRecord, HistoryRecord__Output as _verdict_raft_HistoryRecord__Output } from '../../verdict/raft/HistoryRecord.ts';
import type { LogRange as _verdict_raft_LogRange, LogRange__Output as _verdict_raft_LogRange__Output } from '../../verdict/raft/LogRange.ts';
import type { Long } from '@grpc/proto-loader';

export interface HistoryPage {
  'nodeId'?: (string);
  'records'?: (_verdict_raft_HistoryRecord)[];
  'truncated'?: (boolean);
  'lacks'?: (_verdict_raft_LogRange)[];
  'appliedIndex'?: (number | string | Long);
  'oldestAtMs'?: (number | string | Long);
  'bytes'?: (number | string | Long);
  'enabled'?: (boolean);
  'groups'?: (number);
}

export interface HistoryPage__Output {
  'nodeId': (string);
  'records': (_verdict_raft_HistoryRecord__Output)[];
  'truncated': (boolean);
  'lacks': (_verdict_raft_LogRange__Output)[];
  'appliedIndex': (number);
  'oldestAtMs': (number);
  'bytes': (number);
  'enabled': (boolean);
  'groups': (number);
}
