// Original file: proto/coordinator.proto

export const Outcome = {
  OUTCOME_UNSPECIFIED: 'OUTCOME_UNSPECIFIED',
  OUTCOME_COMMITTED: 'OUTCOME_COMMITTED',
  OUTCOME_ABORTED: 'OUTCOME_ABORTED',
  OUTCOME_IN_PROGRESS: 'OUTCOME_IN_PROGRESS',
  OUTCOME_UNKNOWN: 'OUTCOME_UNKNOWN',
} as const;

export type Outcome =
  | 'OUTCOME_UNSPECIFIED'
  | 0
  | 'OUTCOME_COMMITTED'
  | 1
  | 'OUTCOME_ABORTED'
  | 2
  | 'OUTCOME_IN_PROGRESS'
  | 3
  | 'OUTCOME_UNKNOWN'
  | 4

export type Outcome__Output = typeof Outcome[keyof typeof Outcome]
