// Decision groups: which Raft group decides a transaction, a saga or a lease.
//
// A cluster of G groups (G fixed when the cluster is founded; 1 by default)
// places every id in exactly one group with groupOf(id, G). It is a pure
// function of the id's bytes and G, so a node, an SDK in any language and a
// participant all compute the same group without asking anyone. At G = 1
// every id is in group 0: the one group a cluster has always had.
//
// The hash is FNV-1a (32 bits) over the id's UTF-8 bytes, finished with
// MurmurHash3's 32-bit mixer so that ids differing in their last character
// spread over the whole range, then mapped to [0, G) by multiply-shift
// (floor(h · G / 2^32)), which keeps the high, well-mixed bits. Every step
// is 32-bit integer arithmetic another language writes in a few lines;
// docs/architecture.md lists test vectors, and test/unit/group-placement.test.ts
// pins them so the function can never change under a running cluster.

/** The most groups a cluster may have; a bound on every per-group table a node keeps. */
export const GROUPS_MAX = 64;

/** Why `groups` is not a group count, or null when it is one (1..GROUPS_MAX). */
export function groupsProblem(groups: unknown): string | null {
  if (typeof groups !== 'number' || !Number.isInteger(groups) || groups < 1 || groups > GROUPS_MAX) {
    return `the number of decision groups must be a whole number from 1 to ${GROUPS_MAX} (got ${String(groups).slice(0, 40)})`;
  }
  return null;
}

const UTF8 = new TextEncoder();

/** The 32-bit placement hash of `id` (FNV-1a, then MurmurHash3's fmix32), as an unsigned integer. */
export function placementHash(id: string): number {
  let h = 0x811c9dc5;
  for (const b of UTF8.encode(id)) {
    h ^= b;
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The group (0..groups-1) that decides `id`: a transaction id, a saga id or a
 * lease name. A group count outside 1..GROUPS_MAX is the caller's bug (the
 * count is checked where it enters: the founding, the status answer) and throws.
 */
export function groupOf(id: string, groups: number): number {
  const bad = groupsProblem(groups);
  if (bad !== null) throw new RangeError(`groupOf: ${bad}`);
  if (groups === 1) return 0;
  // h < 2^32 and groups <= 64: the product stays far below 2^53, so the division is exact.
  return Math.floor((placementHash(id) * groups) / 2 ** 32);
}
