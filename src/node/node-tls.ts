// A node's TLS, from its config's `tls` block: the files are read and
// checked before anything is bound or opened, and turned into the
// credentials each kind of connection uses (see src/transport/tls.ts for the
// naming rules: O=verdict-node, OU=<cluster id>, CN=<node id>).
import type * as grpc from '@grpc/grpc-js';
import type { AuthPolicy } from '../transport/auth.ts';
import {
  certificateNamesHost,
  loadTls,
  nodeCertificateProblem,
  nodeSubject,
  peerCertificate,
  TlsSetupError,
  type AuthenticatedCall,
  type TlsMaterial,
} from '../transport/tls.ts';
import {
  nodeChannelCredentials,
  participantChannelCredentials,
  serverCredentials,
} from '../transport/tls-credentials.ts';
import { ConfigError, parseAddress, type NodeConfig } from './config.ts';

export interface NodeTls {
  /** The node's server: mutual TLS, client certificates signed by the cluster CA. */
  server: grpc.ServerCredentials;
  /** Dialling peer `id`: its certificate must be node `id`'s of this cluster (CN, OU, the node mark). */
  peer(id: string): grpc.ChannelCredentials;
  /**
   * Dialling participant or step service `id`: its certificate must be `id`'s (CN) of this cluster (OU), and name the
   * host dialled.
   */
  participant(id: string): grpc.ChannelCredentials;
  /**
   * An inbound Raft stream whose batches name `from` as sender: why it is refused (its client certificate is not node
   * `from`'s), or null.
   */
  authorizePeer(call: AuthenticatedCall, from: string): string | null;
  /** Who may do what (src/transport/auth.ts): admins by tls.adminNames, participants by CN and OU. */
  auth: AuthPolicy;
}

/** Null without a tls block. Throws ConfigError naming the key and the file when a file is wrong. */
export function loadNodeTls(cfg: NodeConfig): NodeTls | null {
  const t = cfg.tls;
  if (t === null) return null;
  let m: TlsMaterial;
  try {
    m = loadTls({ ca: t.ca, cert: t.cert, key: t.key }, (k) => `"tls.${k}"`);
  } catch (err) {
    if (err instanceof TlsSetupError) throw new ConfigError(cfg.file, err.message);
    throw err;
  }
  const leaf = m.leaf;
  if (leaf === null) throw new ConfigError(cfg.file, '"tls.cert" and "tls.key" are required');
  const problem = nodeCertificateProblem(leaf.subject, cfg.clusterId, cfg.nodeId);
  if (problem !== null)
    throw new ConfigError(
      cfg.file,
      `"tls.cert" (${t.cert}): this node's ${problem}; issue it with -subj "${nodeSubject(cfg.clusterId, cfg.nodeId)}" (verdict certs makes it so)`,
    );
  // Peers and clients dial the address in `peers` and check it against the certificate.
  const host = parseAddress(cfg.peers.get(cfg.nodeId) ?? cfg.listen)?.host;
  if (host !== undefined && !certificateNamesHost(leaf, host)) {
    throw new ConfigError(
      cfg.file,
      `"tls.cert" (${t.cert}) does not name ${host} in its subjectAltName (it has ${leaf.subjectAltName ?? 'none'}); peers and clients dial this node at ${host} and would refuse it; add subjectAltName=${/^[\d.]+$|:/.test(host) ? 'IP' : 'DNS'}:${host}`,
    );
  }
  const peerCreds = new Map<string, grpc.ChannelCredentials>();
  return {
    server: serverCredentials(m),
    peer: (id) => {
      let c = peerCreds.get(id);
      if (c === undefined) {
        c = nodeChannelCredentials(m, { clusterId: cfg.clusterId, nodeId: id });
        peerCreds.set(id, c);
      }
      return c;
    },
    participant: (id) => participantChannelCredentials(m, cfg.clusterId, id),
    authorizePeer: (call, from) => {
      const cert = peerCertificate(call);
      if (cert === null) return 'no verified client certificate';
      const p = nodeCertificateProblem(cert.subject, cfg.clusterId, from);
      return p === null ? null : `its client ${p}`;
    },
    auth: { tls: { clusterId: cfg.clusterId, adminNames: t.adminNames ?? [] } },
  };
}
