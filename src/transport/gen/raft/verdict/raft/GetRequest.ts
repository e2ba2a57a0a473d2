// Original file: proto/raft.proto


export interface GetRequest {
  'key'?: (string);
  'linearizable'?: (boolean);
}

export interface GetRequest__Output {
  'key': (string);
  'linearizable': (boolean);
}
