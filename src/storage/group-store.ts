// One storage writer shared by the G decision groups of a node
// (docs/architecture.md, "Decision groups"; docs/storage.md).
//
// At G = 1 this is today's store (src/storage/store.ts) and nothing else, so
// a directory of one group is byte for byte what it always was. At G > 1
// the node keeps one segment log (src/storage/group-log.ts) whose records
// carry their group, one LevelDB with each group's hard state, snapshot
// and log state under its own keys (group 0 keeps today's keys), and one
// mark file (`raft/group-marks`, ./mark-file.ts) whose record holds every
// group's mark. Every group's store hands its PersistBatch to the one
// writer; the batches that arrive in one turn of the event loop, and those
// that arrive while a write is in flight, are written together (the next
// write waits a turn after a write's callbacks, so a group that persists
// again from its callback joins the groups that waited):
//
//   1. a group's leader snapshot or lowered mark, when the batch starts with
//      one (synced LevelDB write; it records where the group's log restarts);
//   2. the entries of every group: one write; then, in one trip of the sync
//      worker (./sync-worker.ts), the segment's fdatasync and every group's
//      mark (acknowledged through) written and synced in the mark file;
//   3. a hard state with a new term or vote, and a local snapshot: one
//      synced LevelDB write. A hard state that only moves the commit index
//      is held and written once the writer is idle (the commit index is not
//      needed for safety), as the one-group store does;
//   4. each group's persist callback, in the order the batches arrived;
//   5. compaction: a segment is deleted once no group has a live entry in it
//      (each group compacts on its own snapshots).
//
// A mark goes to LevelDB only in step 1 (and with a batch that has no
// entries). Every mark carries a mark seq, one higher for each mark written:
// on open, a group's mark is the newer of its LevelDB record and the mark
// file's.
//
// A group replaces a suffix of its log by appending (the log is never cut in
// place); reading back keeps, for each group and index, the last record
// written after the group's restart position. On open, a group whose log
// ends below its mark (or its commit index) lost synced records and starts
// recovering, as with one group.

import { join } from 'node:path';
import { emptySnapshot, NONE, REJOINING_VOTE, type Entry, type HardState, type Snapshot } from '../raft/types.ts';
import { assert } from '../util/assert.ts';
import {
  CorruptRecordError,
  decodeGroupLogState,
  decodeGroupMarks,
  decodeHardState,
  decodeSnapshot,
  encodeGroupLogState,
  encodeGroupMarks,
  encodeHardState,
  encodeSnapshot,
  groupKey,
  type GroupMarks,
  KEY_GROUP_LOG_STATE,
  KEY_HARD_STATE,
  KEY_SNAPSHOT,
} from './codec.ts';
import { GroupLog, positionBefore, saveCut, type LogPosition, type ReadRecord } from './group-log.ts';
import { groupsProblem } from '../domain/group.ts';
import {
  checkFoundedGroups,
  checkIdentity,
  holdsOnlyIdentity,
  openLevel,
  writeIdentityFile,
  type Db,
  type Op,
} from './level.ts';
import { encodeMarkSlot, MarkFile, type MarkCodec } from './mark-file.ts';
import {
  CONFIRM_DELAY_MS,
  DiskLogStore,
  PERSIST_QUEUE_MAX,
  type DiskLogStoreOptions,
  type OpenReport,
} from './store.ts';
import { SyncWorker } from './sync-worker.ts';
import type { TruncatedTail } from './segment-log.ts';
import type { LogStore, PersistBatch, RecoveredState, StorageIdentity } from './types.ts';

export type GroupStorageOptions = DiskLogStoreOptions;

/** One group's storage, as the node core takes it. */
export interface OpenedGroup {
  store: LogStore;
  recovered: RecoveredState;
  report: OpenReport;
}

/** The mark file of a node of more than one group, beside LevelDB in `raft/`. */
export const GROUP_MARK_FILE = 'group-marks';

const GROUP_MARKS: MarkCodec<GroupMarks> = {
  decode: decodeGroupMarks,
  encode: encodeGroupMarks,
  seqOf: (m) => m.markSeq,
};

