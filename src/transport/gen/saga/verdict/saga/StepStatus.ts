// Original file: proto/saga.proto

export const StepStatus = {
  STEP_STATUS_UNSPECIFIED: 'STEP_STATUS_UNSPECIFIED',
  STEP_DONE: 'STEP_DONE',
  STEP_FAILED: 'STEP_FAILED',
} as const;

export type StepStatus =
  | 'STEP_STATUS_UNSPECIFIED'
  | 0
  | 'STEP_DONE'
  | 1
  | 'STEP_FAILED'
  | 2

export type StepStatus__Output = typeof StepStatus[keyof typeof StepStatus]
