// The participant's file journal: append-only, group-committed, replayed on
// open. This is the runtime side of the Journal interface and may touch the
// disk; the engine only sees append(record, cb), where cb(null) means the
// record is synced (fdatasync) and survives a crash.
//
// File format: a sequence of frames
//
//   [u32 length, big-endian][u32 CRC-32 of payload][payload: UTF-8 JSON array of records]
//
// One frame is one group commit: the appends that arrived together, written
// with one write and made durable with one fdatasync. Because a frame is the
// unit of writing, a crash can only damage the last frame: a bad frame that
// reaches the end of the file (or is followed by nothing but zeros, as a
// filesystem may leave after extending the file) is a torn tail, truncated
// on open with a warning. Any other bad frame is corruption: open refuses
// with the file and the byte offset, and never serves a wrong record.
//
// Compaction, by size or by time: once the frames appended since the last
// compaction hold compactAfterBytes (or as many bytes as the last snapshot,
// whichever is larger, so the cost of rewriting the live state is spread over
// at least as many appended bytes), or compactAfterRecords records, or once
// compactAfterMs have passed with anything appended, the fold's snapshot is
// written to a temp file, synced, renamed over the journal, and the
// directory synced, so the journal is at every instant either the old file
// or the complete new one.
//
// Deferred records (options.deferred, a participant's DECISION records) do
// not start a sync of their own: they wait up to deferredSyncMs for another
// append to share its frame and its fdatasync, the next PREPARE's at low load.
// Their callbacks still run only once they are synced, so nothing that
// depends on them (the ACK) leaves before they are durable.
//
// Lazy records (options.lazy: a prepared record whose prepared state the
// database already holds durably, which nothing waits for) never start a
// sync: they ride in the next frame, usually their own DECISION's, and are
// synced alone only after lazySyncMs with no other append. Their callbacks
// too run once they are synced.
import { open, readFile, rm, rename, type FileHandle } from 'node:fs/promises';
import { writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { firstNonZero } from '../util/bytes.ts';
import { SILENT_LOG, withDefaults, type EngineLog } from './types.ts';

/** A frame larger than this is never written, so one found on disk is damage. */
export const FRAME_BYTES_MAX = 16 * 1024 * 1024;
const HEADER_BYTES = 8;

/** Folds durable records into a summary whose snapshot() can replace them all. */
export interface JournalFold<R> {
  add(record: R): void;
  snapshot(): R[];
}

export interface FileJournalOptions<R> {
  path: string;
  fold: JournalFold<R>;
  /** Validates a record read back from disk (assert on both sides of the boundary). */
  isRecord: (v: unknown) => v is R;
  compactAfterRecords?: number;
  /**
   * Compact once the frames appended since the last compaction hold this many bytes (or the last snapshot's size, if
   * larger).
   */
  compactAfterBytes?: number;
  /** Compact once this long has passed since the last compaction (or the open) and something was appended. */
  compactAfterMs?: number;
  /** Records that may wait for a later append's sync instead of starting their own. */
  deferred?: (record: R) => boolean;
  /** The longest a deferred record waits for company before it is synced alone. */
  deferredSyncMs?: number;
  /** Records nobody waits for: they never start a sync of their own before lazySyncMs. */
  lazy?: (record: R) => boolean;
  /** The longest a lazy record waits for another append before it is synced alone. */
  lazySyncMs?: number;
  /** A group commit is cut at this size; the rest waits for the next frame. */
  batchBytesMax?: number;
  /** Appends waiting for the disk; beyond it append fails at once (back-pressure). */
  queueRecordsMax?: number;
  log?: EngineLog;
}

export class JournalCorruptError extends Error {
  readonly path: string;
  readonly offsetBytes: number;
  constructor(path: string, offsetBytes: number, why: string) {
    super(
      `participant journal ${path} is corrupt at byte offset ${offsetBytes}: ${why}; restore the data directory from a backup or move the file away (its prepared transactions are then lost)`,
    );
    this.name = 'JournalCorruptError';
    this.path = path;
    this.offsetBytes = offsetBytes;
  }
}

interface Pending<R> {
  record: R;
  json: string;
  bytes: number;
  /** How long the record may wait for company before it starts a sync: not at all, deferredSyncMs, or lazySyncMs. */
  wait: 'now' | 'deferred' | 'lazy';
  cb: (err: Error | null) => void;
}

export interface JournalStats {
  /** Records in the file now: the last snapshot's plus those appended since. */
  recordsInFile: number;
  frames: number;
  syncs: number;
  compactions: number;
}

export class FileJournal<R> {
  private readonly o: Required<FileJournalOptions<R>>;
  private fh: FileHandle;
  private readonly queue: Pending<R>[] = [];
  private pumping: Promise<void> | null = null;
  private kickScheduled = false;
  private deferredTimer: NodeJS.Timeout | null = null;
  private lazyTimer: NodeJS.Timeout | null = null;
  private failed: Error | null = null;
  private closed = false;
  private appendedSinceCompaction = 0;
  private bytesSinceCompaction = 0;
  private snapshotBytes = 0;
  private lastCompactionAtMs = Date.now();
  private readonly s: JournalStats;

  private constructor(o: Required<FileJournalOptions<R>>, fh: FileHandle, recordsInFile: number, fileBytes: number) {
    this.o = o;
    this.fh = fh;
    this.s = { recordsInFile, frames: 0, syncs: 0, compactions: 0 };
    // What the file holds at open counts as appended: a large journal left by a crash is compacted soon.
    this.appendedSinceCompaction = recordsInFile;
    this.bytesSinceCompaction = fileBytes;
  }

  /** Replays the journal into o.fold (truncating a torn tail), then opens it for appending. */
  static async open<R>(opts: FileJournalOptions<R>): Promise<FileJournal<R>> {
    const o: Required<FileJournalOptions<R>> = withDefaults(
      {
        compactAfterRecords: 1_000_000,
        compactAfterBytes: 64 * 1024 * 1024,
        compactAfterMs: 10 * 60_000,
        deferred: () => false,
        deferredSyncMs: 2,
        lazy: () => false,
        lazySyncMs: 1_000,
        batchBytesMax: 1024 * 1024,
        queueRecordsMax: 10_000,
        log: SILENT_LOG,
      },
      opts,
    );
    if (
      !(
        o.compactAfterRecords > 0 &&
        o.compactAfterBytes > 0 &&
        o.compactAfterMs > 0 &&
        o.batchBytesMax > 0 &&
        o.queueRecordsMax > 0
      )
    )
      throw new Error('journal bounds must be positive');
    if (!(o.deferredSyncMs >= 0 && o.deferredSyncMs <= 1_000))
      throw new Error('journal deferredSyncMs must be 0 to 1000');
    if (!(o.lazySyncMs >= o.deferredSyncMs && o.lazySyncMs <= 60_000))
      throw new Error('journal lazySyncMs must be from deferredSyncMs to 60000');
    // A temp file is left only by a crash during compaction, before its rename: the journal itself is intact.
    await rm(tempPath(o.path), { force: true });
    let buf: Buffer | null = null;
    try {
      buf = await readFile(o.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    let records = 0;
    let fileBytes = 0;
    if (buf !== null) {
      const { validBytes, count } = replay(buf, o);
      records = count;
      fileBytes = validBytes;
      if (validBytes < buf.byteLength) {
        o.log.warn(
          { path: o.path, offsetBytes: validBytes, droppedBytes: buf.byteLength - validBytes },
          'journal: torn tail from a crash truncated',
        );
        const t = await open(o.path, 'r+');
        try {
          await t.truncate(validBytes);
          await t.sync();
        } finally {
          await t.close();
        }
      }
    }
    const fh = await open(o.path, 'a');
    // A new file's name must be durable before any record in it is acknowledged.
    if (buf === null) await syncDir(dirname(o.path));
    return new FileJournal(o, fh, records, fileBytes);
  }

  /** cb(null) once the record is synced; cb(err) if it may not be. After a failure every append fails. */
  append(record: R, cb: (err: Error | null) => void): void {
    const refuse = this.closed
      ? new Error(`journal ${this.o.path} is closed`)
      : this.failed !== null
        ? new Error(`journal ${this.o.path} failed earlier (${this.failed.message}); restart the participant`)
        : this.queue.length >= this.o.queueRecordsMax
          ? new Error(`journal ${this.o.path} has ${this.queue.length} appends waiting for the disk; try again later`)
          : null;
    if (refuse !== null) {
      process.nextTick(cb, refuse);
      return;
    }
    const json = JSON.stringify(record);
    const bytes = Buffer.byteLength(json);
    if (bytes + HEADER_BYTES + 2 > FRAME_BYTES_MAX) {
      process.nextTick(cb, new Error(`journal record of ${bytes} bytes is larger than a frame (${FRAME_BYTES_MAX})`));
      return;
    }
    const wait = this.o.deferred(record) ? 'deferred' : this.o.lazy(record) ? 'lazy' : 'now';
    this.queue.push({ record, json, bytes, wait, cb });
    this.kickFor(wait);
  }

  stats(): JournalStats {
    return { ...this.s };
  }

  /** Writes what is queued, then closes the file. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.clearTimers();
    if (this.pumping === null) this.startPump();
    while (this.pumping !== null) await this.pumping;
    await this.fh.close();
  }

  /** The first append of a quiet journal waits one turn, so appends arriving together share a frame and a sync. */
  private kick(): void {
    this.clearTimers();
    if (this.pumping !== null || this.kickScheduled) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      if (this.pumping === null && !this.closed) this.startPump();
    });
  }

  /**
   * A deferred (or lazy) record on a quiet journal waits deferredSyncMs (or
   * lazySyncMs) for an append to share a sync with; a running pump takes it
   * in its next frame anyway. A deferred record cuts a lazy one's wait short.
   */
  private kickFor(wait: Pending<R>['wait']): void {
    if (wait === 'now') return this.kick();
    if (this.pumping !== null || this.kickScheduled || this.deferredTimer !== null) return;
    if (wait === 'lazy') {
      this.lazyTimer ??= setTimeout(() => {
        this.lazyTimer = null;
        this.kick();
      }, this.o.lazySyncMs);
      return;
    }
    this.deferredTimer = setTimeout(() => {
      this.deferredTimer = null;
      this.kick();
    }, this.o.deferredSyncMs);
  }

  private clearTimers(): void {
    if (this.deferredTimer !== null) clearTimeout(this.deferredTimer);
    if (this.lazyTimer !== null) clearTimeout(this.lazyTimer);
    this.deferredTimer = null;
    this.lazyTimer = null;
  }

  private startPump(): void {
    this.pumping = this.pump()
      // A callback that throws is a bug: crash loudly rather than lose it in a rejected promise.
      .catch((err: unknown) =>
        process.nextTick(() => {
          throw err;
        }),
      )
      .finally(() => {
        this.pumping = null;
        if (this.queue.length === 0 || this.failed !== null || this.closed) return;
        // The most urgent record left decides how soon the next frame is written.
        this.kickFor(
          this.queue.some((p) => p.wait === 'now')
            ? 'now'
            : this.queue.some((p) => p.wait === 'deferred')
              ? 'deferred'
              : 'lazy',
        );
      });
  }

  private async pump(): Promise<void> {
    while (this.queue.length > 0 && this.failed === null) {
      const batch = this.takeBatch();
      const frame = encodeFrame(batch.map((p) => p.json));
      try {
        await writeAll(this.fh, frame);
        await this.fh.datasync();
      } catch (err) {
        this.fail(err as Error, batch);
        return;
      }
      this.s.frames += 1;
      this.s.syncs += 1;
      this.s.recordsInFile += batch.length;
      this.appendedSinceCompaction += batch.length;
      this.bytesSinceCompaction += frame.byteLength;
      for (const p of batch) this.o.fold.add(p.record);
      for (const p of batch) p.cb(null);
      if (this.compactionDue()) await this.compact();
    }
  }

  private compactionDue(): boolean {
    if (this.appendedSinceCompaction >= this.o.compactAfterRecords) return true;
    if (this.bytesSinceCompaction >= Math.max(this.o.compactAfterBytes, this.snapshotBytes)) return true;
    return this.appendedSinceCompaction > 0 && Date.now() - this.lastCompactionAtMs >= this.o.compactAfterMs;
  }

  private takeBatch(): Pending<R>[] {
    let bytes = 0;
    let n = 0;
    while (n < this.queue.length) {
      const b = this.queue[n].bytes + 1;
      if (n > 0 && bytes + b > this.o.batchBytesMax) break;
      bytes += b;
      n += 1;
    }
    return this.queue.splice(0, n);
  }

  /**
   * After a failed write or sync the file's state is unknown (a later fsync may not report it), so the journal stops.
   */
  private fail(err: Error, batch: Pending<R>[]): void {
    this.failed = err;
    this.o.log.error(
      { path: this.o.path, err: err.message },
      'journal write failed; the participant must be restarted',
    );
    for (const p of [...batch, ...this.queue.splice(0)]) p.cb(err);
  }

  private async compact(): Promise<void> {
    const records = this.o.fold.snapshot();
    const tmp = tempPath(this.o.path);
    let written = 0;
    try {
      const t = await open(tmp, 'w');
      try {
        for (const frame of framesOf(
          records.map((r) => JSON.stringify(r)),
          this.o.batchBytesMax,
        )) {
          await writeAll(t, frame);
          written += frame.byteLength;
        }
        await t.sync();
      } finally {
        await t.close();
      }
    } catch (err) {
      // The journal itself is untouched; try again when compaction is next due.
      this.o.log.warn(
        { path: this.o.path, err: (err as Error).message },
        'journal compaction failed; continuing on the uncompacted journal',
      );
      this.appendedSinceCompaction = 0;
      this.bytesSinceCompaction = 0;
      this.lastCompactionAtMs = Date.now();
      await rm(tmp, { force: true }).catch(() => {});
      return;
    }
    try {
      await rename(tmp, this.o.path);
      await syncDir(dirname(this.o.path));
      await this.fh.close();
      this.fh = await open(this.o.path, 'a');
    } catch (err) {
      this.fail(err as Error, []);
      return;
    }
    this.s.compactions += 1;
    this.s.recordsInFile = records.length;
    this.appendedSinceCompaction = 0;
    this.bytesSinceCompaction = 0;
    this.snapshotBytes = written;
    this.lastCompactionAtMs = Date.now();
    this.o.log.info({ path: this.o.path, records: records.length }, 'journal compacted');
  }
}

function tempPath(path: string): string {
  return join(dirname(path), `${basename(path)}.compact`);
}

function encodeFrame(jsons: string[]): Buffer {
  const payload = Buffer.from(`[${jsons.join(',')}]`, 'utf8');
  const frame = Buffer.allocUnsafe(HEADER_BYTES + payload.byteLength);
  frame.writeUInt32BE(payload.byteLength, 0);
  frame.writeUInt32BE(crc32(payload), 4);
  payload.copy(frame, HEADER_BYTES);
  return frame;
}

function* framesOf(jsons: string[], batchBytesMax: number): Generator<Buffer> {
  let cur: string[] = [];
  let bytes = 0;
  for (const j of jsons) {
    const b = Buffer.byteLength(j) + 1;
    if (cur.length > 0 && bytes + b > batchBytesMax) {
      yield encodeFrame(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(j);
    bytes += b;
  }
  if (cur.length > 0) yield encodeFrame(cur);
}

/**
 * Folds every intact frame; returns where the intact prefix ends. Throws JournalCorruptError on damage that is not a
 * torn tail.
 */
function replay<R>(buf: Buffer, o: Required<FileJournalOptions<R>>): { validBytes: number; count: number } {
  let offset = 0;
  let count = 0;
  const size = buf.byteLength;
  const tornOrCorrupt = (end: number, why: string): { validBytes: number; count: number } => {
    if (end >= size || firstNonZero(buf, offset) === -1) return { validBytes: offset, count };
    throw new JournalCorruptError(o.path, offset, why);
  };
  while (offset < size) {
    if (size - offset < HEADER_BYTES) return tornOrCorrupt(size, 'incomplete frame header');
    const len = buf.readUInt32BE(offset);
    const end = offset + HEADER_BYTES + len;
    if (len === 0 || len > FRAME_BYTES_MAX) return tornOrCorrupt(end, `impossible frame length ${len}`);
    if (end > size) return tornOrCorrupt(end, 'frame runs past the end of the file');
    const payload = buf.subarray(offset + HEADER_BYTES, end);
    if (crc32(payload) !== buf.readUInt32BE(offset + 4)) return tornOrCorrupt(end, 'CRC mismatch');
    // The CRC matched, so the bytes are what was written: a bad record here is a bug, never a torn write.
    let records: unknown;
    try {
      records = JSON.parse(payload.toString('utf8'));
    } catch {
      throw new JournalCorruptError(o.path, offset, 'frame payload is not JSON');
    }
    if (!Array.isArray(records) || records.length === 0)
      throw new JournalCorruptError(o.path, offset, 'frame payload is not a list of records');
    for (const r of records) {
      if (!o.isRecord(r))
        throw new JournalCorruptError(o.path, offset, `unrecognized record ${JSON.stringify(r).slice(0, 120)}`);
      o.fold.add(r);
      count += 1;
    }
    offset = end;
  }
  return { validBytes: offset, count };
}

/**
 * Writes the whole frame at the file's position. Synchronously: a frame is
 * small and goes to the page cache, so a trip through the thread pool (and
 * the wake-ups on both sides of it) would cost more than the copy; only the
 * fdatasync that follows waits for the disk, and that one stays off the
 * event loop.
 */
async function writeAll(fh: FileHandle, buf: Buffer): Promise<void> {
  let off = 0;
  while (off < buf.byteLength) off += writeSync(fh.fd, buf, off, buf.byteLength - off);
}

async function syncDir(dir: string): Promise<void> {
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
