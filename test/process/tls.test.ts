// Mutual TLS on real processes, with throwaway certificates from openssl:
// a node whose certificate another CA signed is refused by its peers (and
// both sides log why); fixed, it joins. The cluster then commits
// transactions from a TLS client across two TLS participants (one a
// `verdict participant` process, one in this process). Clients without a
// certificate, with a CA that does not match, or without TLS get an error
// that says so; a leader transfer needs an admin certificate.
import * as grpc from '@grpc/grpc-js';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { tlsCredentials } from '../../src/client/tls.ts';
import { startParticipant, type ParticipantRuntime } from '../../src/participant/runtime.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import { participantService } from '../../src/transport/participant-rpc.ts';
import { certDir, TestCa, type CertFiles } from '../tls-certs.ts';
import {
  BIN,
  Cluster,
  freePorts,
  ROOT,
  runCli,
  tempDir,
  uniqueClusterId,
  useProcessCleanup,
  waitFor,
} from './harness.ts';

useProcessCleanup();

const WAIT_MS = 45_000;

let certs: string;
let ca: TestCa;
let rogue: TestCa;
let alice: CertFiles;
let admin: CertFiles;
/** The cluster CA and the rogue one in one file: n3 trusts both, so it starts; its peers trust only the first. */
let bundle: string;
const children: ChildProcess[] = [];
const inProcess: ParticipantRuntime[] = [];

beforeAll(() => {
  certs = certDir();
  ca = TestCa.create(certs, 'cluster-ca');
  rogue = TestCa.create(certs, 'rogue-ca');
  alice = ca.issue('alice');
  admin = ca.issue('ops-admin');
  bundle = join(certs, 'bundle.crt');
  writeFileSync(bundle, readFileSync(ca.cert, 'utf8') + readFileSync(rogue.cert, 'utf8'));
});

afterAll(async () => {
  for (const p of inProcess) await p.stop();
  for (const c of children) c.kill('SIGKILL');
  rmSync(certs, { recursive: true, force: true });
});

const creds = (c: CertFiles, caFile = ca.cert): grpc.ChannelCredentials =>
  tlsCredentials({ ca: caFile, cert: c.cert, key: c.key });
const tlsFlags = (c: CertFiles | null, caFile = ca.cert): string[] => [
  '--ca',
  caFile,
  ...(c ? ['--cert', c.cert, '--key', c.key] : []),
];

function nodeTls(clusterId: string, id: string, rogueCert: boolean): Record<string, unknown> {
  const c = rogueCert ? rogue.node(id, clusterId, `rogue-${id}`) : ca.node(id, clusterId, `${clusterId}-${id}`);
  return { tls: { ca: rogueCert ? bundle : ca.cert, cert: c.cert, key: c.key, adminNames: ['ops-admin'] } };
}

