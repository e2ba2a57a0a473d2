// Plaintext only when the operator chose it. Without TLS a node, a
// participant or a step service has no way to tell who calls it: anyone who
// reaches the port may commit, abort, transfer leadership, change membership,
// register a participant at their own address, or forge Raft messages. On
// loopback that is every process and every user of the machine. So a server
// without TLS refuses to start on any address, loopback included, unless the
// operator says `insecure`; then it warns at every start. docs/security.md
// has the threat model. (isLoopbackHost tells the CLI which addresses are
// the local cluster's.)
import { isIP } from 'node:net';

/** Whether `host` (as written in a listen address, IPv6 possibly in brackets) names only this machine's loopback. */
export function isLoopbackHost(host: string): boolean {
  const h = (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host).toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.split('.')[0] === '127';
  if (isIP(h) === 6) {
    if (h === '::1' || /^(0{1,4}:){7}0{0,3}1$/.test(h)) return true;
    // An IPv4-mapped loopback address (::ffff:127.0.0.1).
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    return mapped !== null && isIP(mapped[1]) === 4 && mapped[1].split('.')[0] === '127';
  }
  // Any other name may resolve to a routable address: not loopback.
  return false;
}

export interface PlaintextListen {
  /** host:port the server is asked to listen on. */
  listen: string;
  /** The operator chose plaintext. */
  insecure: boolean;
  /**
   * How the user turns TLS on and says insecure, for the message: e.g. `"tls" in the config` and `"insecure": true
   * (--insecure)`.
   */
  tlsHow: string;
  insecureHow: string;
}

/**
 * For a server without TLS: why it must not start (a one-line reason with
 * how to fix it), or null when the operator said insecure.
 */
export function plaintextRefusal(p: PlaintextListen): string | null {
  if (p.insecure) return null;
  const host = p.listen.slice(0, p.listen.lastIndexOf(':'));
  const who = isLoopbackHost(host) ? 'any process or user on this machine' : `anyone who can reach ${host}`;
  return (
    `refusing to serve plaintext on ${p.listen}: without TLS ${who} can commit, abort, take over participants and forge Raft messages; ` +
    `configure ${p.tlsHow} (see docs/tls.md), or set ${p.insecureHow} to serve plaintext knowingly`
  );
}

/** The warning an insecure server logs at every start. */
export function insecureWarning(listen: string): string {
  return `insecure: serving plaintext on ${listen} without TLS; anyone who can reach this port can run every operation, forge Raft messages and take over participants (see docs/security.md)`;
}
