// The CLI's TLS flags: --ca/--cert/--key, falling back to VERDICT_TLS_*,
// for client commands and participants.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/args.ts';
import { tlsArgs } from '../../src/cli/client-tls.ts';
import { parseParticipantArgs } from '../../src/cli/participant.ts';

describe('CLI TLS flags', () => {
  it('takes flags over the environment and removes them from the arguments', () => {
    const args = ['--endpoints', 'h:1', '--ca', 'ca.crt', '--cert', 'me.crt', '--key', 'me.key'];
    expect(tlsArgs(args, { VERDICT_TLS_CA: 'env-ca.crt' })).toEqual({ ca: 'ca.crt', cert: 'me.crt', key: 'me.key' });
    expect(args).toEqual(['--endpoints', 'h:1']);
    expect(tlsArgs([], { VERDICT_TLS_CA: 'env-ca.crt', VERDICT_TLS_CERT: 'c', VERDICT_TLS_KEY: 'k' })).toEqual({
      ca: 'env-ca.crt',
      cert: 'c',
      key: 'k',
    });
    expect(tlsArgs([], {})).toBeNull();
    expect(tlsArgs([], { VERDICT_TLS_CA: '' })).toBeNull();
  });

  it('refuses a certificate without a CA', () => {
    expect(() => tlsArgs(['--cert', 'me.crt', '--key', 'me.key'], {})).toThrow(UsageError);
    expect(() => tlsArgs(['--cert', 'me.crt'], {})).toThrow(/--cert and --key need --ca FILE/);
  });

  it('a participant with TLS needs its own certificate', () => {
    const base = ['--id', 'shop', '--listen', '127.0.0.1:7101', '--data', 'd'];
    expect(parseParticipantArgs([...base, '--ca', 'ca.crt', '--cert', 's.crt', '--key', 's.key'], {}).tls).toEqual({
      ca: 'ca.crt',
      cert: 's.crt',
      key: 's.key',
    });
    expect(parseParticipantArgs(base, {}).tls).toBeNull();
    expect(() => parseParticipantArgs([...base, '--ca', 'ca.crt'], {})).toThrow(/--ca needs --cert and --key too/);
  });
});
