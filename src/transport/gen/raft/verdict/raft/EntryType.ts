// Original file: proto/raft.proto

export const EntryType = {
  ENTRY_NORMAL: 0,
  ENTRY_CONF_CHANGE: 1,
} as const;

export type EntryType =
  | 'ENTRY_NORMAL'
  | 0
  | 'ENTRY_CONF_CHANGE'
  | 1

export type EntryType__Output = typeof EntryType[keyof typeof EntryType]
