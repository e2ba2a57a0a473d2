// Original file: proto/coordinator.proto


export interface ListTransactionsRequest {
  'inFlight'?: (boolean);
  'limit'?: (number);
  'inDoubt'?: (boolean);
  'unacked'?: (boolean);
  'heuristic'?: (boolean);
  'txnId'?: (string);
}

export interface ListTransactionsRequest__Output {
  'inFlight': (boolean);
  'limit': (number);
  'inDoubt': (boolean);
  'unacked': (boolean);
  'heuristic': (boolean);
  'txnId': (string);
}
