import { withRawDb } from './fixtures/raw-level.ts';
import { InvariantError } from '../../src/util/assert.ts';
import { mkdtemp, mkdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level as ClassicLevel } from 'level';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { EntryType, NONE, emptySnapshot, type Entry, type HardState, type Snapshot } from '../../src/raft/types.ts';
import {
  CorruptRecordError,
  encodeHardState,
  encodeIdentity,
  encodeSnapshot,
  FORMAT_VERSION,
  KEY_HARD_STATE,
  KEY_IDENTITY,
  KEY_LOG_STATE,
  KEY_SNAPSHOT,
} from '../../src/storage/codec.ts';
import { scanRecords } from '../../src/storage/segment-format.ts';
import { StorageIdentityError } from '../../src/storage/dir-identity.ts';
import { MARK_FILE } from '../../src/storage/mark-file.ts';
import { DiskLogStore, type OpenReport } from '../../src/storage/store.ts';
import type { PersistBatch, RecoveredState, StorageIdentity } from '../../src/storage/types.ts';
import { applyBatch as simApplyBatch } from '../sim/sim-disk.ts';
import { CRASH_IDENTITY, CRASH_TERM, crashPayload } from './fixtures/storage-payload.ts';
import { killWhileWriting } from './fixtures/kill-writer.ts';
import { BATCH_ENTRIES as WRITER_BATCH_ENTRIES } from './fixtures/storage-writer-batch.ts';
import { segmentFiles, walIndexes } from './fixtures/wal-files.ts';

const ID: StorageIdentity = { clusterId: 'alpha', nodeId: 'n1' };

const dirs: string[] = [];
const open: DiskLogStore[] = [];

afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'verdict-storage-'));
  dirs.push(d);
  return join(d, 'node');
}

async function openStore(
  dir: string,
  id: StorageIdentity = ID,
): Promise<{ store: DiskLogStore; recovered: RecoveredState; report: OpenReport }> {
  const r = await DiskLogStore.open(dir, id);
  open.push(r.store);
  return r;
}

async function closeStore(store: DiskLogStore): Promise<void> {
  const at = open.indexOf(store);
  if (at >= 0) open.splice(at, 1);
  await store.close();
}

async function reopen(
  store: DiskLogStore,
  dir: string,
): Promise<{ store: DiskLogStore; recovered: RecoveredState; report: OpenReport }> {
  await closeStore(store);
  return openStore(dir);
}

function batchOf(b: Partial<PersistBatch>): PersistBatch {
  return { hardState: null, entries: [], snapshot: null, localSnapshot: null, compactTo: 0, sync: true, ...b };
}

function persist(store: DiskLogStore, batch: Partial<PersistBatch>): Promise<void> {
  const full: PersistBatch = batchOf(batch);
  return new Promise((resolve, reject) => store.persist(full, (err: Error | null) => (err ? reject(err) : resolve())));
}

/** Entries from..to with payloads that hold every kind of byte, including none. */
function ents(from: number, to: number, term: number, tag = 0): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) {
    const data = Uint8Array.from(
      { length: (i + tag) % 5 === 0 ? 0 : 3 + (i % 7) },
      (_, j) => (i * 37 + j * 101 + tag) & 0xff,
    );
    out.push({ term, index: i, type: i % 4 === 0 ? EntryType.ConfChange : EntryType.Normal, data });
  }
  return out;
}

function snap(index: number, term: number): Snapshot {
  return {
    metadata: { index, term, confState: { voters: ['n1', 'n2', 'n3'], learners: ['n4'], votersOutgoing: [] } },
    data: Uint8Array.from([0, 255, 1, 254, index & 0xff]),
  };
}

/** The index of every record in the segment files, in file order. */
async function entryKeysOnDisk(dir: string): Promise<number[]> {
  return walIndexes(join(dir, 'wal'));
}

async function dump(dir: string): Promise<Array<[string, string]>> {
  return withRawDb(dir, async (db) =>
    (await db.iterator().all()).map(([k, v]): [string, string] => [
      Buffer.from(k).toString('hex'),
      Buffer.from(v).toString('hex'),
    ]),
  );
}

