// Original file: proto/saga.proto

import type { StepDef as _verdict_saga_StepDef, StepDef__Output as _verdict_saga_StepDef__Output } from '../../verdict/saga/StepDef.ts';

export interface StartSagaRequest {
  'sagaId'?: (string);
  'steps'?: (_verdict_saga_StepDef)[];
  'pivotPlusOne'?: (number);
  'type'?: (string);
  'labels'?: ({[key: string]: string});
}

export interface StartSagaRequest__Output {
  'sagaId': (string);
  'steps': (_verdict_saga_StepDef__Output)[];
  'pivotPlusOne': (number);
  'type': (string);
  'labels': ({[key: string]: string});
}