describe('mutual TLS between nodes, clients and participants', () => {
  it('refuses a node of another CA, then commits over TLS; bad clients get clear errors; leader transfer needs an admin certificate', async () => {
    const clusterId = uniqueClusterId();
    const c = await Cluster.start({
      nodes: 3,
      clusterId,
      configExtra: (id) => nodeTls(clusterId, id, id === 'n3'),
      // The harness writes log probes (Put), an admin operation.
      clientCredentials: creds(admin),
    });
    const [n1, , n3] = c.nodes;

    // 1. n3's certificate is signed by another CA: n1 and n2 elect a leader and commit without it.
    const { node: leader } = await c.waitForLeader({ timeoutMs: WAIT_MS });
    expect(leader.id).not.toBe('n3');
    const put = await c.putOnLeader('k', 'v');
    const n3Api = new RaftNodeClient(n3.address, creds(alice, bundle));
    try {
      const st = await n3Api.status(2_000);
      expect(st.commitIndex).toBeLessThan(put.index);
      expect(st.leaderId).toBe('');
    } finally {
      n3Api.close();
    }
    // Both sides say why in their logs.
    await waitFor(`the leader ${leader.id} to log why it cannot reach n3`, WAIT_MS, async () =>
      /"peer":"n3".*"details":"the server's certificate is not signed by our CA/.test(
        readFileSync(leader.logFile, 'utf8'),
      )
        ? true
        : undefined,
    );
    // Depending on timing the client sees the server's alert or only the closed handshake; both name the refusal.
    await waitFor('n3 to log that its peers refuse it', WAIT_MS, async () =>
      /the server (refused|closed the TLS handshake: it refused) our certificate/.test(readFileSync(n3.logFile, 'utf8'))
        ? true
        : undefined,
    );

    // 2. n3 with a certificate of the cluster CA joins and catches up.
    await n3.kill('SIGKILL');
    const cfg3 = JSON.parse(readFileSync(n3.configFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(n3.configFile, JSON.stringify({ ...cfg3, ...nodeTls(clusterId, 'n3', false) }, null, 2));
    n3.start();
    await waitFor('n3 to catch up over TLS', WAIT_MS, async () => {
      const st = await n3.status();
      return st.commitIndex >= put.index && st.leaderId !== '' ? st : undefined;
    });

    // 3. Two TLS participants: a `verdict participant` process and one in this process.
    const [pPort, qPort] = await freePorts(2);
    const endpoints = c.nodes.map((n) => n.address);
    // A participant's certificate names it: CN = participant id, OU = cluster id.
    const shopCert = ca.issue('shop', { ou: clusterId, file: `${clusterId}-shop` });
    const ledgerCert = ca.issue('ledger', { ou: clusterId, file: `${clusterId}-ledger` });
    const pdir = tempDir('verdict-tls-participants-');
    mkdirSync(join(pdir, 'ledger'));
    const logFd = openSync(join(pdir, 'shop.log'), 'a');
    try {
      children.push(
        spawn(
          process.execPath,
          [
            BIN,
            'participant',
            '--id',
            'shop',
            '--listen',
            `127.0.0.1:${pPort}`,
            '--data',
            join(pdir, 'shop'),
            '--cluster-id',
            clusterId,
            '--endpoints',
            endpoints.join(','),
            ...tlsFlags(shopCert),
          ],
          {
            cwd: ROOT,
            stdio: ['ignore', logFd, logFd],
          },
        ),
      );
    } finally {
      closeSync(logFd);
    }
    const ledger = await startParticipant({
      clusterId,
      participantId: 'ledger',
      listen: `127.0.0.1:${qPort}`,
      endpointsOfCluster: endpoints,
      dataDir: join(pdir, 'ledger'),
      logger: pino({ level: 'silent' }),
      registerRetryMs: 200,
      tls: { ca: ca.cert, ...ledgerCert },
    });
    inProcess.push(ledger);
    const client = new VerdictClient({ endpoints, callTimeoutMs: 20_000, credentials: creds(alice) });
    try {
      await waitFor(
        'both participants to register over TLS',
        WAIT_MS,
        async () => ((await client.participants()).length === 2 ? true : undefined),
        () => readFileSync(join(pdir, 'shop.log'), 'utf8').slice(-2_000),
      );
      for (let i = 0; i < 5; i++) {
        const r = await (await client.begin({ timeoutMs: 5_000 }))
          .enlist('shop', { set: { [`a${i}`]: '1' } })
          .enlist('ledger', { set: { [`a${i}`]: '2' } })
          .commit();
        expect(r.outcome).toBe('COMMITTED');
      }
      // The DECISION reaches the participant after the client's answer, over TLS too.
      await waitFor('the ledger to apply the last commit', WAIT_MS, async () =>
        ledger.resource.get('a4') === '2' ? true : undefined,
      );
      const no = await (await client.begin({ timeoutMs: 5_000 }))
        .enlist('shop', { set: { b: '1' } })
        .enlist('ledger', { fail: 'no funds' })
        .commit();
      expect(no.outcome).toBe('ABORTED');
    } finally {
      client.close();
    }

    // 4. Clients that cannot connect are told why.
    const one = ['--endpoints', n1.address];
    const noCert = await runCli(['status', ...one, ...tlsFlags(null)]);
    expect(noCert.code, noCert.stdout + noCert.stderr).toBe(1);
    expect(noCert.stdout).toMatch(/unreachable \(the server requires a client certificate \(mutual TLS\)/);
    // A CA that did not sign our own certificate is caught before connecting...
    const mismatch = await runCli(['txn', 'list', ...one, ...tlsFlags(alice, rogue.cert)]);
    expect(mismatch.code).toBe(64);
    expect(mismatch.stderr).toMatch(
      /^verdict: --cert \(.*alice\.crt, issued by "CN=cluster-ca"\) is not signed by the CA in --ca \(.*rogue-ca\.crt\)/,
    );
    // ...and one that did not sign the nodes' certificates, at the handshake.
    const wrongCa = await runCli([
      'txn',
      'list',
      '--timeout-ms',
      '3000',
      ...one,
      ...tlsFlags(rogue.issue('alice', { file: 'rogue-alice' }), rogue.cert),
    ]);
    expect(wrongCa.code).not.toBe(0);
    expect(wrongCa.stderr).toMatch(/^verdict: .*the server's certificate is not signed by our CA/);
    expect(wrongCa.stderr.trim().split('\n')).toHaveLength(1);
    const plaintext = await runCli(['status', ...one]);
    expect(plaintext.code).toBe(1);
    expect(plaintext.stdout).toMatch(/it may require TLS/);
    const badFile = await runCli(['status', ...one, '--ca', join(certs, 'missing.crt')]);
    expect(badFile.code).toBe(64);
    expect(badFile.stderr).toMatch(/^verdict: --ca: cannot read .*missing\.crt \(ENOENT\); expected a PEM file\n$/);

    // 5. Leader transfer: alice's certificate is not an admin's; ops-admin's is.
    const { node: now } = await c.waitForLeader({ timeoutMs: WAIT_MS });
    const target = c.nodes.find((n) => n !== now)!;
    const all = ['--endpoints', endpoints.join(',')];
    const denied = await runCli(['leader', 'transfer', '--to', target.id, ...all, ...tlsFlags(alice)], {
      timeoutMs: 30_000,
    });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(
      /PERMISSION_DENIED: leader transfer needs an admin certificate: client certificate CN=alice is not in the node's tls\.adminNames/,
    );
    expect((await c.waitForLeader({ timeoutMs: WAIT_MS })).node.id).toBe(now.id);
    const allowed = await runCli(['leader', 'transfer', '--to', target.id, ...all, ...tlsFlags(admin)], {
      timeoutMs: 30_000,
    });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toMatch(new RegExp(`^leader: ${target.id} \\(term \\d+\\)`));
  });

  it("a node sends nothing to a server at a participant's address that holds another participant's certificate", async () => {
    const clusterId = uniqueClusterId();
    const c = await Cluster.start({
      nodes: 1,
      clusterId,
      configExtra: (id) => nodeTls(clusterId, id, false),
      clientCredentials: creds(admin),
    });
    await c.waitForLeader({ timeoutMs: WAIT_MS });
    const endpoints = c.nodes.map((n) => n.address);
    const [shopPort] = await freePorts(1);
    const shopCert = ca.issue('shop', { ou: clusterId, file: `${clusterId}-shop2` });
    const ledgerCert = ca.issue('ledger', { ou: clusterId, file: `${clusterId}-ledger2` });
    const pdir = tempDir('verdict-tls-impostor-');
    // shop registers at its address, then goes away.
    const shop = await startParticipant({
      clusterId,
      participantId: 'shop',
      listen: `127.0.0.1:${shopPort}`,
      endpointsOfCluster: endpoints,
      dataDir: join(pdir, 'shop'),
      logger: pino({ level: 'silent' }),
      registerRetryMs: 200,
      tls: { ca: ca.cert, ...shopCert },
    });
    await shop.registered;
    await shop.stop();
    // An impostor at shop's address, with a certificate of the same CA and cluster, but ledger's: it would vote YES to
    // anything.
    const calls: string[] = [];
    const impostor = new grpc.Server();
    const answerAll = Object.fromEntries(
      Object.keys(participantService).map((m) => [
        m,
        (
          call: { request?: { txnId?: string }; on?: (ev: string, fn: () => void) => void },
          cb?: (err: null, res: object) => void,
        ) => {
          calls.push(m);
          if (cb) cb(null, { txnId: call.request?.txnId ?? '', participantId: 'shop', vote: 'VOTE_YES', reason: '' });
        },
      ]),
    );
    impostor.addService(
      participantService as unknown as grpc.ServiceDefinition,
      answerAll as unknown as grpc.UntypedServiceImplementation,
    );
    await new Promise<void>((res, rej) =>
      impostor.bindAsync(
        `127.0.0.1:${shopPort}`,
        grpc.ServerCredentials.createSsl(
          readFileSync(ca.cert),
          [{ cert_chain: readFileSync(ledgerCert.cert), private_key: readFileSync(ledgerCert.key) }],
          true,
        ),
        (e) => (e ? rej(e) : res()),
      ),
    );
    const client = new VerdictClient({ endpoints, callTimeoutMs: 20_000, credentials: creds(alice) });
    try {
      const r = await (await client.begin({ timeoutMs: 3_000 }))
        .enlist('shop', { set: { card: '4111 1111 1111 1111' } })
        .commit();
      // No vote came from shop: the impostor's YES never counted, and it never saw the payload.
      expect(r.outcome).toBe('ABORTED');
      expect(calls).toEqual([]);
      const log = readFileSync(c.nodes[0].logFile, 'utf8');
      expect(log).toMatch(/participant shop at 127\.0\.0\.1 refused: its certificate names \\?"ledger\\?"/);
    } finally {
      client.close();
      impostor.forceShutdown();
    }
  });
});
