// Secure by default (docs/security.md, docs/tls.md): the local cluster's
// certificates live outside the checkout; the CLI and the SDK connect with
// TLS or refuse, plaintext only when told `insecure`; a participant of the
// local cluster started without TLS flags gets its certificate from the
// local CA, and nothing else.
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args.ts';
import { ensureLocalClusterCerts, localServerTls } from '../../src/cli/certs.ts';
import { clientSecurity } from '../../src/cli/client-tls.ts';
import { VerdictClient } from '../../src/client/client.ts';
import { VerdictError } from '../../src/client/errors.ts';
import { tlsCredentials } from '../../src/client/tls.ts';
import { localCertsDir, localClusterTls } from '../../src/transport/local-cluster.ts';
import { TlsSetupError } from '../../src/transport/tls.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const quiet = { info: () => {} };

describe('where the local cluster keeps its certificates', () => {
  it('one folder per cluster id under VERDICT_CONFIG_DIR, else XDG_CONFIG_HOME/verdict, else ~/.config/verdict: never in the checkout', () => {
    expect(localCertsDir('local', { VERDICT_CONFIG_DIR: '/etc/v', XDG_CONFIG_HOME: '/x' })).toBe('/etc/v/local');
    expect(localCertsDir('prod', { XDG_CONFIG_HOME: '/x' })).toBe('/x/verdict/prod');
    expect(localCertsDir('local', {})).toBe(join(homedir(), '.config', 'verdict', 'local'));
    // A relative XDG_CONFIG_HOME is invalid by its specification and ignored.
    expect(localCertsDir('local', { XDG_CONFIG_HOME: 'rel' })).toBe(join(homedir(), '.config', 'verdict', 'local'));
    expect(relative(ROOT, localCertsDir('local', {})).startsWith('..')).toBe(true);
  });
});

