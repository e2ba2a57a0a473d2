// The console's Host rule (src/console/api.ts): its own names and IP
// literals pass; any other name, the mark of DNS rebinding, is refused.
import { describe, expect, it } from 'vitest';
import { consoleHostNames, hostRefusal } from '../../src/console/api.ts';
import { parseConfig } from '../../src/node/config.ts';

describe('the console answers only to its own names', () => {
  const names = consoleHostNames({
    listen: 'node1.internal:7001',
    metricsListen: '0.0.0.0:9101',
    consoleListen: null,
    consoleHosts: ['Verdict.Example.com'],
    peers: new Map([
      ['n1', 'node1.internal:7001'],
      ['n2', 'Node2.Internal:7002'],
    ]),
  });

  it('takes localhost, the names in its addresses (any case) and IP literals, with or without a port', () => {
    for (const host of [
      'localhost:9101',
      'verdict.example.com',
      'node1.internal',
      'NODE2.internal:9101',
      '127.0.0.1:9101',
      '10.1.2.3',
      '[::1]:9101',
      '[fe80::1]',
    ]) {
      expect(hostRefusal(host, names), host).toBeNull();
    }
  });

  it('refuses any other name, a missing Host, and garbage', () => {
    expect(hostRefusal('attacker.example:9101', names)).toMatch(
      /^Host "attacker\.example:9101" is not a name of this console \(localhost, node1\.internal, 0\.0\.0\.0, node2\.internal, verdict\.example\.com, or an IP address\)/,
    );
    expect(hostRefusal(undefined, names)).toBe('the request has no Host header');
    expect(hostRefusal('a:b:c', names)).not.toBeNull();
    expect(hostRefusal('node1.internal.attacker.example', names)).not.toBeNull();
  });

  it('takes extra names from the config (consoleHosts; a list in the environment and --set), and refuses what is not a host name', () => {
    const base = {
      clusterId: 'c',
      nodeId: 'n1',
      listen: '127.0.0.1:7001',
      dataDir: 'd',
      peers: { n1: '127.0.0.1:7001' },
    };
    expect(parseConfig(base, 'x.json').consoleHosts).toEqual([]);
    expect(parseConfig({ ...base, consoleHosts: ['Verdict.example.com', 'proxy'] }, 'x.json').consoleHosts).toEqual([
      'verdict.example.com',
      'proxy',
    ]);
    expect(parseConfig(base, 'x.json', { sets: ['consoleHosts=a.example,b.example'] }).consoleHosts).toEqual([
      'a.example',
      'b.example',
    ]);
    for (const bad of ['x.example', ['a b'], ['evil.example:80'], [''], Array.from({ length: 33 }, (_, i) => `h${i}`)])
      expect(() => parseConfig({ ...base, consoleHosts: bad }, 'x.json'), JSON.stringify(bad)).toThrow(
        /"consoleHosts" is .*expected a list of host names/,
      );
  });
});
