// The pure rules behind the limits at the edge (docs/limits.md): which
// participant endpoints can be dialled, how a refused value is quoted, which
// config addresses collide, and the per-client count of undecided transactions.
import { describe, expect, test } from 'vitest';
import { checkAddresses } from '../../src/node/config-addresses.ts';
import { clientOf, ClientQuota, coordinatorRequestProblem } from '../../src/node/limits.ts';
import { ID } from '../../src/domain/id.ts';
import { endpointProblem, quote } from '../../src/transport/validate.ts';

describe('participant endpoints', () => {
  test('accepts host:port that can be dialled', () => {
    for (const e of ['127.0.0.1:7101', 'localhost:1', 'shop.internal.example:65535', '[::1]:7101', '10.0.0.255:80'])
      expect(endpointProblem(e), e).toBeNull();
  });

  test('refuses ports outside 1–65535, impossible IPv4 addresses and malformed names', () => {
    const cases: [string, RegExp][] = [
      ['127.0.0.1:99999', /port "99999": expected 1–65535/],
      ['127.0.0.1:0', /port "0"/],
      ['999.999.999.999:1', /is not an IPv4 address/],
      ['1.2.3:80', /is not a host name or an IP address/],
      ['-bad-.example:80', /is not a host name/],
      ['[nope]:80', /is not a host name or an IP address/],
      [':80', /must be host:port/],
      ['host', /must be host:port/],
      [`${'a'.repeat(300)}:80`, /is longer than 261 characters/],
    ];
    for (const [e, why] of cases) expect(endpointProblem(e), e).toMatch(why);
  });
});

describe('ids at the Coordinator edge follow the one id rule (src/domain/id.ts)', () => {
  test('a participant or cluster id of 64 characters is taken; 65, or one the rule refuses, is not', () => {
    const reg = (clusterId: string, participantId: string) =>
      coordinatorRequestProblem('RegisterParticipant', { clusterId, participantId, endpoint: '127.0.0.1:1' });
    const at64 = `p${'x'.repeat(63)}`;
    expect(ID.test(at64)).toBe(true);
    expect(reg('c1', at64)).toBeNull();
    expect(reg(at64, 'shop')).toBeNull();
    expect(reg('c1', `${at64}x`)).toMatch(/participant_id .* is longer than 64 characters/);
    expect(reg(`${at64}x`, 'shop')).toMatch(/cluster_id .* is longer than 64 characters/);
    for (const bad of ['-shop', 'sh op', 'shop:1', ''])
      expect(reg('c1', bad), JSON.stringify(bad)).toMatch(/participant_id/);
    const enlisted = coordinatorRequestProblem('Commit', {
      txnId: 't1',
      participants: [{ participantId: `${at64}x` }],
    });
    expect(enlisted).toMatch(/participant_id .* is longer than 64 characters/);
  });
});

describe('quoting a refused value', () => {
  test('short values whole, long ones as a prefix with their length, never whole', () => {
    expect(quote('abc')).toBe('"abc"');
    const q = quote('z'.repeat(100_000));
    expect(q).toBe(`"${'z'.repeat(64)}"… (100000 characters)`);
  });
});

describe('config addresses that cannot all be right', () => {
  const peers = (o: Record<string, string>): Map<string, string> => new Map(Object.entries(o));

  test('refuses one address named two ways', () => {
    expect(checkAddresses('n1', '127.0.0.1:7001', null, peers({ n1: '127.0.0.1:7001', n2: 'localhost:7001' }))).toMatch(
      /\{peers\.n2\} "localhost:7001" and \{peers\.n1\} "127\.0\.0\.1:7001" name the same address/,
    );
    expect(
      checkAddresses('n1', '127.0.0.1:7001', null, peers({ n1: '127.0.0.1:7001', n2: '127.000.000.001:7001' })),
    ).toMatch(/name the same address/);
  });

  test("refuses a listen address other than the node's own entry, but allows the wildcard on the same port", () => {
    expect(checkAddresses('n1', '127.0.0.1:7009', null, peers({ n1: '127.0.0.1:7001' }))).toMatch(
      /\{listen\} "127\.0\.0\.1:7009" differs from this node's own entry \{peers\.n1\}/,
    );
    expect(checkAddresses('n1', '0.0.0.0:7001', null, peers({ n1: '10.1.2.3:7001' }))).toBeNull();
    expect(checkAddresses('n1', 'localhost:7001', null, peers({ n1: '127.0.0.1:7001' }))).toBeNull();
  });

  test("refuses metrics on a peer's gRPC address", () => {
    expect(
      checkAddresses('n1', '127.0.0.1:7001', '127.0.0.1:7002', peers({ n1: '127.0.0.1:7001', n2: '127.0.0.1:7002' })),
    ).toMatch(/\{metricsListen\} "127\.0\.0\.1:7002" is the gRPC address of \{peers\.n2\}/);
    expect(
      checkAddresses('n1', '127.0.0.1:7001', '0.0.0.0:7002', peers({ n1: '127.0.0.1:7001', n2: '127.0.0.1:7002' })),
    ).toMatch(/is the gRPC address of \{peers\.n2\}/);
    expect(
      checkAddresses('n1', '127.0.0.1:7001', '127.0.0.1:9101', peers({ n1: '127.0.0.1:7001', n2: '127.0.0.1:7002' })),
    ).toBeNull();
  });
});

describe('undecided transactions per client', () => {
  test('refuses past the bound naming the limit and the oldest ids; a decided transaction frees its place at once; a retry is not new', () => {
    const undecided = new Set<string>();
    const q = new ClientQuota({ clientInFlightMax: 2 }, { isUndecided: (t) => undecided.has(t) }, 100);
    for (const [t, at] of [
      ['a', 1_000],
      ['b', 2_000],
    ] as const) {
      expect(q.refusal('alice', t, at)).toBeNull();
      q.add('alice', t, at);
      undecided.add(t);
    }
    expect(q.refusal('alice', 'c', 5_000)).toMatch(
      /client "alice" holds 2 undecided transactions \(limit clientInFlightMax=2\); oldest: "a" \(4 s\), "b" \(3 s\)/,
    );
    expect(q.refusal('alice', 'a', 5_000)).toBeNull();
    expect(q.refusal('bob', 'c', 5_000)).toBeNull();
    undecided.delete('a');
    expect(q.refusal('alice', 'c', 5_000)).toBeNull();
    expect(q.count('alice')).toBe(1);
  });
});

describe('who a client is', () => {
  test("the CN of its verified TLS certificate, else the connection's peer address", () => {
    const call = (cert: { subject: Record<string, string> } | undefined, peer: string) => ({
      getAuthContext: () => (cert ? { sslPeerCertificate: cert as never } : null),
      getPeer: () => peer,
    });
    expect(clientOf(call({ subject: { CN: 'shop-api', OU: 'c1' } }, '127.0.0.1:5000'))).toBe('CN=shop-api');
    expect(clientOf(call({ subject: { CN: 'shop-api', OU: 'c1' } }, '127.0.0.1:5001'))).toBe('CN=shop-api');
    expect(clientOf(call(undefined, '127.0.0.1:5000'))).toBe('127.0.0.1:5000');
  });
});
