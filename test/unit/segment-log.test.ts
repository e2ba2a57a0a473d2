import { withRawDb } from './fixtures/raw-level.ts';
// The Raft log's segment files on a real disk: what is written reads back,
// a torn (unsynced) tail is cut, damage anywhere else stops the node with the
// file, the byte offset and the index, and a log cut below the high-water
// mark starts the node recovering instead of being taken for a shorter log.

import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, open, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { EntryType, type Entry, type Snapshot } from '../../src/raft/types.ts';
import {
  CorruptRecordError,
  decodeHardState,
  decodeLogState,
  encodeHardState,
  encodeLogState,
  KEY_HARD_STATE,
  KEY_LOG_STATE,
  type LogState,
} from '../../src/storage/codec.ts';
import { encodeRecords, encodeSegmentHeader, scanRecords, segmentFileName } from '../../src/storage/segment-format.ts';
import { MARK_FILE, MARK_SLOT_BYTES, MarkFile, newestMark } from '../../src/storage/mark-file.ts';
import { SyncWorker } from '../../src/storage/sync-worker.ts';
import { DiskLogStore, type DiskLogStoreOptions } from '../../src/storage/store.ts';
import type { PersistBatch, StorageIdentity } from '../../src/storage/types.ts';
import { segmentFiles, walIndexes } from './fixtures/wal-files.ts';

const ID: StorageIdentity = { clusterId: 'alpha', nodeId: 'n1' };
/** Small segments, so a few dozen entries span several files. */
const SMALL: DiskLogStoreOptions = { segmentBytes: 512 };
/** The store's other order: the mark written beside the segment's sync (not the default). */
const BESIDE: DiskLogStoreOptions = { ...SMALL, markBesideSegment: true };

const dirs: string[] = [];
const stores: DiskLogStore[] = [];

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'verdict-wal-'));
  dirs.push(d);
  return join(d, 'node');
}

async function openStore(dir: string, opts: DiskLogStoreOptions = SMALL): ReturnType<typeof DiskLogStore.open> {
  const r = await DiskLogStore.open(dir, ID, opts);
  stores.push(r.store);
  return r;
}

async function closeAll(): Promise<void> {
  for (const s of stores.splice(0)) await s.close();
}

function persist(store: DiskLogStore, b: Partial<PersistBatch>): Promise<void> {
  const batch: PersistBatch = {
    hardState: null,
    entries: [],
    snapshot: null,
    localSnapshot: null,
    compactTo: 0,
    sync: true,
    ...b,
  };
  return new Promise((resolve, reject) => store.persist(batch, (err) => (err ? reject(err) : resolve())));
}

function ents(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++)
    out.push({
      term,
      index: i,
      type: EntryType.Normal,
      data: Uint8Array.from({ length: 20 + (i % 9) }, (_, j) => (i * 31 + j) & 0xff),
    });
  return out;
}

function snap(index: number, term: number): Snapshot {
  return {
    metadata: { index, term, confState: { voters: ['n1'], learners: [], votersOutgoing: [] } },
    data: Uint8Array.of(index & 0xff),
  };
}

/** A store holding entries 1..last (term 1) in several segments, closed; returns the data dir. */
async function writtenLog(last: number, opts: DiskLogStoreOptions = SMALL): Promise<string> {
  const dir = await tempDir();
  const { store } = await openStore(dir, opts);
  for (let i = 1; i <= last; i += 5)
    await persist(store, { entries: ents(i, Math.min(i + 4, last), 1), hardState: { term: 1, vote: 'n1', commit: 2 } });
  await closeAll();
  return dir;
}

/** Where each record of a segment starts, and the index it holds. */
async function recordsOf(file: string): Promise<{ offset: number; index: number }[]> {
  const buf = await readFile(file);
  const first = Number.parseInt(file.slice(file.lastIndexOf('-') + 1, file.lastIndexOf('.')), 16);
  const s = scanRecords(buf, first);
  return s.offsets.map((offset, k) => ({ offset, index: s.entries[k].index }));
}

async function flipByte(file: string, offset: number): Promise<void> {
  const buf = await readFile(file);
  buf[offset] ^= 0x10;
  await writeFile(file, buf);
}

