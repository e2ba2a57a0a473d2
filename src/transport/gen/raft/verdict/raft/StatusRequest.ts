// Original file: proto/raft.proto


export interface StatusRequest {
}

export interface StatusRequest__Output {
}
