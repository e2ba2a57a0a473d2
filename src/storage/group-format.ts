// The on-disk format of the shared group log: one segment log that holds
// the Raft entries of every decision group of a node founded with G > 1
// (src/storage/group-store.ts; docs/architecture.md, "Decision groups").
//
//   header  [8 magic "VRDGWL\0\x01"][u64 seq][u64 zero][u32 zero][u32 crc32 of bytes 0..27]
//   record  [u32 body length][u32 crc32 of (length bytes, body)][body]
//   body    group 0:  [u64 index][u64 term][u8 entry type][entry data ...]
//           group g:  [u64 index][u64 term][u8 0x80 | entry type][u16 g][entry data ...]
//
// Big-endian. A record of group 0 is byte for byte the record of the
// one-group log (src/storage/segment-format.ts); a record of another group
// sets the type's high bit and names its group. Records of different groups
// interleave, so a segment holds no run of consecutive indexes and its name
// carries only its seq: `<seq>.groups.wal` (16 hex digits). What the
// records mean together (a record replaces its group's suffix from its
// index on) is the store's; this file reads and writes one record at a time
// and trusts nothing it reads.

import { crc32 } from 'node:zlib';
import { EntryType, type Entry } from '../raft/types.ts';
import { firstNonZero } from '../util/bytes.ts';
import { assert } from '../util/assert.ts';
import { RECORD_BODY_BYTES_MAX, RECORD_FRAME_BYTES, SEGMENT_HEADER_BYTES } from './segment-format.ts';

const MAGIC = Buffer.from('VRDGWL\u0000\u0001', 'latin1');
const NAME_RE = /^([0-9a-f]{16})\.groups\.wal$/;
const BODY_HEADER_BYTES = 8 + 8 + 1;
const GROUP_TAG_BYTES = 2;
/** The type byte's bit that says a group number follows. */
const GROUP_BIT = 0x80;

export function groupSegmentFileName(seq: number): string {
  return `${seq.toString(16).padStart(16, '0')}.groups.wal`;
}

/** The seq a group segment's file name carries, or null for any other file. */
export function parseGroupSegmentFileName(name: string): number | null {
  const m = NAME_RE.exec(name);
  if (!m) return null;
  const seq = Number.parseInt(m[1], 16);
  return Number.isSafeInteger(seq) && seq >= 1 ? seq : null;
}

export function encodeGroupSegmentHeader(seq: number): Buffer {
  assert(Number.isSafeInteger(seq) && seq >= 1, `group segment seq ${seq} is one the header check reads back`);
  const b = Buffer.alloc(SEGMENT_HEADER_BYTES);
  MAGIC.copy(b, 0);
  b.writeBigUInt64BE(BigInt(seq), 8);
  b.writeUInt32BE(crc32(b.subarray(0, 28)), 28);
  return b;
}

/** Checks a group segment's header against its name; returns what is wrong, or null. */
export function checkGroupSegmentHeader(buf: Buffer, seq: number): string | null {
  if (buf.byteLength < SEGMENT_HEADER_BYTES)
    return `the file is ${buf.byteLength} bytes, shorter than its ${SEGMENT_HEADER_BYTES}-byte header`;
  const stored = buf.readUInt32BE(28);
  const computed = crc32(buf.subarray(0, 28));
  if (stored !== computed) return `header checksum mismatch (stored ${hex32(stored)}, computed ${hex32(computed)})`;
  if (!buf.subarray(0, 8).equals(MAGIC)) return 'header does not start with the group segment magic';
  const got = buf.readBigUInt64BE(8);
  if (got !== BigInt(seq)) return `header names segment ${got}, the file name says segment ${seq}`;
  return null;
}

/** Entries of one group, in the order they go into one write. */
export interface GroupRun {
  group: number;
  entries: readonly Entry[];
}

/**
 * Frames the runs as records into one buffer: one write per batch of every
 * group's Readys. Paired with scanGroupRecords: the encoder asserts what the
 * reader refuses (a group outside the node's, a tag on group 0, an index or
 * term out of range, an unknown type, entries of a run that do not follow
 * each other).
 */
