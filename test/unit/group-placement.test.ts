// The placement of an id in a decision group (src/domain/group.ts): stable
// (pinned test vectors, the same in every SDK), in range, uniform, and the
// one group 0 at G = 1.

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { GROUPS_MAX, groupOf, groupsProblem, placementHash } from '../../src/domain/group.ts';

const ID = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/);

describe('decision group placement', () => {
  test('the test vectors never change: a cluster, an SDK and a participant must agree on them forever', () => {
    // Also computed by an independent 10-line Python version of the hash; docs/architecture.md lists them.
    const vectors: [string, number, number, number][] = [
      ['t1', 0xc8fd0a82, 1, 3],
      ['t2', 0x4afe188a, 0, 1],
      ['order-42', 0x2e7b68d7, 0, 0],
      ['saga:payment-7', 0x5509ef8e, 0, 1],
      ['lease:relay', 0xdbf46482, 1, 3],
      ['', 0xab3e7c0b, 1, 2],
    ];
    for (const [id, hash, g2, g4] of vectors) {
      expect(placementHash(id), id).toBe(hash);
      expect(groupOf(id, 2), id).toBe(g2);
      expect(groupOf(id, 4), id).toBe(g4);
    }
  });

  test('at G = 1 every id is in group 0 (today exactly)', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (id) => groupOf(id, 1) === 0));
  });

  test('every id lands in [0, G), the same group every time it is asked', () => {
    fc.assert(
      fc.property(ID, fc.integer({ min: 1, max: GROUPS_MAX }), (id, g) => {
        const a = groupOf(id, g);
        return Number.isInteger(a) && a >= 0 && a < g && groupOf(id, g) === a;
      }),
    );
  });

  test('placement is uniform: random ids fill every group within a chi-square bound, for G in 2..16', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 16 }), fc.array(ID, { minLength: 4_000, maxLength: 4_000 }), (g, ids) => {
        const counts = new Array<number>(g).fill(0);
        for (const id of new Set(ids)) counts[groupOf(id, g)]++;
        const n = counts.reduce((a, b) => a + b, 0);
        const expected = n / g;
        const chi2 = counts.reduce((s, c) => s + (c - expected) ** 2 / expected, 0);
        // The chi-square 99.99th percentile for 15 degrees of freedom is about 44; a broken hash is far beyond it.
        return chi2 < 50;
      }),
      { numRuns: 40 },
    );
  });

  test('sequential ids, the way clients often name transactions, spread evenly too', () => {
    for (const g of [2, 4, 8]) {
      const counts = new Array<number>(g).fill(0);
      for (let i = 0; i < 100_000; i++) counts[groupOf(`order-${i}`, g)]++;
      for (const c of counts) expect(Math.abs(c - 100_000 / g) / (100_000 / g)).toBeLessThan(0.03);
    }
  });

  test('a group count outside 1..GROUPS_MAX is refused with a reason', () => {
    for (const bad of [0, -1, 1.5, GROUPS_MAX + 1, '2', null])
      expect(groupsProblem(bad)).toMatch(/whole number from 1 to/);
    expect(groupsProblem(4)).toBeNull();
    expect(() => groupOf('t1', 0)).toThrow(/whole number from 1 to/);
  });
});
