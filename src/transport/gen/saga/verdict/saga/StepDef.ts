// Original file: proto/saga.proto


export interface StepDef {
  'service'?: (string);
  'name'?: (string);
  'input'?: (string);
}

export interface StepDef__Output {
  'service': (string);
  'name': (string);
  'input': (string);
}
