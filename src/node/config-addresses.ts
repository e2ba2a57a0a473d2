// Addresses in a node's config that cannot all be right: two peers naming one
// address two ways (`127.0.0.1:7001` and `localhost:7001`), a `listen` that
// is not the address this node's own peers entry gives to everyone else, and
// a metrics endpoint on a peer's port. Each would start and then fail in a
// way that is hard to read (a node talking to itself, peers that cannot
// reach it, a scrape answering gRPC), so each is refused at start.
//
// The comparison is by spelling, after folding the loopback names together
// (localhost, 127.0.0.0/8's usual 127.0.0.1, ::1) and normalising IPv4
// numbers; no DNS lookup, so the check is the same on every machine.

const WILDCARD = new Set(['0.0.0.0', '::', '[::]']);
const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '[::1]', 'localhost.', 'ip6-localhost']);

interface HostPort {
  host: string;
  port: number;
}

function split(address: string): HostPort {
  const colon = address.lastIndexOf(':');
  return { host: normalHost(address.slice(0, colon)), port: Number(address.slice(colon + 1)) };
}

function normalHost(host: string): string {
  let h = host.toLowerCase();
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(h)) h = h.split('.').map(Number).join('.');
  if (LOOPBACK.has(h)) return 'loopback';
  if (WILDCARD.has(h)) return '*';
  return h;
}

/**
 * True when a client dialling `a` could reach what listens on `b` (or the reverse): same port, same host or a wildcard.
 */
function overlaps(a: HostPort, b: HostPort): boolean {
  return a.port === b.port && (a.host === b.host || a.host === '*' || b.host === '*');
}

/**
 * The first problem, as one line, or null. Keys appear as `{peers.n1}`,
 * `{listen}` and `{metricsListen}` so the caller can name where each value
 * came from.
 */
export function checkAddresses(
  nodeId: string,
  listen: string,
  metricsListen: string | null,
  peers: ReadonlyMap<string, string>,
): string | null {
  const seen: [string, HostPort][] = [];
  for (const [id, addr] of peers) {
    const hp = split(addr);
    const same = seen.find(([, other]) => other.port === hp.port && other.host === hp.host);
    if (same)
      return `{peers.${id}} ${JSON.stringify(addr)} and {peers.${same[0]}} ${JSON.stringify(peers.get(same[0]))} name the same address; give each node its own host:port`;
    seen.push([id, hp]);
  }
  const own = peers.get(nodeId);
  if (own !== undefined) {
    const l = split(listen);
    const o = split(own);
    const matches = l.host === '*' ? l.port === o.port : l.host === o.host && l.port === o.port;
    if (!matches)
      return `{listen} ${JSON.stringify(listen)} differs from this node's own entry {peers.${nodeId}} ${JSON.stringify(own)}: the others and clients reach this node there; make them the same address (or listen on 0.0.0.0 with the same port)`;
  }
  if (metricsListen !== null) {
    const m = split(metricsListen);
    for (const [id, addr] of peers) {
      if (overlaps(m, split(addr)))
        return `{metricsListen} ${JSON.stringify(metricsListen)} is the gRPC address of {peers.${id}} ${JSON.stringify(addr)}; give the metrics endpoint a port of its own`;
    }
    if (overlaps(m, split(listen)))
      return `{metricsListen} and {listen} are both ${listen}: give the metrics endpoint a port of its own`;
  }
  return null;
}
