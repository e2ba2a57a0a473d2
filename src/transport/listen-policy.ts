// Plaintext only where nobody else can connect. Without TLS a node or a
// participant has no way to tell who calls it: anyone who reaches the port
// may commit, abort, transfer leadership, change membership, register a
// participant at their own address, or forge Raft messages. So a server
// without TLS listens on loopback only (127.0.0.0/8, ::1, localhost), for
// development, unless the operator says `insecure` (a network they trust
// by other means); then it warns at every start. docs/security.md has the
// threat model.
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
  /** The operator accepted plaintext beyond loopback. */
  insecure: boolean;
  /** How the user turns TLS on and says insecure, for the message: e.g. `"tls" in the config` and `"insecure": true (--insecure)`. */
  tlsHow: string;
  insecureHow: string;
}

/**
 * For a server without TLS: why it must not start (a one-line reason with
 * how to fix it), or null. Loopback is always allowed.
 */
export function plaintextRefusal(p: PlaintextListen): string | null {
  const host = p.listen.slice(0, p.listen.lastIndexOf(':'));
  if (p.insecure || isLoopbackHost(host)) return null;
  return (
    `refusing to serve plaintext on ${p.listen}: without TLS anyone who can reach ${host} can commit, abort, take over participants and forge Raft messages; ` +
    `configure ${p.tlsHow} (see docs/security.md), listen on loopback (127.0.0.1) for development, or set ${p.insecureHow} on a network you trust`
  );
}

/** The warning an insecure server logs at every start. */
export function insecureWarning(listen: string): string {
  return `insecure: serving plaintext on ${listen} without TLS; anyone who can reach this port can run every operation, forge Raft messages and take over participants (see docs/security.md)`;
}
