// The Raft log's segment files on a real disk: what is written reads back,
// a torn (unsynced) tail is cut, damage anywhere else stops the node with the
// file, the byte offset and the index, and a log cut below the high-water
// mark starts the node recovering instead of being taken for a shorter log.

import { appendFile, mkdtemp, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EntryType, type Entry, type Snapshot } from '../../src/raft/types.ts';
import { CorruptRecordError } from '../../src/storage/codec.ts';
import { encodeRecords, encodeSegmentHeader, scanRecords, segmentFileName } from '../../src/storage/segment-format.ts';
import { DiskLogStore, type DiskLogStoreOptions } from '../../src/storage/store.ts';
import type { PersistBatch, StorageIdentity } from '../../src/storage/types.ts';
import { segmentFiles, walIndexes } from './fixtures/wal-files.ts';

const ID: StorageIdentity = { clusterId: 'alpha', nodeId: 'n1' };
/** Small segments, so a few dozen entries span several files. */
const SMALL: DiskLogStoreOptions = { segmentBytes: 512 };

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
  const batch: PersistBatch = { hardState: null, entries: [], snapshot: null, localSnapshot: null, compactTo: 0, sync: true, ...b };
  return new Promise((resolve, reject) => store.persist(batch, (err) => (err ? reject(err) : resolve())));
}

function ents(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push({ term, index: i, type: EntryType.Normal, data: Uint8Array.from({ length: 20 + (i % 9) }, (_, j) => (i * 31 + j) & 0xff) });
  return out;
}

function snap(index: number, term: number): Snapshot {
  return { metadata: { index, term, confState: { voters: ['n1'], learners: [], votersOutgoing: [] } }, data: Uint8Array.of(index & 0xff) };
}

/** A store holding entries 1..last (term 1) in several segments, closed; returns the data dir. */
async function writtenLog(last: number): Promise<string> {
  const dir = await tempDir();
  const { store } = await openStore(dir);
  for (let i = 1; i <= last; i += 5) await persist(store, { entries: ents(i, Math.min(i + 4, last), 1), hardState: { term: 1, vote: 'n1', commit: 2 } });
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
    expect(report.truncated[0]).toMatchObject({ index: victim.index, belowHighWater: true, savedAs: `${last}.cut-${victim.offset}` });
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
