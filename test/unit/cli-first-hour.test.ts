// The CLI's first-hour rules, without processes: unknown flags are refused
// with the valid ones, --timeout-ms parses, `verdict certs` plans and makes
// certificates a participant accepts, the participant's own certificate check,
// registration failures are told apart (permanent vs transient), and the
// launcher's argument and log-line rules.
import * as grpc from '@grpc/grpc-js';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flag, flagAll, UsageError } from '../../src/cli/args.ts';
import { certsCommand, issueCert, parseCertsArgs, subjectAltName } from '../../src/cli/certs.ts';
import { isLogLine, parseClusterUpArgs } from '../../src/cli/cluster.ts';
import { checkFlags, COMMAND_FLAGS } from '../../src/cli/flags.ts';
import { parseTimeoutMs, unreachableMessage } from '../../src/cli/reach.ts';
import { participantCertificateProblem } from '../../src/participant/certificate-check.ts';
import { localCertsDir } from '../../src/transport/local-cluster.ts';
import { classifyRegistrationError, registrationBackoffMs, REASON_KEY } from '../../src/participant/registration.ts';
import { certificateRole } from '../../src/transport/tls.ts';

describe('unknown flags', () => {
  it('refuses a flag the command does not take, listing the valid ones and the nearest (status --jsn)', () => {
    expect(() => checkFlags(['status', '--jsn'])).toThrow(UsageError);
    expect(() => checkFlags(['status', '--jsn'])).toThrow(
      'unknown flag "--jsn" for verdict status (did you mean --json?); valid flags: --json, --endpoints, --timeout-ms, --ca, --cert, --key, --insecure, --help',
    );
  });

  it('knows subcommands: txn list takes --in-doubt, txn commit does not', () => {
    expect(() => checkFlags(['txn', 'list', '--in-doubt'])).not.toThrow();
    expect(() => checkFlags(['txn', 'commit', '--in-doubt', '--participant', 'shop'])).toThrow(
      /unknown flag "--in-doubt" for verdict txn commit/,
    );
    expect(() => checkFlags(['participant', 'remove', 'shop', '--force-unknown'])).toThrow(
      /for verdict participant remove/,
    );
    expect(() => checkFlags(['txn', 'resolve', 'T1', '--abort', '--reason', 'x', '--force-unknown'])).not.toThrow();
  });

  it('skips flag values, whatever they look like, and accepts --help anywhere', () => {
    expect(() =>
      checkFlags(['txn', 'commit', '--participant', 'shop={"set":{"--x":"1"}}', '--txn', '--json']),
    ).not.toThrow();
    expect(() => checkFlags(['txn', 'outcome', '-5'])).not.toThrow();
    expect(() => checkFlags(['member', 'add', '--help'])).not.toThrow();
    expect(() => checkFlags(['status', '--json=true'])).toThrow(/write --json VALUE/);
  });

  it('every command of the help has an entry, so none escapes the check', () => {
    for (const c of [
      'node',
      'cluster up',
      'status',
      'leader transfer',
      'member list',
      'member add',
      'member remove',
      'participant',
      'participant resolve',
      'participant remove',
      'participants',
      'txn commit',
      'txn abort',
      'txn outcome',
      'txn list',
      'txn show',
      'txn resolve',
      'certs',
    ]) {
      expect(COMMAND_FLAGS[c], c).toBeDefined();
    }
  });
});

describe('a flag given twice', () => {
  it('a one-value flag is refused when given twice (saga start --pivot 0 --pivot 1: a saga has one pivot); a repeatable one keeps every value in order', () => {
    expect(() => flag(['--pivot', '0', '--pivot', '1'], '--pivot')).toThrow(
      new UsageError('--pivot given more than once; it takes one value'),
    );
    const args = ['--step', 'a:x', '--json', '--step', 'b:y'];
    expect(flagAll(args, '--step')).toEqual(['a:x', 'b:y']);
    expect(args).toEqual(['--json']);
    expect(flag(['--pivot', '2'], '--pivot')).toBe('2');
  });
});

