// Original file: proto/raft.proto


export interface RemoveMemberRequest {
  'nodeId'?: (string);
}

export interface RemoveMemberRequest__Output {
  'nodeId': (string);
}
