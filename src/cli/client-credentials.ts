// The client TLS of client-tls.ts as grpc-js credentials, for the commands
// that call through grpc-js (everything but `verdict status`, which must not
// pay for loading it).
import * as grpc from '@grpc/grpc-js';
import { clientTls } from './client-tls.ts';

/** The credentials every grpc-js client command connects with. */
export function clientCredentials(): grpc.ChannelCredentials {
  const m = clientTls();
  return m === null ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(m.ca, m.key, m.cert);
}
