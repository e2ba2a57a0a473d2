// TLS pieces with throwaway certificates from openssl: checking the files,
// the names a node's certificate must carry, the admin check, error
// explanations, and two real transports on loopback refusing a peer whose
// certificate names another node.
import * as grpc from '@grpc/grpc-js';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { message, MessageType, type Message } from '../../src/raft/types.ts';
import { ConfigError, parseConfig } from '../../src/node/config.ts';
import { loadNodeTls } from '../../src/node/node-tls.ts';
import { Access, checkAdmin, checkParticipant, OPEN_POLICY, type AuthPolicy } from '../../src/transport/auth.ts';
import type { NodeConfig } from '../../src/node/config.ts';
import { putStreamHandler } from '../../src/node/put-stream.ts';
import { raftNodeApi } from '../../src/node/raft-node-service.ts';
import { NodeCallers } from '../../src/participant/node-callers.ts';
import { GrpcTransport, SERVER_OPTIONS } from '../../src/transport/grpc.ts';
import {
  certificateRole,
  explainConnectError,
  loadTls,
  nodeCertificateProblem,
  nodeRoleProblem,
  participantServerProblem,
  TlsSetupError,
} from '../../src/transport/tls.ts';
import { nodeChannelCredentials, serverCredentials } from '../../src/transport/tls-credentials.ts';
import { freePorts } from '../free-ports.ts';
import { certDir, TestCa, type CertFiles } from '../tls-certs.ts';
import { refusalOf } from './refusal.ts';

let dir: string;
let ca: TestCa;
let rogue: TestCa;
let n1: CertFiles;
let n2: CertFiles;
let n3: CertFiles;
let rogueN2: CertFiles;
/** CN=n2, OU=c1 without the node mark: a participant's certificate (or one made before the mark) naming a node. */
let n2Unmarked: CertFiles;