describe('segment log: write and read back', () => {
  it('the record encoder refuses, before a byte is written, what the scan would refuse as invalid (paired checks)', () => {
    const e = (index: number, term: number, type = EntryType.Normal): Entry => ({
      index,
      term,
      type,
      data: new Uint8Array([1]),
    });
    const { buf } = encodeRecords([e(5, 1), e(6, 2)]);
    expect(scanRecords(Buffer.concat([encodeSegmentHeader(0, 5), buf]), 5)).toMatchObject({
      problem: null,
      entries: [{ index: 5 }, { index: 6 }],
    });
    expect(() => encodeRecords([e(5, 1), e(7, 1)])).toThrow(/entry 7 \(term 1\) follows entry 5/);
    expect(() => encodeRecords([e(5, 2), e(6, 1)])).toThrow(/entry 6 \(term 1\) follows entry 5 \(term 2\)/);
    expect(() => encodeRecords([e(5, 1, 9 as EntryType)])).toThrow(/known type/);
    expect(() => encodeRecords([e(5, 2 ** 60)])).toThrow(/safe non-negative index and term/);
    expect(() => encodeSegmentHeader(-1, 5)).toThrow(/a seq and an index/);
  });

  it('entries spread over several segments read back exactly, and appends continue after a reopen', async () => {
    const dir = await writtenLog(60);
    expect((await segmentFiles(join(dir, 'wal'))).length).toBeGreaterThan(2);
    const { store, recovered } = await openStore(dir);
    expect(recovered.entries).toEqual(ents(1, 60, 1));
    expect(recovered.recoverIndex).toBe(0);
    await persist(store, { entries: ents(61, 62, 2) });
    await closeAll();
    expect((await openStore(dir)).recovered.entries).toEqual([...ents(1, 60, 1), ...ents(61, 62, 2)]);
  });

  it('entries of a new term replace a suffix that spans segments; nothing of the old suffix reads back', async () => {
    const dir = await writtenLog(60);
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(12, 14, 3) });
    await closeAll();
    expect((await openStore(dir)).recovered.entries).toEqual([...ents(1, 11, 1), ...ents(12, 14, 3)]);
    expect(await walIndexes(join(dir, 'wal'))).toEqual([...Array(14).keys()].map((k) => k + 1));
  });

  it('compaction deletes the segments a synced snapshot covers, whole, and keeps the one holding the snapshot index', async () => {
    const dir = await writtenLog(60);
    const { store } = await openStore(dir);
    const before = await segmentFiles(join(dir, 'wal'));
    await persist(store, { localSnapshot: snap(40, 1), compactTo: 40 });
    await closeAll();
    const after = await segmentFiles(join(dir, 'wal'));
    expect(after.length).toBeLessThan(before.length);
    const onDisk = await walIndexes(join(dir, 'wal'));
    expect(onDisk[0]).toBeLessThanOrEqual(41);
    expect(onDisk.at(-1)).toBe(60);
    expect((await openStore(dir)).recovered.entries).toEqual(ents(41, 60, 1));
  });

  it("a leader's snapshot starts a new segment and removes the replaced log's files", async () => {
    const dir = await writtenLog(30);
    const { store } = await openStore(dir);
    await persist(store, { snapshot: snap(50, 2), hardState: { term: 2, vote: 'n2', commit: 50 } });
    await persist(store, { entries: ents(51, 52, 2) });
    await closeAll();
    expect(await walIndexes(join(dir, 'wal'))).toEqual([51, 52]);
    const { recovered } = await openStore(dir);
    expect(recovered.snapshot.metadata.index).toBe(50);
    expect(recovered.entries).toEqual(ents(51, 52, 2));
    expect(recovered.recoverIndex).toBe(0);
  });
});

describe('segment log: a torn tail beyond the high-water mark is an unsynced write, and is cut', () => {
  it('half a record at the end of the last segment is cut; the log and later appends are intact', async () => {
    const dir = await writtenLog(20);
    const [last] = (await segmentFiles(join(dir, 'wal'))).slice(-1);
    const { buf } = encodeRecords(ents(21, 21, 1));
    await appendFile(last, buf.subarray(0, buf.byteLength - 7));
    const { store, recovered, report } = await openStore(dir);
    expect(recovered.entries).toEqual(ents(1, 20, 1));
    expect(recovered.recoverIndex).toBe(0);
    expect(report.truncated).toHaveLength(1);
    expect(report.truncated[0]).toMatchObject({ file: last, index: 21, belowHighWater: false, savedAs: null });
    await persist(store, { entries: ents(21, 22, 1) });
    await closeAll();
    expect((await openStore(dir)).recovered.entries).toEqual(ents(1, 22, 1));
  });

  it('a whole last record with a bad checksum beyond the mark is cut the same way', async () => {
    const dir = await writtenLog(20);
    const [last] = (await segmentFiles(join(dir, 'wal'))).slice(-1);
    const { buf } = encodeRecords(ents(21, 21, 1));
    buf[buf.byteLength - 1] ^= 0xff;
    await appendFile(last, buf);
    const { recovered, report } = await openStore(dir);
    expect(recovered.entries).toEqual(ents(1, 20, 1));
    expect(report.truncated[0]).toMatchObject({ index: 21, belowHighWater: false });
  });
});

