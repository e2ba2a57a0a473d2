// Original file: proto/saga.proto

import type { StepStatus as _verdict_saga_StepStatus, StepStatus__Output as _verdict_saga_StepStatus__Output } from '../../verdict/saga/StepStatus.ts';

export interface StepResult {
  'status'?: (_verdict_saga_StepStatus);
  'output'?: (string);
  'reason'?: (string);
}

export interface StepResult__Output {
  'status': (_verdict_saga_StepStatus__Output);
  'output': (string);
  'reason': (string);
}
