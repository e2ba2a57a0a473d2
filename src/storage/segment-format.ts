// The on-disk format of the Raft log's segment files (wal/ in the data
// directory), in the manner of etcd's WAL.
//
// A segment is a 32-byte header followed by records:
//
//   header  [8 magic "VRDWAL\0\x02"][u64 seq][u64 first index][u32 zero][u32 crc32 of bytes 0..27]
//   record  [u32 body length][u32 crc32 of (length bytes, body)][body]
//   body    [u64 index][u64 term][u8 entry type][entry data ...]
//
// Big-endian. The checksum covers the length too, so a flipped length is a
// checksum failure, not a silently shorter log. A segment may end in zeros
// (src/storage/segment-log.ts writes them ahead of the records, so that a
// batch's fdatasync overwrites blocks the file already has instead of
// growing it): an all-zero frame with only zeros after it is the end of
// the records; zeros with data after them are a write that never finished
// or one the disk lost, never the end. A segment is named
// `<seq>-<first index>.wal` (16 hex digits each) and holds consecutive
// entries starting at its first index. Decoding trusts nothing it reads: a
// bad header, length, checksum, index or type is a problem value naming the
// byte offset, which the caller turns into a refusal or a torn tail.

import { crc32 } from 'node:zlib';
import { EntryType, type Entry } from '../raft/types.ts';
import { firstNonZero } from '../util/bytes.ts';
import { assert } from '../util/assert.ts';

export const SEGMENT_HEADER_BYTES = 32;
export const RECORD_FRAME_BYTES = 8;
const BODY_HEADER_BYTES = 8 + 8 + 1;
/** A body longer than this is a damaged length field, not an entry (entries are capped far lower). */
export const RECORD_BODY_BYTES_MAX = 64 << 20;
const MAGIC = Buffer.from('VRDWAL\u0000\u0002', 'latin1');
const NAME_RE = /^([0-9a-f]{16})-([0-9a-f]{16})\.wal$/;

export interface SegmentName {
  seq: number;
  firstIndex: number;
}

export function segmentFileName(seq: number, firstIndex: number): string {
  return `${hex16(seq)}-${hex16(firstIndex)}.wal`;
}

/** The seq and first index a segment file name carries, or null for any other file. */
export function parseSegmentFileName(name: string): SegmentName | null {
  const m = NAME_RE.exec(name);
  if (!m) return null;
  const seq = Number.parseInt(m[1], 16);
  const firstIndex = Number.parseInt(m[2], 16);
  if (!Number.isSafeInteger(seq) || !Number.isSafeInteger(firstIndex) || firstIndex < 1) return null;
  return { seq, firstIndex };
}

function hex16(n: number): string {
  return n.toString(16).padStart(16, '0');
}

export function encodeSegmentHeader(seq: number, firstIndex: number): Buffer {
  assert(
    Number.isSafeInteger(seq) && seq >= 0 && Number.isSafeInteger(firstIndex) && firstIndex >= 0,
    `segment ${seq} from index ${firstIndex}: a seq and an index the header check reads back`,
  );
  const b = Buffer.alloc(SEGMENT_HEADER_BYTES);
  MAGIC.copy(b, 0);
  b.writeBigUInt64BE(BigInt(seq), 8);
  b.writeBigUInt64BE(BigInt(firstIndex), 16);
  b.writeUInt32BE(crc32(b.subarray(0, 28)), 28);
  return b;
}

/** Checks a segment's header against its name; returns what is wrong, or null. */
export function checkSegmentHeader(buf: Buffer, want: SegmentName): string | null {
  if (buf.byteLength < SEGMENT_HEADER_BYTES)
    return `the file is ${buf.byteLength} bytes, shorter than its ${SEGMENT_HEADER_BYTES}-byte header`;
  const stored = buf.readUInt32BE(28);
  const computed = crc32(buf.subarray(0, 28));
  if (stored !== computed) return `header checksum mismatch (stored ${hex32(stored)}, computed ${hex32(computed)})`;
  if (!buf.subarray(0, 8).equals(MAGIC))
    return `header does not start with the segment magic (format ${buf[7]}, expected ${MAGIC[7]})`;
  const seq = buf.readBigUInt64BE(8);
  const first = buf.readBigUInt64BE(16);
  if (seq !== BigInt(want.seq) || first !== BigInt(want.firstIndex)) {
    return `header names segment ${seq} from index ${first}, the file name says segment ${want.seq} from index ${want.firstIndex}`;
  }
  return null;
}

