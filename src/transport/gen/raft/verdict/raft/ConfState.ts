// Original file: proto/raft.proto


export interface ConfState {
  'voters'?: (string)[];
  'learners'?: (string)[];
  'votersOutgoing'?: (string)[];
}

export interface ConfState__Output {
  'voters': (string)[];
  'learners': (string)[];
  'votersOutgoing': (string)[];
}