describe('segment log: a damaged record is refused with the file, the byte offset and the index', () => {
  async function refusal(dir: string): Promise<CorruptRecordError> {
    const err = await DiskLogStore.open(dir, ID, SMALL).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptRecordError);
    return err as CorruptRecordError;
  }

  it('a flipped byte in the middle of the log stops the node, names file, offset and index, and changes no byte on disk', async () => {
    const dir = await writtenLog(60);
    const files = await segmentFiles(join(dir, 'wal'));
    const file = files[1];
    const rec = (await recordsOf(file))[1];
    await flipByte(file, rec.offset + 20);
    const before = await readFile(file);
    const err = await refusal(dir);
    expect(err.message).toContain(file);
    expect(err.message).toContain(`byte offset ${rec.offset}, index ${rec.index}`);
    expect(err.message).toMatch(/checksum mismatch/);
    expect(err.message).toContain('verdict node repair --config');
    expect(err.message).not.toContain('\n');
    expect(await readFile(file)).toEqual(before);
    expect((await readdir(join(dir, 'wal'))).length).toBe(files.length);
  });

  it('a segment replaced by a directory is refused naming its path, not with a bare EISDIR', async () => {
    const dir = await writtenLog(20);
    const [last] = (await segmentFiles(join(dir, 'wal'))).slice(-1);
    await rm(last);
    await mkdir(last);
    const err = await refusal(dir);
    expect(err.message).toContain(`${last}: it is a directory, not a segment file`);
    expect(err.message).toContain('verdict node repair --config');
    expect(err.message).not.toContain('EISDIR');
  });

  it('a flipped length field is a checksum failure, not a shorter log', async () => {
    const dir = await writtenLog(60);
    const file = (await segmentFiles(join(dir, 'wal')))[0];
    const rec = (await recordsOf(file))[2];
    await flipByte(file, rec.offset + 3);
    const err = await refusal(dir);
    expect(err.message).toContain(`index ${rec.index}`);
  });

  it('a length field that points past the end of the last segment, with whole records after it, is corruption, not a cut tail', async () => {
    const dir = await writtenLog(20);
    const [last] = (await segmentFiles(join(dir, 'wal'))).slice(-1);
    const rec = (await recordsOf(last))[1];
    const buf = await readFile(last);
    buf.writeUInt32BE(buf.byteLength, rec.offset);
    await writeFile(last, buf);
    const err = await refusal(dir);
    expect(err.message).toContain(`byte offset ${rec.offset}, index ${rec.index}`);
    expect(err.message).toMatch(/runs past the end of the file, but a whole record of index \d+ follows/);
    expect(await readFile(last)).toEqual(buf);
  });

  it('the last record of the last segment, damaged at or below the high-water mark, is corruption, not a torn tail', async () => {
    const dir = await writtenLog(20);
    const [last] = (await segmentFiles(join(dir, 'wal'))).slice(-1);
    const recs = await recordsOf(last);
    const size = (await readFile(last)).byteLength;
    await flipByte(last, size - 1);
    const err = await refusal(dir);
    expect(err.message).toContain(`index ${recs.at(-1)!.index}`);
  });

  it('an incomplete record at the end of a segment that is not the last is corruption', async () => {
    const dir = await writtenLog(60);
    const file = (await segmentFiles(join(dir, 'wal')))[0];
    const size = (await readFile(file)).byteLength;
    await truncate(file, size - 5);
    const err = await refusal(dir);
    expect(err.message).toContain(file);
    expect(err.message).toMatch(/the record needs \d+ bytes, the file has \d+ left/);
  });

  it("a damaged segment header names offset 0 and the segment's first index", async () => {
    const dir = await writtenLog(60);
    const file = (await segmentFiles(join(dir, 'wal')))[1];
    await flipByte(file, 10);
    const err = await refusal(dir);
    expect(err.message).toMatch(/raft log segment header \(byte offset 0, index \d+\)/);
    expect(err.message).toMatch(/header checksum mismatch/);
  });

  it('a missing segment in the middle of the log is refused', async () => {
    const dir = await writtenLog(60);
    await rm((await segmentFiles(join(dir, 'wal')))[1]);
    const err = await refusal(dir);
    expect(err.message).toMatch(/is missing/);
  });
});

describe('segment log: a log cut below the high-water mark starts the node recovering', () => {
  it('a tail cut at a record boundary: the log keeps what is readable and recoverIndex names the mark', async () => {
    const dir = await writtenLog(20);
    const [last] = (await segmentFiles(join(dir, 'wal'))).slice(-1);
    const recs = await recordsOf(last);
    const cutAt = recs[recs.length - 2];
    await truncate(last, cutAt.offset);
    const { recovered } = await openStore(dir);
    expect(recovered.entries.at(-1)?.index).toBe(cutAt.index - 1);
    expect(recovered.recoverIndex).toBe(20);
    // The commit index never passes the log that is left.
    expect(recovered.hardState.commit).toBeLessThanOrEqual(cutAt.index - 1);
  });

  it('a tail cut inside a record below the mark: the unreadable bytes are saved beside the segment, then the node recovers', async () => {
    const dir = await writtenLog(20);
    const [last] = (await segmentFiles(join(dir, 'wal'))).slice(-1);
    const recs = await recordsOf(last);
    const victim = recs[recs.length - 1];
    await truncate(last, victim.offset + 11);
    const { recovered, report } = await openStore(dir);
    expect(recovered.recoverIndex).toBe(20);
    expect(report.truncated[0]).toMatchObject({
      index: victim.index,
      belowHighWater: true,
      savedAs: `${last}.cut-${victim.offset}`,
    });
    expect((await readFile(`${last}.cut-${victim.offset}`)).byteLength).toBe(11);
  });

  it('a last segment cut to nothing (even its header) is lost records, not an empty log', async () => {
    const dir = await writtenLog(60);
    const files = await segmentFiles(join(dir, 'wal'));
    const firstOfLast = (await recordsOf(files.at(-1)!))[0].index;
    await truncate(files.at(-1)!, 0);
    const { recovered } = await openStore(dir);
    expect(recovered.entries.at(-1)?.index).toBe(firstOfLast - 1);
    expect(recovered.recoverIndex).toBe(60);
  });

  it('the mark survives a restart while recovering, and clears once entries past it are synced', async () => {
    const dir = await writtenLog(20);
    const [last] = (await segmentFiles(join(dir, 'wal'))).slice(-1);
    await truncate(last, (await recordsOf(last)).at(-3)!.offset);
    let { store, recovered } = await openStore(dir);
    const lastIndex = recovered.entries.at(-1)!.index;
    expect(recovered.recoverIndex).toBe(20);
    // A leader sends part of what is missing; a restart still owes the rest.
    await persist(store, { entries: ents(lastIndex + 1, lastIndex + 1, 1) });
    await closeAll();
    ({ store, recovered } = await openStore(dir));
    expect(recovered.recoverIndex).toBe(20);
    await persist(store, { entries: ents(lastIndex + 2, 22, 1) });
    await closeAll();
    ({ recovered } = await openStore(dir));
    expect(recovered.recoverIndex).toBe(0);
    expect(recovered.entries).toEqual(ents(1, 22, 1));
  });

  it('a new leader replacing acknowledged, uncommitted entries lowers the mark first, so the shorter log is not taken for lost records', async () => {
    const dir = await writtenLog(20);
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(19, 19, 2) });
    await closeAll();
    const { recovered } = await openStore(dir);
    expect(recovered.entries).toEqual([...ents(1, 18, 1), ...ents(19, 19, 2)]);
    expect(recovered.recoverIndex).toBe(0);
  });
});

