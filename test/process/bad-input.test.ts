// `verdict node` refuses bad input the way a user needs: it exits non-zero
// within seconds, prints exactly one line on stderr (`verdict: ...`) that
// says what is wrong and how to fix it, and leaves the data directory as it
// was, byte for byte.

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certDir, TestCa } from '../tls-certs.ts';
import { Cluster, fingerprint, freePorts, runCli, tempDir, useProcessCleanup, type NodeConfigFile } from './harness.ts';

useProcessCleanup();

/** Generous for a loaded CI machine; an idle one takes about a second (tsx start-up). */
const EXIT_WITHIN_MS = 10_000;

interface Refusal {
  /** What is wrong. */
  what: RegExp;
  /** How to fix it. */
  fix: RegExp;
}

/** Runs `verdict node --config file` and checks the refusal; `watch` must be unchanged afterwards. */
async function expectRefusal(
  file: string,
  r: Refusal,
  watch: string[],
  extra: { args?: string[]; env?: Record<string, string> } = {},
): Promise<string> {
  const before = watch.map(fingerprint);
  const res = await runCli(['node', '--config', file, ...(extra.args ?? [])], {
    timeoutMs: EXIT_WITHIN_MS + 5_000,
    env: extra.env,
  });
  const context = `exit ${res.code ?? res.signal}, ${res.elapsedMs} ms, stderr:\n${res.stderr}`;
  expect(res.code, context).not.toBe(0);
  expect(res.code, context).not.toBeNull();
  expect(res.elapsedMs, context).toBeLessThan(EXIT_WITHIN_MS);
  const lines = res.stderr.split('\n').filter((l) => l !== '');
  expect(lines, context).toHaveLength(1);
  const line = lines[0];
  expect(line).toMatch(/^verdict: /);
  expect(line).toMatch(r.what);
  expect(line).toMatch(r.fix);
  expect(line).not.toMatch(/\n|    at /); // no stack trace
  expect(res.stdout).toBe('');
  expect(watch.map(fingerprint)).toEqual(before);
  return line;
}

