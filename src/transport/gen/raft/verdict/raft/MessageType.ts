// Original file: proto/raft.proto

export const MessageType = {
  MSG_HUP: 0,
  MSG_BEAT: 1,
  MSG_PROP: 2,
  MSG_APP: 3,
  MSG_APP_RESP: 4,
  MSG_VOTE: 5,
  MSG_VOTE_RESP: 6,
  MSG_PRE_VOTE: 7,
  MSG_PRE_VOTE_RESP: 8,
  MSG_SNAP: 9,
  MSG_HEARTBEAT: 10,
  MSG_HEARTBEAT_RESP: 11,
  MSG_TRANSFER_LEADER: 12,
  MSG_TIMEOUT_NOW: 13,
  MSG_READ_INDEX: 14,
  MSG_READ_INDEX_RESP: 15,
  MSG_UNREACHABLE: 16,
  MSG_SNAP_STATUS: 17,
  MSG_CHECK_QUORUM: 18,
} as const;

export type MessageType =
  | 'MSG_HUP'
  | 0
  | 'MSG_BEAT'
  | 1
  | 'MSG_PROP'
  | 2
  | 'MSG_APP'
  | 3
  | 'MSG_APP_RESP'
  | 4
  | 'MSG_VOTE'
  | 5
  | 'MSG_VOTE_RESP'
  | 6
  | 'MSG_PRE_VOTE'
  | 7
  | 'MSG_PRE_VOTE_RESP'
  | 8
  | 'MSG_SNAP'
  | 9
  | 'MSG_HEARTBEAT'
  | 10
  | 'MSG_HEARTBEAT_RESP'
  | 11
  | 'MSG_TRANSFER_LEADER'
  | 12
  | 'MSG_TIMEOUT_NOW'
  | 13
  | 'MSG_READ_INDEX'
  | 14
  | 'MSG_READ_INDEX_RESP'
  | 15
  | 'MSG_UNREACHABLE'
  | 16
  | 'MSG_SNAP_STATUS'
  | 17
  | 'MSG_CHECK_QUORUM'
  | 18

export type MessageType__Output = typeof MessageType[keyof typeof MessageType]
