// The PostgreSQL global transaction id (gid) of a Verdict transaction at one
// participant. PREPARE TRANSACTION names T with it, COMMIT / ROLLBACK
// PREPARED find T by it, the marker row is keyed by it, and the recovery
// scan recognises this participant's prepared transactions by its prefix.
//
// Format (ASCII, at most GID_BYTES_MAX bytes):
//
//   verdict:<cluster id>:<participant id>:<txn id>
//
// Each part is percent-encoded: letters, digits, '.', '_' and '-' stay as
// they are, every other UTF-8 byte becomes %XX. The encoding never produces
// ':', '#' or a quote, so the parts cannot run into each other and a gid is
// safe inside an SQL literal. Two shortenings keep it within PostgreSQL's
// limit (GIDSIZE is 200 bytes including the terminating NUL):
//
//   - when "verdict:<cluster>:<participant>:" is longer than
//     PREFIX_BYTES_MAX, the prefix becomes "verdict:#<32 hex>:", the first
//     128 bits of SHA-256 over cluster id, NUL, participant id;
//   - when the encoded txn id does not fit after the prefix, it becomes
//     "#<40 hex>", the first 160 bits of SHA-256 over the txn id.
//
// '#' never comes out of the encoding, so a readable part and a hashed part
// never collide. A readable gid gives back its txn id (parseGid); a hashed
// one can only be matched against txn ids known from elsewhere (the
// journal), which is what recovery does.
//
// Examples: verdict:local:shop:T42, verdict:local:shop:order%2F17.
import { assert } from '../util/assert.ts';
import { createHash } from 'node:crypto';
import { type TxnId } from './types.ts';

/** PostgreSQL's GIDSIZE (200) less the terminating NUL. */
export const GID_BYTES_MAX = 199;
/** Beyond this the cluster and participant ids are hashed into a short prefix. */
export const PREFIX_BYTES_MAX = 100;

const GID_SCHEME = 'verdict:';
const KEEP = /^[A-Za-z0-9._-]$/;
const KEEP_ALL = /^[A-Za-z0-9._-]*$/;
/** Every gid this module makes matches it; a gid is interpolated into SQL only after this check. */
export const GID_PATTERN = /^verdict:[A-Za-z0-9._%#-]+:([A-Za-z0-9._%-]+:)?[A-Za-z0-9._%#-]+$/;

const utf8 = new TextEncoder();

/** Percent-encodes every byte outside [A-Za-z0-9._-]. */
export function encodePart(s: string): string {
  // The common case, an id of plain characters, stays as it is; the gid is computed several times per transaction.
  if (KEEP_ALL.test(s)) return s;
  let out = '';
  for (const ch of s) {
    if (KEEP.test(ch)) out += ch;
    else for (const b of utf8.encode(ch)) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function sha256Hex(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

/** The part of every gid of (clusterId, participantId), ending in ':'. */
export function gidPrefix(clusterId: string, participantId: string): string {
  assert(clusterId !== '' && participantId !== '', 'a gid prefix names a cluster and a participant');
  const readable = `${GID_SCHEME}${encodePart(clusterId)}:${encodePart(participantId)}:`;
  if (readable.length <= PREFIX_BYTES_MAX) return readable;
  return `${GID_SCHEME}#${sha256Hex(`${clusterId}\0${participantId}`).slice(0, 32)}:`;
}

/** The gid of txnId at this participant, given gidPrefix(clusterId, participantId). */
export function gidOf(prefix: string, txnId: TxnId): string {
  assert(txnId !== '', 'a gid names a transaction');
  const readable = prefix + encodePart(txnId);
  const gid = readable.length <= GID_BYTES_MAX ? readable : `${prefix}#${sha256Hex(txnId).slice(0, 40)}`;
  // Assert on the way out: the gid is ASCII (so characters are bytes), within PostgreSQL's limit and safe in SQL.
  assert(gid.length <= GID_BYTES_MAX && GID_PATTERN.test(gid), `gid ${gid} fits PostgreSQL and the safe alphabet`);
  return gid;
}

export type ParsedGid = { kind: 'readable'; txnId: TxnId } | { kind: 'hashed' } | { kind: 'foreign' };

/** Whether gid belongs to prefix, and if so the txn id it names when that is readable. */
export function parseGid(prefix: string, gid: string): ParsedGid {
  if (!gid.startsWith(prefix)) return { kind: 'foreign' };
  const rest = gid.slice(prefix.length);
  if (rest.startsWith('#')) return /^#[0-9a-f]{40}$/.test(rest) ? { kind: 'hashed' } : { kind: 'foreign' };
  let txnId: string;
  try {
    txnId = decodeURIComponent(rest);
  } catch {
    return { kind: 'foreign' };
  }
  // Only a gid this module would have made for txnId is ours (rejects e.g. "a:b" parts or lower-case escapes).
  return txnId !== '' && gidOf(prefix, txnId) === gid ? { kind: 'readable', txnId } : { kind: 'foreign' };
}
