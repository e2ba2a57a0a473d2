// Original file: proto/participant.proto

export const DecisionValue = {
  DECISION_UNSPECIFIED: 'DECISION_UNSPECIFIED',
  DECISION_COMMIT: 'DECISION_COMMIT',
  DECISION_ABORT: 'DECISION_ABORT',
} as const;

export type DecisionValue =
  | 'DECISION_UNSPECIFIED'
  | 0
  | 'DECISION_COMMIT'
  | 1
  | 'DECISION_ABORT'
  | 2

export type DecisionValue__Output = typeof DecisionValue[keyof typeof DecisionValue]
