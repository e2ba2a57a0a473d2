// Original file: proto/participant.proto

export const VoteValue = {
  VOTE_UNSPECIFIED: 'VOTE_UNSPECIFIED',
  VOTE_YES: 'VOTE_YES',
  VOTE_NO: 'VOTE_NO',
} as const;

export type VoteValue =
  | 'VOTE_UNSPECIFIED'
  | 0
  | 'VOTE_YES'
  | 1
  | 'VOTE_NO'
  | 2

export type VoteValue__Output = typeof VoteValue[keyof typeof VoteValue]
