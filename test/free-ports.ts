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
// that is not a node. CI saw both: a node's base port taken while the node
// was down, and a participant that met "a server" closing the connection
// during set-up, then a node that never came up.
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
 * n different free loopback ports, each chosen at random between PORT_LOW and
 * the ephemeral range and checked by binding it; all are held until every
 * one is found, then released.
 */
export async function freePorts(n: number): Promise<number[]> {
  const high = ephemeralLow();
  const held: Server[] = [];
  const ports: number[] = [];
  try {
    for (let tries = 0; ports.length < n; tries++) {
      if (tries >= 200 + 20 * n) throw new Error(`no ${n} free loopback ports found between ${PORT_LOW} and ${high}`);
      const port = PORT_LOW + Math.floor(Math.random() * (high - PORT_LOW));
      if (ports.includes(port)) continue;
      const s = await bind(port);
      if (s === null) continue;
      held.push(s);
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(held.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}