describe('the local cluster: certificates made once, found by the CLI and the SDK', () => {
  let configDir: string;
  const env = (): Record<string, string> => ({ VERDICT_CONFIG_DIR: configDir });

  beforeAll(() => {
    configDir = mkdtempSync(join(tmpdir(), 'verdict-config-'));
  });
  afterAll(() => rmSync(configDir, { recursive: true, force: true }));
  afterEach(() => vi.unstubAllEnvs());

  it('before the first start the CLI refuses plaintext and says what to do; the SDK helper says npm start makes them', () => {
    expect(() => clientSecurity([], env())).toThrow(UsageError);
    expect(() => clientSecurity([], env())).toThrow(
      /^no TLS: the local cluster's certificates are not in .*verdict-config-.*\/local \(npm start makes them on its first start\); .*--ca FILE --cert FILE --key FILE.*, or --insecure/,
    );
    expect(() => localClusterTls(undefined, env())).toThrow(TlsSetupError);
    expect(() => localClusterTls(undefined, env())).toThrow(
      /no CA in .*\/local yet: `npm start` \(verdict cluster up\) makes it on its first start/,
    );
  });

  it('cluster up makes the CA and every certificate once, owner-only; the CLI then uses the admin certificate for loopback endpoints', () => {
    vi.stubEnv('VERDICT_CONFIG_DIR', configDir);
    const made: string[] = [];
    const dir = ensureLocalClusterCerts(3, 7001, (line) => made.push(line));
    expect(dir).toBe(join(configDir, 'local'));
    // Owner only: the folder holds the CA's key.
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(made.filter((l) => l.startsWith('made')).map((l) => l.split(/\s+/)[1].slice(dir.length + 1))).toEqual([
      'ca.crt',
      'n1.crt',
      'n2.crt',
      'n3.crt',
      'shop.crt',
      'ledger.crt',
      'ops-admin.crt',
      'alice.crt',
    ]);
    // Second start: nothing made, nothing said.
    const again: string[] = [];
    ensureLocalClusterCerts(3, 7001, (line) => again.push(line));
    expect(again).toEqual([]);
    const admin = { ca: join(dir, 'ca.crt'), cert: join(dir, 'ops-admin.crt'), key: join(dir, 'ops-admin.key') };
    expect(clientSecurity([], env())).toEqual(admin);
    expect(clientSecurity(['--endpoints', '127.0.0.1:7001,localhost:7002'], env())).toEqual(admin);
    // Not the local cluster's addresses: no guess.
    expect(() => clientSecurity(['--endpoints', '10.0.0.5:7001'], env())).toThrow(
      /^no TLS for 10\.0\.0\.5:7001: give the cluster's CA/,
    );
    expect(() => clientSecurity([], { ...env(), VERDICT_ENDPOINTS: 'db1.example:7001' })).toThrow(
      /^no TLS for db1\.example:7001/,
    );
    // The SDK's helper: the client certificate by default, or any other by name.
    expect(localClusterTls(undefined, env())).toEqual({
      ca: admin.ca,
      cert: join(dir, 'alice.crt'),
      key: join(dir, 'alice.key'),
    });
    expect(localClusterTls('ops-admin', env())).toEqual(admin);
    expect(() => localClusterTls('carts', env())).toThrow(
      /no certificate "carts" in .*: make it with `npx verdict certs --participant carts=127\.0\.0\.1:PORT`/,
    );
  });

  it('given TLS files or --insecure, the CLI takes them as said; both at once are refused', () => {
    const args = ['--ca', 'ca.crt', '--cert', 'me.crt', '--key', 'me.key', '--endpoints', '10.0.0.5:7001'];
    expect(clientSecurity(args, env())).toEqual({ ca: 'ca.crt', cert: 'me.crt', key: 'me.key' });
    expect(args).toEqual(['--endpoints', '10.0.0.5:7001']);
    const insecure = ['--insecure', '--endpoints', '10.0.0.5:7001'];
    expect(clientSecurity(insecure, env())).toBeNull();
    expect(insecure).toEqual(['--endpoints', '10.0.0.5:7001']);
    expect(clientSecurity([], { ...env(), VERDICT_INSECURE: 'true' })).toBeNull();
    // Files in the environment win over VERDICT_INSECURE (a harness's default), never over the flag.
    expect(clientSecurity([], { ...env(), VERDICT_INSECURE: 'true', VERDICT_TLS_CA: 'ca.crt' })).toEqual({
      ca: 'ca.crt',
      cert: undefined,
      key: undefined,
    });
    expect(() => clientSecurity(['--insecure', '--ca', 'ca.crt'], env())).toThrow(
      /--insecure and TLS files .* were both given: choose one/,
    );
  });

  it('a participant of the local cluster without TLS flags gets its certificate from the local CA; never a node name, never for another cluster', () => {
    vi.stubEnv('VERDICT_CONFIG_DIR', configDir);
    const said: string[] = [];
    const files = localServerTls('carts', '127.0.0.1:7105', 'local', ['127.0.0.1:7001'], { info: (l) => said.push(l) });
    expect(files).toEqual({
      ca: join(configDir, 'local', 'ca.crt'),
      cert: join(configDir, 'local', 'carts.crt'),
      key: join(configDir, 'local', 'carts.key'),
    });
    expect(said).toEqual([`made ${join(configDir, 'local', 'carts.crt')} (participant carts at 127.0.0.1:7105)`]);
    const cert = new X509Certificate(readFileSync(files?.cert ?? ''));
    expect(cert.subject).toBe('OU=local\nCN=carts');
    expect(cert.verify(new X509Certificate(readFileSync(files?.ca ?? '')).publicKey)).toBe(true);
    // Kept the second time.
    expect(localServerTls('carts', '127.0.0.1:7105', 'local', ['127.0.0.1:7001'], quiet)).toEqual(files);
    // A node's name, the CA's, or a client's existing certificate is never handed out as a participant's.
    expect(() => localServerTls('n1', '127.0.0.1:7105', 'local', ['127.0.0.1:7001'], quiet)).toThrow(
      /"n1" is the name of a node/,
    );
    expect(() => localServerTls('ca', '127.0.0.1:7105', 'local', ['127.0.0.1:7001'], quiet)).toThrow(
      /"ca" is the name of the CA's files/,
    );
    expect(() => localServerTls('alice', '127.0.0.1:7105', 'local', ['127.0.0.1:7001'], quiet)).toThrow(
      /alice\.crt already exists and is CN=alice, not OU=local, CN=alice/,
    );
    // Another cluster, or a cluster not on loopback: not the local one, so no certificate (the start then refuses
    // plaintext).
    expect(localServerTls('carts', '127.0.0.1:7105', 'prod', ['127.0.0.1:7001'], quiet)).toBeNull();
    expect(localServerTls('carts', '127.0.0.1:7105', 'local', ['10.0.0.5:7001'], quiet)).toBeNull();
  });
});

describe('the SDK', () => {
  it('refuses a client without TLS unless told insecure, saying how', () => {
    expect(() => new VerdictClient({ endpoints: ['127.0.0.1:7001'] })).toThrow(VerdictError);
    expect(() => new VerdictClient({ endpoints: ['127.0.0.1:7001'] })).toThrow(
      /no TLS: give credentials: tlsCredentials\(\{ ca, cert, key \}\) \(for the local cluster of `npm start`: tlsCredentials\(localClusterTls\(\)\)\), or insecure: true/,
    );
    new VerdictClient({ endpoints: ['127.0.0.1:7001'], insecure: true }).close();
  });

  it('takes the local cluster with tlsCredentials(localClusterTls())', () => {
    const configDir = mkdtempSync(join(tmpdir(), 'verdict-config-'));
    try {
      vi.stubEnv('VERDICT_CONFIG_DIR', configDir);
      ensureLocalClusterCerts(1, 7001, () => {});
      new VerdictClient({ endpoints: ['127.0.0.1:7001'], credentials: tlsCredentials(localClusterTls()) }).close();
    } finally {
      vi.unstubAllEnvs();
      rmSync(configDir, { recursive: true, force: true });
    }
  });
});
