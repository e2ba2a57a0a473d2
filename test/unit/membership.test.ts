// The membership holder (src/node/membership.ts): the config's peers until a
// change is applied, then the applied addresses; the node itself always in
// it; the config's map never touched.
import { describe, expect, it } from 'vitest';
import { Membership } from '../../src/node/membership.ts';

const seed = (): Map<string, string> =>
  new Map([
    ['n1', '127.0.0.1:7001'],
    ['n2', '127.0.0.1:7002'],
    ['n3', '127.0.0.1:7003'],
  ]);

describe('membership held as its own state', () => {
  it('holds the seed peers until a membership change is applied', () => {
    const m = new Membership('n1', seed(), '127.0.0.1:7001');
    expect(m.peers()).toEqual(seed());
    expect(m.size).toBe(3);
    expect(m.get('n2')).toBe('127.0.0.1:7002');
    expect(m.has('n4')).toBe(false);
    expect(m.update(new Map())).toBe(false);
  });

  it('follows the applied change and leaves the config map as the operator gave it', () => {
    const config = seed();
    const m = new Membership('n1', config, '127.0.0.1:7001');
    const applied = new Map([...seed(), ['n4', '127.0.0.1:7004']]);
    expect(m.update(applied)).toBe(true);
    expect(m.ids()).toEqual(['n1', 'n2', 'n3', 'n4']);
    expect(m.get('n4')).toBe('127.0.0.1:7004');
    expect(config).toEqual(seed());
    // The same addresses again change nothing.
    expect(m.update(new Map(applied))).toBe(false);
    // An address that moved is a change.
    expect(m.update(new Map([...applied, ['n4', '127.0.0.1:7104']]))).toBe(true);
    expect(m.get('n4')).toBe('127.0.0.1:7104');
  });

  it('keeps this node, at its seed address, once a change removed it', () => {
    const m = new Membership('n3', seed(), '0.0.0.0:7003');
    m.update(
      new Map([
        ['n1', '127.0.0.1:7001'],
        ['n2', '127.0.0.1:7002'],
      ]),
    );
    expect(m.ids()).toEqual(['n1', 'n2', 'n3']);
    expect(m.get('n3')).toBe('127.0.0.1:7003');
  });

  it('names a joining node, absent from its seed, at the address it serves on', () => {
    const m = new Membership('n4', seed(), '127.0.0.1:7004');
    expect(m.get('n4')).toBe('127.0.0.1:7004');
    expect(m.size).toBe(4);
  });

  it('hands out copies: changing one changes nothing held', () => {
    const m = new Membership('n1', seed(), '127.0.0.1:7001');
    const copy = m.peers();
    copy.delete('n2');
    copy.set('n9', 'x:1');
    expect(m.has('n2')).toBe(true);
    expect(m.has('n9')).toBe(false);
  });
});