describe('--timeout-ms and the unreachable message', () => {
  it('takes whole milliseconds from 1 to 600000; refuses nonsense and units', () => {
    expect(parseTimeoutMs(undefined)).toBeUndefined();
    expect(parseTimeoutMs('750')).toBe(750);
    expect(parseTimeoutMs('600000')).toBe(600_000);
    for (const bad of ['soon', '0', '2s', '500ms', '1.5', '600001', '-3'])
      expect(() => parseTimeoutMs(bad), bad).toThrow(UsageError);
  });

  it('one timeout flag, with its unit in its name, on every client command; the old spellings are refused with the new one', () => {
    for (const [command, flags] of Object.entries(COMMAND_FLAGS)) {
      const timeouts = flags.filter((f) => /timeout|deadline|wait/.test(f));
      for (const f of timeouts) expect(f, `${command} ${f}`).toMatch(/-ms$/);
      if (flags.includes('--endpoints') && !['participant', 'saga service', 'outbox relay'].includes(command))
        expect(flags, command).toContain('--timeout-ms');
    }
    expect(() => checkFlags(['status', '--timeout', '2s'])).toThrow(
      /^--timeout is now --timeout-ms N \(whole milliseconds: --timeout 2s is --timeout-ms 2000\)$/,
    );
    expect(() => checkFlags(['txn', 'list', '--call-timeout-ms', '3000'])).toThrow(
      /^--call-timeout-ms is now --timeout-ms N/,
    );
    expect(() =>
      checkFlags(['txn', 'commit', '--participant', 'p', '--timeout-ms', '5000', '--txn-timeout-ms', '800']),
    ).not.toThrow();
  });

  it('names every endpoint tried and why', () => {
    const m = unreachableMessage(
      new Map([
        ['127.0.0.1:7001', 'connection refused'],
        ['127.0.0.1:7002', 'no answer within 2000 ms'],
      ]),
      2_000,
    );
    expect(m).toMatch(
      /^cannot reach the cluster: tried 127\.0\.0\.1:7001 \(connection refused\), 127\.0\.0\.1:7002 \(no answer within 2000 ms\)/,
    );
  });
});

describe('cluster up', () => {
  it('takes --base-port and --data; refuses ports that do not fit', () => {
    expect(parseClusterUpArgs(['--nodes', '3', '--base-port', '27001', '--data', '/tmp/x'], flag)).toEqual({
      nodes: 3,
      basePort: 27001,
      dataDir: '/tmp/x',
    });
    expect(() => parseClusterUpArgs(['--base-port', '65000'], flag)).toThrow(/--base-port must be an integer/);
    expect(() => parseClusterUpArgs(['--tls', '/nonexistent-certs'], flag)).toThrow(
      /missing .*ca\.crt.*verdict certs --dir/,
    );
  });

  it('serves TLS unless told --insecure; --insecure and --tls together are refused', () => {
    expect(parseClusterUpArgs([], flag)).toEqual({ nodes: 3, basePort: 7001 });
    expect(parseClusterUpArgs(['--insecure'], flag)).toEqual({ nodes: 3, basePort: 7001, insecure: true });
    expect(() => parseClusterUpArgs(['--insecure', '--tls', 'certs'], flag)).toThrow(
      /--insecure and --tls were both given: choose one/,
    );
  });

  it("passes a node's log lines through as they are (they name the node) and prefixes anything else", () => {
    expect(isLogLine('12:00:01.234 INFO  [n1 pid 42] became leader term=2')).toBe(true);
    expect(isLogLine('{"level":30,"time":1,"pid":42,"node":"n1","msg":"x"}')).toBe(true);
    expect(isLogLine('verdict: cannot listen on 127.0.0.1:7001: the address is in use')).toBe(false);
  });
});

