// Original file: proto/raft.proto


export interface ListMembersRequest {
  'group'?: (number);
}

export interface ListMembersRequest__Output {
  'group': (number);
}