beforeAll(() => {
  dir = certDir();
  ca = TestCa.create(dir, 'ca');
  rogue = TestCa.create(dir, 'rogue-ca');
  n1 = ca.node('n1', 'c1');
  n2 = ca.node('n2', 'c1');
  n3 = ca.node('n3', 'c1');
  rogueN2 = rogue.node('n2', 'c1', 'rogue-n2');
  n2Unmarked = ca.issue('n2', { ou: 'c1', file: 'n2-unmarked' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const names = (k: string): string => `"tls.${k}"`;

const tlsError = (f: () => unknown): string => refusalOf(TlsSetupError, f);

describe('loading certificate files', () => {
  it('accepts a certificate, its key and the CA that signed it', () => {
    const m = loadTls({ ca: ca.cert, cert: n1.cert, key: n1.key }, names);
    expect(m.leaf?.subject).toContain('CN=n1');
    expect(loadTls({ ca: ca.cert }, names).cert).toBeNull();
  });

  it('refuses a key of another certificate, a certificate of another CA, a missing file, a non-PEM file', () => {
    expect(tlsError(() => loadTls({ ca: ca.cert, cert: n1.cert, key: n2.key }, names))).toMatch(
      /"tls\.key" \(.*n2\.key\) is not the private key of "tls\.cert"/,
    );
    expect(tlsError(() => loadTls({ ca: ca.cert, cert: rogueN2.cert, key: rogueN2.key }, names))).toMatch(
      /"tls\.cert" \(.*rogue-n2\.crt, issued by "CN=rogue-ca"\) is not signed by the CA in "tls\.ca"/,
    );
    expect(tlsError(() => loadTls({ ca: join(dir, 'nope.crt') }, names))).toMatch(
      /"tls\.ca": cannot read .*nope\.crt \(ENOENT\); expected a PEM file/,
    );
    const junk = join(dir, 'junk.crt');
    writeFileSync(junk, 'hello');
    expect(tlsError(() => loadTls({ ca: junk }, names))).toMatch(/holds no PEM certificate/);
    expect(tlsError(() => loadTls({ ca: ca.cert, cert: n1.cert }, names))).toMatch(/"tls\.key" is missing/);
  });

  it('a node refuses to start with a certificate that names another node, cluster or host', () => {
    const cfg = (nodeId: string, listen = '127.0.0.1:7001', files = n1) =>
      parseConfig(
        { clusterId: 'c1', nodeId, listen, dataDir: 'd', peers: { [nodeId]: listen }, tls: { ca: ca.cert, ...files } },
        '/x/n.json',
      );
    expect(loadNodeTls(cfg('n1'))).not.toBeNull();
    const err = (f: () => unknown): string => refusalOf(ConfigError, f);
    expect(err(() => loadNodeTls(cfg('n2')))).toMatch(
      /"tls\.cert" .*this node's certificate names node "n1" of cluster "c1" .*expected node "n2" of cluster "c1".*; issue it with -subj "\/O=verdict-node\/OU=c1\/CN=n2"/,
    );
    expect(err(() => loadNodeTls(cfg('n1', '10.1.2.3:7001')))).toMatch(
      /does not name 10\.1\.2\.3 in its subjectAltName .*add subjectAltName=IP:10\.1\.2\.3/,
    );
    expect(err(() => loadNodeTls(cfg('n1', '127.0.0.1:7001', { cert: n1.cert, key: n3.key })))).toMatch(
      /is not the private key/,
    );
    // The right names without the node mark: a participant's certificate, or a node's made before the mark.
    expect(err(() => loadNodeTls(cfg('n2', '127.0.0.1:7001', n2Unmarked)))).toMatch(
      /this node's certificate \(OU=c1, CN=n2\) is not a node's: it lacks the node mark O=verdict-node .*; issue it with -subj "\/O=verdict-node\/OU=c1\/CN=n2"/,
    );
  });

  it('names a node by CN, its cluster by OU, and its role by the node mark', () => {
    expect(nodeCertificateProblem({ O: 'verdict-node', CN: 'n1', OU: 'c1' }, 'c1', 'n1')).toBeNull();
    expect(nodeCertificateProblem({ O: 'verdict-node', CN: 'n1', OU: 'c2' }, 'c1', 'n1')).toMatch(
      /names node "n1" of cluster "c2"/,
    );
    expect(nodeCertificateProblem({ CN: 'alice' }, 'c1', 'n1')).toMatch(/names node "alice" of cluster ""/);
    expect(nodeCertificateProblem('O=verdict-node\nOU=c1\nCN=n1', 'c1', 'n1')).toBeNull();
    expect(nodeCertificateProblem('OU=c1\nCN=n1', 'c1', 'n1')).toMatch(
      /is not a node's: it lacks the node mark O=verdict-node/,
    );
  });

  it('tells a node, a participant and a client apart by one rule (certificateRole), as verdict certs makes them', () => {
    expect(certificateRole({ O: 'verdict-node', OU: 'c1', CN: 'n1' }, 'c1')).toBe('node');
    expect(certificateRole({ OU: 'c1', CN: 'shop' }, 'c1')).toBe('participant');
    // A participant's certificate named like a node is still a participant's.
    expect(certificateRole({ OU: 'c1', CN: 'n3' }, 'c1')).toBe('participant');
    expect(certificateRole({ CN: 'alice' }, 'c1')).toBe('client');
    // Another cluster's node is nobody here; a second O value spoils the mark.
    expect(certificateRole({ O: 'verdict-node', OU: 'c2', CN: 'n1' }, 'c1')).toBe('client');
    expect(certificateRole({ O: ['verdict-node', 'other'], OU: 'c1', CN: 'n1' } as never, 'c1')).toBe('participant');
    // A caller that knows no cluster id (the CLI, the SDK) checks the mark alone.
    expect(nodeRoleProblem({ O: 'verdict-node', OU: 'c9', CN: 'n1' })).toBeNull();
    expect(nodeRoleProblem({ OU: 'c1', CN: 'evil' })).toMatch(/is not a node's: it lacks the node mark/);
    expect(nodeRoleProblem({ O: 'verdict-node', OU: 'c2', CN: 'n1' }, 'c1')).toMatch(/is not of cluster "c1"/);
    // A participant's server certificate: its CN, its cluster, and no node mark.
    expect(participantServerProblem({ OU: 'c1', CN: 'shop' }, 'c1', 'shop')).toBeNull();
    expect(participantServerProblem({ OU: 'c1', CN: 'ledger' }, 'c1', 'shop')).toMatch(
      /names "ledger" of cluster "c1"/,
    );
    expect(participantServerProblem({ O: 'verdict-node', OU: 'c1', CN: 'shop' }, 'c1', 'shop')).toMatch(
      /names node "shop"/,
    );
  });
});

describe('admin check', () => {
  const call = (cn?: string) => ({
    getAuthContext: () => (cn === undefined ? {} : { sslPeerCertificate: { subject: { CN: cn } } as never }),
  });
  const tls = (adminNames: string[]): AuthPolicy => ({ tls: { clusterId: 'c1', adminNames } });

  it('lets every caller through without TLS (no identities: docs/security.md)', () => {
    expect(checkAdmin(call(), OPEN_POLICY)).toBeNull();
    expect(checkAdmin(call('alice'), OPEN_POLICY)).toBeNull();
  });

  it('with adminNames, only a client certificate of one of those names', () => {
    const p = tls(['ops-admin']);
    expect(checkAdmin(call('ops-admin'), p)).toBeNull();
    const denied = checkAdmin(call('alice'), p, 'leader transfer');
    expect(denied?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(denied?.details).toBe(
      "leader transfer needs an admin certificate: client certificate CN=alice is not in the node's tls.adminNames; use a certificate whose CN is one of them",
    );
    expect(checkAdmin(call(), p)?.details).toMatch(/a caller without a verified client certificate/);
  });

  it('the log probe (Put, and PutStream for its whole stream) is an admin operation: a non-admin proposes nothing', async () => {
    const proposed: string[] = [];
    const core = {
      proposeEntry: (what: string, _data: Uint8Array, cb: (err: Error | null, index?: number) => void) => {
        proposed.push(what);
        cb(null, 7);
      },
      read: () => {},
    };
    const access = new Access(tls(['ops-admin']));
    const cfg = { nodeId: 'n1' } as NodeConfig;
    const api = raftNodeApi(cfg, core as never, {} as never, {} as never, '127.0.0.1:7001', access);
    const put = (cn: string): Promise<{ err: grpc.ServiceError | null; index?: number }> =>
      new Promise((resolve) =>
        api.Put(Object.assign(call(cn), { request: { key: 'k', value: new Uint8Array([1]) } }) as never, (err, r) =>
          resolve({ err: err as grpc.ServiceError | null, index: r?.index }),
        ),
      );
    const alice = await put('alice');
    expect(alice.err?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(alice.err?.details).toMatch(/^log probe needs an admin certificate: client certificate CN=alice/);
    expect(proposed).toEqual([]);
    expect(await put('ops-admin')).toEqual({ err: null, index: 7 });
    expect(proposed).toEqual(['log probe k']);
    // The stream is refused as a whole, before any of its Puts is read.
    const stream = putStreamHandler(api.Put, { access });
    const ended: { code: number; details: string }[] = [];
    const streamCall = Object.assign(call('alice'), {
      emit: (event: string, e: { code: number; details: string }) => event === 'error' && ended.push(e),
      on: () => {
        throw new Error('a refused stream is not read');
      },
    });
    stream.handler(streamCall as never);
    expect(ended).toHaveLength(1);
    expect(ended[0].code).toBe(grpc.status.PERMISSION_DENIED);
    expect(ended[0].details).toMatch(/^log probe needs an admin certificate/);
    expect(proposed).toEqual(['log probe k']);
    expect(access.denials.admin).toBe(2);
  });

  it('refuses every certificate with TLS and no adminNames, and says how to name admins', () => {
    const denied = checkAdmin(call('alice'), tls([]), 'put');
    expect(denied?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(denied?.details).toBe(
      "put needs an admin certificate, and this node has none: set tls.adminNames to the CNs of the operators' client certificates",
    );
  });
});

describe('participant check: a participant id belongs to the certificate named after it', () => {
  const call = (subject?: Record<string, string>) => ({
    getAuthContext: () => (subject === undefined ? {} : { sslPeerCertificate: { subject } as never }),
  });
  const p: AuthPolicy = { tls: { clusterId: 'c1', adminNames: ['ops-admin'] } };

  it('accepts CN = participant id with OU = cluster id', () => {
    expect(checkParticipant(call({ CN: 'shop', OU: 'c1' }), p, 'shop', 'registering participant "shop"')).toBeNull();
    expect(checkParticipant(call(), OPEN_POLICY, 'shop', 'x')).toBeNull();
  });

  it('refuses another name, another cluster, an admin, and no certificate, naming the caller', () => {
    const details = (subject: Record<string, string> | undefined): string | undefined =>
      checkParticipant(call(subject), p, 'shop', 'registering participant "shop"')?.details;
    expect(details({ CN: 'mallory', OU: 'c1' })).toBe(
      'registering participant "shop" is for participant "shop" only, whose certificate has CN=shop, OU=c1; the caller presented client certificate CN=mallory, OU=c1',
    );
    expect(details({ CN: 'shop', OU: 'c2' })).toMatch(/the caller presented client certificate CN=shop, OU=c2$/);
    expect(details({ CN: 'shop' })).toMatch(/CN=shop, OU=-$/);
    expect(details({ CN: 'ops-admin' })).toMatch(/is for participant "shop" only/);
    expect(details(undefined)).toMatch(/the caller presented a caller without a verified client certificate$/);
    expect(checkParticipant(call({ CN: 'x' }), p, 'shop', 'x')?.code).toBe(grpc.status.PERMISSION_DENIED);
  });

  it('echoes a bounded id: a 100 kB participant id is not sent back whole', () => {
    const details =
      checkParticipant(call({ CN: 'x'.repeat(100_000), OU: 'c1' }), p, 'a'.repeat(100_000), 'asking')?.details ?? '';
    expect(details.length).toBeLessThan(400);
    expect(details).toMatch(/^asking is for participant "a{64}" only/);
  });
});

describe('a participant recognises the nodes of its cluster (NodeCallers)', () => {
  const call = (subject?: Record<string, string>) => ({
    getAuthContext: () => (subject === undefined ? {} : { sslPeerCertificate: { subject } as never }),
  });
  const verdictOf = (callers: NodeCallers, subject?: Record<string, string>): Promise<string | null> =>
    new Promise((r) => callers.check(call(subject), r));

  function setup(members: string[][]) {
    let nowMs = 0;
    let fetches = 0;
    const callers = new NodeCallers({
      clusterId: 'c1',
      fetchMembers: async () => members[Math.min(fetches++, members.length - 1)],
      nowMs: () => nowMs,
      log: pino({ level: 'silent' }),
      refreshMinMs: 1_000,
    });
    return { callers, fetches: () => fetches, advance: (ms: number) => (nowMs += ms) };
  }

  it('accepts a member of its cluster, learned from the cluster', async () => {
    const s = setup([['n1', 'n2', 'n3']]);
    await s.callers.refresh();
    expect(await verdictOf(s.callers, { O: 'verdict-node', CN: 'n2', OU: 'c1' })).toBeNull();
    expect(s.fetches()).toBe(1);
  });

  it('refuses a participant certificate of its own cluster (even one naming a member), another cluster, a node not a member, and no certificate', async () => {
    const s = setup([['n1', 'n2', 'n3']]);
    await s.callers.refresh();
    expect(await verdictOf(s.callers, { CN: 'ledger', OU: 'c1' })).toMatch(
      /^the caller's certificate \(OU=c1, CN=ledger\) is not a node's: it lacks the node mark O=verdict-node/,
    );
    expect(await verdictOf(s.callers, { CN: 'n1', OU: 'c1' })).toMatch(
      /^the caller's certificate \(OU=c1, CN=n1\) is not a node's/,
    );
    expect(await verdictOf(s.callers, { O: 'verdict-node', CN: 'n1', OU: 'c2' })).toMatch(
      /^the caller's certificate \(O=verdict-node, OU=c2, CN=n1\) is not of cluster "c1"/,
    );
    expect(await verdictOf(s.callers, { O: 'verdict-node', CN: 'n9', OU: 'c1' })).toBe(
      'the caller\'s certificate CN=n9 names no node of cluster "c1" (its nodes: n1, n2, n3)',
    );
    expect(await verdictOf(s.callers, undefined)).toBe('the caller has no verified client certificate');
    expect(s.callers.refused).toBe(5);
  });

  it('asks the cluster again for an unknown name (a node added since), at most once per refreshMinMs', async () => {
    const s = setup([
      ['n1', 'n2', 'n3'],
      ['n1', 'n2', 'n3', 'n4'],
    ]);
    await s.callers.refresh();
    // Within refreshMinMs of the last fetch: refused without asking.
    expect(await verdictOf(s.callers, { O: 'verdict-node', CN: 'n4', OU: 'c1' })).toMatch(/names no node/);
    expect(s.fetches()).toBe(1);
    s.advance(1_000);
    expect(await verdictOf(s.callers, { O: 'verdict-node', CN: 'n4', OU: 'c1' })).toBeNull();
    expect(s.fetches()).toBe(2);
    // An impostor right after: no new fetch, refused.
    expect(await verdictOf(s.callers, { O: 'verdict-node', CN: 'mallory', OU: 'c1' })).toMatch(
      /names no node of cluster "c1" \(its nodes: n1, n2, n3, n4\)/,
    );
    expect(s.fetches()).toBe(2);
  });
});

describe('connection errors explained', () => {
  it('turns OpenSSL and grpc texts into what to fix', () => {
    const grpcText = (e: string): string =>
      `No connection established. Last error: ${e} (2026-11-30T05:35:19.636Z). Resolution note: `;
    expect(
      explainConnectError(
        grpcText(
          '80ECCAFD567F0000:error:0A00045C:SSL routines:ssl3_read_bytes:tlsv13 alert certificate required:../deps/openssl/x.c:1601:SSL alert number 116\n',
        ),
        true,
      ),
    ).toBe(
      "the server requires a client certificate (mutual TLS): give a certificate and key signed by the cluster's CA (tlsv13 alert certificate required)",
    );
    expect(explainConnectError(grpcText('Error: self-signed certificate in certificate chain'), true)).toMatch(
      /^the server's certificate is not signed by our CA/,
    );
    expect(
      explainConnectError(
        '14 UNAVAILABLE: No connection established. Last error: Failed to connect (2026-11-30T05:35:19.666Z)',
        true,
      ),
    ).toMatch(/^the server closed the TLS handshake: it refused our certificate/);
    expect(explainConnectError(grpcText('Failed to connect'), false)).toMatch(/it may require TLS/);
    expect(
      explainConnectError(
        grpcText(
          'Error: 80AC4EAC017F0000:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/x.c:350:',
        ),
        true,
      ),
    ).toMatch(/^the server does not speak TLS/);
    expect(explainConnectError('something else', true)).toBe('something else');
  });
});

describe('node-to-node TLS between two transports on loopback', () => {
  const quiet = pino({ level: 'silent' });
  const material = (f: CertFiles) => loadTls({ ca: ca.cert, ...f }, names);

  /**
   * n1 serves with the given server cert; n2 dials it presenting `client`. Resolves with what n1 received and n2's
   * stream failure (if any).
   */
  async function exchange(o: {
    n1Server: CertFiles;
    n2Client: CertFiles;
  }): Promise<{ received: Message[]; refused: string[]; n2Log: string[] }> {
    const n2Log: string[] = [];
    const n2Logger = pino({ level: 'warn' }, { write: (line: string) => n2Log.push(line) });
    const [port] = await freePorts(1);
    const address = `127.0.0.1:${port}`;
    const received: Message[] = [];
    const refused: string[] = [];
    const n1Transport = new GrpcTransport({
      clusterId: 'c1',
      selfId: 'n1',
      peers: new Map(),
      // n1 dials nobody in this test, but n2 is a member it accepts traffic from.
      members: () => new Set(['n2']),
      onMessages: (m) => received.push(...m),
      onUnreachable: () => {},
      logger: quiet,
      authorizePeer: (call, from) => {
        const cert = call.getAuthContext()?.sslPeerCertificate;
        const p = cert ? nodeCertificateProblem(cert.subject, 'c1', from) : 'no certificate';
        if (p !== null) refused.push(p);
        return p;
      },
    });
    const server = new grpc.Server(SERVER_OPTIONS);
    n1Transport.register(server);
    await new Promise<void>((res, rej) =>
      server.bindAsync(address, serverCredentials(material(o.n1Server)), (e) => (e ? rej(e) : res())),
    );
    const unreachable: string[] = [];
    const n2Transport = new GrpcTransport({
      clusterId: 'c1',
      selfId: 'n2',
      peers: new Map([['n1', address]]),
      onMessages: () => {},
      onUnreachable: (p) => unreachable.push(p),
      logger: n2Logger,
      credentialsFor: (id) => nodeChannelCredentials(material(o.n2Client), { clusterId: 'c1', nodeId: id }),
      backoffMinMs: 20,
      backoffMaxMs: 50,
    });
    try {
      const deadline = Date.now() + 10_000;
      while (received.length === 0 && refused.length === 0 && unreachable.length < 3 && Date.now() < deadline) {
        n2Transport.send([message({ type: MessageType.Heartbeat, from: 'n2', to: 'n1', term: 1 })]);
        await new Promise((r) => setTimeout(r, 50));
      }
      return { received, refused, n2Log };
    } finally {
      await n2Transport.close();
      await n1Transport.close();
      server.forceShutdown();
    }
  }

  it('delivers between nodes whose certificates name them', async () => {
    const r = await exchange({ n1Server: n1, n2Client: n2 });
    expect(r.refused).toEqual([]);
    expect(r.received.length).toBeGreaterThan(0);
    expect(r.received[0]).toMatchObject({ from: 'n2', to: 'n1' });
  });

  it('refuses a stream whose client certificate names another node than the sender', async () => {
    const r = await exchange({ n1Server: n1, n2Client: n3 });
    expect(r.received).toEqual([]);
    expect(r.refused[0]).toMatch(/names node "n3" of cluster "c1".*expected node "n2"/);
  });

  it("refuses a stream whose client certificate names the sender but is not a node's (no node mark)", async () => {
    const r = await exchange({ n1Server: n1, n2Client: n2Unmarked });
    expect(r.received).toEqual([]);
    expect(r.refused[0]).toMatch(/\(OU=c1, CN=n2\) is not a node's: it lacks the node mark/);
  });

  it('a dialling node refuses a server whose certificate names another node', async () => {
    // n1 serves with n3's certificate: n2 must not talk to it at all.
    const r = await exchange({ n1Server: n3, n2Client: n2 });
    expect(r.received).toEqual([]);
    expect(r.refused).toEqual([]);
    // n2's log says why, once.
    const warnings = r.n2Log.map((l) => JSON.parse(l) as { msg: string; details: string });
    expect(warnings[0]).toMatchObject({ msg: 'stream to peer ended; reconnecting' });
    expect(warnings[0].details).toMatch(
      /node at 127\.0\.0\.1 refused: its certificate names node "n3" of cluster "c1" .*expected node "n1"/,
    );
  });

  it('a dialling node refuses a server whose certificate has the right names but no node mark', async () => {
    const n1Unmarked = ca.issue('n1', { ou: 'c1', file: 'n1-unmarked' });
    const r = await exchange({ n1Server: n1Unmarked, n2Client: n2 });
    expect(r.received).toEqual([]);
    const warnings = r.n2Log.map((l) => JSON.parse(l) as { msg: string; details: string });
    expect(warnings[0].details).toMatch(
      /node at 127\.0\.0\.1 refused: its certificate \(OU=c1, CN=n1\) is not a node's/,
    );
  });
});