/** What the shared writer did: a batch is one trip of (LevelDB, segment and marks, LevelDB) writes. */
export interface GroupStorageStats {
  batches: number;
  /** Group batches (PersistBatch) written. */
  groupBatches: number;
  segmentSyncs: number;
  levelSyncs: number;
}

export interface GroupStorage {
  /** groups[g] is group g's. */
  readonly groups: readonly OpenedGroup[];
  /** Waits for every accepted batch, then closes the files. */
  close(): Promise<void>;
  /** Null at G = 1 (today's store, which keeps no such count). */
  stats(): GroupStorageStats | null;
}

/**
 * Opens the storage of a node founded with `groups` decision groups in
 * `dir`. Refuses a directory of another node or cluster, and one founded
 * with another number of groups (naming both), before writing anything.
 */
export async function openGroupStorage(
  dir: string,
  identity: StorageIdentity,
  groups: number,
  opts: GroupStorageOptions = {},
): Promise<GroupStorage> {
  const bad = groupsProblem(groups);
  if (bad !== null) throw new RangeError(`openGroupStorage: ${bad}`);
  if (groups === 1) {
    const { store, recovered, report } = await DiskLogStore.open(dir, identity, opts);
    return { groups: [{ store, recovered, report }], close: () => store.close(), stats: () => null };
  }
  return SharedGroupWriter.open(dir, identity, groups, opts);
}

/** Resolves after the microtasks queued so far and this turn's I/O callbacks (setImmediate runs after both). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface Mark {
  index: number;
  term: number;
}

/** A group's log as it will be once every accepted batch is synced (as LogBounds in store.ts). */
interface GroupBounds {
  snapIndex: number;
  snapTerm: number;
  lastIndex: number;
  lastTerm: number;
  hardState: HardState;
  acked: Mark;
}

/** One group's PersistBatch, checked and planned. */
interface GroupPlan {
  group: number;
  /** A leader's snapshot: the group's log restarts after it. */
  restart: Snapshot | null;
  /** The mark written with the restart, or lowered (synced) before a cut below it. */
  preMark: Mark | null;
  entries: Entry[];
  /** The mark that goes with the entries. */
  mark: Mark | null;
  hardState: HardState | null;
  localSnapshot: Snapshot | null;
  compactTo: number;
  sync: boolean;
  onSynced: (err: Error | null) => void;
}

/** Where a group's live entries (above its compaction point) lie: seqs[k] holds index first + k. */
interface Live {
  first: number;
  seqs: number[];
}

