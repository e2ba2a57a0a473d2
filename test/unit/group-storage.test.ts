// One storage writer shared by the G decision groups of a node
// (src/storage/group-store.ts): the record format, recovery of every
// group's log, hard state and snapshot, one fdatasync per batch of every
// group's Readys, compaction by every group's snapshot, torn tails, and the
// number of groups fixed at the founding.
import { withRawDb } from './fixtures/raw-level.ts';
import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { EntryType, NONE, emptySnapshot, type Entry, type HardState, type Snapshot } from '../../src/raft/types.ts';
import { CorruptRecordError } from '../../src/storage/codec.ts';
import { StorageIdentityError } from '../../src/storage/dir-identity.ts';
import { encodeGroupRecords, encodeGroupSegmentHeader, scanGroupRecords } from '../../src/storage/group-format.ts';
import { GROUP_MARK_FILE, openGroupStorage, type GroupStorage } from '../../src/storage/group-store.ts';
import { encodeRecords, SEGMENT_HEADER_BYTES } from '../../src/storage/segment-format.ts';
import { DiskLogStore } from '../../src/storage/store.ts';
import type { LogStore, PersistBatch, RecoveredState, StorageIdentity } from '../../src/storage/types.ts';
import { applyBatch as simApplyBatch } from '../sim/sim-disk.ts';

const ID: StorageIdentity = { clusterId: 'alpha', nodeId: 'n1' };
const dirs: string[] = [];
const opened: GroupStorage[] = [];

afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'verdict-groups-'));
  dirs.push(d);
  return join(d, 'node');
}

async function openG(dir: string, groups: number, segmentBytes?: number): Promise<GroupStorage> {
  const s = await openGroupStorage(dir, ID, groups, { segmentBytes });
  opened.push(s);
  return s;
}

async function closeG(s: GroupStorage): Promise<void> {
  const at = opened.indexOf(s);
  if (at >= 0) opened.splice(at, 1);
  await s.close();
}

function batchOf(b: Partial<PersistBatch>): PersistBatch {
  return { hardState: null, entries: [], snapshot: null, localSnapshot: null, compactTo: 0, sync: true, ...b };
}

function persist(store: LogStore, b: Partial<PersistBatch>): Promise<void> {
  return new Promise((resolve, reject) => store.persist(batchOf(b), (err) => (err ? reject(err) : resolve())));
}

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

function snap(index: number, term: number, tag = 0): Snapshot {
  return {
    metadata: { index, term, confState: { voters: ['n1', 'n2', 'n3'], learners: [], votersOutgoing: [] } },
    data: Uint8Array.from([tag, index & 0xff]),
  };
}

const hs = (term: number, commit: number, vote = 'n1'): HardState => ({ term, vote, commit });

async function groupSegments(dir: string): Promise<string[]> {
  return (await readdir(join(dir, 'wal'))).filter((n) => n.endsWith('.groups.wal')).sort();
}