describe('segment log: zeros written ahead of the records', () => {
  /** One segment for the whole test, extended 4 KiB at a time. */
  const AHEAD: DiskLogStoreOptions = { segmentBytes: 64 << 10, preallocBytes: 4096 };
  /** Segments of 1 KiB: the zeros stop at the roll-over size. */
  const AHEAD_SMALL: DiskLogStoreOptions = { segmentBytes: 1024, preallocBytes: 4096 };

  async function lastSegment(dir: string): Promise<string> {
    return (await segmentFiles(join(dir, 'wal'))).at(-1)!;
  }

  /** Where a segment's records end, and the file's size. */
  async function ends(file: string): Promise<{ records: number; file: number }> {
    const buf = await readFile(file);
    const first = Number.parseInt(file.slice(file.lastIndexOf('-') + 1, file.lastIndexOf('.')), 16);
    return { records: scanRecords(buf, first).end, file: buf.byteLength };
  }

  async function writeAt(file: string, offset: number, bytes: Uint8Array): Promise<void> {
    const fh = await open(file, 'r+');
    try {
      await fh.write(bytes, 0, bytes.byteLength, offset);
    } finally {
      await fh.close();
    }
  }

  it('the file grows a chunk of zeros at a time, the batches in between leave its size alone, and reading back stops at the zeros', async () => {
    const dir = await tempDir();
    const { store } = await openStore(dir, AHEAD);
    await persist(store, { entries: ents(1, 5, 1), hardState: { term: 1, vote: 'n1', commit: 0 } });
    const file = await lastSegment(dir);
    const first = await ends(file);
    expect(first.file).toBe(first.records + 4096);
    for (let i = 6; i <= 40; i += 5) await persist(store, { entries: ents(i, i + 4, 1) });
    const later = await ends(file);
    // Seven more batches, all inside the first chunk: the file kept its size.
    expect(later.records).toBeGreaterThan(first.records + 1000);
    expect(later.records).toBeLessThan(first.file);
    expect(later.file).toBe(first.file);
    await closeAll();
    const { store: again, recovered, report } = await openStore(dir, AHEAD);
    expect(recovered.entries).toEqual(ents(1, 40, 1));
    expect(recovered.recoverIndex).toBe(0);
    expect(report.truncated).toEqual([]);
    // Appends continue after the records, not after the zeros.
    await persist(again, { entries: ents(41, 42, 2) });
    await closeAll();
    expect((await openStore(dir, AHEAD)).recovered.entries).toEqual([...ents(1, 40, 1), ...ents(41, 42, 2)]);
    expect(await walIndexes(join(dir, 'wal'))).toEqual([...Array(42).keys()].map((k) => k + 1));
  });

  it('reading back: zeros after the records are their end however few, and zeros with anything after them are not', () => {
    const header = encodeSegmentHeader(1, 1);
    const { buf: recs } = encodeRecords(ents(1, 3, 1));
    const end = header.byteLength + recs.byteLength;
    for (const n of [1, 3, 7, 8, 4096]) {
      const s = scanRecords(Buffer.concat([header, recs, Buffer.alloc(n)]), 1);
      expect({ n, problem: s.problem, end: s.end, count: s.entries.length }).toEqual({
        n,
        problem: null,
        end,
        count: 3,
      });
    }
    const junk = scanRecords(Buffer.concat([header, recs, Buffer.alloc(5), Buffer.of(1)]), 1);
    expect(junk.problem).toMatchObject({ kind: 'incomplete', offset: end, index: 4 });
    const later = scanRecords(Buffer.concat([header, recs, Buffer.alloc(64), Buffer.of(9, 9)]), 1);
    expect(later.problem).toMatchObject({
      kind: 'incomplete',
      offset: end,
      index: 4,
      detail: `zeros where a record should start, and data again at byte offset ${end + 64}`,
    });
  });

  it('the zeros stop at the roll-over size, and segments that rolled read back whole', async () => {
    const dir = await writtenLog(60, AHEAD_SMALL);
    const files = await segmentFiles(join(dir, 'wal'));
    expect(files.length).toBeGreaterThan(2);
    for (const f of files) expect((await stat(f)).size).toBeLessThanOrEqual(1024 + 400);
    expect((await openStore(dir, AHEAD_SMALL)).recovered.entries).toEqual(ents(1, 60, 1));
  });

  it('half a record written over the zeros beyond the mark is a torn tail, and is cut', async () => {
    const dir = await writtenLog(20, AHEAD);
    const file = await lastSegment(dir);
    const { records } = await ends(file);
    const { buf } = encodeRecords(ents(21, 21, 1));
    await writeAt(file, records, buf.subarray(0, buf.byteLength - 7));
    const { store, recovered, report } = await openStore(dir, AHEAD);
    expect(recovered.entries).toEqual(ents(1, 20, 1));
    expect(recovered.recoverIndex).toBe(0);
    expect(report.truncated).toHaveLength(1);
    expect(report.truncated[0]).toMatchObject({
      file,
      offset: records,
      index: 21,
      belowHighWater: false,
      savedAs: null,
    });
    expect(report.truncated[0].detail).toMatch(/checksum mismatch/);
    await persist(store, { entries: ents(21, 22, 1) });
    await closeAll();
    expect((await openStore(dir, AHEAD)).recovered.entries).toEqual(ents(1, 22, 1));
  });

  it('zeros where a record should start with data after them, beyond the mark, are a batch that never finished, and are cut', async () => {
    const dir = await writtenLog(20, AHEAD);
    const file = await lastSegment(dir);
    const { records } = await ends(file);
    // The batch's first bytes never reached the disk, a later part of it did.
    const { buf } = encodeRecords(ents(21, 22, 1));
    await writeAt(file, records + 40, buf.subarray(40));
    const { recovered, report } = await openStore(dir, AHEAD);
    expect(recovered.entries).toEqual(ents(1, 20, 1));
    expect(recovered.recoverIndex).toBe(0);
    expect(report.truncated[0]).toMatchObject({ offset: records, index: 21, belowHighWater: false });
    expect(report.truncated[0].detail).toMatch(/zeros where a record should start, and data again at byte offset \d+/);
  });

  it('zeros over acknowledged records (a write the disk lost) are lost records: the node recovers, the log does not just end there', async () => {
    const dir = await writtenLog(20, AHEAD);
    const file = await lastSegment(dir);
    const recs = await recordsOf(file);
    const from = recs.find((r) => r.index === 19)!.offset;
    const { records } = await ends(file);
    await writeAt(file, from, new Uint8Array(records - from));
    const { recovered } = await openStore(dir, AHEAD);
    expect(recovered.entries.at(-1)?.index).toBe(18);
    expect(recovered.recoverIndex).toBe(20);
  });

  it('the last acknowledged record damaged in front of the zeros is corruption, not a torn tail', async () => {
    const dir = await writtenLog(20, AHEAD);
    const file = await lastSegment(dir);
    const { records } = await ends(file);
    await flipByte(file, records - 1);
    const err = await DiskLogStore.open(dir, ID, AHEAD).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptRecordError);
    expect((err as Error).message).toMatch(/index 20\b.*checksum mismatch/);
  });

  it('zeros inside a segment that is not the last, with records after them, are corruption', async () => {
    const dir = await writtenLog(60, AHEAD_SMALL);
    const file = (await segmentFiles(join(dir, 'wal')))[0];
    const rec = (await recordsOf(file))[1];
    await writeAt(file, rec.offset, new Uint8Array(20));
    const err = await DiskLogStore.open(dir, ID, AHEAD_SMALL).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptRecordError);
    expect((err as Error).message).toContain(`byte offset ${rec.offset}, index ${rec.index}`);
    expect((err as Error).message).toMatch(/zeros where a record should start/);
  });
});

