/** The offset of the first non-zero byte at or after `from`, or -1 when only zeros follow. */
export function firstNonZero(buf: Uint8Array, from: number): number {
  for (let i = from; i < buf.byteLength; i++) if (buf[i] !== 0) return i;
  return -1;
}
