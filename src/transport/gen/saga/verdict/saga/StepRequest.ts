// Original file: proto/saga.proto


export interface StepRequest {
  'clusterId'?: (string);
  'sagaId'?: (string);
  'step'?: (number);
  'key'?: (string);
  'name'?: (string);
  'input'?: (string);
  'outputs'?: (string)[];
  'attempt'?: (number);
}

export interface StepRequest__Output {
  'clusterId': (string);
  'sagaId': (string);
  'step': (number);
  'key': (string);
  'name': (string);
  'input': (string);
  'outputs': (string)[];
  'attempt': (number);
}