describe('segment log: a header-only last segment left by a crash while rolling over or restarting', () => {
  async function addHeaderOnly(dir: string, firstIndex: number): Promise<string> {
    const files = await segmentFiles(join(dir, 'wal'));
    const name = files.at(-1)!.slice(files.at(-1)!.lastIndexOf('/') + 1);
    const seq = Number.parseInt(name.slice(0, 16), 16) + 1;
    const path = join(dir, 'wal', segmentFileName(seq, firstIndex));
    await writeFile(path, encodeSegmentHeader(seq, firstIndex));
    return path;
  }

  it('one that starts where the log ends is kept and the next append goes into it', async () => {
    const dir = await writtenLog(20);
    const path = await addHeaderOnly(dir, 21);
    const { store, recovered } = await openStore(dir);
    expect(recovered.entries).toEqual(ents(1, 20, 1));
    await persist(store, { entries: ents(21, 21, 1) });
    await closeAll();
    expect((await recordsOf(path)).map((r) => r.index)).toEqual([21]);
  });

  it('one that names an index the log never reached (a snapshot install that did not commit) is removed', async () => {
    const dir = await writtenLog(20);
    const path = await addHeaderOnly(dir, 500);
    const { recovered } = await openStore(dir);
    expect(recovered.entries).toEqual(ents(1, 20, 1));
    expect(recovered.recoverIndex).toBe(0);
    await expect(readFile(path)).rejects.toThrow(/ENOENT/);
  });
});

/** The mark as the store wrote it: the newest of LevelDB's log state record and the mark file's slots. */
async function markOf(dir: string): Promise<LogState> {
  const inLevel = await withRawDb(dir, async (db) => {
    const v = await db.get(KEY_LOG_STATE);
    return v === undefined ? null : decodeLogState(v, 'raft');
  });
  const newest = newestMark([inLevel, await MarkFile.peek(join(dir, 'raft', MARK_FILE))]);
  if (newest === null) throw new Error('no log state record');
  return newest;
}

/** Puts a newer log state record in LevelDB than the store's: the state a crash between the two syncs leaves. */
async function setMark(dir: string, ackedThrough: number, mayHoldUpTo: number): Promise<void> {
  const { firstSeq, markSeq } = await markOf(dir);
  await withRawDb(dir, (db) =>
    db.put(
      KEY_LOG_STATE,
      encodeLogState({
        highWaterIndex: ackedThrough,
        highWaterTerm: 1,
        firstSeq,
        mayHoldIndex: mayHoldUpTo,
        markSeq: markSeq + 1,
      }),
    ),
  );
}

