// Free loopback ports for tests and benchmarks (no test-runner imports, so
// bench/ can use it too).
//
// The ports are taken below the kernel's ephemeral range, never from it
// (port 0 would hand out one from it). A test often leaves a port unbound
// for a while: a node stopped or not started yet while its peers, a
// participant or a client keep dialling it. A port in the ephemeral range
// can meanwhile become the local port of any outgoing connection on the
// machine, and a connection that dials it on loopback can even get it as its
// own local port and connect to itself (TCP's simultaneous open). Either way
// the node cannot bind it when it starts, and the dialler talks to something
// that is not a node; and a test in the other vitest worker, finding it free,
// can bind it for a node of its own. CI saw a node's base port taken while
// the node was down, and a participant that met "a server" closing the
// connection during set-up (as a TLS node does to a plaintext client), then
// a node that never came up. So each vitest worker chooses in a slice of its
// own, and a process never hands out the same port twice.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/** Where chosen ports start: above the well-known and registered services a machine may run. */
export const PORT_LOW = 10_000;

/**
 * The lowest port the kernel hands out as a connection's local port
 * (/proc/sys/net/ipv4/ip_local_port_range); 32768, Linux's default, where it
 * cannot be read or leaves too little room below it.
 */
export function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > PORT_LOW + 5_000) return low;
  } catch {
    // not Linux
  }
  return 32_768;
}

/** Binds 127.0.0.1:port, or says it is taken. */
function bind(port: number): Promise<Server | null> {
  return new Promise((res) => {
    const s = createServer();
    s.once('error', () => res(null));
    s.listen(port, '127.0.0.1', () => res(s));
  });
}

/**
 * Slices of the range, one per vitest worker ((VERDICT_PORT_SLICE +
 * VITEST_POOL_ID - 1) modulo this). VERDICT_PORT_SLICE (default 0) moves a
 * whole vitest run to other slices, so two runs on one machine (two
 * checkouts, say) do not choose from the same ports.
 */
const SLICES = 8;

/**
 * The ports this process may choose from: between PORT_LOW and the
 * ephemeral range, and inside a vitest worker only its own slice of that.
 * A port a test holds unbound (a node not started yet) is then never chosen
 * by a test in the other worker, which would otherwise find it free.
 */
export function portRange(env: NodeJS.ProcessEnv = process.env, high = ephemeralLow()): [number, number] {
  const id = Number(env.VITEST_POOL_ID);
  if (!Number.isInteger(id) || id < 1) return [PORT_LOW, high];
  const offset = Number(env.VERDICT_PORT_SLICE ?? 0);
  const shift = Number.isInteger(offset) && offset >= 0 ? offset : 0;
  const width = Math.floor((high - PORT_LOW) / SLICES);
  const lo = PORT_LOW + ((shift + id - 1) % SLICES) * width;
  return [lo, lo + width];
}

/** Every port this process has handed out: none is handed out twice, so a test's unbound port stays its own. */
const handedOut = new Set<number>();

/**
 * n different free loopback ports, each chosen at random in portRange() and
 * checked by binding it; all are held until every one is found, then
 * released. A port once handed out in this process is not handed out again.
 */
export async function freePorts(n: number): Promise<number[]> {
  const [low, high] = portRange();
  const held: Server[] = [];
  const ports: number[] = [];
  try {
    for (let tries = 0; ports.length < n; tries++) {
      if (tries >= 200 + 20 * n) throw new Error(`no ${n} free loopback ports found between ${low} and ${high}`);
      const port = low + Math.floor(Math.random() * (high - low));
      if (handedOut.has(port) || ports.includes(port)) continue;
      const s = await bind(port);
      if (s === null) continue;
      held.push(s);
      ports.push(port);
    }
    for (const p of ports) handedOut.add(p);
    return ports;
  } finally {
    await Promise.all(held.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}
