// The XA xid of a Verdict transaction at one MySQL/MariaDB participant. XA
// START / END / PREPARE / COMMIT / ROLLBACK name the branch with it, the
// marker row and the heuristic record are keyed by its text form, and the
// recovery scan recognises this participant's branches in XA RECOVER by it.
//
// An xid is (gtrid, bqual, formatID); XA allows 64 bytes each for gtrid and
// bqual. Verdict's:
//
//   formatID  1448232020 (0x56524454, "VRDT"): Verdict's branches, whoever
//             else uses XA on the server
//   gtrid     <cluster id>:<txn id>     the global transaction, the same at
//                                       every participant of T
//   bqual     <participant id>          this participant's branch of it
//
// Each part is percent-encoded as in postgres-gid.ts (letters, digits, '.',
// '_', '-' stay; every other UTF-8 byte becomes %XX), so no part holds ':',
// ',', '#' or a quote and an xid is safe inside an SQL literal. Shortenings
// keep it within XA's limits:
//
//   - a cluster part longer than CLUSTER_BYTES_MAX becomes "#<16 hex>" (the
//     first 64 bits of SHA-256 of the cluster id);
//   - a txn part that does not fit the rest of the 64 bytes becomes
//     "#<32 hex>" (the first 128 bits of SHA-256 of the txn id);
//   - a participant part longer than 64 bytes becomes "#<40 hex>".
//
// '#' never comes out of the encoding, so readable and hashed parts never
// collide. The text form (logs, the marker and heuristic tables, the resolve
// command) is "gtrid,bqual": e.g. `local:T42,ledger`, which XA spells
// `'local:T42','ledger',1448232020`.
import { assert } from '../../../util/assert.ts';
import { createHash } from 'node:crypto';
import { encodePart, type ParsedGid } from '../../postgres-gid.ts';
import { type TxnId } from '../../types.ts';

export const XA_FORMAT_ID = 0x56524454;
/** XA's limit for gtrid and for bqual (MAXGTRIDSIZE, MAXBQUALSIZE). */
export const XA_PART_BYTES_MAX = 64;
const CLUSTER_BYTES_MAX = 24;
const PART = /^[A-Za-z0-9._%#-]+$/;

export interface Xid {
  gtrid: string;
  bqual: string;
  formatId: number;
}

/** What every xid of one (cluster, participant) shares. */
export interface XidScope {
  /** gtrid prefix, ending in ':'. */
  gtridPrefix: string;
  bqual: string;
}

const sha256Hex = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

export function xidScope(clusterId: string, participantId: string): XidScope {
  assert(clusterId !== '' && participantId !== '', 'an xid names a cluster and a participant');
  const cluster = encodePart(clusterId);
  const bqual = encodePart(participantId);
  return {
    gtridPrefix: `${cluster.length <= CLUSTER_BYTES_MAX ? cluster : `#${sha256Hex(clusterId).slice(0, 16)}`}:`,
    bqual: bqual.length <= XA_PART_BYTES_MAX ? bqual : `#${sha256Hex(participantId).slice(0, 40)}`,
  };
}

export function xidOf(scope: XidScope, txnId: TxnId): Xid {
  assert(txnId !== '', 'an xid names a transaction');
  const readable = encodePart(txnId);
  const txnPart =
    scope.gtridPrefix.length + readable.length <= XA_PART_BYTES_MAX ? readable : `#${sha256Hex(txnId).slice(0, 32)}`;
  const xid = { gtrid: scope.gtridPrefix + txnPart, bqual: scope.bqual, formatId: XA_FORMAT_ID };
  // Assert on the way out: ASCII (characters are bytes), within XA's limits, and safe in SQL.
  assert(isSafeXid(xid), `xid ${xidText(xid)} fits XA and the safe alphabet`);
  return xid;
}

/** gtrid and bqual within 64 bytes of the safe alphabet (so they go into SQL unescaped); the gtrid holds one ':'. */
export function isSafeXid(x: Xid): boolean {
  return (
    x.gtrid.length <= XA_PART_BYTES_MAX &&
    x.bqual.length <= XA_PART_BYTES_MAX &&
    PART.test(x.bqual) &&
    /^[A-Za-z0-9._%#-]+:[A-Za-z0-9._%#-]+$/.test(x.gtrid) &&
    Number.isInteger(x.formatId) &&
    x.formatId >= 0 &&
    x.formatId <= 0x7fffffff
  );
}

/** The text form: "gtrid,bqual". */
export function xidText(x: Xid): string {
  return `${x.gtrid},${x.bqual}`;
}

/** The xid as XA's SQL spells it: 'gtrid','bqual',formatID. Asserted, not escaped. */
export function sqlXid(x: Xid): string {
  if (!isSafeXid(x)) throw new Error(`invalid xid ${xidText(x)}`);
  return `'${x.gtrid}','${x.bqual}',${x.formatId}`;
}

/** The xid of a text form this scope would have made, or a reason it is not one. */
export function parseXidText(
  scope: XidScope,
  text: string,
): { ok: true; xid: Xid; parsed: ParsedGid } | { ok: false; reason: string } {
  const comma = text.indexOf(',');
  if (comma < 0) return { ok: false, reason: `"${text}" is not an xid of the form gtrid,bqual` };
  const xid = { gtrid: text.slice(0, comma), bqual: text.slice(comma + 1), formatId: XA_FORMAT_ID };
  if (xid.gtrid.length > XA_PART_BYTES_MAX || xid.bqual.length > XA_PART_BYTES_MAX) {
    return {
      ok: false,
      reason: `xid ${text} is too long: XA allows ${XA_PART_BYTES_MAX} bytes each for gtrid and bqual (here ${xid.gtrid.length} and ${xid.bqual.length})`,
    };
  }
  const parsed = parseXid(scope, xid);
  if (parsed.kind === 'foreign')
    return {
      ok: false,
      reason: `xid ${text} is not one of this participant's (its xids are ${scope.gtridPrefix}<txn id>,${scope.bqual})`,
    };
  return { ok: true, xid, parsed };
}

/** Whether an xid (from XA RECOVER) belongs to scope, and if so the txn id it names when that is readable. */
export function parseXid(scope: XidScope, x: Xid): ParsedGid {
  if (x.formatId !== XA_FORMAT_ID || x.bqual !== scope.bqual || !x.gtrid.startsWith(scope.gtridPrefix) || !isSafeXid(x))
    return { kind: 'foreign' };
  const rest = x.gtrid.slice(scope.gtridPrefix.length);
  if (rest.startsWith('#')) return /^#[0-9a-f]{32}$/.test(rest) ? { kind: 'hashed' } : { kind: 'foreign' };
  let txnId: string;
  try {
    txnId = decodeURIComponent(rest);
  } catch {
    return { kind: 'foreign' };
  }
  // Only an xid this module would have made for txnId is ours (rejects lower-case escapes, say).
  return txnId !== '' && xidOf(scope, txnId).gtrid === x.gtrid ? { kind: 'readable', txnId } : { kind: 'foreign' };
}
