// Original file: proto/raft.proto

import type { HistoryParticipant as _verdict_raft_HistoryParticipant, HistoryParticipant__Output as _verdict_raft_HistoryParticipant__Output } from '../../verdict/raft/HistoryParticipant.ts';
import type { HistoryAct as _verdict_raft_HistoryAct, HistoryAct__Output as _verdict_raft_HistoryAct__Output } from '../../verdict/raft/HistoryAct.ts';
import type { HistoryRow as _verdict_raft_HistoryRow, HistoryRow__Output as _verdict_raft_HistoryRow__Output } from '../../verdict/raft/HistoryRow.ts';
import type { HistorySaga as _verdict_raft_HistorySaga, HistorySaga__Output as _verdict_raft_HistorySaga__Output } from '../../verdict/raft/HistorySaga.ts';
import type { Long } from '@grpc/proto-loader';

export interface HistoryRecord {
  'txnId'?: (string);
  'outcome'?: (string);
  'reason'?: (string);
  'decisionIndex'?: (number | string | Long);
  'decidedAtMs'?: (number | string | Long);
  'participants'?: (_verdict_raft_HistoryParticipant)[];
  'forgottenIndex'?: (number | string | Long);
  'forgottenAtMs'?: (number | string | Long);
  'acts'?: (_verdict_raft_HistoryAct)[];
  'rows'?: (_verdict_raft_HistoryRow)[];
  'rowsDropped'?: (number);
  'saga'?: (_verdict_raft_HistorySaga | null);
  'group'?: (number);
}

export interface HistoryRecord__Output {
  'txnId': (string);
  'outcome': (string);
  'reason': (string);
  'decisionIndex': (number);
  'decidedAtMs': (number);
  'participants': (_verdict_raft_HistoryParticipant__Output)[];
  'forgottenIndex': (number);
  'forgottenAtMs': (number);
  'acts': (_verdict_raft_HistoryAct__Output)[];
  'rows': (_verdict_raft_HistoryRow__Output)[];
  'rowsDropped': (number);
  'saga': (_verdict_raft_HistorySaga__Output | null);
  'group': (number);
}