/** Half of record `index` at the end of the last segment: a segment write whose sync never finished. */
async function tornRecord(dir: string, index: number): Promise<void> {
  const [last] = (await segmentFiles(join(dir, 'wal'))).slice(-1);
  const { buf } = encodeRecords(ents(index, index, 1));
  await appendFile(last, buf.subarray(0, buf.byteLength - 7));
}

async function cutAfter(dir: string, index: number): Promise<void> {
  const files = await segmentFiles(join(dir, 'wal'));
  for (const f of files.reverse()) {
    const recs = await recordsOf(f);
    const at = recs.find((r) => r.index === index + 1);
    if (at) return truncate(f, at.offset);
  }
  throw new Error(`no record ${index + 1} to cut at`);
}

describe('segment log: the two-field mark (acknowledged through, may hold up to), written beside the segment sync', () => {
  it('once the store is idle, the mark acknowledges the last batch (the confirmation): losing it is noticed', async () => {
    const dir = await writtenLog(20);
    expect(await markOf(dir)).toMatchObject({ highWaterIndex: 20, mayHoldIndex: 20 });
    await cutAfter(dir, 17);
    const { recovered } = await openStore(dir, BESIDE);
    expect(recovered.recoverIndex).toBe(20);
  });

  it('the mark landed and the segment sync did not: a log end between the two fields, even with a torn record, is an ordinary crash', async () => {
    const dir = await writtenLog(20);
    await setMark(dir, 20, 25);
    await tornRecord(dir, 21);
    const { recovered, report } = await openStore(dir, BESIDE);
    expect(recovered.recoverIndex).toBe(0);
    expect(recovered.entries).toEqual(ents(1, 20, 1));
    expect(report.truncated).toHaveLength(1);
    expect(report.truncated[0]).toMatchObject({ index: 21, belowHighWater: false, savedAs: null });
  });

  it('the segment sync landed and the mark did not: the log may run past "may hold up to", and nothing is lost or cut', async () => {
    const dir = await writtenLog(20);
    await setMark(dir, 10, 15);
    let { store, recovered } = await openStore(dir, BESIDE);
    expect(recovered.recoverIndex).toBe(0);
    expect(recovered.entries).toEqual(ents(1, 20, 1));
    // The next batch's mark covers what was read back.
    await persist(store, { entries: ents(21, 25, 1) });
    await closeAll();
    expect(await markOf(dir)).toMatchObject({ highWaterIndex: 25, mayHoldIndex: 25 });
    await cutAfter(dir, 22);
    ({ store, recovered } = await openStore(dir, BESIDE));
    expect(recovered.recoverIndex).toBe(25);
  });

  it('a log end below "acknowledged through" is lost acknowledged records; one at or above it is not', async () => {
    const dir = await writtenLog(20);
    await setMark(dir, 15, 20);
    await cutAfter(dir, 16);
    let { recovered } = await openStore(dir, BESIDE);
    expect(recovered.recoverIndex).toBe(0);
    expect(recovered.entries.at(-1)?.index).toBe(16);
    await closeAll();
    await setMark(dir, 15, 20);
    await cutAfter(dir, 12);
    ({ recovered } = await openStore(dir, BESIDE));
    expect(recovered.recoverIndex).toBe(15);
  });

  it('a torn record at or below "acknowledged through" is lost records (its bytes are saved), not a torn tail', async () => {
    const dir = await writtenLog(20);
    await setMark(dir, 20, 20);
    const [last] = (await segmentFiles(join(dir, 'wal'))).slice(-1);
    const victim = (await recordsOf(last)).at(-1)!;
    await truncate(last, victim.offset + 5);
    const { recovered, report } = await openStore(dir, BESIDE);
    expect(recovered.recoverIndex).toBe(20);
    expect(report.truncated[0]).toMatchObject({ index: 20, belowHighWater: true });
  });

  it('repeated crashes between the two syncs never start the node recovering, and a loss after them still does', async () => {
    const dir = await writtenLog(20);
    let last = 20;
    for (let round = 0; round < 4; round++) {
      // A crash with the mark ahead of the log: the batch after `last` never synced.
      await setMark(dir, last, last + 5);
      await tornRecord(dir, last + 1);
      const { store, recovered } = await openStore(dir, BESIDE);
      expect(recovered.recoverIndex, `round ${round}`).toBe(0);
      expect(recovered.entries, `round ${round}`).toEqual(ents(1, last, 1));
      await persist(store, { entries: ents(last + 1, last + 3, 1), hardState: { term: 1, vote: 'n1', commit: last } });
      await persist(store, { entries: ents(last + 4, last + 6, 1) });
      last += 6;
      await closeAll();
    }
    await cutAfter(dir, last - 2);
    const { recovered } = await openStore(dir, BESIDE);
    expect(recovered.recoverIndex).toBe(last);
  });

  it("after a leader's snapshot and the entries that follow it, a loss below the mark is noticed", async () => {
    const dir = await writtenLog(20);
    const { store } = await openStore(dir, BESIDE);
    await persist(store, {
      snapshot: snap(30, 2),
      entries: ents(31, 36, 2),
      hardState: { term: 2, vote: 'n2', commit: 30 },
    });
    await closeAll();
    expect(await markOf(dir)).toMatchObject({ highWaterIndex: 36, mayHoldIndex: 36 });
    await cutAfter(dir, 33);
    const { recovered } = await openStore(dir, BESIDE);
    expect(recovered.snapshot.metadata.index).toBe(30);
    expect(recovered.recoverIndex).toBe(36);
  });

  it('a commit index stored beside entries is stored in full once idle; one no higher than "acknowledged through" with the log between the fields is an ordinary crash', async () => {
    const dir = await writtenLog(20);
    const { store } = await openStore(dir, BESIDE);
    // One batch: entries 21..25 with a commit index that covers 23 of them (a follower's Ready).
    await persist(store, { entries: ents(21, 25, 1), hardState: { term: 1, vote: 'n1', commit: 23 } });
    await closeAll();
    const { recovered: whole } = await openStore(dir, BESIDE);
    expect(whole.hardState.commit).toBe(23);
    await closeAll();
    // What the batch's own LevelDB write holds when its segment sync is lost: the commit is held back to 20.
    await setMark(dir, 20, 25);
    await withRawDb(dir, (db) => db.put(KEY_HARD_STATE, encodeHardState({ term: 1, vote: 'n1', commit: 20 })));
    await cutAfter(dir, 20);
    const { recovered } = await openStore(dir, BESIDE);
    expect(recovered.recoverIndex).toBe(0);
    expect(recovered.hardState.commit).toBe(20);
  });

  it('a log state record written before the two-field mark (24 bytes) reads with "may hold up to" equal to the mark', async () => {
    const dir = await writtenLog(20);
    const firstSeq = (await markOf(dir)).firstSeq;
    const payload = Buffer.alloc(24);
    payload.writeBigUInt64BE(20n, 0);
    payload.writeBigUInt64BE(1n, 8);
    payload.writeBigUInt64BE(BigInt(firstSeq), 16);
    const full = encodeLogState({ highWaterIndex: 20, highWaterTerm: 1, firstSeq, mayHoldIndex: 20, markSeq: 0 });
    // The envelope of the new record, re-sealed around the old 24-byte payload.
    const old = Buffer.concat([Buffer.from(full.subarray(0, 5)), payload]);
    old.writeUInt32BE(crc32(payload), 0);
    expect(decodeLogState(old, 'raft')).toEqual({
      highWaterIndex: 20,
      highWaterTerm: 1,
      firstSeq,
      mayHoldIndex: 20,
      markSeq: 0,
    });
    expect(() => decodeLogState(encodeLogStateUnchecked(20, 1, firstSeq, 19), 'raft')).toThrow(
      /may-hold index 19 is below the acknowledged-through index 20/,
    );
  });
});

