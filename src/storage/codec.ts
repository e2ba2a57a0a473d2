// The on-disk format of the Raft storage: keys and record values.
//
// Every value is an envelope [u32 crc32 of payload][u8 record kind][payload]
// so that a flipped bit, a torn write or a record read under the wrong key is
// found on start, before the node answers anyone: a coordinator that serves
// from a damaged log could hand out a decision that contradicts the cluster's
// (AC1). Numbers are big-endian; strings are UTF-8 with a u16 length; byte
// strings carry a u32 length. No JSON: entries hold arbitrary binary data.

import { assert } from '../util/assert.ts';
import { GROUPS_MAX, groupsProblem } from '../domain/group.ts';
import { crc32 } from 'node:zlib';
import type { ConfState, HardState, Snapshot } from '../raft/types.ts';
import type { StorageIdentity } from './types.ts';

export enum RecordKind {
  Identity = 1,
  HardState = 2,
  Snapshot = 3,
  // 4 was the raft log record of format 1 (entries in LevelDB); never reused.
  LogState = 5,
  /** The number of decision groups the cluster was founded with (absent: 1). */
  Groups = 6,
  /** One group's log state in the shared group log (src/storage/group-store.ts). */
  GroupLogState = 7,
  /** Every group's log state at once, in the group mark file (src/storage/group-store.ts). */
  GroupMarks = 8,
}

/**
 * Bumped when the format changes incompatibly; checked on every start, and
 * a directory of any other version is refused. 2: entries in segment files
 * (wal/), LevelDB keeps identity, hard state, snapshot and the log state
 * (high-water mark). Format 1 of earlier development builds kept the
 * entries in LevelDB too; it is not read.
 */
export const FORMAT_VERSION = 2;

const ENVELOPE_BYTES = 5;
const STRING_BYTES_MAX = 0xffff;

// ---- keys ---------------------------------------------------------------

export const KEY_IDENTITY: Uint8Array = Uint8Array.of(0x01);
export const KEY_HARD_STATE: Uint8Array = Uint8Array.of(0x02);
export const KEY_SNAPSHOT: Uint8Array = Uint8Array.of(0x03);
export const KEY_LOG_STATE: Uint8Array = Uint8Array.of(0x04);
/** Written only by a cluster founded with more than one group: a directory without it has one. */
export const KEY_GROUPS: Uint8Array = Uint8Array.of(0x05);
/** A group's log state in the shared group log (G > 1 only; per group through groupKey). */
export const KEY_GROUP_LOG_STATE: Uint8Array = Uint8Array.of(0x06);

/**
 * Group `group`'s copy of a per-group key (hard state, snapshot, group log
 * state). Group 0 keeps today's keys, so a directory of one group holds
 * exactly the keys it always did.
 */
export function groupKey(key: Uint8Array, group: number): Uint8Array {
  assert(
    key.byteLength === 1 && Number.isInteger(group) && group >= 0 && group <= 0xffff,
    `group key for group ${group}`,
  );
  return group === 0 ? key : Uint8Array.of(0x10, key[0], group >> 8, group & 0xff);
}

// ---- errors -------------------------------------------------------------

/**
 * A record on disk is not what was written, or the records disagree with
 * each other. The node cannot tell what else is lost, so it must not serve;
 * the operator restores it from a peer.
 */
export class CorruptRecordError extends Error {
  constructor(
    /** The LevelDB directory or the segment file that holds the record. */
    readonly dbPath: string,
    /** Which record, e.g. "raft log record at byte offset 4096, index 1234". */
    readonly record: string,
    /** What is wrong with it. */
    readonly problem: string,
  ) {
    super(`corrupt ${record} in ${dbPath}: ${problem}; the node refuses to serve — ${repairAdvice(dbPath)}`);
    this.name = 'CorruptRecordError';
  }
}

