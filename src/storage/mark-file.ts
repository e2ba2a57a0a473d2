// The high-water mark's own file, `raft/high-water`: two 4 KiB slots, each
// holding one log state record (src/storage/codec.ts, the same record as
// LevelDB's KEY_LOG_STATE), written in turn and overwritten in place, so a
// write never grows the file and a torn write can only damage the slot being
// written while the other still holds the mark before it.
//
// Every log state record carries a mark seq, one higher for each mark
// written; the newest valid record, in either slot or in LevelDB, is the
// mark. Nodes write most marks here: the sync worker
// (src/storage/sync-worker.ts) writes and syncs a slot right after the
// segment's fdatasync, in the same trip off the event loop. LevelDB still
// takes the marks that must land atomically with other records (a leader's
// snapshot) and the rare ones (lowering before a cut, the idle
// confirmation). docs/storage.md has the whole layout.
//
// A node of more than one decision group keeps its marks the same way in
// `raft/group-marks`: each slot holds one record of every group's mark
// (src/storage/group-store.ts); the file and slot handling are shared.

import { closeSync, openSync } from 'node:fs';
import { open, readFile, rename } from 'node:fs/promises';
import { CorruptRecordError, decodeLogState, encodeLogState, type LogState } from './codec.ts';
import { syncDir } from './segment-log.ts';
import { dirname } from 'node:path';

export const MARK_FILE = 'high-water';
export const MARK_SLOT_BYTES = 4096;
const LENGTH_BYTES = 4;
/** The most bytes a slot's record takes. */
export const MARK_RECORD_BYTES_MAX = MARK_SLOT_BYTES - LENGTH_BYTES;

/** How a mark file's records are read and written, and which is newer. */
export interface MarkCodec<T> {
  decode(bytes: Uint8Array, path: string): T;
  encode(record: T): Uint8Array;
  /** Higher is newer. */
  seqOf(record: T): number;
}

const LOG_STATE: MarkCodec<LogState> = {
  decode: decodeLogState,
  encode: encodeLogState,
  seqOf: (s) => s.markSeq,
};

/** One slot's bytes: the record's length (u32, big-endian), the record, zeros. */
export function encodeMarkSlot(record: Uint8Array): Uint8Array {
  const out = new Uint8Array(LENGTH_BYTES + record.byteLength);
  new DataView(out.buffer).setUint32(0, record.byteLength);
  out.set(record, LENGTH_BYTES);
  return out;
}

/** A slot's record, or why it holds none (torn by a crash mid-write, or damaged). */
function decodeMarkSlot<T>(
  path: string,
  buf: Uint8Array,
  slot: number,
  codec: MarkCodec<T>,
): { state: T } | { problem: string } {
  const at = slot * MARK_SLOT_BYTES;
  if (buf.byteLength < at + LENGTH_BYTES)
    return { problem: `slot ${slot} is missing (the file is ${buf.byteLength} bytes)` };
  const length = new DataView(buf.buffer, buf.byteOffset + at, LENGTH_BYTES).getUint32(0);
  if (length === 0 || length > MARK_RECORD_BYTES_MAX || at + LENGTH_BYTES + length > buf.byteLength) {
    return { problem: `slot ${slot} has no record (length ${length})` };
  }
  try {
    return { state: codec.decode(buf.subarray(at + LENGTH_BYTES, at + LENGTH_BYTES + length), path) };
  } catch (err) {
    if (err instanceof CorruptRecordError) return { problem: `slot ${slot}: ${err.problem}` };
    throw err;
  }
}

export interface OpenedMarkFile<T = LogState> {
  file: MarkFile;
  /** The newest record of the two slots. */
  newest: T;
  /** A slot without a valid record beside a valid one: a write a crash cut short, or damage; the node logs it. */
  problems: string[];
}

export class MarkFile {
  private constructor(
    readonly path: string,
    /** Open for writing in place (the sync worker writes through it). */
    readonly fd: number,
    /** The slot the next write goes to: never the one holding the newest record. */
    private nextSlot: number,
  ) {}

  /**
   * Opens `path`, or creates it when it is missing and LevelDB's record says
   * it was never written (markSeq 0: a new store, or one written before the
   * file existed): both slots then get `level`, synced with the directory,
   * before anything else is written. A file missing once a mark went to it,
   * or with no valid slot, is damage: CorruptRecordError.
   */
  static open(path: string, level: LogState): Promise<OpenedMarkFile> {
    return MarkFile.openWith(path, level, LOG_STATE, 'high-water mark file', 'the log state record in LevelDB names');
  }

  /**
   * open() for records of another kind: `initial` goes into both slots of a new file; `source` says where the seq of
   * `initial` was read, for the refusal of a missing file.
   */
  static async openWith<T>(
    path: string,
    initial: T,
    codec: MarkCodec<T>,
    what: string,
    source: string,
  ): Promise<OpenedMarkFile<T>> {
    const buf = await readOrNull(path);
    if (buf === null) {
      if (codec.seqOf(initial) > 0) {
        throw new CorruptRecordError(
          path,
          what,
          `it is missing, but ${source} mark ${codec.seqOf(initial)}, so marks were written to it`,
        );
      }
      await create(path, codec.encode(initial));
      return { file: new MarkFile(path, openSync(path, 'r+'), 0), newest: initial, problems: [] };
    }
    const slots = [decodeMarkSlot(path, buf, 0, codec), decodeMarkSlot(path, buf, 1, codec)];
    const valid = slots.flatMap((s, i) => ('state' in s ? [{ slot: i, state: s.state }] : []));
    const problems = slots.flatMap((s) => ('problem' in s ? [s.problem] : []));
    if (valid.length === 0)
      throw new CorruptRecordError(path, what, `no slot holds a valid record (${problems.join('; ')})`);
    const newest = valid.reduce((a, b) => (codec.seqOf(b.state) > codec.seqOf(a.state) ? b : a));
    return { file: new MarkFile(path, openSync(path, 'r+'), 1 - newest.slot), newest: newest.state, problems };
  }

  /**
   * The newest valid record in the file at `path`, without creating or
   * changing anything; null when there is no such file or no valid slot.
   */
  static async peek(path: string): Promise<LogState | null> {
    const buf = await readOrNull(path);
    if (buf === null) return null;
    return newestMark(
      [0, 1].map((slot) => decodeMarkSlot(path, buf, slot, LOG_STATE)).map((d) => ('state' in d ? d.state : null)),
    );
  }

  /** Where the next record goes (a byte offset), and that slot becomes the newest once written. */
  takeSlotOffset(): number {
    const at = this.nextSlot * MARK_SLOT_BYTES;
    this.nextSlot = 1 - this.nextSlot;
    return at;
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** The record with the highest mark seq (the mark); null when there is none. */
export function newestMark(records: readonly (LogState | null)[]): LogState | null {
  let newest: LogState | null = null;
  for (const r of records) if (r !== null && (newest === null || r.markSeq > newest.markSeq)) newest = r;
  return newest;
}

async function readOrNull(path: string): Promise<Uint8Array | null> {
  try {
    return await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function create(path: string, record: Uint8Array): Promise<void> {
  const slot = encodeMarkSlot(record);
  const buf = new Uint8Array(2 * MARK_SLOT_BYTES);
  buf.set(slot, 0);
  buf.set(slot, MARK_SLOT_BYTES);
  const tmp = `${path}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    await fh.write(buf, 0, buf.byteLength, 0);
    await fh.sync();
  } finally {
    await fh.close();
  }
  // Renamed into place whole: a crash leaves either no file (created again) or both slots.
  await rename(tmp, path);
  await syncDir(dirname(path));
}
