// Original file: proto/participant.proto

export const TxnStatusValue = {
  TXN_STATUS_UNSPECIFIED: 'TXN_STATUS_UNSPECIFIED',
  TXN_STATUS_PREPARED: 'TXN_STATUS_PREPARED',
  TXN_STATUS_COMMITTED: 'TXN_STATUS_COMMITTED',
  TXN_STATUS_ABORTED: 'TXN_STATUS_ABORTED',
  TXN_STATUS_REFUSED: 'TXN_STATUS_REFUSED',
} as const;

export type TxnStatusValue =
  | 'TXN_STATUS_UNSPECIFIED'
  | 0
  | 'TXN_STATUS_PREPARED'
  | 1
  | 'TXN_STATUS_COMMITTED'
  | 2
  | 'TXN_STATUS_ABORTED'
  | 3
  | 'TXN_STATUS_REFUSED'
  | 4

export type TxnStatusValue__Output = typeof TxnStatusValue[keyof typeof TxnStatusValue]