/** What the operator does about a damaged record, by where it lives (docs/storage.md). */
function repairAdvice(path: string): string {
  if (path.endsWith('.wal')) {
    return 'run `verdict node repair --config <file>` to move the damaged log aside; the node then rejoins from its peers (docs/storage.md)';
  }
  return 'run `verdict node repair --config <file>` to move the data directory aside; the node then rejoins empty, and votes once a leader has caught it up (docs/storage.md)';
}

/** Thrown by the reader on a malformed payload; turned into a CorruptRecordError. */
class MalformedPayload extends Error {}

const RECORD_NAMES: Record<RecordKind, string> = {
  [RecordKind.Identity]: 'identity record',
  [RecordKind.HardState]: 'hard state record',
  [RecordKind.Snapshot]: 'snapshot record',
  [RecordKind.LogState]: 'log state record',
  [RecordKind.Groups]: 'decision groups record',
  [RecordKind.GroupLogState]: 'group log state record',
  [RecordKind.GroupMarks]: 'group marks record',
};

// ---- envelope -----------------------------------------------------------

function seal(kind: RecordKind, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(ENVELOPE_BYTES + payload.byteLength);
  const view = new DataView(out.buffer);
  view.setUint32(0, crc32(payload));
  view.setUint8(4, kind);
  out.set(payload, ENVELOPE_BYTES);
  return out;
}

function open(value: Uint8Array, kind: RecordKind, dbPath: string, record: string): Uint8Array {
  if (value.byteLength < ENVELOPE_BYTES) {
    throw new CorruptRecordError(
      dbPath,
      record,
      `record is ${value.byteLength} bytes, shorter than its ${ENVELOPE_BYTES}-byte header`,
    );
  }
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  const payload = value.subarray(ENVELOPE_BYTES);
  const stored = view.getUint32(0);
  const computed = crc32(payload);
  if (stored !== computed) {
    throw new CorruptRecordError(
      dbPath,
      record,
      `checksum mismatch (stored ${hex32(stored)}, computed ${hex32(computed)})`,
    );
  }
  const storedKind = view.getUint8(4);
  if (storedKind !== kind) {
    const name = RECORD_NAMES[storedKind as RecordKind] ?? `unknown record kind ${storedKind}`;
    throw new CorruptRecordError(dbPath, record, `holds a ${name} (kind ${storedKind}), expected kind ${kind}`);
  }
  return payload;
}

/** Opens the envelope and parses the payload, turning any parse failure into a CorruptRecordError. */
function decodeRecord<T>(
  value: Uint8Array,
  kind: RecordKind,
  dbPath: string,
  record: string,
  parse: (r: Reader) => T,
): T {
  const payload = open(value, kind, dbPath, record);
  try {
    const reader = new Reader(payload);
    const out = parse(reader);
    reader.end();
    return out;
  } catch (err) {
    if (err instanceof MalformedPayload) throw new CorruptRecordError(dbPath, record, err.message);
    throw err;
  }
}

function hex32(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}

// ---- records ------------------------------------------------------------

export function encodeHardState(hs: HardState): Uint8Array {
  const w = new Writer(8 + 8 + 2 + hs.vote.length * 3);
  w.u64(hs.term, 'hard state term');
  w.u64(hs.commit, 'hard state commit');
  w.string(hs.vote);
  return seal(RecordKind.HardState, w.finish());
}

export function decodeHardState(value: Uint8Array, dbPath: string): HardState {
  return decodeRecord(value, RecordKind.HardState, dbPath, RECORD_NAMES[RecordKind.HardState], (r) => {
    const term = r.u64();
    const commit = r.u64();
    return { term, vote: r.string(), commit };
  });
}

export function encodeSnapshot(s: Snapshot): Uint8Array {
  const w = new Writer(64 + s.data.byteLength);
  w.u64(s.metadata.index, 'snapshot index');
  w.u64(s.metadata.term, 'snapshot term');
  const cs = s.metadata.confState;
  w.strings(cs.voters);
  w.strings(cs.learners);
  w.strings(cs.votersOutgoing);
  w.bytes(s.data);
  return seal(RecordKind.Snapshot, w.finish());
}

