// Original file: proto/raft.proto

import type { HistorySagaStep as _verdict_raft_HistorySagaStep, HistorySagaStep__Output as _verdict_raft_HistorySagaStep__Output } from '../../verdict/raft/HistorySagaStep.ts';
import type { HistorySagaCall as _verdict_raft_HistorySagaCall, HistorySagaCall__Output as _verdict_raft_HistorySagaCall__Output } from '../../verdict/raft/HistorySagaCall.ts';
import type { HistorySagaEvent as _verdict_raft_HistorySagaEvent, HistorySagaEvent__Output as _verdict_raft_HistorySagaEvent__Output } from '../../verdict/raft/HistorySagaEvent.ts';
import type { Long } from '@grpc/proto-loader';

export interface HistorySaga {
  'sagaId'?: (string);
  'type'?: (string);
  'labels'?: ({[key: string]: string});
  'owner'?: (string);
  'state'?: (string);
  'startedAtMs'?: (number | string | Long);
  'endedAtMs'?: (number | string | Long);
  'pivot'?: (number);
  'steps'?: (_verdict_raft_HistorySagaStep)[];
  'calls'?: (_verdict_raft_HistorySagaCall)[];
  'timeline'?: (_verdict_raft_HistorySagaEvent)[];
  'lastIndex'?: (number | string | Long);
}

export interface HistorySaga__Output {
  'sagaId': (string);
  'type': (string);
  'labels': ({[key: string]: string});
  'owner': (string);
  'state': (string);
  'startedAtMs': (number);
  'endedAtMs': (number);
  'pivot': (number);
  'steps': (_verdict_raft_HistorySagaStep__Output)[];
  'calls': (_verdict_raft_HistorySagaCall__Output)[];
  'timeline': (_verdict_raft_HistorySagaEvent__Output)[];
  'lastIndex': (number);
}