describe('DiskLogStore: round trips', () => {
  it('a fresh store recovers the zero hard state, the empty snapshot and no entries', async () => {
    const { recovered } = await openStore(await tempDir());
    expect(recovered).toEqual({
      hardState: { term: 0, vote: NONE, commit: 0 },
      snapshot: emptySnapshot(),
      entries: [],
      recoverIndex: 0,
    });
  });

  it('hard state, binary entries and a snapshot survive a reopen unchanged', async () => {
    const dir = await tempDir();
    let { store } = await openStore(dir);
    const hs: HardState = { term: 3, vote: 'n2', commit: 4 };
    await persist(store, { hardState: hs, entries: [...ents(1, 5, 2), ...ents(6, 9, 3)] });
    let recovered: RecoveredState;
    ({ store, recovered } = await reopen(store, dir));
    expect(recovered).toEqual({
      hardState: hs,
      snapshot: emptySnapshot(),
      entries: [...ents(1, 5, 2), ...ents(6, 9, 3)],
      recoverIndex: 0,
    });

    await persist(store, { hardState: { term: 3, vote: 'n2', commit: 6 }, localSnapshot: snap(4, 2) });
    ({ recovered } = await reopen(store, dir));
    expect(recovered).toEqual({
      hardState: { term: 3, vote: 'n2', commit: 6 },
      snapshot: snap(4, 2),
      entries: [...ents(5, 5, 2), ...ents(6, 9, 3)],
      recoverIndex: 0,
    });
    expect(recovered.entries[0].data).toBeInstanceOf(Uint8Array);
  });

  it('batches persisted back to back are written in order and each onSynced fires in order', async () => {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    const synced: number[] = [];
    const done = new Promise<void>((resolve, reject) => {
      for (let b = 0; b < 40; b++) {
        const from = b * 5 + 1;
        store.persist(batchOf({ entries: ents(from, from + 4, 1) }), (err: Error | null) => {
          if (err) reject(err);
          synced.push(b);
          if (b === 39) resolve();
        });
      }
    });
    await done;
    expect(synced).toEqual([...Array(40).keys()]);
    const { recovered } = await reopen(store, dir);
    expect(recovered.entries).toEqual(ents(1, 200, 1));
  });
  it('after a failed write, later batches fail too and are not written, so the log cannot get a hole', async () => {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 2, 1) });
    // Reach under the store to make one segment write fail, then let the disk recover.
    const wal = (store as unknown as { wal: { handle: { close(): Promise<void> }; openLast(): Promise<void> } }).wal;
    await wal.handle.close();
    const outcome = (p: Promise<void>): Promise<unknown> =>
      p.then(
        () => 'synced',
        (err: unknown) => err,
      );
    const failed = outcome(persist(store, { entries: ents(3, 3, 1) }));
    const queued = outcome(persist(store, { entries: ents(4, 4, 1) }));
    expect(await failed).toBeInstanceOf(Error);
    expect(await queued).toBeInstanceOf(Error);
    await wal.openLast();
    expect(await outcome(persist(store, { entries: ents(5, 5, 1) }))).toBeInstanceOf(Error);
    const { recovered } = await reopen(store, dir);
    expect(recovered.entries).toEqual(ents(1, 2, 1));
  });
});