export function decodeSnapshot(value: Uint8Array, dbPath: string): Snapshot {
  return decodeRecord(value, RecordKind.Snapshot, dbPath, RECORD_NAMES[RecordKind.Snapshot], (r) => {
    const index = r.u64();
    const term = r.u64();
    const confState: ConfState = { voters: r.strings(), learners: r.strings(), votersOutgoing: r.strings() };
    return { metadata: { index, term, confState }, data: r.bytes() };
  });
}

/**
 * What LevelDB knows about the segment log, kept outside the log it
 * describes so that a log cut short on disk is noticed. The mark has two
 * fields because it is written in parallel with the segment's fdatasync:
 * `highWater…` is what was synced before the batch it goes with (so it may
 * have been acknowledged), `mayHoldIndex` where that batch ends. A log end
 * below the first is lost acknowledged records; one between the two is an
 * ordinary crash (docs/storage.md).
 */
export interface LogState {
  /** Acknowledged through: the last index (and its term) synced before this record was written. */
  highWaterIndex: number;
  highWaterTerm: number;
  /** Segments with a lower seq belong to a log that a leader's snapshot replaced. */
  firstSeq: number;
  /** May hold up to: where the log ends once the batch written beside this record is synced (>= highWaterIndex). */
  mayHoldIndex: number;
  /**
   * One higher for each mark written, here or in the mark file
   * (src/storage/mark-file.ts): the newest record is the mark. 0 in records
   * written before the mark file existed.
   */
  markSeq: number;
}

export function encodeLogState(s: LogState): Uint8Array {
  assert(
    s.mayHoldIndex >= s.highWaterIndex,
    `log state: may-hold ${s.mayHoldIndex} is below acknowledged-through ${s.highWaterIndex}`,
  );
  const w = new Writer(40);
  w.u64(s.highWaterIndex, 'high-water index');
  w.u64(s.highWaterTerm, 'high-water term');
  w.u64(s.firstSeq, 'first segment seq');
  w.u64(s.mayHoldIndex, 'may-hold index');
  w.u64(s.markSeq, 'mark seq');
  return seal(RecordKind.LogState, w.finish());
}

export function decodeLogState(value: Uint8Array, dbPath: string): LogState {
  return decodeRecord(value, RecordKind.LogState, dbPath, RECORD_NAMES[RecordKind.LogState], (r) => {
    const highWaterIndex = r.u64();
    const highWaterTerm = r.u64();
    const firstSeq = r.u64();
    // Written before the two-field mark: the mark was synced after the entries it names.
    const mayHoldIndex = r.left() > 0 ? r.u64() : highWaterIndex;
    if (mayHoldIndex < highWaterIndex)
      throw new MalformedPayload(
        `may-hold index ${mayHoldIndex} is below the acknowledged-through index ${highWaterIndex}`,
      );
    // Written before the mark file: the only mark there was.
    const markSeq = r.left() > 0 ? r.u64() : 0;
    return { highWaterIndex, highWaterTerm, firstSeq, mayHoldIndex, markSeq };
  });
}

/** The number of decision groups a cluster was founded with (docs/architecture.md, "Decision groups"). */
export function encodeGroups(groups: number): Uint8Array {
  // Paired with decodeGroups: nothing is written that the reader would refuse.
  assert(groupsProblem(groups) === null && groups >= 2, `a groups record holds 2..${GROUPS_MAX} groups, not ${groups}`);
  const w = new Writer(8);
  w.u64(groups, 'groups');
  return seal(RecordKind.Groups, w.finish());
}

export function decodeGroups(value: Uint8Array, dbPath: string): number {
  return decodeRecord(value, RecordKind.Groups, dbPath, RECORD_NAMES[RecordKind.Groups], (r) => {
    const groups = r.u64();
    const bad = groupsProblem(groups);
    if (bad !== null) throw new MalformedPayload(bad);
    if (groups < 2) throw new MalformedPayload(`${groups} group: a directory of one group holds no groups record`);
    return groups;
  });
}

