// The node config's `groups` (docs/operations.md, "Decision groups"), read
// through clusterGroups: absent is one group, exactly as before groups; a
// count outside 1..64 is refused before the node binds anything.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/node/config.ts';
import { clusterGroups } from '../../src/node/groups.ts';
import { N1_CONFIG } from './config-fixture.ts';
import { refusalOf } from './refusal.ts';

const FILE = '/etc/verdict/n1.json';

describe('the groups key', () => {
  it('is one group when absent', () => {
    const cfg = parseConfig(N1_CONFIG, FILE);
    expect(cfg.groups).toBe(1);
    expect(clusterGroups(cfg)).toBe(1);
  });

  it('takes 1 to 64, from the file or a --set flag', () => {
    expect(clusterGroups(parseConfig({ ...N1_CONFIG, groups: 4 }, FILE))).toBe(4);
    expect(clusterGroups(parseConfig({ ...N1_CONFIG, groups: 64 }, FILE))).toBe(64);
    expect(clusterGroups(parseConfig(N1_CONFIG, FILE, { sets: ['groups=2'] }))).toBe(2);
  });

  it('refuses 0, 65 and a fraction, naming the key', () => {
    for (const groups of [0, 65, 1.5, '4'])
      expect(refusalOf(ConfigError, () => parseConfig({ ...N1_CONFIG, groups }, FILE))).toMatch(
        /"groups".*expected an integer from 1 to 64/,
      );
  });
});

describe('the spreadLeaders key', () => {
  it('is on when absent, and false turns it off, from the file, a --set flag or VERDICT_SPREAD_LEADERS', () => {
    expect(parseConfig(N1_CONFIG, FILE).spreadLeaders).toBe(true);
    expect(parseConfig({ ...N1_CONFIG, spreadLeaders: false }, FILE).spreadLeaders).toBe(false);
    expect(parseConfig(N1_CONFIG, FILE, { sets: ['spreadLeaders=false'] }).spreadLeaders).toBe(false);
    expect(parseConfig(N1_CONFIG, FILE, { env: { VERDICT_SPREAD_LEADERS: 'false' } }).spreadLeaders).toBe(false);
  });

  it('refuses anything but true or false, naming the key', () => {
    for (const spreadLeaders of ['no', 1, 'yes'])
      expect(refusalOf(ConfigError, () => parseConfig({ ...N1_CONFIG, spreadLeaders }, FILE))).toMatch(
        /"spreadLeaders".*expected true/,
      );
  });
});
