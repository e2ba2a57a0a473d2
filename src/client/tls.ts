// TLS for applications: credentials for VerdictClient's `credentials` option
// from the cluster CA and, since Verdict nodes require one, a client
// certificate and key signed by it. The server must hold a node's
// certificate (the node mark, src/transport/tls.ts), so a participant's or a
// client's certificate of the same CA at a node's address gets no call.
import * as grpc from '@grpc/grpc-js';
import { loadTls, TlsSetupError, type TlsFiles } from '../transport/tls.ts';
import { nodeChannelCredentials } from '../transport/tls-credentials.ts';
import { invalidArgument } from './errors.ts';

/** Reads and checks the PEM files; a bad file is an INVALID_ARGUMENT VerdictError naming it. */
export function tlsCredentials(files: TlsFiles): grpc.ChannelCredentials {
  try {
    const m = loadTls(files, (k) => k);
    return nodeChannelCredentials(m);
  } catch (err) {
    if (err instanceof TlsSetupError) throw invalidArgument(err.message);
    throw err;
  }
}
