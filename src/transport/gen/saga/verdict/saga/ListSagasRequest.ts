// Original file: proto/saga.proto


export interface ListSagasRequest {
  'stuckOnly'?: (boolean);
  'limit'?: (number);
  'pageToken'?: (string);
}

export interface ListSagasRequest__Output {
  'stuckOnly': (boolean);
  'limit': (number);
  'pageToken': (string);
}
