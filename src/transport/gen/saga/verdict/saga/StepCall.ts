// Original file: proto/saga.proto


export interface StepCall {
  'clusterId'?: (string);
  'sagaId'?: (string);
  'step'?: (number);
  'key'?: (string);
  'name'?: (string);
  'input'?: (string);
  'outputs'?: (string)[];
  'attempt'?: (number);
}

export interface StepCall__Output {
  'clusterId': (string);
  'sagaId': (string);
  'step': (number);
  'key': (string);
  'name': (string);
  'input': (string);
  'outputs': (string)[];
  'attempt': (number);
}