class SharedGroupWriter implements GroupStorage {
  readonly groups: OpenedGroup[] = [];
  private pending: GroupPlan[] = [];
  private writing = false;
  private scheduled = false;
  private idleWaiters: (() => void)[] = [];
  private failure: Error | null = null;
  private closed = false;
  private readonly counts = { batches: 0, groupBatches: 0, levelSyncs: 0 };
  private syncWorker: SyncWorker | null = null;
  /** Each group's hard state as LevelDB holds it, and one that only moved the commit index, held until idle. */
  private readonly storedHard: HardState[];
  private readonly heldHard: (HardState | null)[];
  private confirmTimer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly db: Db,
    private readonly dbPath: string,
    private readonly log: GroupLog,
    private readonly marksFile: MarkFile,
    /** The seq of the last mark written, to LevelDB or the mark file. */
    private markSeq: number,
    /** Each group's mark as last written (acknowledged through). */
    private readonly marks: Mark[],
    private readonly restarts: LogPosition[],
    private readonly live: Live[],
    hardStates: HardState[],
  ) {
    this.storedHard = hardStates.map((h) => ({ ...h }));
    this.heldHard = hardStates.map(() => null);
  }

  static async open(
    dir: string,
    identity: StorageIdentity,
    groups: number,
    opts: GroupStorageOptions,
  ): Promise<SharedGroupWriter> {
    assert(identity.clusterId !== '' && identity.nodeId !== '', 'storage identity needs a cluster id and a node id');
    const dbPath = join(dir, 'raft');
    const walPath = join(dir, 'wal');
    const db = await openLevel(dir, dbPath, walPath, identity);
    let log: GroupLog | null = null;
    let marks: MarkFile | null = null;
    try {
      await checkIdentity(db, dir, dbPath, identity);
      await checkFoundedGroups(db, dir, dbPath, groups, () => holdsOnlyIdentity(db));
      const cuts: { t: TruncatedTail; cut: Buffer }[] = [];
      const opened = await GroupLog.open(walPath, groups, opts.segmentBytes, (t, cut) =>
        cuts.push({ t, cut: Buffer.from(cut) }),
      );
      log = opened.log;
      const metas = await Promise.all(Array.from({ length: groups }, (_, g) => readGroupMeta(db, dbPath, g)));
      const file = await openGroupMarks(join(dbPath, GROUP_MARK_FILE), metas);
      marks = file.file;
      const replayed = replay(opened.records, metas, walPath);
      const lost = replayed.some((r) => r.recovered.recoverIndex > 0);
      const truncated: TruncatedTail[] = [];
      for (const { t, cut } of cuts)
        truncated.push(lost ? { ...t, belowHighWater: true, savedAs: await saveCut(t, cut) } : t);
      await writeIdentityFile(dir, identity);
      const writer = new SharedGroupWriter(
        db,
        dbPath,
        log,
        marks,
        file.markSeq,
        metas.map((m) => ({ ...m.highWater })),
        metas.map((m) => m.restart),
        replayed.map((r) => r.live),
        metas.map((m) => m.hardState),
      );
      for (let g = 0; g < groups; g++) {
        const r = replayed[g];
        const report: OpenReport = {
          truncated: g === 0 ? truncated : [],
          highWater: metas[g].highWater,
          mayHoldIndex: metas[g].highWater.index,
          lastIndex: r.lastIndex,
          markProblems: g === 0 ? file.problems : [],
        };
        writer.groups.push({ store: new GroupLane(g, writer, r.bounds), recovered: r.recovered, report });
      }
      return writer;
    } catch (err) {
      marks?.close();
      await log?.close();
      await db.close();
      throw err;
    }
  }

  stats(): GroupStorageStats {
    return { ...this.counts, segmentSyncs: this.log.syncs };
  }

  accept(p: GroupPlan): void {
    assert(!this.closed, 'persist after close');
    assert(
      this.pending.length < PERSIST_QUEUE_MAX * this.groups.length,
      `more than ${PERSIST_QUEUE_MAX} persist batches per group waiting for sync`,
    );
    this.pending.push(p);
    if (this.writing || this.scheduled) return;
    // The rest of this turn's Readys (every group's) join the batch.
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.writing || this.scheduled || this.pending.length > 0)
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    if (this.confirmTimer !== null) clearTimeout(this.confirmTimer);
    this.confirmTimer = null;
    // A clean stop leaves every group's commit index stored.
    if (this.failure === null) await this.writeHeld().catch(() => {});
    await this.syncWorker?.close();
    this.marksFile.close();
    await this.log.close();
    await this.db.close();
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.pending.length > 0) {
      const batch = this.take();
      let err = this.failure;
      if (err === null) {
        try {
          await this.write(batch);
        } catch (e) {
          err = this.failure ??= e instanceof Error ? e : new Error(String(e));
        }
      }
      // An exception thrown by a callback surfaces as an uncaught exception (a crash), never inside the write loop.
      for (const p of batch) queueMicrotask(() => p.onSynced(err));
      // The groups just told run their next Ready in those callbacks, and persist again at once. Taking what is
      // pending before they do would write the groups that waited alone, and the ones just told alone after them:
      // the groups would take turns at the disk, one group per fdatasync. One turn later both are pending, and
      // share the next write.
      if (this.pending.length > 0) await nextTurn();
    }
    this.writing = false;
    for (const w of this.idleWaiters.splice(0)) w();
    this.scheduleConfirm();
  }

  /** Once idle for CONFIRM_DELAY_MS, the held commit indexes are stored (a write that comes first takes them over). */
  private scheduleConfirm(): void {
    if (this.confirmTimer !== null || this.closed || this.failure !== null) return;
    if (this.heldHard.every((h) => h === null)) return;
    this.confirmTimer = setTimeout(() => {
      this.confirmTimer = null;
      if (this.writing || this.scheduled || this.pending.length > 0 || this.closed || this.failure !== null) return;
      void this.confirm();
    }, CONFIRM_DELAY_MS);
    this.confirmTimer.unref();
  }

  private async confirm(): Promise<void> {
    this.writing = true;
    try {
      await this.writeHeld();
    } catch (e) {
      this.failure ??= e instanceof Error ? e : new Error(String(e));
    }
    this.writing = false;
    if (this.pending.length > 0) void this.drain();
    else for (const w of this.idleWaiters.splice(0)) w();
  }

  /** The held hard states (commit index moved only), in one synced LevelDB write. */
  private async writeHeld(): Promise<void> {
    const ops: Op[] = [];
    for (let g = 0; g < this.heldHard.length; g++) {
      const h = this.heldHard[g];
      if (h === null) continue;
      this.heldHard[g] = null;
      this.storedHard[g] = h;
      ops.push({ type: 'put', key: groupKey(KEY_HARD_STATE, g), value: encodeHardState(h) });
    }
    if (ops.length > 0) await this.levelWrite(ops, true);
  }

  /** The next batch: what is pending, cut before a second group plan that must write LevelDB ahead of the entries. */
  private take(): GroupPlan[] {
    let n = 1;
    while (n < this.pending.length && this.pending[n].restart === null && this.pending[n].preMark === null) n++;
    return this.pending.splice(0, n);
  }

  private async write(batch: GroupPlan[]): Promise<void> {
    this.counts.batches += 1;
    this.counts.groupBatches += batch.length;
    const head = batch[0];
    if (head.preMark !== null) {
      const ops: Op[] = [];
      if (head.restart !== null) {
        // The snapshot and where the group's log restarts land in one write: before it the old log is whole, after it
        // the group's older records are dead.
        this.restarts[head.group] = this.log.end();
        this.live[head.group] = { first: head.restart.metadata.index + 1, seqs: [] };
        ops.push({ type: 'put', key: groupKey(KEY_SNAPSHOT, head.group), value: encodeSnapshot(head.restart) });
      }
      ops.push(this.markOp(head.group, head.preMark));
      await this.levelWrite(ops, true);
    }
    const runs = batch.filter((p) => p.entries.length > 0).map((p) => ({ group: p.group, entries: p.entries }));
    if (runs.length > 0) {
      // The segment's fdatasync, then every group's mark in the mark file: one trip of the sync worker.
      for (const p of batch) if (p.mark !== null) this.marks[p.group] = p.mark;
      const slot = encodeMarkSlot(encodeGroupMarks(this.nextMarks()));
      const offset = this.marksFile.takeSlotOffset();
      this.syncWorker ??= new SyncWorker(this.dbPath);
      const worker = this.syncWorker;
      const seq = await this.log.append(runs, (fd) => worker.run(fd, this.marksFile.fd, slot, offset));
      for (const run of runs) {
        const live = this.live[run.group];
        const from = run.entries[0].index;
        assert(
          from >= live.first && from <= live.first + live.seqs.length,
          `group ${run.group}: entry ${from} against live entries from ${live.first}`,
        );
        live.seqs.length = from - live.first;
        for (let k = 0; k < run.entries.length; k++) live.seqs.push(seq);
      }
    }
    const ops: Op[] = [];
    for (const p of batch) {
      if (p.hardState) this.putHardState(p.group, p.hardState, runs.length > 0, ops);
      if (p.localSnapshot)
        ops.push({ type: 'put', key: groupKey(KEY_SNAPSHOT, p.group), value: encodeSnapshot(p.localSnapshot) });
      // Only a batch without entries (none has a mark today): with entries the mark file took it.
      if (p.mark && runs.length === 0) ops.push(this.markOp(p.group, p.mark));
    }
    if (ops.length > 0) await this.levelWrite(ops, runs.length > 0 || batch.some((p) => p.sync));
    let compacted = head.restart !== null;
    for (const p of batch) {
      if (p.compactTo <= 0) continue;
      const live = this.live[p.group];
      const drop = Math.min(live.seqs.length, Math.max(0, p.compactTo - live.first + 1));
      live.seqs.splice(0, drop);
      live.first += drop;
      if (live.first <= p.compactTo) live.first = p.compactTo + 1;
      compacted = true;
    }
    if (compacted) {
      // A segment goes once no group has a live entry in it.
      let oldest = this.log.lastSeq();
      for (const live of this.live) if (live.seqs.length > 0) oldest = Math.min(oldest, live.seqs[0]);
      await this.log.dropBefore(oldest);
    }
  }

  /**
   * A hard state with a new term or vote goes into this batch's LevelDB write. One that only moves the commit index,
   * beside entries synced with the marks, is held for the confirmation once idle: a LevelDB write per batch would be a
   * second trip.
   */
  private putHardState(group: number, hs: HardState, withEntries: boolean, ops: Op[]): void {
    const stored = this.storedHard[group];
    if (withEntries && hs.term === stored.term && hs.vote === stored.vote) {
      this.heldHard[group] = { ...hs };
      return;
    }
    this.heldHard[group] = null;
    this.storedHard[group] = { ...hs };
    ops.push({ type: 'put', key: groupKey(KEY_HARD_STATE, group), value: encodeHardState(hs) });
  }

  private markOp(group: number, m: Mark): Op {
    const r = this.restarts[group];
    this.marks[group] = { ...m };
    this.markSeq += 1;
    return {
      type: 'put',
      key: groupKey(KEY_GROUP_LOG_STATE, group),
      value: encodeGroupLogState({
        highWaterIndex: m.index,
        highWaterTerm: m.term,
        restartSeq: r.seq,
        restartOffset: r.offset,
        markSeq: this.markSeq,
      }),
    };
  }

  /** Every group's mark and restart position as they stand, under the next mark seq (for the mark file). */
  private nextMarks(): GroupMarks {
    this.markSeq += 1;
    return {
      markSeq: this.markSeq,
      groups: this.marks.map((m, g) => ({
        highWaterIndex: m.index,
        highWaterTerm: m.term,
        restartSeq: this.restarts[g].seq,
        restartOffset: this.restarts[g].offset,
      })),
    };
  }

  private async levelWrite(ops: Op[], sync: boolean): Promise<void> {
    if (sync) this.counts.levelSyncs += 1;
    await this.db.batch(ops, { sync });
  }
}

