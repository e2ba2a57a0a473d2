import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OldestFirst } from '../../src/util/oldest-first.ts';

type Op =
  | { t: 'set'; k: number }
  | { t: 'delete'; k: number }
  | { t: 'clear' }
  | { t: 'shift' }
  | { t: 'peek' }
  | { t: 'trim'; max: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ t: fc.constant('set' as const), k: fc.integer({ min: 0, max: 12 }) }), weight: 6 },
  { arbitrary: fc.record({ t: fc.constant('delete' as const), k: fc.integer({ min: 0, max: 12 }) }), weight: 2 },
  { arbitrary: fc.constant({ t: 'clear' as const }), weight: 1 },
  { arbitrary: fc.constant({ t: 'shift' as const }), weight: 3 },
  { arbitrary: fc.constant({ t: 'peek' as const }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('trim' as const), max: fc.integer({ min: 0, max: 6 }) }), weight: 2 },
);

describe('OldestFirst', () => {
  it('agrees with a fresh iterator from the front under any mix of sets (new and re-inserted keys), deletes, clears, peeks, shifts and trims', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const map = new Map<number, { n: number }>();
        const oldest = new OldestFirst(map);
        // The model: the same operations on a second Map, its oldest read the slow way.
        const model = new Map<number, { n: number }>();
        const modelOldest = () => (model.size === 0 ? undefined : (model.keys().next().value as number));
        let n = 0;
        for (const o of ops) {
          switch (o.t) {
            case 'set': {
              // Re-insertion moves a key to the end, as the production tables do (delete, then set a new object).
              const v = { n: n++ };
              map.delete(o.k);
              map.set(o.k, v);
              model.delete(o.k);
              model.set(o.k, v);
              break;
            }
            case 'delete':
              map.delete(o.k);
              model.delete(o.k);
              break;
            case 'clear':
              map.clear();
              model.clear();
              break;
            case 'peek': {
              const want = modelOldest();
              const got = oldest.peek();
              expect(got?.[0]).toBe(want);
              if (want !== undefined) expect(got?.[1]).toBe(model.get(want));
              break;
            }
            case 'shift': {
              const want = modelOldest();
              if (want !== undefined) model.delete(want);
              expect(oldest.shift()).toBe(want);
              break;
            }
            case 'trim': {
              const want: number[] = [];
              while (model.size > o.max) {
                const k = modelOldest() as number;
                model.delete(k);
                want.push(k);
              }
              const got: number[] = [];
              oldest.trimTo(o.max, (k) => got.push(k));
              expect(got).toEqual(want);
              break;
            }
          }
          expect([...map.keys()]).toEqual([...model.keys()]);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('keeps a table bounded at its size in order, dropping the oldest one per insert', () => {
    const map = new Map<string, { n: number }>();
    const oldest = new OldestFirst(map);
    for (let i = 0; i < 50_000; i++) {
      map.set(`t${i}`, { n: i });
      oldest.trimTo(1_000);
    }
    expect(map.size).toBe(1_000);
    expect(map.keys().next().value).toBe('t49000');
    expect(oldest.peek()?.[0]).toBe('t49000');
  });

  it('on an empty map, peek is null, shift undefined and trimTo drops nothing', () => {
    const map = new Map<string, { n: number }>();
    const oldest = new OldestFirst(map);
    expect(oldest.peek()).toBeNull();
    expect(oldest.shift()).toBeUndefined();
    const dropped: string[] = [];
    oldest.trimTo(0, (k) => dropped.push(k));
    expect(dropped).toEqual([]);
    map.set('a', { n: 1 });
    expect(oldest.shift()).toBe('a');
    expect(map.size).toBe(0);
  });
});
