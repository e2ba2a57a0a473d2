// A fault-injecting TCP proxy for one directed node-to-node link, loopback only.
//
// Node A reaches node B through the proxy of link A→B (A's config has
// `peerDial.B` = the proxy's address; see ClusterOptions.dialPeer). Verdict's
// transport sends A's Raft messages to B on a stream that A opens, so
// everything A says to B crosses exactly this proxy, and nothing B says to A
// does: cutting this one link is a one-way partition; cutting both links of a
// pair is a symmetric one.
//
// Modes:
//   pass       bytes are forwarded both ways.
//   blackhole  traffic is dropped: connections stay open (and new ones are
//              accepted) but every byte in either direction is read and
//              discarded, so the sender sees a silent peer, as with a
//              pulled cable, until its gRPC keepalive gives up.
//   reset      every connection is reset (TCP RST) and new ones are reset as
//              soon as they are accepted: the sender sees a peer that
//              refuses it at once.
//
// Healing (back to pass) destroys the connections that were blackholed:
// bytes went missing from their HTTP/2 streams, so they could never carry a
// valid frame again; the sender reconnects, as it would after a real outage.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export type LinkMode = 'pass' | 'blackhole' | 'reset';

/** A bound on connections per link: the transport keeps one, reconnects add a few. */
const CONNECTIONS_MAX = 64;

interface Pair {
  inbound: Socket;
  outbound: Socket | null;
  /** The pair carried dropped bytes: it cannot be healed, only closed. */
  broken: boolean;
}

export class LinkProxy {
  private mode: LinkMode = 'pass';
  private readonly pairs = new Set<Pair>();
  /** Bytes discarded while blackholed, both directions. */
  droppedBytes = 0;
  /** Connections reset or refused while not passing. */
  resets = 0;

  private constructor(
    readonly from: string,
    readonly to: string,
    private readonly server: Server,
    /** 127.0.0.1:port where the proxy listens. */
    readonly address: string,
    /** Where it forwards: the destination node's own address. */
    readonly target: { host: string; port: number },
  ) {}

  /** Listens on a free loopback port and forwards to `targetAddress` (host:port on 127.0.0.0/8). */
  static async start(from: string, to: string, targetAddress: string): Promise<LinkProxy> {
    const m = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}):(\d{1,5})$/.exec(targetAddress);
    if (!m)
      throw new Error(
        `proxy ${from}→${to}: target ${targetAddress} is not a 127.0.0.0/8 host:port (the chaos proxy stays on loopback)`,
      );
    const target = { host: m[1], port: Number(m[2]) };
    const server = createServer();
    let proxy: LinkProxy | null = null;
    server.on('connection', (s) => proxy?.accept(s));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const a = server.address();
    if (a === null || typeof a === 'string') throw new Error(`proxy ${from}→${to}: no port bound`);
    proxy = new LinkProxy(from, to, server, `127.0.0.1:${a.port}`, target);
    return proxy;
  }

  get current(): LinkMode {
    return this.mode;
  }

  /** Switches the link's mode; existing connections follow at once. */
  set(mode: LinkMode): void {
    if (mode === this.mode) return;
    this.mode = mode;
    for (const p of [...this.pairs]) {
      if (mode === 'reset') this.drop(p, true);
      else if (mode === 'blackhole') this.blackhole(p);
      else if (p.broken) this.drop(p, false);
    }
  }

  heal(): void {
    this.set('pass');
  }

  /** Stops listening and closes every connection. */
  close(): Promise<void> {
    for (const p of [...this.pairs]) this.drop(p, false);
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private drop(p: Pair, reset: boolean): void {
    if (!this.pairs.delete(p)) return;
    if (reset) this.resets++;
    for (const s of [p.inbound, p.outbound]) {
      if (s === null || s.destroyed) continue;
      if (reset) s.resetAndDestroy();
      else s.destroy();
    }
  }

  private accept(inbound: Socket): void {
    inbound.on('error', () => {});
    if (this.mode === 'reset' || this.pairs.size >= CONNECTIONS_MAX) {
      this.resets++;
      inbound.resetAndDestroy();
      return;
    }
    const p: Pair = { inbound, outbound: null, broken: false };
    this.pairs.add(p);
    inbound.once('close', () => this.drop(p, false));
    if (this.mode === 'blackhole') {
      // Accepted, never connected onwards: a peer that takes the bytes and says nothing.
      this.blackhole(p);
      return;
    }
    const outbound = createConnection(this.target);
    p.outbound = outbound;
    outbound.on('error', () => {});
    outbound.once('close', () => this.drop(p, false));
    inbound.on('data', (b: Buffer) => this.forward(p, b, outbound));
    outbound.on('data', (b: Buffer) => this.forward(p, b, inbound));
  }

  private forward(p: Pair, b: Buffer, to: Socket): void {
    if (p.broken) {
      this.droppedBytes += b.length;
      return;
    }
    // Back-pressure: a slow receiver slows the sender instead of growing a buffer here.
    if (!to.write(b)) {
      const from = to === p.inbound ? p.outbound : p.inbound;
      from?.pause();
      to.once('drain', () => from?.resume());
    }
  }

  private blackhole(p: Pair): void {
    p.broken = true;
    // Keep reading (and discarding) both sides, so neither sender is slowed by a full buffer: the bytes are gone.
    for (const s of [p.inbound, p.outbound]) {
      if (s === null) continue;
      if (s.listenerCount('data') === 0) s.on('data', (b: Buffer) => (this.droppedBytes += b.length));
      s.resume();
    }
  }
}

/** One proxy per directed link of a cluster, with partition helpers on top. */
export class LinkTable {
  private readonly links = new Map<string, LinkProxy>();

  /** ClusterOptions.dialPeer: starts the proxy of link from→to and returns its address. */
  readonly dialPeer = async (from: string, to: string, address: string): Promise<string> => {
    const key = `${from}>${to}`;
    if (this.links.has(key)) throw new Error(`link ${from}→${to} already has a proxy`);
    const p = await LinkProxy.start(from, to, address);
    this.links.set(key, p);
    return p.address;
  };

  link(from: string, to: string): LinkProxy {
    const p = this.links.get(`${from}>${to}`);
    if (!p) throw new Error(`no proxy on link ${from}→${to}`);
    return p;
  }

  all(): LinkProxy[] {
    return [...this.links.values()];
  }

  /** Cuts every link from a node in `a` to a node in `b` (one way). */
  cutOneWay(a: readonly string[], b: readonly string[], mode: Exclude<LinkMode, 'pass'> = 'blackhole'): void {
    for (const x of a) for (const y of b) if (x !== y) this.link(x, y).set(mode);
  }

  /** Cuts both directions between the two groups. */
  cut(a: readonly string[], b: readonly string[], mode: Exclude<LinkMode, 'pass'> = 'blackhole'): void {
    this.cutOneWay(a, b, mode);
    this.cutOneWay(b, a, mode);
  }

  healAll(): void {
    for (const p of this.links.values()) p.heal();
  }

  droppedBytes(): number {
    return this.all().reduce((n, p) => n + p.droppedBytes, 0);
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((p) => p.close()));
    this.links.clear();
  }
}
