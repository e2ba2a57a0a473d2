// A node's configuration: file < environment < --set flags, and errors that
// name the key, where its value came from and the expected form.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, NO_FILE, parseConfig } from '../../src/node/config.ts';
import { envName, mergeOverrides } from '../../src/node/config-sources.ts';
import { N1_CONFIG } from './config-fixture.ts';
import { refusalOf } from './refusal.ts';

const base = { ...N1_CONFIG, tickMs: 100 };
const FILE = '/etc/verdict/n1.json';

const refusal = (f: () => unknown): string => refusalOf(ConfigError, f);

describe('configuration overrides', () => {
  it('names environment variables by the key path in upper snake case', () => {
    expect(envName('tickMs')).toBe('VERDICT_TICK_MS');
    expect(envName('nodeId')).toBe('VERDICT_NODE_ID');
    expect(envName('tls.cert')).toBe('VERDICT_TLS_CERT');
    expect(envName('tls.adminNames')).toBe('VERDICT_TLS_ADMIN_NAMES');
  });

  it('takes flags over the environment over the file', () => {
    const fileOnly = parseConfig(base, FILE);
    expect(fileOnly.tickMs).toBe(100);
    const envOnly = parseConfig(base, FILE, { env: { VERDICT_TICK_MS: '50' } });
    expect(envOnly.tickMs).toBe(50);
    const both = parseConfig(base, FILE, { env: { VERDICT_TICK_MS: '50' }, sets: ['tickMs=25'] });
    expect(both.tickMs).toBe(25);
    // The last --set of a key wins.
    expect(parseConfig(base, FILE, { sets: ['tickMs=25', 'tickMs=30'] }).tickMs).toBe(30);
  });

  it('commits in parallel by default; the file or --set parallelCommit=false (verdict node --classic-commit) chooses classic', () => {
    expect(parseConfig(base, FILE).parallelCommit).toBe(true);
    expect(parseConfig({ ...base, parallelCommit: false }, FILE).parallelCommit).toBe(false);
    expect(parseConfig(base, FILE, { sets: ['parallelCommit=false'] }).parallelCommit).toBe(false);
    expect(
      parseConfig({ ...base, parallelCommit: false }, FILE, { sets: ['parallelCommit=true'] }).parallelCommit,
    ).toBe(true);
    expect(refusal(() => parseConfig({ ...base, parallelCommit: 'yes' }, FILE))).toMatch(
      /parallelCommit.*expected true \(parallel commit by default\) or false \(classic\)/,
    );
  });

  // Integer keys from 0 to 1000: the default, then a value from the file, the environment and --set, and one out of
  // range.
  const bounded = [
    { key: 'snapshotLogRatio', byDefault: 1, file: 0, env: 4, set: 2, bad: -1 },
    { key: 'explicitCommitLingerMs', byDefault: 5, file: 0, env: 20, set: 1, bad: 5000 },
    { key: 'commitNoticeMs', byDefault: 5, file: 0, env: 20, set: 1, bad: 1001 },
    { key: 'decisionLingerMs', byDefault: 2, file: 0, env: 7, set: 3, bad: -1 },
  ] as const;
  it.each(bounded)(
    '$key: $byDefault by default, 0 to 1000 from the file, the environment or --set',
    ({ key, byDefault, file, env, set, bad }) => {
      expect(parseConfig(base, FILE)[key]).toBe(byDefault);
      expect(parseConfig({ ...base, [key]: file }, FILE)[key]).toBe(file);
      expect(parseConfig(base, FILE, { env: { [envName(key)]: String(env) } })[key]).toBe(env);
      expect(parseConfig(base, FILE, { sets: [`${key}=${set}`] })[key]).toBe(set);
      expect(refusal(() => parseConfig({ ...base, [key]: bad }, FILE))).toMatch(
        new RegExp(`${key}.*expected an integer from 0 to 1000`),
      );
    },
  );

  it('keeps the transaction history by default, 7 days and 1 GiB; VERDICT_HISTORY=false turns it off; bounds refused with the range', () => {
    const d = parseConfig(base, FILE);
    expect([d.history, d.historyRetentionMs, d.historyBytesMax]).toEqual([true, 7 * 86_400_000, 1024 ** 3]);
    expect(parseConfig(base, FILE, { env: { VERDICT_HISTORY: 'false' } }).history).toBe(false);
    expect(parseConfig(base, FILE, { sets: ['historyRetentionMs=3600000', 'historyBytesMax=10485760'] })).toMatchObject(
      { historyRetentionMs: 3_600_000, historyBytesMax: 10_485_760 },
    );
    expect(refusal(() => parseConfig({ ...base, history: 'sometimes' }, FILE))).toMatch(
      /history.*expected true \(keep the transaction history\) or false/,
    );
    expect(refusal(() => parseConfig({ ...base, historyRetentionMs: 1_000 }, FILE))).toMatch(
      /historyRetentionMs.*expected an integer from 60000 to/,
    );
    expect(refusal(() => parseConfig({ ...base, historyBytesMax: 10 }, FILE))).toMatch(
      /historyBytesMax.*expected an integer from 1048576 to/,
    );
  });

  it('ignores environment variables that are not config keys', () => {
    const cfg = parseConfig(base, FILE, { env: { VERDICT_ENDPOINTS: 'x', VERDICT_LOG_FORMAT: 'json', PATH: '/bin' } });
    expect(cfg.nodeId).toBe('n1');
  });

  it('resolves relative paths from the file against its folder, from env and flags against the working directory', () => {
    expect(parseConfig(base, FILE).dataDir).toBe('/etc/verdict/data/n1');
    expect(parseConfig(base, FILE, { env: { VERDICT_DATA_DIR: 'here' } }).dataDir).toBe(resolve('here'));
    expect(parseConfig(base, FILE, { sets: ['dataDir=/abs/d'] }).dataDir).toBe('/abs/d');
    const tls = { ca: 'certs/ca.crt', cert: 'certs/n1.crt', key: 'certs/n1.key' };
    const cfg = parseConfig({ ...base, tls }, FILE, { sets: ['tls.key=k.pem'] });
    expect(cfg.tls).toEqual({
      ca: '/etc/verdict/certs/ca.crt',
      cert: '/etc/verdict/certs/n1.crt',
      key: resolve('k.pem'),
      adminNames: null,
    });
  });

  it('builds a tls block from the environment alone, lists comma-separated', () => {
    const cfg = parseConfig(base, FILE, {
      env: {
        VERDICT_TLS_CA: '/c/ca.crt',
        VERDICT_TLS_CERT: '/c/n1.crt',
        VERDICT_TLS_KEY: '/c/n1.key',
        VERDICT_TLS_ADMIN_NAMES: 'alice, bob',
      },
    });
    expect(cfg.tls).toEqual({ ca: '/c/ca.crt', cert: '/c/n1.crt', key: '/c/n1.key', adminNames: ['alice', 'bob'] });
  });

  it('replaces the peers map from the environment and sets one entry from a flag', () => {
    const cfg = parseConfig(base, FILE, {
      env: { VERDICT_PEERS: 'n1=127.0.0.1:8001,n2=127.0.0.1:8002' },
      sets: ['listen=127.0.0.1:8001', 'peers.n5=127.0.0.1:8005'],
    });
    expect([...cfg.peers]).toEqual([
      ['n1', '127.0.0.1:8001'],
      ['n2', '127.0.0.1:8002'],
      ['n5', '127.0.0.1:8005'],
    ]);
  });

  it('removes a key given an empty value, so its default applies', () => {
    expect(parseConfig(base, FILE, { sets: ['tickMs='] }).tickMs).toBe(100);
    expect(parseConfig({ ...base, tickMs: 7 }, FILE, { env: { VERDICT_TICK_MS: '' } }).tickMs).toBe(100);
    expect(
      parseConfig({ ...base, metricsListen: '127.0.0.1:9101' }, FILE, { sets: ['metricsListen='] }).metricsListen,
    ).toBeNull();
  });

  it('leaves the file object untouched', () => {
    const raw = { ...base, peers: { ...base.peers } };
    const copy = JSON.parse(JSON.stringify(raw)) as unknown;
    mergeOverrides(raw, { VERDICT_PEERS: 'n9=127.0.0.1:1' }, ['peers.n4=127.0.0.1:2', 'tls.ca=x']);
    expect(raw).toEqual(copy);
  });
});

