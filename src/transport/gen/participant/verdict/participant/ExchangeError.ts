// Original file: proto/participant.proto


export interface ExchangeError {
  'code'?: (number);
  'details'?: (string);
}

export interface ExchangeError__Output {
  'code': (number);
  'details': (string);
}