/**
 * One group's state in the shared group log (src/storage/group-store.ts):
 * its high-water mark (acknowledged through), and where its log restarted
 * after a leader's snapshot (records of the group before that position
 * belong to a history the snapshot replaced). `markSeq` orders it against
 * the group mark file's records: the higher wins; a record written before
 * the file existed has none (0).
 */
export interface GroupLogState {
  highWaterIndex: number;
  highWaterTerm: number;
  restartSeq: number;
  restartOffset: number;
  markSeq: number;
}

function writeGroupLogState(w: Writer, s: Omit<GroupLogState, 'markSeq'>): void {
  w.u64(s.highWaterIndex, 'high-water index');
  w.u64(s.highWaterTerm, 'high-water term');
  w.u64(s.restartSeq, 'restart segment seq');
  w.u64(s.restartOffset, 'restart offset');
}

function readGroupLogState(r: Reader): Omit<GroupLogState, 'markSeq'> {
  return { highWaterIndex: r.u64(), highWaterTerm: r.u64(), restartSeq: r.u64(), restartOffset: r.u64() };
}

export function encodeGroupLogState(s: GroupLogState): Uint8Array {
  const w = new Writer(40);
  writeGroupLogState(w, s);
  w.u64(s.markSeq, 'mark seq');
  return seal(RecordKind.GroupLogState, w.finish());
}

export function decodeGroupLogState(value: Uint8Array, dbPath: string): GroupLogState {
  return decodeRecord(value, RecordKind.GroupLogState, dbPath, RECORD_NAMES[RecordKind.GroupLogState], (r) => {
    const s = readGroupLogState(r);
    // Written before the group mark file: four fields, no mark seq.
    return { ...s, markSeq: r.left() > 0 ? r.u64() : 0 };
  });
}

/** Every group's log state, in the group mark file: one record, one mark seq for all. */
export interface GroupMarks {
  markSeq: number;
  groups: Omit<GroupLogState, 'markSeq'>[];
}

export function encodeGroupMarks(m: GroupMarks): Uint8Array {
  const w = new Writer(16 + 32 * m.groups.length);
  w.u64(m.markSeq, 'mark seq');
  w.u64(m.groups.length, 'groups');
  for (const g of m.groups) writeGroupLogState(w, g);
  return seal(RecordKind.GroupMarks, w.finish());
}

export function decodeGroupMarks(value: Uint8Array, path: string): GroupMarks {
  return decodeRecord(value, RecordKind.GroupMarks, path, RECORD_NAMES[RecordKind.GroupMarks], (r) => {
    const markSeq = r.u64();
    const count = r.u64();
    const bad = groupsProblem(count);
    if (bad !== null) throw new MalformedPayload(bad);
    const groups: Omit<GroupLogState, 'markSeq'>[] = [];
    for (let g = 0; g < count; g++) groups.push(readGroupLogState(r));
    return { markSeq, groups };
  });
}

export interface IdentityRecord extends StorageIdentity {
  formatVersion: number;
}

export function encodeIdentity(id: StorageIdentity, formatVersion = FORMAT_VERSION): Uint8Array {
  const w = new Writer(16 + (id.clusterId.length + id.nodeId.length) * 3);
  w.u8(formatVersion);
  w.string(id.clusterId);
  w.string(id.nodeId);
  return seal(RecordKind.Identity, w.finish());
}

export function decodeIdentity(value: Uint8Array, dbPath: string): IdentityRecord {
  return decodeRecord(value, RecordKind.Identity, dbPath, RECORD_NAMES[RecordKind.Identity], (r) => {
    const formatVersion = r.u8();
    const clusterId = r.string();
    return { formatVersion, clusterId, nodeId: r.string() };
  });
}

