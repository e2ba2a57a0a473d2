// Original file: proto/saga.proto

import type { TimelineEntry as _verdict_saga_TimelineEntry, TimelineEntry__Output as _verdict_saga_TimelineEntry__Output } from '../../verdict/saga/TimelineEntry.ts';
import type { StepDef as _verdict_saga_StepDef, StepDef__Output as _verdict_saga_StepDef__Output } from '../../verdict/saga/StepDef.ts';
import type { CallAttempts as _verdict_saga_CallAttempts, CallAttempts__Output as _verdict_saga_CallAttempts__Output } from '../../verdict/saga/CallAttempts.ts';
import type { Long } from '@grpc/proto-loader';

export interface SagaInfo {
  'sagaId'?: (string);
  'state'?: (string);
  'stepStatus'?: (string)[];
  'outputs'?: (string)[];
  'pivotPlusOne'?: (number);
  'stuck'?: (boolean);
  'stuckStep'?: (number);
  'stuckKind'?: (string);
  'stuckAttempts'?: (number);
  'stuckError'?: (string);
  'timeline'?: (_verdict_saga_TimelineEntry)[];
  'startedAtMs'?: (number | string | Long);
  'steps'?: (_verdict_saga_StepDef)[];
  'type'?: (string);
  'labels'?: ({[key: string]: string});
  'attempts'?: (_verdict_saga_CallAttempts)[];
}

export interface SagaInfo__Output {
  'sagaId': (string);
  'state': (string);
  'stepStatus': (string)[];
  'outputs': (string)[];
  'pivotPlusOne': (number);
  'stuck': (boolean);
  'stuckStep': (number);
  'stuckKind': (string);
  'stuckAttempts': (number);
  'stuckError': (string);
  'timeline': (_verdict_saga_TimelineEntry__Output)[];
  'startedAtMs': (number);
  'steps': (_verdict_saga_StepDef__Output)[];
  'type': (string);
  'labels': ({[key: string]: string});
  'attempts': (_verdict_saga_CallAttempts__Output)[];
}
