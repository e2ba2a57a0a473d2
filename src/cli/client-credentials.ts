// The client TLS of client-tls.ts as grpc-js credentials, for the commands
// that call through grpc-js (everything but `verdict status`, which must not
// pay for loading it). Every one of them dials nodes, so the server must hold
// a node's certificate (the node mark, src/transport/tls.ts).
import * as grpc from '@grpc/grpc-js';
import { nodeChannelCredentials } from '../transport/tls-credentials.ts';
import { clientTls } from './client-tls.ts';

/** The credentials every grpc-js client command connects with. */
export function clientCredentials(): grpc.ChannelCredentials {
  const m = clientTls();
  return m === null ? grpc.credentials.createInsecure() : nodeChannelCredentials(m);
}
