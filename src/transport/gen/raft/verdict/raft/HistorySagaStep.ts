// Original file: proto/raft.proto


export interface HistorySagaStep {
  'step'?: (number);
  'service'?: (string);
  'name'?: (string);
  'input'?: (string);
  'status'?: (string);
  'output'?: (string);
}

export interface HistorySagaStep__Output {
  'step': (number);
  'service': (string);
  'name': (string);
  'input': (string);
  'status': (string);
  'output': (string);
}