/** One group's door to the shared writer: the LogStore its node core persists through. */
class GroupLane implements LogStore {
  constructor(
    readonly group: number,
    private readonly writer: SharedGroupWriter,
    private bounds: GroupBounds,
  ) {}

  persist(batch: PersistBatch, onSynced: (err: Error | null) => void): void {
    this.writer.accept({ ...this.plan(batch), onSynced });
  }

  /**
   * Checks a batch against the group's log as it will be once every earlier
   * batch is synced, and advances the bounds: the checks of the one-group
   * store (src/storage/store.ts, plan()). A violated precondition is a bug
   * in the caller: it throws before anything is queued.
   */
  private plan(batch: PersistBatch): Omit<GroupPlan, 'onSynced'> {
    const g = this.group;
    const b: GroupBounds = { ...this.bounds, hardState: { ...this.bounds.hardState }, acked: { ...this.bounds.acked } };
    const plan: Omit<GroupPlan, 'onSynced'> = {
      group: g,
      restart: null,
      preMark: null,
      entries: batch.entries,
      mark: null,
      hardState: null,
      localSnapshot: null,
      compactTo: batch.compactTo,
      sync: batch.sync,
    };
    if (batch.snapshot) {
      const snapIndex = batch.snapshot.metadata.index;
      assert(
        snapIndex >= b.snapIndex,
        `group ${g}: snapshot index ${snapIndex} is behind the stored snapshot ${b.snapIndex}`,
      );
      assert(
        snapIndex >= b.hardState.commit,
        `group ${g}: snapshot index ${snapIndex} would drop committed entries (commit ${b.hardState.commit})`,
      );
      // What this node acknowledged past the snapshot conflicts with the leader; unless the disk lost acknowledged
      // entries, a debt that stays until paid.
      const owed = b.acked.index > b.lastIndex;
      b.snapIndex = snapIndex;
      b.snapTerm = batch.snapshot.metadata.term;
      b.lastIndex = snapIndex;
      b.lastTerm = b.snapTerm;
      if (!owed || snapIndex >= b.acked.index) b.acked = { index: snapIndex, term: b.snapTerm };
      plan.restart = batch.snapshot;
      plan.preMark = { ...b.acked };
    }
    const lastOf = batch.entries.at(-1);
    if (lastOf) {
      const first = batch.entries[0].index;
      assert(first > b.snapIndex, `group ${g}: entry ${first} is at or below the snapshot index ${b.snapIndex}`);
      assert(first <= b.lastIndex + 1, `group ${g}: entry ${first} leaves a gap after the last index ${b.lastIndex}`);
      assert(
        first > b.hardState.commit,
        `group ${g}: entry ${first} would overwrite committed entries (commit ${b.hardState.commit})`,
      );
      if (first <= b.lastIndex && first <= b.acked.index) {
        // A leader replaces entries this node acknowledged (never committed ones): the mark goes back durably before
        // the new records.
        assert(plan.preMark === null, `group ${g}: a snapshot restart and a cut below the mark in one batch`);
        b.acked = { index: first - 1, term: first - 1 === b.snapIndex ? b.snapTerm : 0 };
        plan.preMark = { ...b.acked };
      }
      if (lastOf.index >= b.acked.index) b.acked = { index: lastOf.index, term: lastOf.term };
      b.lastIndex = lastOf.index;
      b.lastTerm = lastOf.term;
      plan.mark = { ...b.acked };
    }
    if (batch.hardState) {
      const hs = batch.hardState;
      const prev = b.hardState;
      assert(hs.term >= prev.term, `group ${g}: hard state term goes back from ${prev.term} to ${hs.term}`);
      assert(
        hs.term > prev.term || prev.vote === NONE || prev.vote === REJOINING_VOTE || hs.vote === prev.vote,
        `group ${g}: vote in term ${hs.term} changes from ${prev.vote} to ${hs.vote}`,
      );
      assert(hs.commit >= prev.commit, `group ${g}: commit goes back from ${prev.commit} to ${hs.commit}`);
      assert(hs.commit <= b.lastIndex, `group ${g}: commit ${hs.commit} is beyond the last index ${b.lastIndex}`);
      plan.hardState = { ...hs };
      b.hardState = { ...hs };
    }
    if (batch.localSnapshot) {
      const snapIndex = batch.localSnapshot.metadata.index;
      assert(
        snapIndex >= b.snapIndex,
        `group ${g}: local snapshot index ${snapIndex} is behind the stored snapshot ${b.snapIndex}`,
      );
      assert(
        snapIndex <= b.lastIndex,
        `group ${g}: local snapshot index ${snapIndex} is beyond the last index ${b.lastIndex}`,
      );
      plan.localSnapshot = batch.localSnapshot;
      b.snapIndex = snapIndex;
      b.snapTerm = batch.localSnapshot.metadata.term;
    }
    if (batch.compactTo > 0)
      assert(
        batch.compactTo <= b.snapIndex,
        `group ${g}: compactTo ${batch.compactTo} is beyond the snapshot index ${b.snapIndex}`,
      );
    this.bounds = b;
    return plan;
  }
}