// ---- byte plumbing ------------------------------------------------------

function checkU64(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what} must be a non-negative safe integer, got ${n}`);
}

/** Appends to a growable buffer; `sizeHint` avoids most reallocations. */
class Writer {
  private buf: Uint8Array;
  private view: DataView;
  private at = 0;

  constructor(sizeHint: number) {
    this.buf = new Uint8Array(Math.max(16, sizeHint));
    this.view = new DataView(this.buf.buffer);
  }

  u8(n: number): void {
    this.reserve(1);
    this.view.setUint8(this.at, n);
    this.at += 1;
  }

  u64(n: number, what: string): void {
    checkU64(n, what);
    this.reserve(8);
    this.view.setBigUint64(this.at, BigInt(n));
    this.at += 8;
  }

  bytes(b: Uint8Array): void {
    this.reserve(4 + b.byteLength);
    this.view.setUint32(this.at, b.byteLength);
    this.buf.set(b, this.at + 4);
    this.at += 4 + b.byteLength;
  }

  string(s: string): void {
    const b = Buffer.from(s, 'utf8');
    if (b.byteLength > STRING_BYTES_MAX)
      throw new RangeError(`string of ${b.byteLength} bytes exceeds ${STRING_BYTES_MAX}`);
    this.reserve(2 + b.byteLength);
    this.view.setUint16(this.at, b.byteLength);
    this.buf.set(b, this.at + 2);
    this.at += 2 + b.byteLength;
  }

  strings(list: readonly string[]): void {
    this.reserve(4);
    this.view.setUint32(this.at, list.length);
    this.at += 4;
    for (const s of list) this.string(s);
  }

  finish(): Uint8Array {
    return this.buf.subarray(0, this.at);
  }

  private reserve(n: number): void {
    if (this.at + n <= this.buf.byteLength) return;
    const next = new Uint8Array(Math.max(this.buf.byteLength * 2, this.at + n));
    next.set(this.buf.subarray(0, this.at));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
}

/** Reads a payload; every read is bounds-checked so a bad length cannot read past the record. */
class Reader {
  private readonly view: DataView;
  private at = 0;

  constructor(private readonly buf: Uint8Array) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  u8(): number {
    this.need(1);
    return this.view.getUint8(this.at++);
  }

  u64(): number {
    this.need(8);
    const n = this.view.getBigUint64(this.at);
    this.at += 8;
    if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw new MalformedPayload(`integer ${n} exceeds the safe range`);
    return Number(n);
  }

  bytes(): Uint8Array {
    this.need(4);
    const len = this.view.getUint32(this.at);
    this.at += 4;
    this.need(len);
    // A copy into a plain Uint8Array (the input may be a Buffer, whose slice
    // is a view), so callers never hold on to the whole LevelDB value.
    const out = new Uint8Array(this.buf.subarray(this.at, this.at + len));
    this.at += len;
    return out;
  }

  string(): string {
    this.need(2);
    const len = this.view.getUint16(this.at);
    this.at += 2;
    this.need(len);
    const s = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.at, len).toString('utf8');
    this.at += len;
    return s;
  }

  strings(): string[] {
    this.need(4);
    const count = this.view.getUint32(this.at);
    this.at += 4;
    // Each string takes at least its 2-byte length: a larger count is garbage.
    this.need(count * 2);
    const out: string[] = [];
    for (let i = 0; i < count; i++) out.push(this.string());
    return out;
  }

  /** Bytes not read yet. */
  left(): number {
    return this.buf.byteLength - this.at;
  }

  end(): void {
    const left = this.buf.byteLength - this.at;
    if (left !== 0) throw new MalformedPayload(`${left} unexpected trailing bytes`);
  }

  private need(n: number): void {
    const left = this.buf.byteLength - this.at;
    if (n > left)
      throw new MalformedPayload(`payload truncated: needs ${n} more bytes at offset ${this.at}, has ${left}`);
  }
}
