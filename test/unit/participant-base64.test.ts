import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromBase64, toBase64 } from '../../src/participant/types.ts';

describe('participant base64', () => {
  it('encodes any bytes, a view into a larger buffer included, as btoa does, and decodes back', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat({ max: 7 }), (bytes, pad) => {
        // The same bytes at an offset inside a larger buffer: only the view's bytes are encoded.
        const big = new Uint8Array(pad + bytes.length + 3).fill(0xee);
        big.set(bytes, pad);
        const view = big.subarray(pad, pad + bytes.length);
        const want = btoa(String.fromCharCode(...bytes));
        expect(toBase64(bytes)).toBe(want);
        expect(toBase64(view)).toBe(want);
        expect(fromBase64(want)).toEqual(bytes);
      }),
      { numRuns: 300 },
    );
  });

  it('decoding refuses a character outside the alphabet', () => {
    expect(() => fromBase64('ab$d')).toThrow();
  });
});