describe('DiskLogStore: truncation, snapshots, compaction', () => {
  it('entries from a new term replace the tail from their first index, and nothing stale is left past the new last', async () => {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 10, 1), hardState: { term: 1, vote: 'n1', commit: 3 } });
    await persist(store, { entries: ents(6, 8, 2, 9), hardState: { term: 2, vote: 'n2', commit: 3 } });
    const { recovered } = await reopen(store, dir);
    expect(recovered.entries).toEqual([...ents(1, 5, 1), ...ents(6, 8, 2, 9)]);
    await closeStore(open[0]);
    expect(await entryKeysOnDisk(dir)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("installing a leader's snapshot replaces the whole log, even entries after its index", async () => {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 10, 1), hardState: { term: 1, vote: NONE, commit: 2 } });
    await persist(store, { snapshot: snap(6, 2), hardState: { term: 2, vote: NONE, commit: 6 } });
    const { store: s2, recovered } = await reopen(store, dir);
    expect(recovered.snapshot).toEqual(snap(6, 2));
    expect(recovered.entries).toEqual([]);
    // Appending after a reopen continues from the recovered bounds.
    await persist(s2, { entries: ents(7, 8, 2) });
    const { store: s3, recovered: r3 } = await reopen(s2, dir);
    expect(r3.entries).toEqual(ents(7, 8, 2));
    await closeStore(s3);
    expect(await entryKeysOnDisk(dir)).toEqual([7, 8]);
  });

  it("a leader's snapshot beyond the last entry, with the entries that follow it in the same batch", async () => {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 5, 1), hardState: { term: 1, vote: NONE, commit: 2 } });
    await persist(store, {
      snapshot: snap(20, 3),
      entries: ents(21, 23, 3),
      hardState: { term: 3, vote: NONE, commit: 20 },
    });
    const { recovered } = await reopen(store, dir);
    expect(recovered.snapshot).toEqual(snap(20, 3));
    expect(recovered.entries).toEqual(ents(21, 23, 3));
    expect(recovered.hardState).toEqual({ term: 3, vote: NONE, commit: 20 });
  });

  it('a local snapshot keeps the log; compactTo then drops exactly the entries at or below it', async () => {
    const dir = await tempDir();
    let { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 10, 1), hardState: { term: 1, vote: 'n1', commit: 8 } });
    await persist(store, { localSnapshot: snap(6, 1) });
    let recovered: RecoveredState;
    ({ store, recovered } = await reopen(store, dir));
    expect(recovered.snapshot).toEqual(snap(6, 1));
    expect(recovered.entries).toEqual(ents(7, 10, 1));
    await closeStore(store);
    expect(await entryKeysOnDisk(dir)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

    ({ store } = await openStore(dir));
    await persist(store, { compactTo: 4 });
    // The driver's pattern: a local snapshot and the compaction up to it in one batch.
    await persist(store, { localSnapshot: snap(8, 1), compactTo: 7 });
    ({ store, recovered } = await reopen(store, dir));
    expect(recovered.snapshot).toEqual(snap(8, 1));
    expect(recovered.entries).toEqual(ents(9, 10, 1));
    await closeStore(store);
    // Segments are deleted whole (test/unit/segment-log.test.ts); the log past the snapshot is exact.
    expect((await entryKeysOnDisk(dir)).filter((i) => i > 8)).toEqual([9, 10]);
  });

  it('compactTo past the snapshot would lose the only copy of entries and throws', async () => {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 10, 1) });
    await persist(store, { localSnapshot: snap(5, 1), compactTo: 5 });
    expect(() => store.persist(batchOf({ compactTo: 7 }), () => {})).toThrow(
      /compactTo 7 is beyond the snapshot index 5/,
    );
    const { recovered } = await reopen(store, dir);
    expect(recovered.snapshot.metadata.index).toBe(5);
    expect(recovered.entries).toEqual(ents(6, 10, 1));
  });

  it.each<[string, Partial<PersistBatch>, RegExp]>([
    [
      'entries that leave a gap after the last index',
      { entries: ents(12, 13, 1) },
      /leaves a gap after the last index 10/,
    ],
    [
      'entries that are not contiguous',
      { entries: [...ents(11, 11, 1), ...ents(13, 13, 1)] },
      /not contiguous: 11 then 13/,
    ],
    ['entries whose terms go back', { entries: [...ents(11, 11, 2), ...ents(12, 12, 1)] }, /entry terms go back/],
    [
      'entries that overwrite committed ones',
      { entries: ents(4, 4, 2) },
      /would overwrite committed entries \(commit 5\)/,
    ],
    [
      'entries at or below the snapshot index',
      { snapshot: snap(8, 1), entries: ents(8, 9, 1) },
      /entry 8 is at or below the snapshot index 8/,
    ],
    [
      "a leader's snapshot that goes backwards",
      { snapshot: snap(2, 1) },
      /snapshot index 2 is behind the stored snapshot 3/,
    ],
    [
      "a leader's snapshot below the commit index",
      { snapshot: snap(4, 1) },
      /snapshot index 4 would drop committed entries \(commit 5\)/,
    ],
    [
      'a local snapshot that goes backwards',
      { localSnapshot: snap(2, 1) },
      /local snapshot index 2 is behind the stored snapshot 3/,
    ],
    [
      'a local snapshot beyond the last index',
      { localSnapshot: snap(11, 1) },
      /local snapshot index 11 is beyond the last index 10/,
    ],
    [
      'a commit beyond the last index',
      { hardState: { term: 1, vote: 'n1', commit: 11 } },
      /commit 11 is beyond the last index 10/,
    ],
    ['a commit that goes back', { hardState: { term: 1, vote: 'n1', commit: 4 } }, /commit goes back from 5 to 4/],
    ['a term that goes backwards', { hardState: { term: 0, vote: 'n1', commit: 5 } }, /term goes back from 1 to 0/],
    [
      'a second vote in the same term',
      { hardState: { term: 1, vote: 'n2', commit: 5 } },
      /vote in term 1 changes from n1 to n2/,
    ],
  ])('rejects %s before writing anything', async (_name, bad, why) => {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 10, 1), hardState: { term: 1, vote: 'n1', commit: 5 } });
    await persist(store, { localSnapshot: snap(3, 1) });
    const before = (await reopen(store, dir)).store;
    expect(() => before.persist(batchOf(bad), () => {})).toThrow(InvariantError);
    expect(() => before.persist(batchOf(bad), () => {})).toThrow(why);
    const { recovered } = await reopen(before, dir);
    expect(recovered.entries).toEqual(ents(4, 10, 1));
    expect(recovered.hardState).toEqual({ term: 1, vote: 'n1', commit: 5 });
  });
});