/** Frames entries as records into one buffer: one write per persisted batch. */
export function encodeRecords(entries: readonly Entry[]): { buf: Buffer; sizes: number[] } {
  let total = 0;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    // Paired with scanRecords: nothing is written that the scan would refuse as invalid.
    assert(
      Number.isSafeInteger(e.index) && e.index >= 0 && Number.isSafeInteger(e.term) && e.term >= 0,
      `entry ${e.index} (term ${e.term}) has a safe non-negative index and term`,
    );
    assert(
      e.type === EntryType.Normal || e.type === EntryType.ConfChange,
      `entry ${e.index} has a known type, not ${e.type}`,
    );
    if (i > 0) {
      const prev = entries[i - 1];
      assert(
        e.index === prev.index + 1 && e.term >= prev.term,
        `entry ${e.index} (term ${e.term}) follows entry ${prev.index} (term ${prev.term}) in one write`,
      );
    }
    total += RECORD_FRAME_BYTES + BODY_HEADER_BYTES + e.data.byteLength;
  }
  const buf = Buffer.allocUnsafe(total);
  const sizes: number[] = [];
  let at = 0;
  for (const e of entries) {
    const bodyLen = BODY_HEADER_BYTES + e.data.byteLength;
    if (bodyLen > RECORD_BODY_BYTES_MAX)
      throw new RangeError(
        `entry ${e.index} of ${e.data.byteLength} bytes exceeds the record limit ${RECORD_BODY_BYTES_MAX}`,
      );
    buf.writeUInt32BE(bodyLen, at);
    const body = at + RECORD_FRAME_BYTES;
    buf.writeBigUInt64BE(BigInt(e.index), body);
    buf.writeBigUInt64BE(BigInt(e.term), body + 8);
    buf.writeUInt8(e.type, body + 16);
    buf.set(e.data, body + BODY_HEADER_BYTES);
    buf.writeUInt32BE(recordCrc(buf, at, bodyLen), at + 4);
    sizes.push(RECORD_FRAME_BYTES + bodyLen);
    at += RECORD_FRAME_BYTES + bodyLen;
  }
  return { buf, sizes };
}

function recordCrc(buf: Buffer, at: number, bodyLen: number): number {
  const body = buf.subarray(at + RECORD_FRAME_BYTES, at + RECORD_FRAME_BYTES + bodyLen);
  return crc32(body, crc32(buf.subarray(at, at + 4)));
}

/**
 * Why a record could not be read. `incomplete`: the file ends inside the
 * record (a write that never finished, or a cut file); `checksum`: the
 * record is whole but its bytes are not what was written; `invalid`: it
 * cannot be a record this log wrote.
 */
export type RecordProblem =
  | { kind: 'incomplete'; offset: number; index: number; detail: string }
  | { kind: 'checksum'; offset: number; index: number; detail: string; atEnd: boolean }
  | { kind: 'invalid'; offset: number; index: number; detail: string };

export interface ScannedSegment {
  entries: Entry[];
  /** Byte offset of each entry's record, in order. */
  offsets: number[];
  /** Where the readable records end: the file size or where the trailing zeros start, unless there is a problem. */
  end: number;
  problem: RecordProblem | null;
}

/**
 * Reads the records of one segment (header already checked). Stops at the
 * first record that cannot be read and says why; `firstIndex` is the index
 * the first record must carry, and every record carries the next one.
 */
