import { describe, expect, it } from 'vitest';
import { newTxnId } from '../../src/domain/txn-id.ts';
import { pooledRandomBytes } from '../../src/util/random-pool.ts';

describe('pooledRandomBytes', () => {
  it('hands out views that never share a byte and keep their bytes across pool replacements', () => {
    const views: Uint8Array[] = [];
    const copies: Uint8Array[] = [];
    // 2,000 × 10 bytes crosses several 4 KiB pools.
    for (let i = 0; i < 2_000; i++) {
      const v = pooledRandomBytes(10);
      expect(v.byteLength).toBe(10);
      views.push(v);
      copies.push(Uint8Array.from(v));
    }
    for (let i = 0; i < views.length; i++) expect(views[i]).toEqual(copies[i]);
    // Views of one pool never overlap.
    const seen = new Map<ArrayBufferLike, Set<number>>();
    for (const v of views) {
      const used = seen.get(v.buffer) ?? new Set<number>();
      for (let j = v.byteOffset; j < v.byteOffset + v.byteLength; j++) {
        expect(used.has(j)).toBe(false);
        used.add(j);
      }
      seen.set(v.buffer, used);
    }
    expect(seen.size).toBeGreaterThan(1);
  });

  it('gives ids that do not repeat', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20_000; i++) ids.add(newTxnId(1_700_000_000_000, pooledRandomBytes(10)));
    expect(ids.size).toBe(20_000);
  });

  it('refuses a size it cannot serve from one pool', () => {
    expect(() => pooledRandomBytes(4097)).toThrow(RangeError);
    expect(() => pooledRandomBytes(-1)).toThrow(RangeError);
    expect(() => pooledRandomBytes(1.5)).toThrow(RangeError);
    expect(pooledRandomBytes(0).byteLength).toBe(0);
  });
});
