// Original file: proto/raft.proto


export interface PutRequest {
  'key'?: (string);
  'value'?: (Buffer | Uint8Array | string);
}

export interface PutRequest__Output {
  'key': (string);
  'value': (Buffer);
}