interface GroupMeta {
  hardState: HardState;
  snapshot: Snapshot;
  highWater: Mark;
  restart: LogPosition;
  /** The mark seq of the group's LevelDB record (0: none, or written before the mark file). */
  markSeq: number;
}

/**
 * Opens the group mark file (made from LevelDB's marks when it is new) and
 * takes, for each group, the newer of its LevelDB record and the file's
 * (changing `metas`). Returns the file and the last mark seq written.
 */
async function openGroupMarks(
  path: string,
  metas: GroupMeta[],
): Promise<{ file: MarkFile; markSeq: number; problems: string[] }> {
  const level: GroupMarks = {
    markSeq: Math.max(...metas.map((m) => m.markSeq)),
    groups: metas.map((m) => ({
      highWaterIndex: m.highWater.index,
      highWaterTerm: m.highWater.term,
      restartSeq: m.restart.seq,
      restartOffset: m.restart.offset,
    })),
  };
  const opened = await MarkFile.openWith(
    path,
    level,
    GROUP_MARKS,
    'group mark file',
    'a group log state record in LevelDB names',
  );
  const newest = opened.newest;
  if (newest.groups.length !== metas.length) {
    opened.file.close();
    throw new CorruptRecordError(
      path,
      'group mark file',
      `it holds the marks of ${newest.groups.length} groups, the directory was founded with ${metas.length}`,
    );
  }
  for (const [g, m] of metas.entries()) {
    if (newest.markSeq <= m.markSeq) continue;
    const f = newest.groups[g];
    m.highWater = { index: f.highWaterIndex, term: f.highWaterTerm };
    m.restart = { seq: f.restartSeq, offset: f.restartOffset };
    m.markSeq = newest.markSeq;
  }
  return { file: opened.file, markSeq: Math.max(level.markSeq, newest.markSeq), problems: opened.problems };
}

