// The Raft log's own write-ahead file: segments of checksummed records
// (src/storage/segment-format.ts), one pre-encoded buffer, one write and one
// fdatasync per persisted batch, and an in-memory index of where each
// record starts, so a truncation is one ftruncate.
//
// A batch that grows the file makes its fdatasync commit the file system's
// journal too (the new size and blocks), a second write and a longer wait.
// So the segment is extended with zeros ahead of the records, a chunk at a
// time, in the same write and sync as the batch that reaches the end of
// what is there: the batches after it overwrite zeros in blocks the file
// already has, and their fdatasync writes only the data. The zeros are the
// end of the records when read back (src/storage/segment-format.ts).
//
// Recovery tells three things apart (docs/storage.md):
//  - a torn tail: the last record of the last segment is incomplete (or
//    zeros stand where it should start, with data after them), or whole but
//    failing its checksum with only zeros after it, and lies beyond the
//    high-water mark. It is a write that was never synced, and it is cut
//    off;
//  - lost records: the last segment ends (cut, incomplete, or in zeros) below the
//    high-water mark. What is readable is kept; the caller starts the node
//    in the recovering state (src/raft/raft.ts, recoverIndex);
//  - corruption: any other unreadable record or header. Nothing is cut: the
//    node refuses to start with the file, the byte offset and the index.

