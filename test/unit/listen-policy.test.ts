// Plaintext only when said: `insecure`, on every address, loopback included
// (docs/security.md): which hosts count as loopback (for the CLI's local
// cluster), the refusal's wording, and how `insecure` is given to a node
// (config, environment, --set) and to a participant (--insecure).
import { describe, expect, it } from 'vitest';
import { parseParticipantArgs } from '../../src/cli/participant.ts';
import { ConfigError, parseConfig } from '../../src/node/config.ts';
import { isLoopbackHost, plaintextRefusal } from '../../src/transport/listen-policy.ts';
import { N1_CONFIG } from './config-fixture.ts';
import { refusalOf } from './refusal.ts';

describe('plaintext listen policy', () => {
  it('counts 127.0.0.0/8, ::1 and localhost as loopback, and nothing else', () => {
    for (const h of [
      '127.0.0.1',
      '127.1.2.3',
      '127.255.255.254',
      'localhost',
      'LOCALHOST',
      '::1',
      '[::1]',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.1',
    ])
      expect(isLoopbackHost(h), h).toBe(true);
    for (const h of [
      '0.0.0.0',
      '::',
      '[::]',
      '10.0.0.1',
      '128.0.0.1',
      '1.127.0.0',
      'example.com',
      'localhost.example.com',
      '::2',
      '::ffff:10.0.0.1',
      '',
    ])
      expect(isLoopbackHost(h), h).toBe(false);
  });

  it('refuses plaintext without insecure on every address, loopback included, saying why and how; allows it with insecure', () => {
    const how = { tlsHow: '"tls" in the config', insecureHow: '"insecure": true' };
    expect(plaintextRefusal({ listen: '10.0.0.1:7001', insecure: false, ...how })).toBe(
      'refusing to serve plaintext on 10.0.0.1:7001: without TLS anyone who can reach 10.0.0.1 can commit, abort, take over participants and forge Raft messages; ' +
        'configure "tls" in the config (see docs/tls.md), or set "insecure": true to serve plaintext knowingly',
    );
    expect(plaintextRefusal({ listen: '[::]:7001', insecure: false, ...how })).toMatch(
      /^refusing to serve plaintext on \[::\]:7001/,
    );
    expect(plaintextRefusal({ listen: '127.0.0.1:7001', insecure: false, ...how })).toBe(
      'refusing to serve plaintext on 127.0.0.1:7001: without TLS any process or user on this machine can commit, abort, take over participants and forge Raft messages; ' +
        'configure "tls" in the config (see docs/tls.md), or set "insecure": true to serve plaintext knowingly',
    );
    expect(plaintextRefusal({ listen: '[::1]:7001', insecure: false, ...how })).toMatch(
      /^refusing to serve plaintext on \[::1\]:7001: without TLS any process or user on this machine/,
    );
    expect(plaintextRefusal({ listen: '10.0.0.1:7001', insecure: true, ...how })).toBeNull();
    expect(plaintextRefusal({ listen: '127.0.0.1:7001', insecure: true, ...how })).toBeNull();
  });

  it('a node reads insecure from its config, the environment and --set; false by default', () => {
    expect(parseConfig(N1_CONFIG, '/x/n1.json').insecure).toBe(false);
    expect(parseConfig({ ...N1_CONFIG, insecure: true }, '/x/n1.json').insecure).toBe(true);
    expect(parseConfig(N1_CONFIG, '/x/n1.json', { env: { VERDICT_INSECURE: 'true' } }).insecure).toBe(true);
    expect(parseConfig({ ...N1_CONFIG, insecure: true }, '/x/n1.json', { sets: ['insecure=false'] }).insecure).toBe(
      false,
    );
    expect(refusalOf(ConfigError, () => parseConfig({ ...N1_CONFIG, insecure: 'yes' }, '/x/n1.json'))).toMatch(
      /"insecure" is "yes": expected true \(serve plaintext without TLS, trusting everyone who can reach the port\) or false/,
    );
  });

  it('a participant takes --insecure', () => {
    const base = ['--id', 'p1', '--listen', '127.0.0.1:7101', '--data', 'd'];
    expect(parseParticipantArgs(base, {}).insecure).toBe(false);
    expect(parseParticipantArgs([...base, '--insecure'], {}).insecure).toBe(true);
    expect(parseParticipantArgs(base, { VERDICT_INSECURE: 'true' }).insecure).toBe(true);
  });
});
