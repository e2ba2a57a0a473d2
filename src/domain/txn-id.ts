// The transaction id rule, in one place: the cluster checks it at its edge,
// the SDK checks it before any RPC and generates ids that follow it.
//
// An id is 1–128 characters of [A-Za-z0-9_.:-], starting with a letter or a
// digit. An id whose last 36 characters are a UUIDv7 (RFC 9562), alone or
// after one of ":", ".", "_", "-", is *timed*: it carries the time it was
// created (the UUIDv7's 48-bit Unix milliseconds). The cluster can prove a
// timed id new even after it has forgotten old decisions (the retention
// horizon, src/commit/state.ts); an untimed id is new only on the client's
// word once its decision could have been forgotten. docs/protocol-outcomes.md
// states the rule for users.
//
// Pure: generating an id takes the time and the random bytes as arguments.

/** A transaction id: the client's name for one transaction, fixed at begin (R7). */
export type TxnId = string;

export const TXN_ID_CHARS_MAX = 128;

/** The form of every transaction id: the edges of the cluster and of a participant check it with this. */
export const TXN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const UUID_V7_TAIL =
  /(?:^|[:._-])([0-9a-fA-F]{8})-([0-9a-fA-F]{4})-7[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$/;

/** Why `id` is not a transaction id, or null when it is one. Never echoes more than a bounded prefix of the input. */
export function txnIdProblem(id: unknown): string | null {
  if (typeof id !== 'string') return 'a transaction id must be a string';
  if (TXN_ID_PATTERN.test(id)) return null;
  const shown = id.length > 40 ? `${JSON.stringify(id.slice(0, 40))}… (${id.length} characters)` : JSON.stringify(id);
  return `transaction id ${shown} must be 1–${TXN_ID_CHARS_MAX} characters of letters, digits, "_", ".", ":" or "-", starting with a letter or a digit`;
}

/** The creation time a timed id carries (Unix ms), or null for an untimed id. Assumes a valid id. */
export function txnIdAtMs(id: string): number | null {
  const m = UUID_V7_TAIL.exec(id);
  if (m === null) return null;
  return parseInt(m[1] + m[2], 16);
}

/**
 * A new timed id: a UUIDv7 for `nowMs`, from 10 random bytes (74 of their
 * bits are used). The SDK calls this for every transaction whose id the
 * application does not choose.
 */
export function newTxnId(nowMs: number, random: Uint8Array): string {
  if (!Number.isSafeInteger(nowMs) || nowMs < 0 || nowMs >= 2 ** 48)
    throw new RangeError(`a UUIDv7 time must be 0 ≤ ms < 2^48, got ${nowMs}`);
  if (random.byteLength < 10) throw new RangeError('a UUIDv7 needs 10 random bytes');
  const b = new Uint8Array(16);
  let t = nowMs;
  for (let i = 5; i >= 0; i--) {
    b[i] = t % 256;
    t = Math.floor(t / 256);
  }
  b.set(random.subarray(0, 10), 6);
  b[6] = 0x70 | (b[6] & 0x0f); // version 7
  b[8] = 0x80 | (b[8] & 0x3f); // variant 10
  const hex = Buffer.from(b).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
