// TLS as grpc-js credentials, built from the checked files of tls.ts: kept
// apart from it so that a process that dials without grpc-js (the CLI's
// `verdict status`, over node:http2) does not load grpc-js for the checks.
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { nodeServerProblem, participantServerProblem, TlsSetupError, type TlsMaterial } from './tls.ts';

/** Server side: TLS that requires a client certificate signed by the CA. */
export function serverCredentials(m: TlsMaterial): grpc.ServerCredentials {
  if (m.cert === null || m.key === null) throw new TlsSetupError('a TLS server needs a certificate and a key');
  return grpc.ServerCredentials.createSsl(m.ca, [{ cert_chain: m.cert, private_key: m.key }], true);
}

/**
 * Client side, dialling a node: checks the server's certificate against the
 * CA and the dialled host, presents our certificate if we have one, and
 * requires the server to be a node (src/transport/tls.ts: the node mark):
 * of cluster `expect.clusterId` when given (a participant, a step service),
 * and node `expect.nodeId` when given (a node dialling its peer). A client
 * that knows no cluster id (the CLI, the SDK) gives neither, and still
 * refuses a participant's or a client's certificate at a node's address.
 */
export function nodeChannelCredentials(
  m: TlsMaterial,
  expect: { clusterId?: string; nodeId?: string } = {},
): grpc.ChannelCredentials {
  return grpc.credentials.createSsl(m.ca, m.key, m.cert, {
    checkServerIdentity: (host: string, cert: PeerCertificate): Error | undefined => {
      const hostErr = checkServerIdentity(host, cert);
      if (hostErr !== undefined) return hostErr;
      const problem = nodeServerProblem(cert.subject, expect);
      return problem === null ? undefined : new Error(`node at ${host} refused: its ${problem}`);
    },
  });
}

/**
 * A node dialling participant (or step service) `id`: the server's
 * certificate must be `id`'s of this cluster (CN = id, OU = cluster id), so
 * another participant's certificate at that address gets no PREPARE, no
 * payload, and counts no vote.
 */
export function participantChannelCredentials(m: TlsMaterial, clusterId: string, id: string): grpc.ChannelCredentials {
  return grpc.credentials.createSsl(m.ca, m.key, m.cert, {
    checkServerIdentity: (host: string, cert: PeerCertificate): Error | undefined => {
      const hostErr = checkServerIdentity(host, cert);
      if (hostErr !== undefined) return hostErr;
      const problem = participantServerProblem(cert.subject, clusterId, id);
      return problem === null ? undefined : new Error(`participant ${id} at ${host} refused: its ${problem}`);
    },
  });
}
