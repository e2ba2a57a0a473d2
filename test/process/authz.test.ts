// Who may do what, on real processes (docs/security.md).
//
// With mutual TLS: a three-node cluster and a TLS participant "shop" (in
// this process, the code `verdict participant` runs), certificates from a
// throwaway openssl CA. Every act an attacker holding some certificate of
// the same CA tried in issue 10 is refused PERMISSION_DENIED with a reason:
// taking over shop's registration, reporting a heuristic for it, asking as
// it (which would make the leader log ABORT), the log probe (Put,
// PutStream), and calling shop's
// Prepare/Decide/Exchange directly. The owners still can.
//
// Without TLS: a node and a participant refuse to start unless told
// insecure, on loopback too (so no listener, metricsListen and consoleListen
// included, serves plaintext anywhere unless said), an insecure node and
// participant warn at every start, and a forged Raft stream from a
// non-member is refused.
import * as grpc from '@grpc/grpc-js';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { tlsCredentials } from '../../src/client/tls.ts';
import { ClusterLink } from '../../src/participant/cluster-link.ts';
import { startParticipant, type ParticipantRuntime } from '../../src/participant/runtime.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import { ParticipantExchange } from '../../src/transport/participant-exchange.ts';
import { ParticipantClient, type PrepareRequest } from '../../src/transport/participant-rpc.ts';
import { streamMethod, toWire, type WireBatch, type WireStreamAck } from '../../src/transport/proto.ts';
import { message, MessageType } from '../../src/raft/types.ts';
import { certDir, TestCa, type CertFiles } from '../tls-certs.ts';
import { portsInUse } from '../../src/cli/cluster.ts';
import { BIN, Cluster, freePorts, ROOT, runCli, tempDir, useProcessCleanup, waitFor } from './harness.ts';
import { scrape, value } from './ops-helpers.ts';

useProcessCleanup();

const WAIT_MS = 45_000;
/** A refusal at start-up comes within seconds; generous for a loaded machine (tsx start-up). */
const EXIT_WITHIN_MS = 15_000;

let certs: string;
let ca: TestCa;
const inProcess: ParticipantRuntime[] = [];

beforeAll(() => {
  certs = certDir();
  ca = TestCa.create(certs, 'cluster-ca');
});

afterAll(async () => {
  for (const p of inProcess) await p.stop();
  rmSync(certs, { recursive: true, force: true });
});

const creds = (c: CertFiles): grpc.ChannelCredentials => tlsCredentials({ ca: ca.cert, cert: c.cert, key: c.key });
/** Dialling a participant (not a node): the CA and the host are checked, not the node mark. */
const participantCreds = (c: CertFiles): grpc.ChannelCredentials =>
  grpc.credentials.createSsl(readFileSync(ca.cert), readFileSync(c.key), readFileSync(c.cert));

/** The status code and details of a rejected promise (or of an error handed to a callback). */
async function refusal(p: Promise<unknown>): Promise<{ code: number | undefined; details: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as Partial<grpc.ServiceError>;
    return { code: e.code, details: e.details ?? e.message ?? '' };
  }
  throw new Error('expected a refusal, the call succeeded');
}