async function readGroupMeta(db: Db, dbPath: string, group: number): Promise<GroupMeta> {
  const get = async (key: Uint8Array): Promise<Uint8Array | undefined> => db.get(groupKey(key, group));
  const hs = await get(KEY_HARD_STATE);
  const sn = await get(KEY_SNAPSHOT);
  const ls = await get(KEY_GROUP_LOG_STATE);
  const snapshot = sn === undefined ? emptySnapshot() : decodeSnapshot(sn, dbPath);
  const state = ls === undefined ? null : decodeGroupLogState(ls, dbPath);
  return {
    hardState: hs === undefined ? { term: 0, vote: NONE, commit: 0 } : decodeHardState(hs, dbPath),
    snapshot,
    highWater:
      state === null
        ? { index: snapshot.metadata.index, term: snapshot.metadata.term }
        : { index: state.highWaterIndex, term: state.highWaterTerm },
    restart: state === null ? { seq: 0, offset: 0 } : { seq: state.restartSeq, offset: state.restartOffset },
    markSeq: state?.markSeq ?? 0,
  };
}

interface Replayed {
  recovered: RecoveredState;
  bounds: GroupBounds;
  live: Live;
  lastIndex: number;
}

/**
 * Rebuilds every group's log from the records in the order they were
 * written: a record of group g at index i, after g's restart position and
 * above its snapshot, replaces g's suffix from i. A record that would leave
 * a gap was replaced later and its predecessors were compacted away: it is
 * skipped (the live log's records are never compacted, so none is a gap).
 */
