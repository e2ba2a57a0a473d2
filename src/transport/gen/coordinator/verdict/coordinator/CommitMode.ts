// Original file: proto/coordinator.proto

export const CommitMode = {
  COMMIT_MODE_DEFAULT: 'COMMIT_MODE_DEFAULT',
  COMMIT_MODE_CLASSIC: 'COMMIT_MODE_CLASSIC',
  COMMIT_MODE_PARALLEL: 'COMMIT_MODE_PARALLEL',
} as const;

export type CommitMode =
  | 'COMMIT_MODE_DEFAULT'
  | 0
  | 'COMMIT_MODE_CLASSIC'
  | 1
  | 'COMMIT_MODE_PARALLEL'
  | 2

export type CommitMode__Output = typeof CommitMode[keyof typeof CommitMode]