export function scanRecords(buf: Buffer, firstIndex: number): ScannedSegment {
  const entries: Entry[] = [];
  const offsets: number[] = [];
  let at = SEGMENT_HEADER_BYTES;
  let index = firstIndex;
  let prevTerm = 0;
  const size = buf.byteLength;
  const done = (problem: RecordProblem | null): ScannedSegment => ({ entries, offsets, end: at, problem });
  while (at < size) {
    const left = size - at;
    // The zeros written ahead of the records (see the top of this file), however few are left.
    if (buf[at] === 0 && firstNonZero(buf, at) === -1) return done(null);
    if (left < RECORD_FRAME_BYTES)
      return done({ kind: 'incomplete', offset: at, index, detail: `${left} bytes left, less than a record frame` });
    const bodyLen = buf.readUInt32BE(at);
    if (bodyLen === 0 && buf.readUInt32BE(at + 4) === 0) {
      const data = firstNonZero(buf, at + RECORD_FRAME_BYTES);
      return done({
        kind: 'incomplete',
        offset: at,
        index,
        detail: `zeros where a record should start, and data again at byte offset ${data}`,
      });
    }
    if (bodyLen < BODY_HEADER_BYTES || bodyLen > RECORD_BODY_BYTES_MAX) {
      return done({
        kind: 'invalid',
        offset: at,
        index,
        detail: `record length ${bodyLen} is outside ${BODY_HEADER_BYTES}..${RECORD_BODY_BYTES_MAX}`,
      });
    }
    if (RECORD_FRAME_BYTES + bodyLen > left) {
      // A write cut short ends the file; a damaged length field does not:
      // whole records still follow it.
      const next = findValidRecord(buf, at + 1, index);
      if (next) {
        return done({
          kind: 'invalid',
          offset: at,
          index,
          detail: `record length ${bodyLen} runs past the end of the file, but a whole record of index ${next.index} follows at byte offset ${next.offset}`,
        });
      }
      return done({
        kind: 'incomplete',
        offset: at,
        index,
        detail: `the record needs ${RECORD_FRAME_BYTES + bodyLen} bytes, the file has ${left} left`,
      });
    }
    const stored = buf.readUInt32BE(at + 4);
    const computed = recordCrc(buf, at, bodyLen);
    if (stored !== computed) {
      const atEnd = firstNonZero(buf, at + RECORD_FRAME_BYTES + bodyLen) === -1;
      return done({
        kind: 'checksum',
        offset: at,
        index,
        detail: `checksum mismatch (stored ${hex32(stored)}, computed ${hex32(computed)})`,
        atEnd,
      });
    }
    const body = at + RECORD_FRAME_BYTES;
    const gotIndex = buf.readBigUInt64BE(body);
    const term = buf.readBigUInt64BE(body + 8);
    const type = buf.readUInt8(body + 16);
    if (gotIndex !== BigInt(index))
      return done({
        kind: 'invalid',
        offset: at,
        index,
        detail: `the record holds index ${gotIndex}, expected ${index}`,
      });
    if (term > BigInt(Number.MAX_SAFE_INTEGER) || Number(term) < prevTerm) {
      return done({
        kind: 'invalid',
        offset: at,
        index,
        detail: `term ${term} is below term ${prevTerm} before it or out of range`,
      });
    }
    if (type !== EntryType.Normal && type !== EntryType.ConfChange)
      return done({ kind: 'invalid', offset: at, index, detail: `unknown entry type ${type}` });
    // A copy, so the entry does not pin the whole file buffer.
    const data = new Uint8Array(buf.subarray(body + BODY_HEADER_BYTES, body + bodyLen));
    entries.push({ index, term: Number(term), type, data });
    offsets.push(at);
    prevTerm = Number(term);
    index += 1;
    at += RECORD_FRAME_BYTES + bodyLen;
  }
  return done(null);
}

/**
 * The first whole record at or after `from` whose index is `minIndex` or
 * more, or null. Only used on a damaged file, to tell a cut tail (nothing
 * readable follows) from a damaged record in the middle.
 */
function findValidRecord(buf: Buffer, from: number, minIndex: number): { offset: number; index: number } | null {
  const maxIndex = minIndex + Math.ceil(buf.byteLength / (RECORD_FRAME_BYTES + BODY_HEADER_BYTES));
  for (let q = from; q + RECORD_FRAME_BYTES + BODY_HEADER_BYTES <= buf.byteLength; q++) {
    const bodyLen = buf.readUInt32BE(q);
    if (bodyLen < BODY_HEADER_BYTES || q + RECORD_FRAME_BYTES + bodyLen > buf.byteLength) continue;
    const index = buf.readBigUInt64BE(q + RECORD_FRAME_BYTES);
    // Cheap filters first: the checksum is computed only for a plausible index.
    if (index < BigInt(minIndex) || index > BigInt(maxIndex)) continue;
    if (buf.readUInt32BE(q + 4) === recordCrc(buf, q, bodyLen)) return { offset: q, index: Number(index) };
  }
  return null;
}

function hex32(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}
