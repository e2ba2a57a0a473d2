// A participant identity cannot use the leader to scan a network: it may
// register any endpoint, but a transaction enlisting it tells the client
// and the participant (the abort reason, read back from the log) nothing
// of what listens there (nobody, or a server that is not gRPC, read the
// same; one that never answers times the transaction out, like a slow
// participant), while the leader's log keeps the error for operators;
// and one id points the leader at no more than ENDPOINT_CHANGES_MAX new
// endpoints a minute.
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { ENDPOINT_CHANGES_MAX } from '../../src/node/endpoint-changes.ts';
import { Cluster, freePorts, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

const closers: (() => void)[] = [];
afterAll(() => {
  for (const close of closers) close();
});

/** A TCP server on a free loopback port: `talk` says what it does with a connection. */
async function tcpServer(talk: (s: Socket) => void): Promise<string> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    talk(s);
  });
  closers.push(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const a = server.address();
  if (a === null || typeof a === 'string') throw new Error('no port');
  return `127.0.0.1:${a.port}`;
}

describe('registered endpoints are no port scanner', () => {
  it('an abort reason is the same whatever listens at the endpoint; the leader logs the error; new endpoints per id are bounded', async () => {
    const c = await Cluster.start({ nodes: 3, logLevel: 'info' });
    await c.waitForLeader();
    const client = new VerdictClient({
      endpoints: c.nodes.map((n) => n.address),
      callTimeoutMs: 30_000,
      insecure: true,
    });
    closers.push(() => client.close());
    const [closedPort] = await freePorts(1);
    const targets: Record<string, string> = {
      nobody: `127.0.0.1:${closedPort}`,
      // Speaks, but not HTTP/2: an SSH banner.
      banner: await tcpServer((s) => s.end('SSH-2.0-OpenSSH_9.2\r\n')),
      // Accepts and never answers.
      silent: await tcpServer(() => {}),
    };
    const reasons = new Map<string, string>();
    for (const [what, endpoint] of Object.entries(targets)) {
      await client.registerParticipant('probe', endpoint);
      const r = await client.transaction({ timeoutMs: 3_000, parallelCommit: false }).enlist('probe', {}).commit();
      expect(r.outcome, what).toBe('ABORTED');
      reasons.set(what, r.reason.replace(/\d+/g, 'N'));
    }
    // Nobody there and a server that is not gRPC read the same; one that never answers is a transaction that timed out,
    // as with a slow participant.
    expect(reasons.get('banner'), JSON.stringify(Object.fromEntries(reasons))).toBe(reasons.get('nobody'));
    expect([reasons.get('nobody'), 'the transaction timed out after N ms']).toContain(reasons.get('silent'));
    for (const reason of reasons.values())
      expect(reason).not.toMatch(/ECONNREFUSED|refused|Protocol|RST_STREAM|SSH|deadline|UNAVAILABLE|INTERNAL/i);
    // The operator still learns what happened, from the leader's log.
    await waitFor('the refused connection in the leader log', 10_000, async () =>
      c.nodes.some((n) => /ECONNREFUSED[^\n]*PREPARE got no vote/.test(n.logTail(400))) ? true : undefined,
    );

    // New endpoints for one id: ENDPOINT_CHANGES_MAX a minute (three used above), then RESOURCE_EXHAUSTED.
    const ports = await freePorts(ENDPOINT_CHANGES_MAX);
    let refused: unknown = null;
    let accepted = 3;
    for (const port of ports) {
      try {
        await client.registerParticipant('probe', `127.0.0.1:${port}`);
        accepted++;
      } catch (err) {
        refused = err;
        break;
      }
    }
    expect(accepted).toBe(ENDPOINT_CHANGES_MAX);
    expect(refused).toMatchObject({
      code: 'RESOURCE_EXHAUSTED',
      reason: expect.stringMatching(/registered 20 new endpoints in the last 60 s/),
    });
    // Another id is not held back by it, and repeating the endpoint it has is no change.
    await client.registerParticipant('probe2', targets.nobody);
    await client.registerParticipant('probe', `127.0.0.1:${ports[ENDPOINT_CHANGES_MAX - 4]}`);
  }, 120_000);
});