import { assert } from '../util/assert.ts';
import { firstNonZero } from '../util/bytes.ts';
import { mkdir, open, readdir, readFile, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { writeSync, writevSync } from 'node:fs';
import { join } from 'node:path';
import { type Entry } from '../raft/types.ts';
import { CorruptRecordError } from './codec.ts';
import {
  checkSegmentHeader,
  encodeRecords,
  encodeSegmentHeader,
  parseSegmentFileName,
  scanRecords,
  SEGMENT_HEADER_BYTES,
  segmentFileName,
} from './segment-format.ts';

/** Segments roll over once they reach this size (a batch is never split). */
export const SEGMENT_BYTES_DEFAULT = 64 << 20;
/** How far past a batch the segment is extended with zeros (never past the roll-over size). */
export const PREALLOC_BYTES_DEFAULT = 512 << 10;

interface Segment {
  seq: number;
  firstIndex: number;
  path: string;
  /** Byte offset of each record: offsets[k] holds index firstIndex + k. */
  offsets: number[];
  /** The term of each record, for the high-water mark's term. */
  terms: number[];
  /** Where the records end. */
  size: number;
  /** The file's size: `size` plus the zeros written ahead of the records. */
  allocated: number;
}

export interface SegmentLogOpenOptions {
  /** The stored snapshot: the log must cover snapIndex + 1 onward. */
  snapIndex: number;
  /** Segments with a lower seq belong to a log a leader's snapshot replaced. */
  firstSeq: number;
  /** The last index this node synced and acknowledged (the high-water mark). */
  highWaterIndex: number;
  segmentBytes?: number;
  /** Zeros written ahead of the records (PREALLOC_BYTES_DEFAULT); 0 lets each batch grow the file. */
  preallocBytes?: number;
  /** Told about every tail that was cut, for the node's log. */
  onTruncated?: (what: TruncatedTail) => void;
}

export interface TruncatedTail {
  file: string;
  offset: number;
  index: number;
  detail: string;
  /** Whether the cut lies below the high-water mark (records that were synced are gone). */
  belowHighWater: boolean;
  /** Where the cut bytes were saved, when they were below the high-water mark. */
  savedAs: string | null;
}

export class SegmentLog {
  private handle: FileHandle | null = null;

  private constructor(
    readonly dir: string,
    private segments: Segment[],
    private readonly segmentBytes: number,
    private readonly preallocBytes: number,
  ) {}

  /** Reads every segment back (see the top of this file); returns the log and its entries after snapIndex. */
  static async open(dir: string, o: SegmentLogOpenOptions): Promise<{ log: SegmentLog; entries: Entry[] }> {
    await mkdir(dir, { recursive: true });
    const listed = await readdir(dir, { withFileTypes: true });
    // Something that is named like a segment but is not a file (a directory put in its place) is refused naming its
    // path.
    const odd = listed.find((e) => parseSegmentFileName(e.name) !== null && !e.isFile());
    if (odd !== undefined)
      throw new CorruptRecordError(
        join(dir, odd.name),
        'raft log segment',
        `it is ${odd.isDirectory() ? 'a directory' : 'not a regular file'}, not a segment file`,
      );
    const named = listed
      .map((e) => ({ name: e.name, parsed: parseSegmentFileName(e.name) }))
      .filter((n): n is { name: string; parsed: { seq: number; firstIndex: number } } => n.parsed !== null)
      .sort((a, b) => a.parsed.seq - b.parsed.seq);
    const segments: Segment[] = [];
    for (const n of named) {
      const path = join(dir, n.name);
      // A leader's snapshot replaced the log these belong to; the removal was interrupted.
      if (n.parsed.seq < o.firstSeq) await rm(path, { force: true });
      else
        segments.push({
          seq: n.parsed.seq,
          firstIndex: n.parsed.firstIndex,
          path,
          offsets: [],
          terms: [],
          size: 0,
          allocated: 0,
        });
    }
    // Segments wholly covered by the snapshot are compaction that was interrupted.
    while (segments.length > 1 && segments[1].firstIndex <= o.snapIndex + 1) {
      await rm(segments.shift()!.path, { force: true });
    }
    const entries: Entry[] = [];
    let expected = segments.length > 0 ? segments[0].firstIndex : o.snapIndex + 1;
    if (expected > o.snapIndex + 1) {
      throw new CorruptRecordError(
        segments[0].path,
        'raft log segment',
        `the log starts at index ${expected} but the snapshot ends at ${o.snapIndex}: entries ${o.snapIndex + 1}..${expected - 1} are missing`,
      );
    }
    for (let i = 0; i < segments.length; i++) {
      const s = segments[i];
      const last = i === segments.length - 1;
      if (i > 0 && s.seq !== segments[i - 1].seq + 1) {
        throw new CorruptRecordError(
          s.path,
          'raft log segment',
          `segment ${segments[i - 1].seq + 1} before it is missing`,
        );
      }
      const buf = await readFile(s.path);
      if (s.firstIndex !== expected) {
        // A segment created for a roll or a snapshot that never got a record
        // (the crash came first) names an index the log never reached.
        if (last && (buf.byteLength <= SEGMENT_HEADER_BYTES || firstNonZero(buf, SEGMENT_HEADER_BYTES) === -1)) {
          await rm(s.path, { force: true });
          segments.pop();
          break;
        }
        throw new CorruptRecordError(
          s.path,
          'raft log segment',
          `it starts at index ${s.firstIndex} but the segment before it ends at ${expected - 1}`,
        );
      }
      if (last && buf.byteLength < SEGMENT_HEADER_BYTES) {
        // Creating the segment was interrupted (it is synced before its first record is written).
        o.onTruncated?.({
          file: s.path,
          offset: 0,
          index: expected,
          detail: `segment header incomplete (${buf.byteLength} bytes)`,
          belowHighWater: expected <= o.highWaterIndex,
          savedAs: null,
        });
        await rm(s.path, { force: true });
        segments.pop();
        break;
      }
      const headerProblem = checkSegmentHeader(buf, s);
      if (headerProblem)
        throw new CorruptRecordError(
          s.path,
          `raft log segment header (byte offset 0, index ${s.firstIndex})`,
          headerProblem,
        );
      const scanned = scanRecords(buf, s.firstIndex);
      s.offsets = scanned.offsets;
      s.terms = scanned.entries.map((e) => e.term);
      s.size = scanned.end;
      s.allocated = buf.byteLength;
      for (const e of scanned.entries) if (e.index > o.snapIndex) entries.push(e);
      expected = s.firstIndex + scanned.entries.length;
      const p = scanned.problem;
      if (p === null) continue;
      const recordName = `raft log record at byte offset ${p.offset}, index ${p.index}`;
      const torn =
        last && (p.kind === 'incomplete' || (p.kind === 'checksum' && p.atEnd && p.index > o.highWaterIndex));
      if (!torn) throw new CorruptRecordError(s.path, recordName, p.detail);
      const belowHighWater = p.index <= o.highWaterIndex;
      let savedAs: string | null = null;
      if (belowHighWater) {
        // Synced records are gone: keep the unreadable bytes for whoever investigates the disk.
        savedAs = `${s.path}.cut-${p.offset}`;
        await writeFile(savedAs, buf.subarray(p.offset));
      }
      const fh = await open(s.path, 'r+');
      try {
        await fh.truncate(p.offset);
        await fh.datasync();
      } finally {
        await fh.close();
      }
      s.allocated = p.offset;
      o.onTruncated?.({ file: s.path, offset: p.offset, index: p.index, detail: p.detail, belowHighWater, savedAs });
    }
    const snapCovered = entries.length > 0 ? entries[0].index : expected;
    assert(
      snapCovered >= o.snapIndex + 1 || segments.length === 0,
      'segment log: entries before the snapshot were returned',
    );
    const log = new SegmentLog(
      dir,
      segments,
      o.segmentBytes ?? SEGMENT_BYTES_DEFAULT,
      o.preallocBytes ?? PREALLOC_BYTES_DEFAULT,
    );
    if (segments.length === 0) await log.createSegment(Math.max(1, o.firstSeq), o.snapIndex + 1);
    else {
      await log.openLast();
      // What was read back may sit only in the page cache (a process crash
      // before its fdatasync): synced now, so the next mark may claim it.
      await log.handle?.datasync();
    }
    // The snapshot may end past the log (a lost tail); the next entry then follows the snapshot.
    if (log.lastIndex() < o.snapIndex) await log.restartAt(o.snapIndex + 1);
    return { log, entries };
  }

  /** The index of the last record, or the first segment's first index - 1 when there is none. */
  lastIndex(): number {
    const s = this.segments[this.segments.length - 1];
    return s.firstIndex + s.offsets.length - 1;
  }

  /** The term of the record at `index`, or null when the log does not hold it. */
  termAt(index: number): number | null {
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const s = this.segments[i];
      if (index >= s.firstIndex) return s.terms[index - s.firstIndex] ?? null;
    }
    return null;
  }

  /** The seq of the newest segment. */
  lastSeq(): number {
    return this.segments[this.segments.length - 1].seq;
  }

  segmentCount(): number {
    return this.segments.length;
  }

  /**
   * Appends entries (they may replace a suffix: every record at or after
   * entries[0].index is cut first) with one write and one fdatasync, or,
   * given `sync`, one write and then `sync(fd)`, which must fdatasync that
   * file descriptor before it resolves (the store's sync worker does, and
   * the mark's write with it: src/storage/sync-worker.ts).
   */
  async append(entries: readonly Entry[], sync?: (fd: number) => Promise<void>): Promise<void> {
    if (entries.length === 0) return;
    const first = entries[0].index;
    assert(first <= this.lastIndex() + 1, `segment log: entry ${first} leaves a gap after ${this.lastIndex()}`);
    if (first <= this.lastIndex()) await this.truncateFrom(first);
    let s = this.segments[this.segments.length - 1];
    if (s.size >= this.segmentBytes && s.offsets.length > 0) {
      await this.createSegment(s.seq + 1, first);
      s = this.segments[this.segments.length - 1];
    }
    const { buf, sizes } = encodeRecords(entries);
    const fh = this.handle;
    assert(fh !== null, 'segment log: append after close');
    // The write goes to the page cache synchronously: a trip through the
    // thread pool costs more than the copy (and two wake-ups); only the
    // fdatasync waits for the disk, off the event loop.
    const end = s.size + buf.byteLength;
    if (end > s.allocated && end < this.segmentBytes && this.preallocBytes > 0) {
      // This batch reaches the end of the file: the zeros after it go in the same write and sync.
      const to = Math.min(this.segmentBytes, end + this.preallocBytes);
      writeAllSync(fh.fd, [buf, zeros(to - end)], s.size);
      s.allocated = to;
    } else {
      writeAllSync(fh.fd, [buf], s.size);
      s.allocated = Math.max(s.allocated, end);
    }
    if (sync) await sync(fh.fd);
    else await fh.datasync();
    let at = s.size;
    for (let i = 0; i < sizes.length; i++) {
      s.offsets.push(at);
      s.terms.push(entries[i].term);
      at += sizes[i];
    }
    s.size = at;
  }

  /**
   * Starts a new, empty log at `firstIndex` in a new segment (a leader's
   * snapshot replaced the log). Returns its seq: the caller records it as the
   * first seq durably, then calls dropBefore(seq).
   */
  async restartAt(firstIndex: number): Promise<number> {
    const seq = this.lastSeq() + 1;
    await this.createSegment(seq, firstIndex);
    return seq;
  }

  /** Deletes every segment before `seq` (they belong to a replaced log). */
  async dropBefore(seq: number): Promise<void> {
    while (this.segments.length > 1 && this.segments[0].seq < seq)
      await rm(this.segments.shift()!.path, { force: true });
  }

  /**
   * Deletes the segments whose records all lie at or below `index` (a synced snapshot covers them); the newest stays.
   */
  async compact(index: number): Promise<void> {
    while (this.segments.length > 1 && this.segments[1].firstIndex <= index + 1)
      await rm(this.segments.shift()!.path, { force: true });
  }

  async close(): Promise<void> {
    const fh = this.handle;
    this.handle = null;
    await fh?.close();
  }

  private async truncateFrom(index: number): Promise<void> {
    // Later segments go first, newest first, so a crash leaves a contiguous log.
    let removed = false;
    while (this.segments.length > 1 && this.segments[this.segments.length - 1].firstIndex > index) {
      await this.handle?.close();
      this.handle = null;
      await rm(this.segments.pop()!.path, { force: true });
      removed = true;
    }
    if (removed) {
      await syncDir(this.dir);
      await this.openLast();
    }
    const s = this.segments[this.segments.length - 1];
    const k = index - s.firstIndex;
    assert(k >= 0 && k <= s.offsets.length, `segment log: cannot cut at ${index} in a segment from ${s.firstIndex}`);
    if (k === s.offsets.length) return;
    const offset = s.offsets[k];
    assert(this.handle !== null, 'segment log: truncate after close');
    await this.handle.truncate(offset);
    s.offsets.length = k;
    s.terms.length = k;
    s.size = offset;
    s.allocated = offset;
  }

  private async createSegment(seq: number, firstIndex: number): Promise<void> {
    const path = join(this.dir, segmentFileName(seq, firstIndex));
    // A leftover of an interrupted creation under the same name is replaced.
    const fh = await open(path, 'w');
    try {
      await fh.write(encodeSegmentHeader(seq, firstIndex), 0, SEGMENT_HEADER_BYTES, 0);
      await fh.sync();
    } catch (err) {
      await fh.close();
      throw err;
    }
    await syncDir(this.dir);
    await this.handle?.close();
    this.handle = fh;
    this.segments.push({
      seq,
      firstIndex,
      path,
      offsets: [],
      terms: [],
      size: SEGMENT_HEADER_BYTES,
      allocated: SEGMENT_HEADER_BYTES,
    });
  }

  private async openLast(): Promise<void> {
    await this.handle?.close();
    this.handle = await open(this.segments[this.segments.length - 1].path, 'r+');
  }
}

/** Writes `bufs` one after another from `position`: one writev, and after a short write the rest of each buffer. */
function writeAllSync(fd: number, bufs: Uint8Array[], position: number): void {
  let done = writevSync(fd, bufs, position);
  let at = position;
  for (const b of bufs) {
    for (let k = Math.min(Math.max(done, 0), b.byteLength); k < b.byteLength; )
      k += writeSync(fd, b, k, b.byteLength - k, at + k);
    done -= b.byteLength;
    at += b.byteLength;
  }
}

let zeroBuf: Uint8Array = new Uint8Array(0);
/** A shared buffer of `n` zeros (it is only ever read). */
function zeros(n: number): Uint8Array {
  if (zeroBuf.byteLength < n) zeroBuf = new Uint8Array(n);
  return zeroBuf.subarray(0, n);
}

export async function syncDir(dir: string): Promise<void> {
  const dh = await open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}