// ---- property: the store behaves like a map of index → entry ---------------

interface Model {
  hardState: HardState;
  snapshot: Snapshot;
  /** Every entry on disk, including those a local snapshot kept below itself. */
  log: Map<number, Entry>;
  /** The highest term handed out, so terms never go backwards in the log. */
  term: number;
}

const stepArb = fc.record({
  snapshot: fc.option(fc.nat(), { freq: 6 }),
  entries: fc.option(
    fc.record({
      startSeed: fc.nat(),
      count: fc.integer({ min: 1, max: 6 }),
      newTerm: fc.boolean(),
      data: fc.uint8Array({ maxLength: 12 }),
    }),
    { freq: 2 },
  ),
  hardState: fc.option(fc.record({ voteSeed: fc.nat(), commitSeed: fc.nat() }), { freq: 2 }),
  localSnapshot: fc.option(fc.nat(), { freq: 4 }),
  compactSeed: fc.option(fc.nat(), { freq: 3 }),
  waitForSync: fc.boolean(),
  reopen: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
});
type Step = typeof stepArb extends fc.Arbitrary<infer T> ? T : never;

function modelLast(m: Model): number {
  return Math.max(m.snapshot.metadata.index, ...m.log.keys());
}

/**
 * Turns random seeds into a batch that is valid against the model, part by
 * part in the documented order, applying each part to the model as it goes.
 */
function makeBatch(m: Model, step: Step): PersistBatch {
  const batch = batchOf({});
  const add = (part: Partial<PersistBatch>): void => {
    Object.assign(batch, part);
    applyToModel(m, batchOf(part));
  };
  const snapIndex = (): number => m.snapshot.metadata.index;
  if (step.snapshot !== null) {
    const lo = Math.max(snapIndex(), m.hardState.commit);
    add({ snapshot: snap(lo + (step.snapshot % (modelLast(m) - lo + 3)), m.term) });
  }
  if (step.entries !== null) {
    const { startSeed, count, newTerm, data } = step.entries;
    const lo = Math.max(snapIndex(), m.hardState.commit) + 1;
    const start = lo + (startSeed % (modelLast(m) + 1 - lo + 1));
    if (newTerm) m.term += 1;
    add({
      entries: Array.from({ length: count }, (_, i) => ({
        term: m.term,
        index: start + i,
        type: EntryType.Normal,
        data: data.slice(i),
      })),
    });
  }
  if (step.hardState !== null) {
    const prev = m.hardState;
    const vote = m.term === prev.term && prev.vote !== NONE ? prev.vote : ['', 'n1', 'n2'][step.hardState.voteSeed % 3];
    const commit = prev.commit + (step.hardState.commitSeed % (modelLast(m) - prev.commit + 1));
    add({ hardState: { term: m.term, vote, commit } });
  }
  if (step.localSnapshot !== null) {
    const index = snapIndex() + (step.localSnapshot % (modelLast(m) - snapIndex() + 1));
    add({ localSnapshot: snap(index, m.log.get(index)?.term ?? m.snapshot.metadata.term) });
  }
  if (step.compactSeed !== null) add({ compactTo: step.compactSeed % (snapIndex() + 1) });
  return batch;
}