describe('verdict certs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-certs-unit-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let out: string[];
  beforeEach(() => {
    out = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => out.push(String(s)) > 0);
  });
  afterEach(() => vi.restoreAllMocks());

  it('plans the loopback cluster by default: n1-n3, participants shop and ledger, admin ops-admin, client alice', () => {
    const p = parseCertsArgs([]);
    expect(p.nodes).toEqual([
      { id: 'n1', address: '127.0.0.1:7001' },
      { id: 'n2', address: '127.0.0.1:7002' },
      { id: 'n3', address: '127.0.0.1:7003' },
    ]);
    expect(p.participants.map((x) => x.id)).toEqual(['shop', 'ledger']);
    // Outside the checkout: the local cluster's folder, one per cluster id (src/transport/local-cluster.ts).
    expect([p.admins, p.clients, p.clusterId, p.dir]).toEqual([
      ['ops-admin'],
      ['alice'],
      'local',
      localCertsDir('local'),
    ]);
    expect(parseCertsArgs(['--cluster-id', 'prod']).dir).toBe(localCertsDir('prod'));
    expect(() => parseCertsArgs(['--participant', 'shop'])).toThrow(/ID=HOST:PORT/);
    expect(subjectAltName('127.0.0.1:7101')).toBe('IP:127.0.0.1,DNS:localhost');
    expect(subjectAltName('db1.example:7101')).toBe('DNS:db1.example');
  });

  it('makes certificates with the names and usages Verdict checks, and a participant accepts its own', async () => {
    await certsCommand([
      '--dir',
      dir,
      '--nodes',
      '1',
      '--participant',
      'shop=127.0.0.1:7101',
      '--admin',
      'ops-admin',
      '--client',
      'alice',
    ]);
    const cert = (name: string): X509Certificate => new X509Certificate(readFileSync(join(dir, `${name}.crt`)));
    const ca = cert('ca');
    const n1 = cert('n1');
    // The node mark (O=verdict-node) is what tells a node's certificate from a participant's.
    expect(n1.subject).toBe('O=verdict-node\nOU=local\nCN=n1');
    expect(certificateRole(n1.subject, 'local')).toBe('node');
    expect(n1.subjectAltName).toBe('IP Address:127.0.0.1, DNS:localhost');
    expect(n1.verify(ca.publicKey)).toBe(true);
    const shop = cert('shop');
    expect(shop.subject).toBe('OU=local\nCN=shop');
    expect(certificateRole(shop.subject, 'local')).toBe('participant');
    expect(certificateRole(cert('alice').subject, 'local')).toBe('client');
    expect(shop.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    expect(participantCertificateProblem(shop, 'shop.crt', 'shop', '127.0.0.1:7101')).toBeNull();
    expect(cert('ops-admin').keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    // A second run keeps what exists (the same CA signs anything new).
    await certsCommand(['--dir', dir, '--nodes', '1', '--participant', 'shop=127.0.0.1:7101']);
    expect(out.join('')).toMatch(/kept +.*ca\.crt/);
    expect(cert('ca').fingerprint256).toBe(ca.fingerprint256);
  });

  it("never hands out another certificate's key: node and CA names are refused for others, and a kept file must be what was asked for", async () => {
    expect(() => parseCertsArgs(['--participant', 'n2=127.0.0.1:7101'])).toThrow(/"n2" is the name of a node/);
    expect(() => parseCertsArgs(['--admin', 'ca'])).toThrow(/"ca" is the name of the CA's files/);
    expect(() => parseCertsArgs(['--participant', 'shop=127.0.0.1:7101', '--client', 'shop'])).toThrow(
      /"shop" is named twice/,
    );
    // alice.crt exists from the run above as a client certificate: a participant "alice" does not get it.
    await expect(certsCommand(['--dir', dir, '--nodes', '0', '--participant', 'alice=127.0.0.1:7105'])).rejects.toThrow(
      /alice\.crt already exists and is CN=alice, not OU=local, CN=alice; it is not handed out as participant alice/,
    );
    // A certificate of another cluster's id under the same name is refused too.
    await expect(
      certsCommand(['--dir', dir, '--nodes', '0', '--cluster-id', 'other', '--participant', 'shop=127.0.0.1:7101']),
    ).rejects.toThrow(/is OU=local, CN=shop, not OU=other, CN=shop/);
    // A node certificate made before the node mark is not kept as a node's: it is issued again with --force.
    const old = join(dir, 'old');
    await certsCommand(['--dir', old, '--nodes', '0', '--participant', 'shop=127.0.0.1:7101']);
    const ext = 'extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1\n';
    issueCert({
      caCert: join(old, 'ca.crt'),
      caKey: join(old, 'ca.key'),
      cert: join(old, 'n1.crt'),
      key: join(old, 'n1.key'),
      subject: '/OU=local/CN=n1',
      ext,
      days: 1,
      tmpDir: old,
      file: 'n1',
    });
    await expect(certsCommand(['--dir', old, '--nodes', '1', '--participant', 'shop=127.0.0.1:7101'])).rejects.toThrow(
      /n1\.crt already exists and is OU=local, CN=n1, not O=verdict-node, OU=local, CN=n1.*--force/,
    );
  });

  it('the participant refuses a client-only certificate (unsuitable certificate purpose) and one without its address, with the fix', () => {
    const alice = new X509Certificate(readFileSync(join(dir, 'alice.crt')));
    expect(participantCertificateProblem(alice, 'alice.crt', 'shop', '127.0.0.1:7101')).toBe(
      '--cert (alice.crt) lacks serverAuth in its extendedKeyUsage: the cluster\'s nodes call a participant as a TLS server and it calls them as a client, so every transaction would abort ("unsuitable certificate purpose"); ' +
        'make one with: npx verdict certs --participant shop=127.0.0.1:7101 (serverAuth+clientAuth, subjectAltName for 127.0.0.1:7101)',
    );
    const shop = new X509Certificate(readFileSync(join(dir, 'shop.crt')));
    expect(participantCertificateProblem(shop, 'shop.crt', 'shop', '10.0.0.9:7101')).toMatch(
      /does not name 10\.0\.0\.9 in its subjectAltName \(it names: IP Address:127\.0\.0\.1, DNS:localhost\)/,
    );
  });
});

describe('participant registration failures', () => {
  const failure = (code: grpc.status, details: string, reason?: string): grpc.ServiceError => {
    const metadata = new grpc.Metadata();
    if (reason !== undefined) metadata.set(REASON_KEY, reason);
    return Object.assign(new Error(details), { code, details, metadata });
  };

  it('a wrong cluster id is permanent, by code and reason, with the fix', () => {
    const f = classifyRegistrationError(
      failure(
        grpc.status.FAILED_PRECONDITION,
        'participant belongs to cluster "prod", this is cluster "local"',
        'wrong-cluster-id',
      ),
      false,
    );
    expect(f).toEqual({
      permanent: true,
      reason: 'wrong-cluster-id',
      message: expect.stringMatching(
        /FAILED_PRECONDITION: .*this is cluster "local"; give the cluster's id with --cluster-id/,
      ),
    });
  });

  it('a node that is down or has no leader is transient', () => {
    expect(
      classifyRegistrationError(
        failure(grpc.status.UNAVAILABLE, 'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7001'),
        false,
      ),
    ).toMatchObject({
      permanent: false,
      reason: 'node-down',
    });
    expect(
      classifyRegistrationError(failure(grpc.status.UNAVAILABLE, 'not the leader: no leader yet'), false),
    ).toMatchObject({ permanent: false });
    expect(classifyRegistrationError(failure(grpc.status.DEADLINE_EXCEEDED, 'Deadline exceeded'), false)).toMatchObject(
      { permanent: false },
    );
  });

  it('a refused certificate is permanent (tls-refused)', () => {
    const f = classifyRegistrationError(
      failure(
        grpc.status.UNAVAILABLE,
        'No connection established. Last error: Error: 40D8:error:0A000418:SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca',
      ),
      true,
    );
    expect(f).toMatchObject({ permanent: true, reason: 'tls-refused' });
    expect(f.message).toMatch(/verdict certs/);
  });

  it('backoff doubles from the first delay and stops at the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 50].map((n) => registrationBackoffMs(n, 500, 10_000))).toEqual([
      500, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000,
    ]);
  });
});
