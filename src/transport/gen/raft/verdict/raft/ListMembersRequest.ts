// Original file: proto/raft.proto


export interface ListMembersRequest {
}

export interface ListMembersRequest__Output {
}