/** The reference: PersistBatch's documented semantics on a plain map. */
function applyToModel(m: Model, b: PersistBatch): void {
  const dropWhere = (pred: (i: number) => boolean): void => {
    for (const i of [...m.log.keys()]) if (pred(i)) m.log.delete(i);
  };
  if (b.snapshot) {
    m.log.clear();
    m.snapshot = b.snapshot;
  }
  if (b.entries.length > 0) {
    const from = b.entries[0].index;
    dropWhere((i) => i >= from);
    for (const e of b.entries) m.log.set(e.index, e);
  }
  if (b.hardState) m.hardState = b.hardState;
  if (b.localSnapshot) m.snapshot = b.localSnapshot;
  dropWhere((i) => i <= b.compactTo);
}

function modelState(m: Model): RecoveredState {
  const after = [...m.log.values()].filter((e) => e.index > m.snapshot.metadata.index);
  return {
    hardState: m.hardState,
    snapshot: m.snapshot,
    entries: after.sort((a, b) => a.index - b.index),
    recoverIndex: 0,
  };
}

describe('DiskLogStore: property', () => {
  it('after any sequence of valid batches, what reopening recovers equals the reference model', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 25 }), async (steps) => {
        const dir = await tempDir();
        let { store } = await openStore(dir);
        const m: Model = {
          hardState: { term: 0, vote: NONE, commit: 0 },
          snapshot: emptySnapshot(),
          log: new Map(),
          term: 1,
        };
        const sim: RecoveredState = {
          hardState: { term: 0, vote: NONE, commit: 0 },
          snapshot: emptySnapshot(),
          entries: [],
          recoverIndex: 0,
        };
        const pending: Promise<void>[] = [];
        try {
          for (const step of steps) {
            const batch = makeBatch(m, step);
            simApplyBatch(sim, batch);
            pending.push(persist(store, batch));
            if (step.waitForSync) await Promise.all(pending.splice(0));
            if (step.reopen) {
              await Promise.all(pending.splice(0));
              const r = await reopen(store, dir);
              store = r.store;
              expect(r.recovered).toEqual(modelState(m));
            }
          }
          await Promise.all(pending.splice(0));
          const { store: last, recovered } = await reopen(store, dir);
          store = last;
          expect(recovered).toEqual(modelState(m));
          // The simulator's disk is the reference the rest of the project tests against.
          expect(recovered).toEqual(sim);
          await closeStore(store);
          // Truncation and compaction leave nothing stale past the log, and nothing is missing from it.
          // (Compaction is by whole segment, so entries at or below the snapshot may stay.)
          const snapIndex = m.snapshot.metadata.index;
          const onDisk = await entryKeysOnDisk(dir);
          const want = [...m.log.keys()].sort((a, b) => a - b);
          expect(onDisk.filter((i) => i > snapIndex)).toEqual(want.filter((i) => i > snapIndex));
          expect(onDisk.at(-1) ?? 0).toBeLessThanOrEqual(Math.max(snapIndex, want.at(-1) ?? 0));
        } finally {
          await Promise.allSettled(pending);
          await closeStore(store);
          await rm(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 60 },
    );
  });
});

// ---- corruption ---------------------------------------------------------

