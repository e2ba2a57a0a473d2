// `verdict status` calls Status over node:http2 with a hand-written decoder
// instead of grpc-js (a cold start several hundred milliseconds shorter).
// Against real clusters, plaintext and mutual TLS, it must show what the
// grpc-js client reads from every node, field for field; and a cluster that
// cannot be reached is still reported within --timeout, every endpoint
// named with its reason.
import { createServer, type Server, type Socket } from 'node:net';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tlsCredentials } from '../../src/client/tls.ts';
import { nodeRow, type ClusterStatus } from '../../src/cli/status.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import type { NodeStatus } from '../../src/transport/proto.ts';
import { certDir, TestCa, type CertFiles } from '../tls-certs.ts';
import { Cluster, freePorts, runCli, sleep, uniqueClusterId, useProcessCleanup } from './harness.ts';

useProcessCleanup();

const CLI_WAIT_MS = 60_000;

/**
 * Asks every node through grpc-js and runs `verdict status --json` from one
 * address; retries while the cluster moves between the two reads (a
 * heartbeat may not, a commit or an election may), at most a few times.
 */
async function compareWithGrpcJs(
  c: Cluster,
  cliArgs: string[],
  grpcClient: (addr: string) => RaftNodeClient,
): Promise<void> {
  let last = '';
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = await Promise.all(c.nodes.map((n) => askGrpcJs(grpcClient(n.address))));
    const r = await runCli(['status', '--json', '--endpoints', c.nodes[1].address, ...cliArgs], {
      timeoutMs: CLI_WAIT_MS,
    });
    expect(r.code, r.stderr).toBe(0);
    const after = await Promise.all(c.nodes.map((n) => askGrpcJs(grpcClient(n.address))));
    last = r.stdout;
    const st = JSON.parse(r.stdout) as ClusterStatus;
    const expected = before
      .map((s) => nodeRow(s.address, s))
      .sort((a, b) => (a.id as string).localeCompare(b.id as string));
    if (JSON.stringify(before) !== JSON.stringify(after)) continue;
    expect(st.nodes).toEqual(expected);
    expect(st.leader).toBe(before.find((s) => s.role === 'leader')?.nodeId ?? null);
    // Each node's pid is the process the harness started.
    for (const n of c.nodes) expect(st.nodes.find((x) => x.id === n.id)?.pid).toBe(n.child?.pid);
    return;
  }
  throw new Error(`the cluster kept changing between reads; last CLI answer: ${last}`);
}

/**
 * One Status call through grpc-js; a connection that failed to establish (a loaded machine) is tried again a few times.
 */
async function askGrpcJs(client: RaftNodeClient): Promise<NodeStatus> {
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        return await client.status(30_000);
      } catch (err) {
        if ((err as { code?: number }).code !== 14 || attempt === 5) throw err;
        await sleep(200);
      }
    }
  } finally {
    client.close();
  }
}

describe('verdict status over node:http2', { timeout: 240_000 }, () => {
  it('shows, for every node of a plaintext cluster, what grpc-js reads', async () => {
    const c = await Cluster.start({ nodes: 3, tickMs: 100, electionTicks: 20 });
    await c.waitForLeader();
    for (let i = 0; i < 3; i++) await c.putOnLeader(`k${i}`, 'v');
    await compareWithGrpcJs(c, [], (addr) => new RaftNodeClient(addr));
  });

  describe('with mutual TLS', () => {
    let certs: string;
    let ca: TestCa;
    let alice: CertFiles;
    let admin: CertFiles;
    beforeAll(() => {
      certs = certDir();
      ca = TestCa.create(certs, 'cluster-ca');
      alice = ca.issue('alice');
      admin = ca.issue('ops-admin');
    });
    afterAll(() => rmSync(certs, { recursive: true, force: true }));

    it('shows what grpc-js reads with the same client certificate; refuses without one, and a server certificate of another CA', async () => {
      const clusterId = uniqueClusterId();
      const adminCreds = tlsCredentials({ ca: ca.cert, cert: admin.cert, key: admin.key });
      const c = await Cluster.start({
        nodes: 3,
        tickMs: 100,
        electionTicks: 20,
        clusterId,
        configExtra: (id) => {
          const n = ca.node(id, clusterId, `${clusterId}-${id}`);
          return { tls: { ca: ca.cert, cert: n.cert, key: n.key, adminNames: ['ops-admin'] } };
        },
        clientCredentials: adminCreds,
      });
      await c.waitForLeader();
      await c.putOnLeader('k', 'v');
      const aliceCreds = tlsCredentials({ ca: ca.cert, cert: alice.cert, key: alice.key });
      await compareWithGrpcJs(
        c,
        ['--ca', ca.cert, '--cert', alice.cert, '--key', alice.key],
        (addr) => new RaftNodeClient(addr, aliceCreds),
      );

      const one = ['status', '--endpoints', c.nodes[0].address];
      const noCert = await runCli([...one, '--ca', ca.cert], { timeoutMs: CLI_WAIT_MS });
      expect(noCert.code).toBe(1);
      expect(noCert.stderr).toMatch(/the server requires a client certificate \(mutual TLS\)/);
      // The server's certificate is checked against our CA: a client trusting another CA refuses the node.
      const rogue = TestCa.create(certs, 'rogue-ca');
      const rogueAlice = rogue.issue('alice', { file: 'rogue-alice' });
      const wrongCa = await runCli([...one, '--ca', rogue.cert, '--cert', rogueAlice.cert, '--key', rogueAlice.key], {
        timeoutMs: CLI_WAIT_MS,
      });
      expect(wrongCa.code).toBe(1);
      expect(wrongCa.stderr).toMatch(/the server's certificate is not signed by our CA/);
      expect(wrongCa.stdout).toMatch(/^leader: none$/m);
      // Plaintext to a TLS node: told it may need TLS.
      const plaintext = await runCli(one, { timeoutMs: CLI_WAIT_MS });
      expect(plaintext.code).toBe(1);
      expect(plaintext.stderr).toMatch(/it may require TLS/);
    });
  });

  it('names every unreachable endpoint with its reason, a silent one by the --timeout-ms it waited', async () => {
    // A listener that accepts and never answers, and a port nobody listens on.
    const sockets: Socket[] = [];
    const silent: Server = createServer((s) => sockets.push(s));
    await new Promise<void>((res) => silent.listen(0, '127.0.0.1', res));
    const silentPort = (silent.address() as { port: number }).port;
    const [refusedPort] = await freePorts(1);
    try {
      const dead = `127.0.0.1:${silentPort},127.0.0.1:${refusedPort}`;
      const r = await runCli(['status', '--endpoints', dead, '--timeout-ms', '1500'], { timeoutMs: CLI_WAIT_MS });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^verdict: cannot reach the cluster: tried /);
      expect(r.stderr).toContain(`127.0.0.1:${silentPort} (no answer within 1500 ms)`);
      expect(r.stderr).toContain(`127.0.0.1:${refusedPort} (connection refused)`);
      expect(r.stderr).toContain('waiting up to 1500 ms (--timeout-ms)');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((res) => silent.close(() => res()));
    }
  });
});