describe('mutual TLS binds roles to identities', () => {
  it('refuses every act for a participant or a node to a certificate that is not theirs, and lets the owners act', async () => {
    const clusterId = `authz-${process.pid}`;
    const admin = ca.issue('ops-admin');
    const alice = ca.issue('alice');
    const mallory = ca.issue('mallory', { ou: clusterId, file: 'mallory' });
    const shopCert = ca.issue('shop', { ou: clusterId, file: 'shop' });
    const ledgerCert = ca.issue('ledger', { ou: clusterId, file: 'ledger' });
    const shopOfOther = ca.issue('shop', { ou: 'other-cluster', file: 'shop-other' });
    const n1OfOther = ca.node('n1', 'other-cluster', 'n1-other');
    const c = await Cluster.start({
      nodes: 3,
      clusterId,
      configExtra: (id) => {
        const f = ca.node(id, clusterId);
        return { tls: { ca: ca.cert, cert: f.cert, key: f.key, adminNames: ['ops-admin'] } };
      },
      // The harness's status calls and log probes: the probe is an admin operation.
      clientCredentials: creds(admin),
      metrics: true,
    });
    const { node: leader } = await c.waitForLeader({ timeoutMs: WAIT_MS });
    const endpoints = c.nodes.map((n) => n.address);

    // The log probe is an admin's: alice and a participant are refused, ops-admin writes.
    const put = await c.putOnLeader('k', 'v');
    expect(put.index).toBeGreaterThan(0);
    const adminApi = new RaftNodeClient(leader.address, creds(admin));
    try {
      expect(
        (await adminApi.putStreamed({ key: 'k-streamed', value: Buffer.from('v') }, 20_000)).index,
      ).toBeGreaterThan(put.index);
    } finally {
      adminApi.close();
    }
    for (const who of [alice, shopCert]) {
      const api = new RaftNodeClient(leader.address, creds(who));
      try {
        const p = await refusal(api.put({ key: 'k', value: Buffer.from('forged') }));
        expect(p.code).toBe(grpc.status.PERMISSION_DENIED);
        expect(p.details).toMatch(
          /^log probe needs an admin certificate: client certificate CN=(alice|shop) is not in the node's tls\.adminNames/,
        );
        // The streamed Put is refused for the whole stream, with the same reason.
        const ps = await refusal(api.putStreamed({ key: 'k', value: Buffer.from('forged') }));
        expect(ps.code).toBe(grpc.status.PERMISSION_DENIED);
        expect(ps.details).toMatch(
          /^log probe needs an admin certificate: client certificate CN=(alice|shop) is not in the node's tls\.adminNames/,
        );
      } finally {
        api.close();
      }
    }

    // The participant shop, serving mutual TLS with its own certificate.
    const [shopPort, malloryPort, movedPort, shopMetricsPort] = await freePorts(4);
    const shop = await startParticipant({
      clusterId,
      participantId: 'shop',
      listen: `127.0.0.1:${shopPort}`,
      endpointsOfCluster: endpoints,
      dataDir: join(tempDir('verdict-authz-'), 'shop'),
      logger: pino({ level: 'silent' }),
      registerRetryMs: 200,
      tls: { ca: ca.cert, ...shopCert },
      metricsListen: `127.0.0.1:${shopMetricsPort}`,
    });
    inProcess.push(shop);
    await shop.registered;
    const client = new VerdictClient({ endpoints, callTimeoutMs: 20_000, credentials: creds(alice) });
    const links: ClusterLink[] = [];
    const linkAs = (who: CertFiles): ClusterLink => {
      const l = new ClusterLink({ clusterId, endpoints, credentials: creds(who), callTimeoutMs: 5_000 });
      links.push(l);
      return l;
    };
    const shopEndpoint = async (): Promise<string | undefined> =>
      (await client.participants()).find((p) => p.participantId === 'shop')?.endpoint;
    try {
      expect(await shopEndpoint()).toBe(shop.address);

      // Registration: only shop's certificate (CN=shop, OU=cluster) may register shop.
      const hijack = await refusal(linkAs(mallory).register('shop', `127.0.0.1:${malloryPort}`));
      expect(hijack.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(hijack.details).toBe(
        `registering participant "shop" is for participant "shop" only, whose certificate has CN=shop, OU=${clusterId}; the caller presented client certificate CN=mallory, OU=${clusterId}`,
      );
      const otherCluster = await refusal(linkAs(shopOfOther).register('shop', `127.0.0.1:${malloryPort}`));
      expect(otherCluster.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(otherCluster.details).toMatch(/the caller presented client certificate CN=shop, OU=other-cluster$/);
      expect(await shopEndpoint()).toBe(shop.address);
      // A participant id that is a node's is refused, even to a participant certificate of that name...
      const asNode = await refusal(
        linkAs(ca.issue('n2', { ou: clusterId, file: 'n2-participant' })).register('n2', `127.0.0.1:${malloryPort}`),
      );
      expect(asNode.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(asNode.details).toMatch(/participant id "n2" is the id of a node of cluster/);
      // ...and a node's own certificate (the node mark) is no participant's.
      const nodeItself = await refusal(
        linkAs({ cert: join(certs, 'n2.crt'), key: join(certs, 'n2.key') }).register('n2', `127.0.0.1:${malloryPort}`),
      );
      expect(nodeItself.code).toBe(grpc.status.PERMISSION_DENIED);

      // ...and a node whose id is a registered participant's, even by an admin.
      const addShop = await waitFor('the leader to answer AddMember', WAIT_MS, async () => {
        const api = new RaftNodeClient((await c.waitForLeader({ timeoutMs: WAIT_MS })).node.address, creds(admin));
        try {
          const r = await refusal(
            api.addMember({ nodeId: 'shop', address: `127.0.0.1:${malloryPort}`, timeoutMs: 1_000 }),
          );
          return r.code === grpc.status.UNAVAILABLE ? undefined : r;
        } finally {
          api.close();
        }
      });
      expect(addShop.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(addShop.details).toMatch(/^"shop" is a registered participant's id; a node needs an id of its own/);

      // Asking as shop about a transaction in flight would make the leader log ABORT (R3): refused to mallory.
      const txn = await client.begin({ timeoutMs: 20_000 });
      const ask = await refusal(linkAs(mallory).outcome(txn.txnId, 'shop'));
      expect(ask.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(ask.details).toMatch(/^asking about a transaction as participant "shop" is for participant "shop" only/);
      // Nothing was logged: the transaction still commits.
      expect((await txn.enlist('shop', { set: { a: '1' } }).commit()).outcome).toBe('COMMITTED');
      // shop itself may ask, and is told. With parallel commit the client hears COMMITTED before the
      // explicit COMMIT is applied, and a participant learns its outcome from the log only (IN_PROGRESS
      // until then): polled with a bound, never read once.
      const asShop = linkAs(shopCert);
      await expect
        .poll(async () => (await asShop.outcome(txn.txnId, 'shop')).outcome, { timeout: 30_000, interval: 200 })
        .toBe('OUTCOME_COMMITTED');

      // A forged heuristic report for shop (HEURMIX on a committed transaction) is refused.
      const heur = await refusal(
        linkAs(mallory).reportHeuristic({
          participantId: 'shop',
          txnId: txn.txnId,
          outcome: 'OUTCOME_ABORTED',
          gid: 'g',
          operator: 'mallory',
          reason: 'forged',
          atMs: Date.now(),
        }),
      );
      expect(heur.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(heur.details).toMatch(
        /^reporting a heuristic outcome for participant "shop" is for participant "shop" only/,
      );
      const view = (await client.transactions({ txnId: txn.txnId }))[0];
      expect(view?.heuristics ?? []).toEqual([]);

      // shop's Prepare, Decide and Exchange take only the cluster's nodes: not mallory, not another participant, not a
      // node of another cluster.
      const forged: PrepareRequest = {
        clusterId,
        txnId: 'forged-1',
        participantId: 'shop',
        participants: ['shop'],
        payload: Buffer.from(JSON.stringify({ set: { stolen: '1' } })),
        timeoutMs: 10_000,
      };
      for (const who of [mallory, ledgerCert, n1OfOther]) {
        const direct = new ParticipantClient(shop.address, participantCreds(who));
        const exchange = new ParticipantExchange(direct.channel, shop.address);
        try {
          const prep = await refusal(direct.prepare(forged, 5_000));
          expect(prep.code).toBe(grpc.status.PERMISSION_DENIED);
          expect(prep.details).toMatch(
            /^PREPARE is taken only from a node of this participant's cluster: the caller's certificate /,
          );
          const dec = await refusal(
            direct.decide(
              { clusterId, txnId: 'forged-1', participantId: 'shop', decision: 'DECISION_COMMIT', reason: '' },
              5_000,
            ),
          );
          expect(dec.code).toBe(grpc.status.PERMISSION_DENIED);
          expect(dec.details).toMatch(/^DECISION is taken only from a node/);
          const streamed = await refusal(
            new Promise((resolve, reject) =>
              exchange.prepare(forged, 5_000, (err, v) => (err ? reject(err) : resolve(v))),
            ),
          );
          expect(streamed.code).toBe(grpc.status.PERMISSION_DENIED);
        } finally {
          exchange.close();
          direct.close();
        }
      }
      expect(shop.engine.stateOf('forged-1')).toBeUndefined();
      expect(shop.resource.get('stolen')).toBeUndefined();
      // Counted where an operator looks: 3 certificates × (Prepare, Decide, Exchange) at shop; the nodes' refusals by
      // role.
      expect(
        value((await scrape(shop.metricsAddress!)).samples, 'verdict_participant_refused_calls_total'),
      ).toBeGreaterThanOrEqual(9);
      const denied = async (role: string): Promise<number> => {
        let sum = 0;
        for (const n of c.nodes)
          sum += value((await scrape(n.metricsAddress!)).samples, 'verdict_permission_denied_total', { role });
        return sum;
      };
      // Put and PutStream twice (alice, shop); two hijacks, the question and the heuristic report.
      expect(await denied('admin')).toBeGreaterThanOrEqual(4);
      expect(await denied('participant')).toBeGreaterThanOrEqual(4);

      // The owner may move its registration (a new address), and back.
      const shopLink = linkAs(shopCert);
      expect((await shopLink.register('shop', `127.0.0.1:${movedPort}`))?.endpoint).toBe(`127.0.0.1:${movedPort}`);
      expect((await shopLink.register('shop', shop.address))?.endpoint).toBe(shop.address);
      // And the nodes still reach shop over their own certificates (learned as the cluster's members).
      const again = await (await client.begin({ timeoutMs: 20_000 })).enlist('shop', { set: { b: '2' } }).commit();
      expect(again.outcome).toBe('COMMITTED');
      await waitFor('shop to apply the commit', WAIT_MS, async () =>
        shop.resource.get('b') === '2' ? true : undefined,
      );
    } finally {
      for (const l of links) l.close();
      client.close();
    }
  });
});

describe('without TLS: plaintext only when said, loopback included', () => {
  let dir: string;
  // The harness's CLI says VERDICT_INSECURE=true; these tests unsay it (an empty value removes a node config key).
  const unsaid = { VERDICT_INSECURE: '' };

  beforeAll(() => {
    dir = tempDir('verdict-insecure-');
  });

  it('a node without TLS and without "insecure" refuses to start on loopback, in one line saying why and how, before touching its data', async () => {
    const [port] = await freePorts(1);
    const file = join(dir, 'n1.json');
    writeFileSync(
      file,
      JSON.stringify({
        clusterId: 'c1',
        nodeId: 'n1',
        listen: `127.0.0.1:${port}`,
        dataDir: 'data-n1',
        peers: { n1: `127.0.0.1:${port}` },
      }),
    );
    const res = await runCli(['node', '--config', file], { timeoutMs: EXIT_WITHIN_MS + 5_000, env: unsaid });
    const lines = res.stderr.split('\n').filter((l) => l !== '');
    expect(res.code, res.stderr).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `verdict: refusing to serve plaintext on 127.0.0.1:${port}: without TLS any process or user on this machine can commit, abort, take over participants and forge Raft messages; ` +
        'configure "tls" in the config (`verdict certs` makes certificates) (see docs/tls.md), or set "insecure": true (or --insecure) to serve plaintext knowingly',
    );
    expect(existsSync(join(dir, 'data-n1'))).toBe(false);
  });

  it('nor does it serve metrics or the console beyond loopback: nothing is bound; with "insecure" all three serve, and it warns', async () => {
    const [port, metricsPort, consolePort] = await freePorts(3);
    const file = join(dir, 'n1-wide.json');
    const cfg = {
      clusterId: 'c1',
      nodeId: 'n1',
      listen: `127.0.0.1:${port}`,
      metricsListen: `0.0.0.0:${metricsPort}`,
      consoleListen: `0.0.0.0:${consolePort}`,
      dataDir: 'data-wide',
      peers: { n1: `127.0.0.1:${port}` },
    };
    writeFileSync(file, JSON.stringify(cfg));
    const res = await runCli(['node', '--config', file], { timeoutMs: EXIT_WITHIN_MS + 5_000, env: unsaid });
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toMatch(/^verdict: refusing to serve plaintext on 127\.0\.0\.1:\d+: /);
    expect(await portsInUse([port, metricsPort, consolePort])).toEqual([]);
    expect(existsSync(join(dir, 'data-wide'))).toBe(false);
    // Said in the config: it serves, and says so.
    writeFileSync(file, JSON.stringify({ ...cfg, insecure: true }));
    const node = spawn(process.execPath, [BIN, 'node', '--config', file], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, VERDICT_LOG_FORMAT: 'json' },
    });
    let log = '';
    node.stderr?.setEncoding('utf8').on('data', (d: string) => (log += d));
    try {
      await waitFor(
        'the insecure node to serve metrics on 0.0.0.0',
        WAIT_MS,
        async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status === 200 || undefined,
        () => log,
      );
      expect((await fetch(`http://127.0.0.1:${consolePort}/api/cluster`)).status).toBe(200);
      expect(
        log.split('\n').filter((l) => l.includes(`insecure: serving plaintext on 127.0.0.1:${port} without TLS`)),
      ).toHaveLength(1);
    } finally {
      node.kill('SIGKILL');
    }
  });

  it('a participant without TLS flags and without --insecure refuses to start, on loopback too', async () => {
    const [port, other] = await freePorts(2);
    for (const listen of [`127.0.0.1:${port}`, `0.0.0.0:${other}`]) {
      // Cluster c1 is not the local cluster of `npm start`: no certificate is made for it.
      const res = await runCli(
        ['participant', '--id', 'p1', '--cluster-id', 'c1', '--listen', listen, '--data', join(dir, 'p1')],
        { timeoutMs: EXIT_WITHIN_MS + 5_000, env: unsaid },
      );
      const lines = res.stderr.split('\n').filter((l) => l !== '');
      expect(res.code, res.stderr).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^verdict: refusing to serve plaintext on ${listen.replace(/\./g, '\\.')}: without TLS .*; configure tls \\(--ca, --cert and --key\\) \\(see docs/tls\\.md\\), or set insecure: true \\(--insecure\\) to serve plaintext knowingly$`,
        ),
      );
    }
  });

  it('an insecure node warns at every start; a forged Raft stream from a non-member is refused and changes nothing', async () => {
    const c = await Cluster.start({ nodes: 1, configExtra: () => ({ insecure: true }), metrics: true });
    const [n1] = c.nodes;
    const { status: before } = await c.waitForLeader({ timeoutMs: WAIT_MS });
    const warnings = (): number =>
      readFileSync(n1.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"insecure":true') && l.includes('insecure: serving plaintext on 127.0.0.1')).length;
    await expect.poll(warnings, { timeout: WAIT_MS }).toBe(1);

    // A heartbeat from "n9" with a higher term would depose the leader if delivered.
    const raw = new grpc.Client(n1.address, grpc.credentials.createInsecure());
    try {
      const err = await new Promise<grpc.ServiceError | null>((resolve) => {
        const call = raw.makeClientStreamRequest<WireBatch, WireStreamAck>(
          streamMethod.path,
          streamMethod.requestSerialize,
          streamMethod.responseDeserialize,
          (e) => resolve(e),
        );
        call.write({
          clusterId: c.clusterId,
          from: 'n9',
          to: 'n1',
          messages: [toWire(message({ type: MessageType.Heartbeat, from: 'n9', to: 'n1', term: before.term + 5 }))],
        });
      });
      expect(err?.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(err?.details).toMatch(/^"n9" is not a member of the current configuration/);
    } finally {
      raw.close();
    }
    const after = await n1.status();
    expect(after.term).toBe(before.term);
    expect(after.role).toBe('leader');
    // The node's log reaches its file a little later (bounded wait, never read once).
    await expect
      .poll(() => readFileSync(n1.logFile, 'utf8'), { timeout: WAIT_MS })
      .toMatch(/"from":"n9","reason":"sender","field":"from".*is not a member of the current configuration/);
    await waitFor('the metrics registry', WAIT_MS, async () => scrape(n1.metricsAddress!));
    expect(
      value((await scrape(n1.metricsAddress!)).samples, 'verdict_raft_messages_refused_total', { reason: 'sender' }),
    ).toBe(1);

    await n1.restart();
    await c.waitForLeader({ timeoutMs: WAIT_MS });
    await expect.poll(warnings, { timeout: WAIT_MS }).toBe(2);
  });

  it('an insecure participant warns at every start', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
    const [port, nowhere] = await freePorts(2);
    const data = join(dir, 'p2');
    for (let start = 1; start <= 2; start++) {
      const p = await startParticipant({
        clusterId: 'c1',
        participantId: 'p2',
        listen: `127.0.0.1:${port}`,
        endpointsOfCluster: [`127.0.0.1:${nowhere}`],
        dataDir: data,
        logger,
        insecure: true,
        registerRetryMs: 60_000,
      });
      await p.stop();
      const warned = lines
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter(
          (l) => l.level === 40 && l.msg.startsWith(`insecure: serving plaintext on 127.0.0.1:${port} without TLS`),
        );
      expect(warned).toHaveLength(start);
    }
  });
});
