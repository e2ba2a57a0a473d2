// Original file: proto/raft.proto


export interface StreamAck {
}

export interface StreamAck__Output {
}
