// The relays' fair split of partitions (src/outbox/lease-keeper.ts): the
// share, and the plan that gives extras back and tries the rest.
import { describe, expect, it } from 'vitest';
import { fairShare, planShare } from '../../src/outbox/lease-keeper.ts';

describe('outbox relays: fair partition split', () => {
  it('the share is ceil(partitions / relays), and every partition fits in the relays’ shares', () => {
    expect(fairShare(8, 1)).toBe(8);
    expect(fairShare(8, 2)).toBe(4);
    expect(fairShare(8, 3)).toBe(3);
    expect(fairShare(8, 0)).toBe(8);
    for (let n = 1; n <= 40; n++) for (let k = 1; k <= n; k++) expect(fairShare(n, k) * k).toBeGreaterThanOrEqual(n);
  });

  it('a relay above its share releases the highest partitions and tries none', () => {
    expect(planShare(8, [0, 1, 2, 3, 4, 5, 6, 7], 4, 0)).toEqual({ release: [4, 5, 6, 7], tryAcquire: [] });
  });

  it('a relay below its share tries the partitions it lacks, starting at an offset of its member slot', () => {
    expect(planShare(8, [], 4, 1)).toEqual({ release: [], tryAcquire: [4, 5, 6, 7, 0, 1, 2, 3] });
    expect(planShare(8, [4, 5], 4, 1).tryAcquire).toEqual([6, 7, 0, 1, 2, 3]);
  });
});