/** A log state record with any fields, checksummed, bypassing the encoder's own assertion. */
function encodeLogStateUnchecked(hw: number, term: number, firstSeq: number, mayHold: number): Uint8Array {
  const sealed = Buffer.from(
    encodeLogState({ highWaterIndex: hw, highWaterTerm: term, firstSeq, mayHoldIndex: hw, markSeq: 0 }),
  );
  sealed.writeBigUInt64BE(BigInt(mayHold), 5 + 24);
  sealed.writeUInt32BE(crc32(sealed.subarray(5)), 0);
  return sealed;
}

describe('the mark file (raft/high-water): two slots, the newest mark wins, synced with the segment in one trip', () => {
  const markPath = (dir: string): string => join(dir, 'raft', MARK_FILE);

  /** The record in each slot, or null where the slot holds none. */
  async function slots(dir: string): Promise<(LogState | null)[]> {
    const buf = await readFile(markPath(dir));
    return [0, 1].map((k) => {
      const at = k * MARK_SLOT_BYTES;
      const length = buf.readUInt32BE(at);
      try {
        return decodeLogState(buf.subarray(at + 4, at + 4 + length), 'mark');
      } catch {
        return null;
      }
    });
  }

  it('each batch moves the mark in the file, in place: the file never grows and LevelDB holds no newer mark', async () => {
    const dir = await writtenLog(20);
    const s = await slots(dir);
    expect(s.every((r) => r !== null)).toBe(true);
    expect(newestMark(s)).toMatchObject({ highWaterIndex: 20, mayHoldIndex: 20 });
    expect((await readFile(markPath(dir))).byteLength).toBe(2 * MARK_SLOT_BYTES);
    const inLevel = await withRawDb(dir, async (db) => db.get(KEY_LOG_STATE));
    expect(inLevel === undefined || decodeLogState(inLevel, 'raft').markSeq < (newestMark(s)?.markSeq ?? 0)).toBe(true);
    // The two slots hold the last two marks: consecutive seqs.
    expect(Math.abs((s[0]?.markSeq ?? 0) - (s[1]?.markSeq ?? 0))).toBe(1);
  });

  it('a loss below the mark in the file starts the node recovering (the default order, no LevelDB mark)', async () => {
    const dir = await writtenLog(20);
    await cutAfter(dir, 12);
    const { recovered } = await openStore(dir);
    expect(recovered.recoverIndex).toBe(20);
  });

  it('a slot torn by a crash mid-write falls back to the other slot, the mark before it, and is written over next', async () => {
    const dir = await writtenLog(20);
    const before = await slots(dir);
    const newestSlot = (before[0]?.markSeq ?? 0) > (before[1]?.markSeq ?? 0) ? 0 : 1;
    const older = before[1 - newestSlot];
    const buf = await readFile(markPath(dir));
    // Half the newest slot's record is garbage: its checksum no longer matches.
    buf.fill(0xa5, newestSlot * MARK_SLOT_BYTES + 20, newestSlot * MARK_SLOT_BYTES + 40);
    await writeFile(markPath(dir), buf);
    const { store, recovered, report } = await openStore(dir);
    expect(recovered.recoverIndex).toBe(0);
    expect(report.highWater.index).toBe(older?.highWaterIndex);
    expect(report.markProblems).toHaveLength(1);
    expect(report.markProblems[0]).toMatch(new RegExp(`slot ${newestSlot}: checksum mismatch`));
    await persist(store, { entries: ents(21, 22, 1) });
    await closeAll();
    const after = await slots(dir);
    expect(after[newestSlot]).toMatchObject({ highWaterIndex: 22 });
  });

  it('a file with no valid slot, or missing after marks went to it, is refused as damage', async () => {
    const dir = await writtenLog(20);
    const buf = await readFile(markPath(dir));
    await writeFile(markPath(dir), Buffer.alloc(buf.byteLength, 0x5a));
    await expect(DiskLogStore.open(dir, ID, SMALL)).rejects.toThrow(
      /corrupt high-water mark file .*no slot holds a valid record/,
    );
    // LevelDB names a mark seq above 0 once a snapshot, a cut or the confirmation wrote one there.
    const dir2 = await writtenLog(20);
    await setMark(dir2, 20, 20);
    await rm(markPath(dir2));
    const err = await DiskLogStore.open(dir2, ID, SMALL).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptRecordError);
    expect(String(err)).toMatch(
      /high-water mark file .*it is missing, but the log state record in LevelDB names mark \d+/,
    );
  });

  it('a store written before the mark file (its log state in LevelDB, no mark seq) keeps its mark: a loss below it is still noticed', async () => {
    const dir = await writtenLog(20);
    const { firstSeq } = await markOf(dir);
    // What an earlier build left: a 32-byte log state record and no mark file.
    const payload = Buffer.alloc(32);
    payload.writeBigUInt64BE(20n, 0);
    payload.writeBigUInt64BE(1n, 8);
    payload.writeBigUInt64BE(BigInt(firstSeq), 16);
    payload.writeBigUInt64BE(20n, 24);
    const record = Buffer.concat([
      Buffer.from(
        encodeLogState({ highWaterIndex: 0, highWaterTerm: 0, firstSeq, mayHoldIndex: 0, markSeq: 0 }).subarray(0, 5),
      ),
      payload,
    ]);
    record.writeUInt32BE(crc32(payload), 0);
    await withRawDb(dir, (db) => db.put(KEY_LOG_STATE, record));
    await rm(markPath(dir));
    await cutAfter(dir, 15);
    const { report, recovered } = await openStore(dir);
    expect(recovered.recoverIndex).toBe(20);
    expect(report.highWater.index).toBe(20);
    expect(newestMark(await slots(dir))).toMatchObject({ highWaterIndex: 20, markSeq: 0 });
  });

  it('a hard state that only moves the commit index is stored once the store goes idle; a new term or vote before the acknowledgement', async () => {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 5, 1), hardState: { term: 1, vote: 'n1', commit: 0 } });
    await persist(store, { entries: ents(6, 8, 1), hardState: { term: 1, vote: 'n1', commit: 5 } });
    // The commit-only hard state is not in LevelDB yet: the batch was acknowledged without it.
    expect(await storedHardState(store)).toEqual({ term: 1, vote: 'n1', commit: 0 });
    await new Promise((r) => setTimeout(r, 60));
    expect(await storedHardState(store)).toEqual({ term: 1, vote: 'n1', commit: 5 });
    await persist(store, { entries: ents(9, 9, 2), hardState: { term: 2, vote: 'n2', commit: 8 } });
    expect(await storedHardState(store)).toEqual({ term: 2, vote: 'n2', commit: 8 });
    await closeAll();
    const { recovered } = await openStore(dir);
    expect(recovered.hardState).toEqual({ term: 2, vote: 'n2', commit: 8 });
  });

  it('the sync worker reports a failed sync with the step, and the next trip still runs', async () => {
    const dir = await tempDir();
    await mkdir(dir, { recursive: true });
    const fd = openSync(join(dir, 'mark'), 'w+');
    const segment = openSync(join(dir, 'segment'), 'w+');
    const worker = new SyncWorker('test store');
    try {
      await expect(worker.run(1 << 20, fd, Uint8Array.of(1, 2, 3), 0)).rejects.toThrow(
        /test store: fdatasync of the segment failed: .*EBADF/,
      );
      await worker.run(segment, fd, Uint8Array.of(7, 8, 9), 4096);
      const back = await readFile(join(dir, 'mark'));
      expect([...back.subarray(4096, 4099)]).toEqual([7, 8, 9]);
    } finally {
      await worker.close();
      closeSync(fd);
      closeSync(segment);
    }
  });

  it('a process whose only work was the store ends on its own after close(), not while the sync worker stops', async () => {
    const dir = await tempDir();
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/unit/fixtures/store-close.ts', dir], {
      cwd: process.cwd(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let errOut = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (errOut += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect({ code, out }, errOut).toEqual({ code: 0, out: 'closed\n' });
  });
});

/** The hard state record LevelDB holds, read through the store's own open handle (LevelDB allows one opener). */
async function storedHardState(store: DiskLogStore): Promise<unknown> {
  const v = await (store as unknown as { db: { get(k: Uint8Array): Promise<Uint8Array | undefined> } }).db.get(
    KEY_HARD_STATE,
  );
  return v === undefined ? null : decodeHardState(v, 'raft');
}