describe('verdict node refuses bad input with one line and leaves the data alone', () => {
  let dir: string;
  let port: number;
  let valid: NodeConfigFile;

  beforeAll(async () => {
    dir = tempDir('verdict-bad-');
    [port] = await freePorts(1);
    valid = {
      clusterId: 'c1',
      nodeId: 'n1',
      listen: `127.0.0.1:${port}`,
      dataDir: 'never-created',
      peers: { n1: `127.0.0.1:${port}` },
      tickMs: 50,
      electionTicks: 20,
      heartbeatTicks: 2,
      snapshotEntries: 10_000,
      logLevel: 'info',
      insecure: true,
    };
  });

  const write = (name: string, content: unknown): string => {
    const file = join(dir, name);
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    return file;
  };
  /** Config errors: the data dir must not even be created, and nothing else in the folder changes. */
  const configCase = async (name: string, content: unknown, r: Refusal): Promise<string> => {
    const file = write(name, content);
    const line = await expectRefusal(file, r, [dir]);
    expect(line).toContain(file);
    expect(fingerprint(join(dir, 'never-created'))).toBe('(missing)');
    return line;
  };

  it('malformed JSON', async () => {
    await configCase('malformed.json', '{"clusterId": "c1", "nodeId": "n1",', {
      what: /not valid JSON/,
      fix: /fix|see cluster\/n1\.json/,
    });
  });

  it('missing nodeId', async () => {
    const { nodeId: _drop, ...rest } = valid;
    await configCase('no-node-id.json', rest, { what: /missing "nodeId"/, fix: /expected an id of letters, digits/ });
  });

  it('bad listen address', async () => {
    await configCase(
      'bad-listen.json',
      { ...valid, listen: 'localhost-7001' },
      { what: /"listen" is "localhost-7001"/, fix: /expected host:port, e\.g\. "127\.0\.0\.1:7001"/ },
    );
    await configCase(
      'bad-port.json',
      { ...valid, listen: '127.0.0.1:70000' },
      { what: /"listen" is "127\.0\.0\.1:70000"/, fix: /port must be 1–65535/ },
    );
  });

  it('peers that do not include the node', async () => {
    await configCase(
      'peers-without-me.json',
      { ...valid, peers: { n2: '127.0.0.1:1', n3: '127.0.0.1:2' } },
      { what: /"peers" must include this node "n1"/, fix: /add "n1": "127\.0\.0\.1:\d+"/ },
    );
  });

  it('refuses two peers naming one address two ways (127.0.0.1 and localhost)', async () => {
    await configCase(
      'same-peer-twice.json',
      { ...valid, peers: { n1: valid.listen, n2: '127.0.0.1:7102', n3: 'localhost:7102' } },
      {
        what: /"peers\.n3" "localhost:7102" and "peers\.n2" "127\.0\.0\.1:7102" name the same address/,
        fix: /give each node its own host:port/,
      },
    );
  });

  it("refuses a listen address that differs from the node's own peers entry", async () => {
    await configCase(
      'listen-not-own-entry.json',
      { ...valid, peers: { n1: '127.0.0.1:7101' } },
      {
        what: new RegExp(
          `"listen" "127\\.0\\.0\\.1:${port}" differs from this node's own entry "peers\\.n1" "127\\.0\\.0\\.1:7101"`,
        ),
        fix: /make them the same address/,
      },
    );
  });

  it("refuses a metrics endpoint on a peer's port", async () => {
    await configCase(
      'metrics-on-peer.json',
      { ...valid, peers: { n1: valid.listen, n2: '127.0.0.1:7102' }, metricsListen: 'localhost:7102' },
      {
        what: /"metricsListen" "localhost:7102" is the gRPC address of "peers\.n2" "127\.0\.0\.1:7102"/,
        fix: /give the metrics endpoint a port of its own/,
      },
    );
  });

  it('an unknown key', async () => {
    await configCase(
      'unknown-key.json',
      { ...valid, electionTimeoutMs: 1000 },
      { what: /unknown key "electionTimeoutMs"/, fix: /known keys: .*electionTicks/ },
    );
  });

  it('a bad value from the environment or a --set flag names its source', async () => {
    const file = write('valid.json', valid);
    const fromEnv = await expectRefusal(
      file,
      {
        what: /"tickMs" \(from environment variable VERDICT_TICK_MS\) is "fast"/,
        fix: /expected an integer from 1 to 60000/,
      },
      [dir],
      {
        env: { VERDICT_TICK_MS: 'fast' },
      },
    );
    expect(fromEnv).toContain(file);
    await expectRefusal(
      file,
      { what: /"electionTicks" \(from --set electionTicks=1\) is 1/, fix: /expected an integer from 2 to 10000/ },
      [dir],
      {
        args: ['--set', 'electionTicks=1'],
        env: { VERDICT_ELECTION_TICKS: '20' },
      },
    );
    await expectRefusal(file, { what: /--set tickMS=5: unknown key "tickMS"/, fix: /keys: .*tickMs/ }, [dir], {
      args: ['--set', 'tickMS=5'],
    });
    expect(fingerprint(join(dir, 'never-created'))).toBe('(missing)');
  });

  it('a TLS certificate that names another node', async () => {
    const certs = certDir();
    try {
      const ca = TestCa.create(certs, 'ca');
      const n2 = ca.node('n2', 'c1');
      await configCase(
        'tls-wrong-node.json',
        { ...valid, tls: { ca: ca.cert, ...n2 } },
        {
          what: /"tls\.cert" \(.*n2\.crt\): this node's certificate names node "n2" of cluster "c1"/,
          fix: /issue it with -subj "\/O=verdict-node\/OU=c1\/CN=n1"/,
        },
      );
    } finally {
      rmSync(certs, { recursive: true, force: true });
    }
  });

  it('a missing config file', async () => {
    const file = join(dir, 'does-not-exist.json');
    const line = await expectRefusal(
      file,
      { what: /cannot read the file \(ENOENT\)/, fix: /pass --config with the path/ },
      [dir],
    );
    expect(line).toContain(file);
  });

  describe('with a data directory that exists', () => {
    let dataDir: string;
    let ownerConfig: string;

    beforeAll(async () => {
      // A real node creates the data directory and commits something, then stops.
      const c = await Cluster.start({ nodes: 1 });
      await c.waitForLeader();
      await c.putOnLeader('k', 'v');
      const n = c.nodes[0];
      await n.kill('SIGTERM');
      dataDir = n.dataDir;
      ownerConfig = n.configFile;
      expect(fingerprint(dataDir)).toMatch(/raft\//);
    });

    const owner = (): NodeConfigFile => JSON.parse(readFileSync(ownerConfig, 'utf8')) as NodeConfigFile;

    it('belongs to another cluster id', async () => {
      const cfg = owner();
      const file = write('other-cluster.json', { ...cfg, clusterId: 'someone-else', dataDir });
      await expectRefusal(
        file,
        {
          what: new RegExp(
            `belongs to node "n1" of cluster "${cfg.clusterId}", but the config says node "n1" of cluster "someone-else"`,
          ),
          fix: /point the config at this node's own data directory/,
        },
        [dataDir],
      );
    });

    it('belongs to another node id', async () => {
      const cfg = owner();
      const file = write('other-node.json', { ...cfg, nodeId: 'n9', peers: { n9: cfg.listen }, dataDir });
      await expectRefusal(
        file,
        {
          what: new RegExp(`belongs to node "n1" of cluster "${cfg.clusterId}", but the config says node "n9"`),
          fix: /point the config at this node's own data directory/,
        },
        [dataDir],
      );
    });

    describe('and a listen address that cannot be bound', () => {
      let squatter: Server;
      let busyPort: number;
      beforeAll(async () => {
        [busyPort] = await freePorts(1);
        squatter = createServer();
        await new Promise<void>((res, rej) => {
          squatter.once('error', rej);
          squatter.listen(busyPort, '127.0.0.1', () => res());
        });
      });
      afterAll(async () => {
        await new Promise<void>((r) => squatter.close(() => r()));
      });

      it('because another process holds the port', async () => {
        const cfg = owner();
        const listen = `127.0.0.1:${busyPort}`;
        const file = write('port-in-use.json', { ...cfg, listen, peers: { n1: listen }, dataDir });
        await expectRefusal(
          file,
          {
            what: new RegExp(`cannot listen on 127\\.0\\.0\\.1:${busyPort}: the address is in use`),
            fix: /stop the process that holds it or pick another port/,
          },
          [dataDir],
        );
      });

      it('because the address is not one of this machine', async () => {
        // 203.0.113.0/24 is TEST-NET-3: never local. Binding fails before any packet is sent.
        const cfg = owner();
        const listen = '203.0.113.1:7001';
        const file = write('not-local.json', { ...cfg, listen, peers: { n1: listen }, dataDir });
        await expectRefusal(
          file,
          {
            what: /cannot listen on 203\.0\.113\.1:7001: 203\.0\.113\.1 is not an address of this machine/,
            fix: /set "listen" to one of its addresses/,
          },
          [dataDir],
        );
      });
    });
  });
});