describe('group log records: the encoder asserts what the reader refuses (paired)', () => {
  const e = (index: number, term: number, type = EntryType.Normal): Entry => ({
    index,
    term,
    type,
    data: new Uint8Array([7, 8]),
  });

  it("group 0's record is byte for byte the one-group record; another group's names its group and reads back", () => {
    const zero = encodeGroupRecords([{ group: 0, entries: [e(5, 1), e(6, 2)] }], 4);
    expect(zero.equals(encodeRecords([e(5, 1), e(6, 2)]).buf)).toBe(true);
    const buf = Buffer.concat([
      encodeGroupSegmentHeader(1),
      encodeGroupRecords(
        [
          { group: 0, entries: [e(5, 1)] },
          { group: 3, entries: [e(1, 1), e(2, 1)] },
        ],
        4,
      ),
    ]);
    const scanned = scanGroupRecords(buf, 4);
    expect(scanned.problem).toBeNull();
    expect(scanned.records.map((r) => [r.group, r.entry.index, r.entry.term, [...r.entry.data]])).toEqual([
      [0, 5, 1, [7, 8]],
      [3, 1, 1, [7, 8]],
      [3, 2, 1, [7, 8]],
    ]);
  });

  it('a group outside the node, an index of 0, an unknown type or a run that does not follow itself is refused by both sides', () => {
    expect(() => encodeGroupRecords([{ group: 4, entries: [e(1, 1)] }], 4)).toThrow(/group 4 is one of the node's 4/);
    expect(() => encodeGroupRecords([{ group: 1, entries: [e(0, 1)] }], 4)).toThrow(/safe index from 1/);
    expect(() => encodeGroupRecords([{ group: 1, entries: [e(1, 1, 9 as EntryType)] }], 4)).toThrow(/known type/);
    expect(() => encodeGroupRecords([{ group: 1, entries: [e(1, 1), e(3, 1)] }], 4)).toThrow(/follows entry 1/);
    // The reader refuses the same: group 3's record read by a node of 2 groups, and a tag naming group 0.
    const three = Buffer.concat([
      encodeGroupSegmentHeader(1),
      encodeGroupRecords([{ group: 3, entries: [e(1, 1)] }], 4),
    ]);
    expect(scanGroupRecords(three, 2).problem).toMatchObject({
      kind: 'invalid',
      detail: expect.stringMatching(/names group 3, the node has 2/),
    });
    const taggedZero = Buffer.from(three);
    taggedZero.writeUInt16BE(0, SEGMENT_HEADER_BYTES + 8 + 17);
    // Re-seal the checksum so that only the tag is wrong.
    const fixed = Buffer.concat([encodeGroupSegmentHeader(1), resealed(taggedZero.subarray(SEGMENT_HEADER_BYTES))]);
    expect(scanGroupRecords(fixed, 4).problem).toMatchObject({
      kind: 'invalid',
      detail: expect.stringMatching(/tagged record names group 0/),
    });
  });
});

/** The record with its checksum computed again (the frame: u32 length, u32 crc of length and body). */
function resealed(rec: Buffer): Buffer {
  const out = Buffer.from(rec);
  const len = out.readUInt32BE(0);
  out.writeUInt32BE(crc32(out.subarray(8, 8 + len), crc32(out.subarray(0, 4))), 4);
  return out;
}

describe('openGroupStorage at G = 1 is the one-group store, byte for byte', () => {
  it('the same batches leave the same segment files, mark file and LevelDB records as DiskLogStore.open', async () => {
    const a = await tempDir();
    const b = await tempDir();
    const batches: Partial<PersistBatch>[] = [
      { hardState: hs(1, 0), entries: ents(1, 5, 1) },
      { hardState: hs(1, 3), entries: ents(6, 8, 1) },
      { hardState: hs(2, 3, 'n2'), entries: ents(7, 9, 2, 1) },
      { localSnapshot: snap(5, 1), compactTo: 4 },
    ];
    const g = await openG(a, 1);
    expect(g.groups).toHaveLength(1);
    expect(g.groups[0].store).toBeInstanceOf(DiskLogStore);
    for (const x of batches) await persist(g.groups[0].store, x);
    await closeG(g);
    const { store } = await DiskLogStore.open(b, ID);
    for (const x of batches) await persist(store, x);
    await store.close();
    const files = async (d: string): Promise<Array<[string, string]>> => {
      const out: Array<[string, string]> = [];
      for (const n of (await readdir(join(d, 'wal'))).sort())
        out.push([n, (await readFile(join(d, 'wal', n))).toString('hex')]);
      out.push(['high-water', (await readFile(join(d, 'raft', 'high-water'))).toString('hex')]);
      return out;
    };
    expect(await files(a)).toEqual(await files(b));
    const dump = (d: string) =>
      withRawDb(d, async (db) =>
        (await db.iterator().all()).map(([k, v]) => [Buffer.from(k).toString('hex'), Buffer.from(v).toString('hex')]),
      );
    expect(await dump(a)).toEqual(await dump(b));
    // And no groups record: a directory of one group holds no key it did not hold before.
    expect((await dump(a)).map(([k]) => k)).not.toContain('05');
  });
});

describe('the shared writer at G = 4', () => {
  it("the Readys of four groups in one turn are one batch: one trip for the segment and the marks, a LevelDB write only for a new term or vote, then each group's callback", async () => {
    const dir = await tempDir();
    const s = await openG(dir, 4);
    const order: number[] = [];
    await Promise.all(
      s.groups.map((g, i) =>
        persist(g.store, { hardState: hs(1, 0), entries: ents(1, 3, 1, i) }).then(() => order.push(i)),
      ),
    );
    expect(s.stats()).toEqual({ batches: 1, groupBatches: 4, segmentSyncs: 1, levelSyncs: 1 });
    expect(order).toEqual([0, 1, 2, 3]);
    // Ten more turns of all four groups: still one fdatasync per batch.
    for (let t = 0; t < 10; t++)
      await Promise.all(
        s.groups.map((g, i) => persist(g.store, { hardState: hs(1, 3 + t), entries: ents(4 + t, 4 + t, 1, i) })),
      );
    const st = s.stats()!;
    expect(st.batches).toBe(11);
    expect(st.segmentSyncs / st.batches).toBe(1);
    expect(st.groupBatches / st.batches).toBe(4);
    // Hard states that only move the commit index wait for the writer to be idle: no LevelDB write per batch.
    expect(st.levelSyncs).toBe(1);
    await closeG(s);
    // A clean stop stored them.
    const again = await openG(dir, 4);
    expect(again.groups.map((g) => g.recovered.hardState)).toEqual([0, 1, 2, 3].map(() => hs(1, 12)));
  });

  it('once idle, the writer stores the commit indexes it held, in one synced LevelDB write', async () => {
    const dir = await tempDir();
    const s = await openG(dir, 2);
    await Promise.all(s.groups.map((g, i) => persist(g.store, { hardState: hs(1, 0), entries: ents(1, 4, 1, i) })));
    await Promise.all(s.groups.map((g) => persist(g.store, { hardState: hs(1, 3), entries: [] })));
    await Promise.all(s.groups.map((g, i) => persist(g.store, { hardState: hs(1, 4), entries: ents(5, 5, 1, i) })));
    const before = s.stats()!.levelSyncs;
    const deadline = Date.now() + 5_000;
    while (s.stats()!.levelSyncs === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(s.stats()!.levelSyncs).toBe(before + 1);
    // Nothing is left for the clean stop to write: the idle write stored both.
    await closeG(s);
    expect(s.stats()!.levelSyncs).toBe(before + 1);
    const again = await openG(dir, 2);
    expect(again.groups.map((g) => g.recovered.hardState)).toEqual([hs(1, 4), hs(1, 4)]);
  });

  it("a group's mark is the newer of LevelDB's record and the mark file's; a mark file missing once marks went to it is refused", async () => {
    const dir = await tempDir();
    let s = await openG(dir, 2);
    await Promise.all(s.groups.map((g, i) => persist(g.store, { hardState: hs(1, 4), entries: ents(1, 5, 1, i) })));
    // Group 0's entries are acknowledged through the mark file only.
    await closeG(s);
    s = await openG(dir, 2);
    expect(s.groups.map((g) => g.report.highWater)).toEqual([
      { index: 5, term: 1 },
      { index: 5, term: 1 },
    ]);
    // A leader's snapshot restarts group 1's log: its mark goes to LevelDB, newer than the file's.
    await persist(s.groups[1].store, { hardState: hs(2, 8), snapshot: snap(8, 2) });
    await closeG(s);
    s = await openG(dir, 2);
    expect(s.groups.map((g) => g.report.highWater)).toEqual([
      { index: 5, term: 1 },
      { index: 8, term: 2 },
    ]);
    expect(s.groups[1].recovered.entries).toEqual([]);
    // Entries after it: the file is the newer again, and holds group 1's restart.
    await persist(s.groups[1].store, { entries: ents(9, 10, 2, 1) });
    await closeG(s);
    s = await openG(dir, 2);
    expect(s.groups[1].report.highWater).toEqual({ index: 10, term: 2 });
    expect(s.groups[1].recovered.entries).toEqual(ents(9, 10, 2, 1));
    await closeG(s);
    await rm(join(dir, 'raft', GROUP_MARK_FILE));
    await expect(openGroupStorage(dir, ID, 2)).rejects.toThrow(
      /group-marks.*missing, but a group log state record in LevelDB names mark/s,
    );
  });

  it('a directory written before the mark file (marks in LevelDB, no mark seq) opens with them and makes the file', async () => {
    const dir = await tempDir();
    let s = await openG(dir, 2);
    await Promise.all(s.groups.map((g, i) => persist(g.store, { hardState: hs(1, 2), entries: ents(1, 3, 1, i) })));
    await closeG(s);
    // As an earlier version left it: each group's mark in LevelDB, four fields and no mark seq; no mark file.
    await withRawDb(dir, async (db) => {
      for (const g of [0, 1]) {
        const payload = Buffer.alloc(32);
        payload.writeBigUInt64BE(3n, 0);
        payload.writeBigUInt64BE(1n, 8);
        const value = Buffer.concat([Buffer.alloc(5), payload]);
        value.writeUInt32BE(crc32(payload), 0);
        value.writeUInt8(7, 4);
        await db.put(g === 0 ? Uint8Array.of(0x06) : Uint8Array.of(0x10, 0x06, 0, g), value);
      }
    });
    await rm(join(dir, 'raft', GROUP_MARK_FILE));
    // The log lost group 1's last entry: its old mark says it was acknowledged.
    const [seg] = await groupSegments(dir);
    const buf = await readFile(join(dir, 'wal', seg));
    await writeFile(join(dir, 'wal', seg), buf.subarray(0, buf.byteLength - 4));
    s = await openG(dir, 2);
    expect(s.groups.map((g) => g.report.highWater)).toEqual([
      { index: 3, term: 1 },
      { index: 3, term: 1 },
    ]);
    expect(s.groups[1].recovered.recoverIndex).toBe(3);
    expect((await readdir(join(dir, 'raft'))).includes(GROUP_MARK_FILE)).toBe(true);
  });

  it('groups that persist again from their callback (as a driver does) share the next fdatasync with the groups that waited, instead of taking turns', async () => {
    const dir = await tempDir();
    const s = await openG(dir, 2);
    const rounds = 8;
    // Each group runs like a driver: its next Ready is persisted from inside the previous one's callback.
    const run = (g: number): Promise<void> =>
      new Promise((resolve, reject) => {
        const next = (i: number): void =>
          s.groups[g].store.persist(batchOf({ hardState: hs(1, i), entries: ents(i + 1, i + 1, 1, g) }), (err) => {
            if (err) return reject(err);
            if (i + 1 === rounds) return resolve();
            next(i + 1);
          });
        next(0);
      });
    // Group 1 starts while group 0's first write is in flight: out of step, as groups are after a leader's append.
    const zero = run(0);
    await new Promise((r) => setImmediate(r));
    const one = run(1);
    await Promise.all([zero, one]);
    const st = s.stats()!;
    expect(st.groupBatches).toBe(2 * rounds);
    // Taking turns would be one group per fdatasync (2 × rounds syncs); in step, both groups but the first write.
    expect(st.segmentSyncs).toBeLessThanOrEqual(rounds + 1);
    expect(st.segmentSyncs).toBe(st.batches);
  });

  it("every group's log, hard state and snapshot come back after a reopen, with truncations and a leader's snapshot in one group", async () => {
    const dir = await tempDir();
    let s = await openG(dir, 4);
    const [g0, g1, g2] = s.groups.map((g) => g.store);
    await Promise.all([
      persist(g0, { hardState: hs(1, 0), entries: ents(1, 10, 1) }),
      persist(g1, { hardState: hs(1, 0, 'n2'), entries: ents(1, 6, 1, 1) }),
      persist(g2, { hardState: hs(3, 0, 'n3'), entries: ents(1, 4, 2, 2) }),
    ]);
    // Group 1's new leader replaces entries 4..6; group 2 installs a leader's snapshot at 20 and appends after it.
    await Promise.all([
      persist(g1, { hardState: hs(2, 3, 'n3'), entries: ents(4, 5, 2, 9) }),
      persist(g2, { snapshot: snap(20, 3, 2), hardState: hs(3, 20, 'n3'), entries: ents(21, 22, 3, 2) }),
    ]);
    await persist(g0, { hardState: hs(1, 8), localSnapshot: snap(8, 1, 0), compactTo: 8 });
    await closeG(s);
    s = await openG(dir, 4);
    const r = s.groups.map((g) => g.recovered);
    expect(r[0]).toEqual({ hardState: hs(1, 8), snapshot: snap(8, 1, 0), entries: ents(9, 10, 1), recoverIndex: 0 });
    expect(r[1]).toEqual({
      hardState: hs(2, 3, 'n3'),
      snapshot: emptySnapshot(),
      entries: [...ents(1, 3, 1, 1), ...ents(4, 5, 2, 9)],
      recoverIndex: 0,
    });
    expect(r[2]).toEqual({
      hardState: hs(3, 20, 'n3'),
      snapshot: snap(20, 3, 2),
      entries: ents(21, 22, 3, 2),
      recoverIndex: 0,
    });
    expect(r[3]).toEqual({
      hardState: { term: 0, vote: NONE, commit: 0 },
      snapshot: emptySnapshot(),
      entries: [],
      recoverIndex: 0,
    });
    // Appends continue after the reopen.
    await persist(s.groups[3].store, { hardState: hs(1, 0), entries: ents(1, 2, 1, 3) });
    await persist(s.groups[1].store, { entries: ents(6, 6, 2, 9) });
    await closeG(s);
    s = await openG(dir, 4);
    expect(s.groups[3].recovered.entries).toEqual(ents(1, 2, 1, 3));
    expect(s.groups[1].recovered.entries.map((e) => [e.index, e.term])).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 2],
      [5, 2],
      [6, 2],
    ]);
  });

  it("a segment is deleted only when every group's snapshot covers its records; a lagging group holds it until then", async () => {
    const dir = await tempDir();
    const s = await openG(dir, 2, 128);
    const [a, b] = s.groups.map((g) => g.store);
    for (let i = 1; i <= 12; i++)
      await Promise.all([
        persist(a, { hardState: hs(1, i - 1), entries: ents(i, i, 1) }),
        persist(b, { hardState: hs(1, i - 1), entries: ents(i, i, 1, 1) }),
      ]);
    const before = await groupSegments(dir);
    expect(before.length).toBeGreaterThan(3);
    // Group 0 snapshots and compacts everything: group 1 still needs every segment.
    await persist(a, { hardState: hs(1, 12), localSnapshot: snap(12, 1), compactTo: 12 });
    expect(await groupSegments(dir)).toEqual(before);
    // Group 1 compacts up to 6: the segments holding only entries at or below 6 (of either group) go, the rest stay.
    await persist(b, { hardState: hs(1, 12), localSnapshot: snap(6, 1, 1), compactTo: 6 });
    const after = await groupSegments(dir);
    expect(after.length).toBeLessThan(before.length);
    expect(after.at(-1)).toBe(before.at(-1));
    await closeG(s);
    const again = await openG(dir, 2, 128);
    expect(again.groups[1].recovered.entries).toEqual(ents(7, 12, 1, 1));
    expect(again.groups[0].recovered.entries).toEqual([]);
    expect(again.groups[0].recovered.snapshot).toEqual(snap(12, 1));
  });

  it('after any interleaving of valid batches across groups, reopening recovers what the reference disk holds, group by group', async () => {
    type Step = {
      group: number;
      kind: 'append' | 'replace' | 'leaderSnap' | 'localSnap' | 'vote';
      n: number;
      reopen: boolean;
    };
    const stepArb: fc.Arbitrary<Step> = fc.record({
      group: fc.integer({ min: 0, max: 2 }),
      kind: fc.constantFrom('append', 'append', 'replace', 'leaderSnap', 'localSnap', 'vote'),
      n: fc.integer({ min: 1, max: 4 }),
      reopen: fc.integer({ min: 0, max: 9 }).map((x) => x < 2),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), async (steps) => {
        const dir = await tempDir();
        let s = await openG(dir, 3, 512);
        const sims: RecoveredState[] = [0, 1, 2].map(() => ({
          hardState: { term: 0, vote: NONE, commit: 0 },
          snapshot: emptySnapshot(),
          entries: [],
          recoverIndex: 0,
        }));
        const terms = [1, 1, 1];
        // One vote per term, as Raft keeps it.
        const votes = ['n1', 'n1', 'n1'];
        try {
          for (const st of steps) {
            const sim = sims[st.group];
            const last = sim.entries.at(-1)?.index ?? sim.snapshot.metadata.index;
            const commit = sim.hardState.commit;
            let b: PersistBatch;
            if (st.kind === 'append')
              b = batchOf({
                hardState: hs(terms[st.group], commit, votes[st.group]),
                entries: ents(last + 1, last + st.n, terms[st.group], st.group),
              });
            else if (st.kind === 'replace') {
              terms[st.group] += 1;
              votes[st.group] = 'n2';
              const from = Math.max(commit + 1, last - st.n + 1, sim.snapshot.metadata.index + 1);
              b = batchOf({
                hardState: hs(terms[st.group], commit, votes[st.group]),
                entries: ents(from, from + st.n, terms[st.group], st.group + 7),
              });
            } else if (st.kind === 'leaderSnap') {
              const at = last + st.n;
              b = batchOf({
                snapshot: snap(at, terms[st.group], st.group),
                hardState: hs(terms[st.group], at, votes[st.group]),
              });
            } else if (st.kind === 'localSnap') {
              const newCommit = Math.min(last, commit + st.n);
              const at = Math.max(sim.snapshot.metadata.index, newCommit);
              b = batchOf({
                hardState: hs(terms[st.group], newCommit, votes[st.group]),
                localSnapshot: snap(
                  at,
                  sim.entries.find((e) => e.index === at)?.term ?? sim.snapshot.metadata.term,
                  st.group,
                ),
                compactTo: at,
              });
            } else {
              terms[st.group] += 1;
              votes[st.group] = 'n3';
              b = batchOf({ hardState: hs(terms[st.group], commit, 'n3') });
            }
            simApplyBatch(sim, b);
            void persist(s.groups[st.group].store, b);
            if (st.reopen) {
              await closeG(s);
              s = await openG(dir, 3, 512);
              expect(s.groups.map((g) => g.recovered)).toEqual(sims);
            }
          }
          await closeG(s);
          s = await openG(dir, 3, 512);
          expect(s.groups.map((g) => g.recovered)).toEqual(sims);
        } finally {
          await closeG(s);
          await rm(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe('the shared writer: torn tails and damage', () => {
  async function written(): Promise<string> {
    const dir = await tempDir();
    const s = await openG(dir, 2);
    await Promise.all([
      persist(s.groups[0].store, { hardState: hs(1, 0), entries: ents(1, 3, 1) }),
      persist(s.groups[1].store, { hardState: hs(1, 0), entries: ents(1, 3, 1, 1) }),
    ]);
    await closeG(s);
    return dir;
  }

  it('half a record at the end of the log (a write never synced) is cut; every group keeps its log and appends continue', async () => {
    const dir = await written();
    const [seg] = await groupSegments(dir);
    const whole = encodeGroupRecords([{ group: 1, entries: ents(4, 4, 1, 1) }], 2);
    await appendFile(join(dir, 'wal', seg), whole.subarray(0, whole.byteLength - 3));
    const s = await openG(dir, 2);
    expect(s.groups[0].report.truncated).toHaveLength(1);
    expect(s.groups[0].report.truncated[0]).toMatchObject({ belowHighWater: false });
    expect(s.groups[1].recovered.entries).toEqual(ents(1, 3, 1, 1));
    expect(s.groups.map((g) => g.recovered.recoverIndex)).toEqual([0, 0]);
    await persist(s.groups[1].store, { entries: ents(4, 5, 1, 1) });
    await closeG(s);
    const again = await openG(dir, 2);
    expect(again.groups[1].recovered.entries).toEqual(ents(1, 5, 1, 1));
  });

  it('a log cut below what a group acknowledged starts that group recovering, and saves the cut bytes', async () => {
    const dir = await written();
    const [seg] = await groupSegments(dir);
    const path = join(dir, 'wal', seg);
    const buf = await readFile(path);
    // Cut inside group 1's last record: group 1 acknowledged 3, its log now ends at 2.
    await writeFile(path, buf.subarray(0, buf.byteLength - 4));
    const s = await openG(dir, 2);
    expect(s.groups[1].recovered.recoverIndex).toBe(3);
    expect(s.groups[1].recovered.entries).toEqual(ents(1, 2, 1, 1));
    expect(s.groups[0].recovered.recoverIndex).toBe(0);
    expect(s.groups[0].report.truncated[0]).toMatchObject({
      belowHighWater: true,
      savedAs: expect.stringMatching(/\.cut-\d+$/),
    });
  });

  it('a flipped byte in the middle of the log is refused with the file and the byte offset, and nothing is cut', async () => {
    const dir = await written();
    const [seg] = await groupSegments(dir);
    const path = join(dir, 'wal', seg);
    const buf = await readFile(path);
    buf[SEGMENT_HEADER_BYTES + 20] ^= 0xff;
    await writeFile(path, buf);
    const err = await openGroupStorage(dir, ID, 2).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CorruptRecordError);
    expect(String(err)).toMatch(/group log record at byte offset 32/);
    expect((await readFile(path)).equals(buf)).toBe(true);
  });
});

describe('the number of groups is fixed at the founding', () => {
  it('a directory written with 4 groups is refused with 1 (either door) and with 2, naming both numbers', async () => {
    const dir = await tempDir();
    const s = await openG(dir, 4);
    await persist(s.groups[2].store, { hardState: hs(1, 0) });
    await closeG(s);
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: unknown) => e,
      );
    for (const open of [
      () => openGroupStorage(dir, ID, 1),
      () => DiskLogStore.open(dir, ID),
      () => openGroupStorage(dir, ID, 2),
    ]) {
      const err = await refusal(open());
      expect(err).toBeInstanceOf(StorageIdentityError);
      expect(String(err)).toMatch(/was founded with 4 decision groups, but the config says [12] \("groups"\)/);
    }
    const back = await openG(dir, 4);
    expect(back.groups[2].recovered.hardState).toEqual(hs(1, 0));
  });

  it('a directory of one group that holds Raft state is refused with 4 groups', async () => {
    const dir = await tempDir();
    const { store } = await DiskLogStore.open(dir, ID);
    await persist(store, { hardState: hs(1, 0) });
    await store.close();
    await expect(openGroupStorage(dir, ID, 4)).rejects.toThrow(
      /was founded with 1 decision group, but the config says 4/,
    );
  });
});
