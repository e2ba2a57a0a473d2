// `peerDial` in a node's config: where Raft traffic to a peer goes when it is
// not the peer's own address (the chaos test's proxies, a tunnel).
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/node/config.ts';
import { N1_CONFIG } from './config-fixture.ts';

const base = N1_CONFIG;

describe('config peerDial', () => {
  it('is empty when absent, and keeps peers as the addresses clients are told', () => {
    const c = parseConfig(base, 'n1.json');
    expect(c.peerDial.size).toBe(0);
    const d = parseConfig({ ...base, peerDial: { n2: '127.0.0.1:17002' } }, 'n1.json');
    expect([...d.peerDial]).toEqual([['n2', '127.0.0.1:17002']]);
    expect(d.peers.get('n2')).toBe('127.0.0.1:7002');
  });

  it('refuses an entry for this node, for a non-member, or without host:port, naming the key', () => {
    expect(() => parseConfig({ ...base, peerDial: { n1: '127.0.0.1:17001' } }, 'n1.json')).toThrow(
      /peerDial\.n1.*not another voter/,
    );
    expect(() => parseConfig({ ...base, peerDial: { n9: '127.0.0.1:17009' } }, 'n1.json')).toThrow(
      /peerDial\.n9.*not another voter.*n2, n3/,
    );
    expect(() => parseConfig({ ...base, peerDial: { n2: 'nowhere' } }, 'n1.json')).toThrow(
      /peerDial\.n2.*expected host:port/,
    );
    expect(() => parseConfig({ ...base, peerDial: ['127.0.0.1:1'] }, 'n1.json')).toThrow(/peerDial.*must be an object/);
  });
});