function replay(records: readonly ReadRecord[], metas: readonly GroupMeta[], walPath: string): Replayed[] {
  const logs = metas.map(() => ({ entries: [] as Entry[], seqs: [] as number[] }));
  for (const r of records) {
    const m = metas[r.group];
    if (positionBefore({ seq: r.seq, offset: r.offset }, m.restart)) continue;
    const base = m.snapshot.metadata.index;
    const i = r.entry.index;
    const l = logs[r.group];
    if (i <= base || i > base + l.entries.length + 1) continue;
    l.entries.length = i - base - 1;
    l.seqs.length = i - base - 1;
    l.entries.push(r.entry);
    l.seqs.push(r.seq);
  }
  return metas.map((m, g) => {
    const { entries, seqs } = logs[g];
    const snap = m.snapshot.metadata;
    let prevTerm = snap.term;
    for (const e of entries) {
      // Checked like the rest of the log: a record that passed its checksum may still not fit.
      if (e.term < prevTerm)
        throw new CorruptRecordError(
          walPath,
          `group ${g} raft log record at index ${e.index}`,
          `term ${e.term} is lower than term ${prevTerm} before it`,
        );
      prevTerm = e.term;
    }
    const last = entries.at(-1);
    const lastIndex = last?.index ?? snap.index;
    const lastTerm = last?.term ?? snap.term;
    const acknowledged = Math.max(m.highWater.index, m.hardState.commit);
    const recoverIndex = acknowledged > lastIndex ? acknowledged : 0;
    const hardState = { ...m.hardState, commit: Math.min(m.hardState.commit, lastIndex) };
    const bounds: GroupBounds = {
      snapIndex: snap.index,
      snapTerm: snap.term,
      lastIndex,
      lastTerm,
      hardState,
      acked:
        recoverIndex > 0
          ? { index: recoverIndex, term: recoverIndex === m.highWater.index ? m.highWater.term : 0 }
          : { index: lastIndex, term: lastTerm },
    };
    return {
      recovered: { hardState, snapshot: m.snapshot, entries, recoverIndex },
      bounds,
      live: { first: snap.index + 1, seqs },
      lastIndex,
    };
  });
}
