// The shared group log's files (format in src/storage/group-format.ts):
// segments of group-tagged records, appended one buffer and one fdatasync
// per batch of every group's Readys, rolled over at a size, and deleted as
// a prefix once no group needs their records (src/storage/group-store.ts
// decides which). Never truncated in place but at a torn tail on open: a
// group replaces its suffix by appending, and the reader keeps the last
// record of each index.

import { mkdir, open, readdir, readFile, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { writeSync } from 'node:fs';
import { join } from 'node:path';
import { assert } from '../util/assert.ts';
import { CorruptRecordError } from './codec.ts';
import {
  checkGroupSegmentHeader,
  encodeGroupRecords,
  encodeGroupSegmentHeader,
  groupSegmentFileName,
  parseGroupSegmentFileName,
  scanGroupRecords,
  type GroupRecord,
  type GroupRun,
} from './group-format.ts';
import { SEGMENT_BYTES_DEFAULT, syncDir, type TruncatedTail } from './segment-log.ts';
import { SEGMENT_HEADER_BYTES } from './segment-format.ts';

/** A place in the log: records at a lower (seq, offset) were written earlier. */
export interface LogPosition {
  seq: number;
  offset: number;
}

export function positionBefore(a: LogPosition, b: LogPosition): boolean {
  return a.seq < b.seq || (a.seq === b.seq && a.offset < b.offset);
}

interface GroupSegment {
  seq: number;
  path: string;
  /** Where the records end. */
  size: number;
}

/** A record read back on open, with the seq of the segment that holds it. */
export interface ReadRecord extends GroupRecord {
  seq: number;
}

export class GroupLog {
  private handle: FileHandle | null = null;
  /** fdatasyncs issued, for the one-sync-per-batch measure. */
  syncs = 0;

  private constructor(
    readonly dir: string,
    private readonly segments: GroupSegment[],
    private readonly segmentBytes: number,
    private readonly groups: number,
  ) {}

  /**
   * Reads every segment back, oldest first. A torn tail (the last segment's
   * last record incomplete, or whole with a bad checksum and only zeros
   * after it) is cut and reported: it is a write that was never synced, or
   * records the disk lost, which the store tells apart by each group's mark.
   * Anything else unreadable is refused naming the file and the offset.
   */
  static async open(
    dir: string,
    groups: number,
    segmentBytes = SEGMENT_BYTES_DEFAULT,
    onTruncated?: (t: TruncatedTail, cut: Buffer) => void,
  ): Promise<{ log: GroupLog; records: ReadRecord[] }> {
    await mkdir(dir, { recursive: true });
    const listed = await readdir(dir, { withFileTypes: true });
    const named = listed.flatMap((e) => {
      const seq = parseGroupSegmentFileName(e.name);
      if (seq === null) return [];
      if (!e.isFile()) throw new CorruptRecordError(join(dir, e.name), 'group log segment', 'it is not a regular file');
      return [{ seq, path: join(dir, e.name) }];
    });
    named.sort((a, b) => a.seq - b.seq);
    const segments: GroupSegment[] = [];
    const records: ReadRecord[] = [];
    for (let i = 0; i < named.length; i++) {
      const { seq, path } = named[i];
      const last = i === named.length - 1;
      if (i > 0 && seq !== named[i - 1].seq + 1)
        throw new CorruptRecordError(path, 'group log segment', `segment ${named[i - 1].seq + 1} before it is missing`);
      const buf = await readFile(path);
      if (last && buf.byteLength < SEGMENT_HEADER_BYTES) {
        // Creating the segment was interrupted (its header is synced before any record goes in).
        await rm(path, { force: true });
        break;
      }
      const headerProblem = checkGroupSegmentHeader(buf, seq);
      if (headerProblem) throw new CorruptRecordError(path, 'group log segment header (byte offset 0)', headerProblem);
      const scanned = scanGroupRecords(buf, groups);
      for (const r of scanned.records) records.push({ ...r, seq });
      segments.push({ seq, path, size: scanned.end });
      const p = scanned.problem;
      if (p === null) continue;
      const torn = last && (p.kind === 'incomplete' || (p.kind === 'checksum' && p.atEnd));
      if (!torn) throw new CorruptRecordError(path, `group log record at byte offset ${p.offset}`, p.detail);
      const fh = await open(path, 'r+');
      try {
        await fh.truncate(p.offset);
        await fh.datasync();
      } finally {
        await fh.close();
      }
      onTruncated?.(
        { file: path, offset: p.offset, index: 0, detail: p.detail, belowHighWater: false, savedAs: null },
        buf.subarray(p.offset),
      );
    }
    const log = new GroupLog(dir, segments, segmentBytes, groups);
    if (segments.length === 0) await log.createSegment(named.at(-1)?.seq ?? 1);
    else {
      log.handle = await open(segments[segments.length - 1].path, 'r+');
      // What was read back may sit only in the page cache: synced now, so a mark may claim it.
      await log.handle.datasync();
    }
    return { log, records };
  }

  /** Where the next record goes (before a roll-over, which the next append may do). */
  end(): LogPosition {
    const s = this.segments[this.segments.length - 1];
    return { seq: s.seq, offset: s.size };
  }

  lastSeq(): number {
    return this.segments[this.segments.length - 1].seq;
  }

  segmentSeqs(): number[] {
    return this.segments.map((s) => s.seq);
  }

  /**
   * Appends every run in one write and one fdatasync; returns the seq of the
   * segment they went into (a batch is never split over two). `sync`, when
   * given, makes the segment durable instead of a plain fdatasync (the sync
   * worker's one trip: the segment, then the marks).
   */
  async append(runs: readonly GroupRun[], sync?: (fd: number) => Promise<void>): Promise<number> {
    let s = this.segments[this.segments.length - 1];
    if (s.size >= this.segmentBytes && s.size > SEGMENT_HEADER_BYTES) {
      await this.createSegment(s.seq + 1);
      s = this.segments[this.segments.length - 1];
    }
    const buf = encodeGroupRecords(runs, this.groups);
    if (buf.byteLength === 0) return s.seq;
    const fh = this.handle;
    assert(fh !== null, 'group log: append after close');
    for (let k = 0; k < buf.byteLength; ) k += writeSync(fh.fd, buf, k, buf.byteLength - k, s.size + k);
    this.syncs += 1;
    if (sync) await sync(fh.fd);
    else await fh.datasync();
    s.size += buf.byteLength;
    return s.seq;
  }

  /** Deletes every segment before `seq`, never the newest. */
  async dropBefore(seq: number): Promise<void> {
    while (this.segments.length > 1 && this.segments[0].seq < seq)
      await rm(this.segments.shift()!.path, { force: true });
  }

  async close(): Promise<void> {
    const fh = this.handle;
    this.handle = null;
    await fh?.close();
  }

  private async createSegment(seq: number): Promise<void> {
    const path = join(this.dir, groupSegmentFileName(seq));
    const fh = await open(path, 'w');
    try {
      await fh.write(encodeGroupSegmentHeader(seq), 0, SEGMENT_HEADER_BYTES, 0);
      await fh.sync();
    } catch (err) {
      await fh.close();
      throw err;
    }
    await syncDir(this.dir);
    await this.handle?.close();
    this.handle = fh;
    this.segments.push({ seq, path, size: SEGMENT_HEADER_BYTES });
  }
}

/** Keeps the unreadable bytes of a cut below some group's mark, for whoever investigates the disk. */
export async function saveCut(t: TruncatedTail, cut: Buffer): Promise<string> {
  const savedAs = `${t.file}.cut-${t.offset}`;
  await writeFile(savedAs, cut);
  return savedAs;
}