export function encodeGroupRecords(runs: readonly GroupRun[], groups: number): Buffer {
  let total = 0;
  for (const run of runs) {
    assert(
      Number.isInteger(run.group) && run.group >= 0 && run.group < groups,
      `group ${run.group} is one of the node's ${groups}`,
    );
    for (let i = 0; i < run.entries.length; i++) {
      const e = run.entries[i];
      assert(
        Number.isSafeInteger(e.index) && e.index >= 1 && Number.isSafeInteger(e.term) && e.term >= 0,
        `group ${run.group} entry ${e.index} (term ${e.term}) has a safe index from 1 and a safe term`,
      );
      assert(
        e.type === EntryType.Normal || e.type === EntryType.ConfChange,
        `group ${run.group} entry ${e.index} has a known type, not ${e.type}`,
      );
      if (i > 0) {
        const prev = run.entries[i - 1];
        assert(
          e.index === prev.index + 1 && e.term >= prev.term,
          `group ${run.group} entry ${e.index} (term ${e.term}) follows entry ${prev.index} (term ${prev.term}) in one run`,
        );
      }
      const bodyLen = BODY_HEADER_BYTES + (run.group === 0 ? 0 : GROUP_TAG_BYTES) + e.data.byteLength;
      if (bodyLen > RECORD_BODY_BYTES_MAX)
        throw new RangeError(
          `group ${run.group} entry ${e.index} of ${e.data.byteLength} bytes exceeds the record limit ${RECORD_BODY_BYTES_MAX}`,
        );
      total += RECORD_FRAME_BYTES + bodyLen;
    }
  }
  const buf = Buffer.allocUnsafe(total);
  let at = 0;
  for (const run of runs) {
    const tag = run.group === 0 ? 0 : GROUP_TAG_BYTES;
    for (const e of run.entries) {
      const bodyLen = BODY_HEADER_BYTES + tag + e.data.byteLength;
      buf.writeUInt32BE(bodyLen, at);
      const body = at + RECORD_FRAME_BYTES;
      buf.writeBigUInt64BE(BigInt(e.index), body);
      buf.writeBigUInt64BE(BigInt(e.term), body + 8);
      buf.writeUInt8(tag === 0 ? e.type : GROUP_BIT | e.type, body + 16);
      if (tag !== 0) buf.writeUInt16BE(run.group, body + BODY_HEADER_BYTES);
      buf.set(e.data, body + BODY_HEADER_BYTES + tag);
      buf.writeUInt32BE(recordCrc(buf, at, bodyLen), at + 4);
      at += RECORD_FRAME_BYTES + bodyLen;
    }
  }
  assert(at === total, `group records: wrote ${at} bytes of ${total}`);
  return buf;
}

function recordCrc(buf: Buffer, at: number, bodyLen: number): number {
  const body = buf.subarray(at + RECORD_FRAME_BYTES, at + RECORD_FRAME_BYTES + bodyLen);
  return crc32(body, crc32(buf.subarray(at, at + 4)));
}

/** One record read back: its group's entry and where the record starts. */
export interface GroupRecord {
  group: number;
  entry: Entry;
  offset: number;
}

/**
 * Why a record could not be read (as in segment-format.ts): `incomplete`,
 * the file ends inside it; `checksum`, whole but not what was written
 * (`atEnd`: only zeros follow); `invalid`, it cannot be a record this log
 * wrote.
 */
export type GroupRecordProblem =
  | { kind: 'incomplete'; offset: number; detail: string }
  | { kind: 'checksum'; offset: number; detail: string; atEnd: boolean }
  | { kind: 'invalid'; offset: number; detail: string };

export interface ScannedGroupSegment {
  records: GroupRecord[];
  /** Where the readable records end. */
  end: number;
  problem: GroupRecordProblem | null;
}

