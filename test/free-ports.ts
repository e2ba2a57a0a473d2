// Free loopback ports for tests and benchmarks (no test-runner imports, so
// bench/ can use it too).
import { createServer, type Server } from 'node:net';

/** Free loopback ports: all bound at once (port 0) so they differ, then released. */
export async function freePorts(n: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const s = createServer();
      servers.push(s);
      await new Promise<void>((res, rej) => {
        s.once('error', rej);
        s.listen(0, '127.0.0.1', () => res());
      });
    }
    return servers.map((s) => {
      const a = s.address();
      if (a === null || typeof a === 'string') throw new Error('no port');
      return a.port;
    });
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}