describe('DiskLogStore: damaged LevelDB records are refused with the path and the record', () => {
  async function storeWithLog(): Promise<string> {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 8, 1), hardState: { term: 1, vote: 'n1', commit: 6 } });
    await closeStore(store);
    return dir;
  }

  async function tamper(dir: string, key: Uint8Array, change: (v: Uint8Array) => Uint8Array | null): Promise<void> {
    await withRawDb(dir, async (db) => {
      const v = await db.get(key);
      if (v === undefined) throw new Error('nothing to tamper with');
      const next = change(new Uint8Array(v));
      await (next === null ? db.del(key) : db.put(key, next));
    });
  }

  const flip = (at: (v: Uint8Array) => number) => (v: Uint8Array) => {
    v[at(v)] ^= 0x40;
    return v;
  };

  it('a corrupted hard state record', async () => {
    const dir = await storeWithLog();
    await tamper(
      dir,
      KEY_HARD_STATE,
      flip((v) => v.length - 1),
    );
    const err = await DiskLogStore.open(dir, ID).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptRecordError);
    expect((err as Error).message).toMatch(
      new RegExp(`corrupt hard state record in ${escape(join(dir, 'raft'))}: checksum mismatch`),
    );
    expect((err as Error).message).toContain(
      'run `verdict node repair --config <file>` to move the data directory aside; the node then rejoins empty',
    );
    expect((err as Error).message).not.toMatch(/\bdelete\b|\bremove\b|empty directory/);
  });

  it("a LevelDB database that cannot be opened is refused in one line naming the path and LevelDB's cause", async () => {
    const dir = await storeWithLog();
    await writeFile(join(dir, 'raft', 'CURRENT'), 'MANIFEST-999999\n');
    const err = await DiskLogStore.open(dir, ID).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    const msg = (err as Error).message;
    expect(msg).toContain(`${join(dir, 'raft')} could not be opened`);
    expect(msg).toContain('MANIFEST-999999');
    expect(msg).not.toContain('\n');
  });

  it('a corrupted snapshot record', async () => {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 4, 1) });
    await persist(store, { localSnapshot: snap(2, 1) });
    await closeStore(store);
    await tamper(
      dir,
      KEY_SNAPSHOT,
      flip(() => 9),
    );
    await expect(DiskLogStore.open(dir, ID)).rejects.toThrow(/corrupt snapshot record .*checksum mismatch/);
  });

  it('a lost tail that held committed entries starts the node recovering, with the commit index clamped to the log', async () => {
    const dir = await storeWithLog();
    // The high-water mark is gone too (the mark file, and any log state
    // record in LevelDB): the commit index alone still proves entries 7..8 were synced.
    await withRawDb(dir, (db) => db.del(KEY_LOG_STATE));
    await rm(join(dir, 'raft', MARK_FILE));
    const [file] = await segmentFiles(join(dir, 'wal'));
    const { recovered: before } = await openStore(dir);
    expect(before.recoverIndex).toBe(0);
    await closeStore(open[0]);
    const buf = await readFile(file);
    // Cut after entry 5: find where record 6 starts by scanning.
    const scanned = scanRecords(buf, 1);
    await truncate(file, scanned.offsets[5]);
    const { recovered } = await openStore(dir);
    expect(recovered.entries.map((e) => e.index)).toEqual([1, 2, 3, 4, 5]);
    expect(recovered.hardState.commit).toBe(5);
    expect(recovered.recoverIndex).toBe(6);
  });
});