/**
 * Reads the records of one group segment (header already checked); stops at the first that cannot be read and says why.
 */
export function scanGroupRecords(buf: Buffer, groups: number): ScannedGroupSegment {
  const records: GroupRecord[] = [];
  let at = SEGMENT_HEADER_BYTES;
  const size = buf.byteLength;
  const done = (problem: GroupRecordProblem | null): ScannedGroupSegment => ({ records, end: at, problem });
  while (at < size) {
    const left = size - at;
    if (buf[at] === 0 && firstNonZero(buf, at) === -1) return done(null);
    if (left < RECORD_FRAME_BYTES)
      return done({ kind: 'incomplete', offset: at, detail: `${left} bytes left, less than a record frame` });
    const bodyLen = buf.readUInt32BE(at);
    if (bodyLen === 0 && buf.readUInt32BE(at + 4) === 0) {
      return done({
        kind: 'incomplete',
        offset: at,
        detail: `zeros where a record should start, and data again at byte offset ${firstNonZero(buf, at + RECORD_FRAME_BYTES)}`,
      });
    }
    if (bodyLen < BODY_HEADER_BYTES || bodyLen > RECORD_BODY_BYTES_MAX)
      return done({
        kind: 'invalid',
        offset: at,
        detail: `record length ${bodyLen} is outside ${BODY_HEADER_BYTES}..${RECORD_BODY_BYTES_MAX}`,
      });
    if (RECORD_FRAME_BYTES + bodyLen > left)
      return done({
        kind: 'incomplete',
        offset: at,
        detail: `the record needs ${RECORD_FRAME_BYTES + bodyLen} bytes, the file has ${left} left`,
      });
    const stored = buf.readUInt32BE(at + 4);
    const computed = recordCrc(buf, at, bodyLen);
    if (stored !== computed) {
      const atEnd = firstNonZero(buf, at + RECORD_FRAME_BYTES + bodyLen) === -1;
      return done({
        kind: 'checksum',
        offset: at,
        detail: `checksum mismatch (stored ${hex32(stored)}, computed ${hex32(computed)})`,
        atEnd,
      });
    }
    const body = at + RECORD_FRAME_BYTES;
    const index = buf.readBigUInt64BE(body);
    const term = buf.readBigUInt64BE(body + 8);
    const typeByte = buf.readUInt8(body + 16);
    const tagged = (typeByte & GROUP_BIT) !== 0;
    const type = typeByte & ~GROUP_BIT;
    if (index < 1n || index > BigInt(Number.MAX_SAFE_INTEGER) || term > BigInt(Number.MAX_SAFE_INTEGER))
      return done({ kind: 'invalid', offset: at, detail: `index ${index} or term ${term} out of range` });
    if (type !== EntryType.Normal && type !== EntryType.ConfChange)
      return done({ kind: 'invalid', offset: at, detail: `unknown entry type ${type}` });
    let group = 0;
    if (tagged) {
      if (bodyLen < BODY_HEADER_BYTES + GROUP_TAG_BYTES)
        return done({
          kind: 'invalid',
          offset: at,
          detail: `a tagged record of ${bodyLen} bytes has no room for its group`,
        });
      group = buf.readUInt16BE(body + BODY_HEADER_BYTES);
      if (group === 0)
        return done({
          kind: 'invalid',
          offset: at,
          detail: 'a tagged record names group 0 (whose records carry no tag)',
        });
      if (group >= groups)
        return done({ kind: 'invalid', offset: at, detail: `the record names group ${group}, the node has ${groups}` });
    }
    const dataAt = body + BODY_HEADER_BYTES + (tagged ? GROUP_TAG_BYTES : 0);
    // A copy, so the entry does not pin the whole file buffer.
    const data = new Uint8Array(buf.subarray(dataAt, body + bodyLen));
    records.push({ group, entry: { index: Number(index), term: Number(term), type, data }, offset: at });
    at += RECORD_FRAME_BYTES + bodyLen;
  }
  return done(null);
}

function hex32(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}