describe('configuration errors name the key, its source and the expected form', () => {
  it('a value from the file', () => {
    const m = refusal(() => parseConfig({ ...base, tickMs: 'fast' }, FILE));
    expect(m).toBe(`config ${FILE}: "tickMs" is "fast": expected an integer from 1 to 60000`);
  });

  it('a value from the environment', () => {
    const m = refusal(() => parseConfig(base, FILE, { env: { VERDICT_TICK_MS: 'fast' } }));
    expect(m).toBe(
      `config ${FILE}: "tickMs" (from environment variable VERDICT_TICK_MS) is "fast": expected an integer from 1 to 60000`,
    );
  });

  it('a value from a flag', () => {
    const m = refusal(() => parseConfig(base, FILE, { sets: ['listen=nowhere'] }));
    expect(m).toMatch(/"listen" \(from --set listen=nowhere\) is "nowhere": expected host:port/);
  });

  it('a peer entry from a flag', () => {
    const m = refusal(() => parseConfig(base, FILE, { sets: ['peers.n4=bad'] }));
    expect(m).toMatch(/"peers\.n4" \(from --set peers\.n4=bad\) is "bad": expected host:port/);
  });

  it('a malformed map from the environment', () => {
    const m = refusal(() => parseConfig(base, FILE, { env: { VERDICT_PEERS: 'n1:127.0.0.1:7001' } }));
    expect(m).toMatch(
      /"peers" \(from environment variable VERDICT_PEERS\): "n1:127\.0\.0\.1:7001" is not ID=HOST:PORT/,
    );
  });

  it('an unknown --set key or a flag without "="', () => {
    expect(refusal(() => parseConfig(base, FILE, { sets: ['tickMS=5'] }))).toMatch(
      /--set tickMS=5: unknown key "tickMS" \(keys: clusterId, .*tickMs/,
    );
    expect(refusal(() => parseConfig(base, FILE, { sets: ['tickMs'] }))).toMatch(/--set "tickMs" is not KEY=VALUE/);
  });

  it('a tls block missing its key, or with an unknown key', () => {
    expect(refusal(() => parseConfig({ ...base, tls: { ca: 'a', cert: 'b' } }, FILE))).toMatch(
      /missing "tls\.key": expected the path of this node's private key/,
    );
    expect(
      refusal(() => parseConfig({ ...base, tls: { ca: 'a', cert: 'b', key: 'c', requireClientCert: false } }, FILE)),
    ).toMatch(/unknown key "tls\.requireClientCert"/);
    expect(
      refusal(() => parseConfig({ ...base, tls: { ca: 'a', cert: 'b', key: 'c', adminNames: 'alice' } }, FILE)),
    ).toMatch(/"tls\.adminNames" is "alice": expected a list of client certificate common names/);
    // Only part of a tls block from the environment: the missing part is named.
    expect(refusal(() => parseConfig(base, FILE, { env: { VERDICT_TLS_CA: '/ca.crt' } }))).toMatch(
      /missing "tls\.cert"/,
    );
  });

  it('without a file, a missing key says how to give it', () => {
    const m = refusal(() => loadConfig(undefined, { env: { VERDICT_CLUSTER_ID: 'c1' } }));
    expect(m).toBe(
      `config ${NO_FILE}: missing "nodeId": expected an id of letters, digits, ".", "_" or "-" (at most 64) (no --config file: set it with VERDICT_NODE_ID or --set nodeId=...)`,
    );
  });

  it('without a file, environment and flags alone make a whole config', () => {
    const cfg = loadConfig(undefined, {
      env: {
        VERDICT_CLUSTER_ID: 'c1',
        VERDICT_NODE_ID: 'n1',
        VERDICT_LISTEN: '127.0.0.1:7001',
        VERDICT_PEERS: 'n1=127.0.0.1:7001',
      },
      sets: ['dataDir=d1', 'electionTicks=20'],
    });
    expect(cfg).toMatchObject({ clusterId: 'c1', nodeId: 'n1', dataDir: resolve('d1'), electionTicks: 20, tls: null });
  });
});

describe('loadConfig with a file and overrides', () => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-cfg-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the file and applies the environment and flags on top', () => {
    const file = join(dir, 'n1.json');
    writeFileSync(file, JSON.stringify(base));
    const cfg = loadConfig(file, { env: { VERDICT_LOG_LEVEL: 'debug', VERDICT_TICK_MS: '60' }, sets: ['tickMs=70'] });
    expect(cfg).toMatchObject({ logLevel: 'debug', tickMs: 70, dataDir: join(dir, 'data/n1') });
  });
});