describe('DiskLogStore: a data directory in another storage format is refused', () => {
  it.each([1, FORMAT_VERSION + 1])(
    'format %i (an earlier development build, or a later one) is refused in one line naming the path, both formats and what to do, and nothing is written',
    async (format) => {
      const dir = await tempDir();
      await mkdir(dir, { recursive: true });
      const db = new ClassicLevel<Uint8Array, Uint8Array>(join(dir, 'raft'), {
        keyEncoding: 'view',
        valueEncoding: 'view',
      });
      await db.open();
      // Format 1 kept the raft entries in LevelDB too, under keys 0x10 + u64 index; one such key stands for them.
      await db.batch([
        { type: 'put', key: KEY_IDENTITY, value: encodeIdentity(ID, format) },
        { type: 'put', key: KEY_HARD_STATE, value: encodeHardState({ term: 2, vote: 'n2', commit: 8 }) },
        { type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(snap(3, 1)) },
        { type: 'put', key: Uint8Array.of(0x10, 0, 0, 0, 0, 0, 0, 0, 4), value: Uint8Array.of(1, 2, 3) },
      ]);
      await db.close();
      const before = await dump(dir);

      const err = await DiskLogStore.open(dir, ID).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StorageIdentityError);
      const msg = (err as Error).message;
      expect(msg).not.toContain('\n');
      expect(msg).toContain(
        `${join(dir, 'raft')} was written in storage format ${format} but this build reads format ${FORMAT_VERSION} only`,
      );
      expect(msg).toContain('run `verdict node repair --config');
      expect(msg).not.toMatch(/\bdelete\b|\bremove\b/);
      expect(await dump(dir)).toEqual(before);
      await expect(readFile(join(dir, 'identity.json'), 'utf8')).rejects.toThrow(/ENOENT/);
    },
  );
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ---- identity -----------------------------------------------------------

describe('DiskLogStore: a data directory belongs to one node of one cluster', () => {
  it.each<[string, StorageIdentity]>([
    ['another cluster id', { clusterId: 'beta', nodeId: 'n1' }],
    ['another node id', { clusterId: 'alpha', nodeId: 'n2' }],
  ])('opening with %s is refused and writes nothing', async (_name, other) => {
    const dir = await tempDir();
    const { store } = await openStore(dir);
    await persist(store, { entries: ents(1, 3, 1), hardState: { term: 1, vote: 'n1', commit: 1 } });
    await closeStore(store);
    const before = await dump(dir);

    const err = await DiskLogStore.open(dir, other).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageIdentityError);
    const msg = (err as Error).message;
    expect(msg).not.toContain('\n');
    expect(msg).toContain(`belongs to node "n1" of cluster "alpha"`);
    expect(msg).toContain(`the config says node "${other.nodeId}" of cluster "${other.clusterId}"`);
    // Another member's directory: never "delete it", its data may be what the cluster needs.
    expect(msg).toContain("point the config at this node's own data directory");
    expect(msg).not.toMatch(/\bdelete\b|\bremove\b/);
    expect(await dump(dir)).toEqual(before);
    // The right identity still opens it.
    expect((await openStore(dir)).recovered.entries).toEqual(ents(1, 3, 1));
  });

  it('a non-empty directory that is not a Verdict data directory is refused untouched', async () => {
    const dir = await tempDir();
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'postgresql.conf'), 'max_connections = 100\n');
    await expect(DiskLogStore.open(dir, ID)).rejects.toThrow(StorageIdentityError);
    await expect(DiskLogStore.open(dir, ID)).rejects.toThrow(/is not a Verdict data directory/);
  });

  it("a dedicated disk's lost+found does not make a new data directory non-empty", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'lost+found'), { recursive: true });
    const opened = await openStore(dir);
    expect(opened.recovered.entries).toEqual([]);
    await closeStore(opened.store);
  });

  it('no refusal advises an empty directory for a damaged member: it points to verdict node repair', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'raft'), { recursive: true });
    await writeFile(join(dir, 'raft', '000005.ldb'), 'not a table');
    const msg = String(await DiskLogStore.open(dir, ID).catch((e: unknown) => (e as Error).message));
    expect(msg).toMatch(/holds no LevelDB database/);
    expect(msg).toContain('run `verdict node repair --config');
    expect(msg).not.toMatch(/point the config at an empty directory|\bdelete\b/);
  });

  it('a raft/ directory holding some other LevelDB database is refused and left unchanged', async () => {
    const dir = await tempDir();
    const foreign = new ClassicLevel<string, string>(join(dir, 'raft'));
    await foreign.put('user:1', 'alice');
    await foreign.close();
    const before = await dump(dir);
    await expect(DiskLogStore.open(dir, ID)).rejects.toThrow(/without a Verdict identity record/);
    expect(await dump(dir)).toEqual(before);
  });

  it('a second open of a directory in use says the node is already running', async () => {
    const dir = await tempDir();
    await openStore(dir);
    await expect(DiskLogStore.open(dir, ID)).rejects.toThrow(/locked by another process/);
  });
});

// ---- crash --------------------------------------------------------------

describe('DiskLogStore: SIGKILL while writing', () => {
  it('R6: every batch reported synced is on disk, contiguous and intact', async () => {
    const dir = await tempDir();
    const { lines, errOut } = await killWhileWriting('test/unit/fixtures/storage-writer.ts', dir);
    const reported = lines.map(Number);
    expect(reported.length, errOut).toBeGreaterThan(0);
    const syncedLast = Math.max(...reported);

    const { recovered, report } = await openStore(dir, CRASH_IDENTITY);
    const { entries } = recovered;
    // The mark is written (synced) beside each batch's segment sync, before
    // onSynced: "may hold up to" covers every batch the node could have
    // acknowledged, "acknowledged through" every batch before the last one
    // (the next mark or the idle confirmation covers that), and neither
    // claims more than the log holds, so the crash is an ordinary one.
    expect(report.mayHoldIndex).toBeGreaterThanOrEqual(syncedLast);
    expect(report.highWater.index).toBeGreaterThanOrEqual(syncedLast - WRITER_BATCH_ENTRIES);
    expect(report.highWater.index).toBeLessThanOrEqual(entries.length);
    expect(recovered.recoverIndex).toBe(0);
    expect(recovered.snapshot.metadata.index).toBe(0);
    expect(entries.length).toBeGreaterThanOrEqual(syncedLast);
    entries.forEach((e, i) => {
      expect(e.index).toBe(i + 1);
      expect(e.term).toBe(CRASH_TERM);
      expect(e.data).toEqual(crashPayload(e.index));
    });
    expect(recovered.hardState.commit).toBeLessThanOrEqual(entries.length);
  }, 60_000);
});
