// Durable Raft storage: the entries in a segment log of their own
// (`${dir}/wal`, src/storage/segment-log.ts), everything else in LevelDB
// (`${dir}/raft`: identity, hard state, snapshot, log state).
//
// One PersistBatch is, in order: the segment write and its fdatasync, then
// one atomic LevelDB write that carries the hard state and the new
// high-water mark. That LevelDB write is synced only when it carries
// something the node must not forget in a power cut: a new term or vote
// (R6) or a snapshot. Otherwise it is written without a sync, so a batch of
// entries costs one fdatasync, and a write of its own syncs the mark at most
// MARK_SYNC_EVERY_MS later. The mark is written only after the entries it names are synced,
// so it never claims more than the log held; and onSynced fires only after
// both writes, so every acknowledgement the node sends is in the mark once
// the process is gone (an unsynced LevelDB write is in the kernel's page
// cache: a crash of the process keeps it, a power cut may lose the last
// second of it). On start, a log shorter than the mark means the disk lost
// synced entries: the node starts recovering instead of answering with a log
// shorter than one it acknowledged (docs/storage.md).

import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { assert, NONE, type Entry, type HardState } from '../raft/types.ts';
import {
  CorruptRecordError,
  encodeHardState,
  encodeIdentity,
  encodeLogState,
  encodeSnapshot,
  FORMAT_VERSION_ENTRIES_IN_LEVELDB,
  KEY_HARD_STATE,
  KEY_IDENTITY,
  KEY_LOG_STATE,
  KEY_SNAPSHOT,
  type LogState,
} from './codec.ts';
import { checkIdentity, openLevel, readFormat1Entries, readMetadata, writeIdentityFile, type Db, type Op } from './level.ts';
import { SegmentLog, type TruncatedTail } from './segment-log.ts';
import type { LogStore, PersistBatch, RecoveredState, StorageIdentity } from './types.ts';

/**
 * Batches accepted but not yet synced. The driver waits for onSynced before
 * it advances, so a deep queue means a caller that stopped waiting: fail
 * loudly rather than buffer without bound.
 */
export const PERSIST_QUEUE_MAX = 1024;

/**
 * The longest a raised high-water mark stays written without a sync before
 * a synced write of its own follows. It bounds what a power cut can take from
 * the mark (the acknowledgements of the last second at most) while a batch of
 * entries costs one fdatasync.
 */
export const MARK_SYNC_EVERY_MS = 1000;

export interface DiskLogStoreOptions {
  /** Segment size before a roll-over (tests use small ones). */
  segmentBytes?: number;
}

/** What the open found that an operator should hear about (the node logs it). */
export interface OpenReport {
  /** Torn tails that were cut (and lost synced records that were cut, with where their bytes went). */
  truncated: TruncatedTail[];
  /** The storage format that was migrated from, if any. */
  migratedFrom: number | null;
  highWater: { index: number; term: number };
  /** The log's last index as found. */
  lastIndex: number;
}

/**
 * What is on disk once every accepted batch is synced.
 * Invariant: snapIndex <= lastIndex, commit <= lastIndex; entries
 * snapIndex+1..lastIndex are in the segment log.
 */
interface LogBounds {
  snapIndex: number;
  snapTerm: number;
  lastIndex: number;
  lastTerm: number;
  hardState: HardState;
  highWater: { index: number; term: number };
}

/** The writes of one batch, planned in order by plan(). */
interface WritePlan {
  /** A leader's snapshot: the log restarts after it. */
  restartAfterSnapshot: number | null;
  /** Lowered before a truncation below the mark (a new leader replaced uncommitted entries). */
  lowerHighWater: { index: number; term: number } | null;
  entries: Entry[];
  /** The leader's snapshot record, written with the restart. */
  snapshotOp: Op | null;
  /** Hard state and local snapshot, written after the entries. */
  meta: Op[];
  /** The mark after the entries, or null when unchanged. */
  highWater: { index: number; term: number } | null;
  compactTo: number;
  /** The LevelDB write carries a new term or vote, or a local snapshot: it is synced whatever the mark. */
  metaSync: boolean;
}

export class DiskLogStore implements LogStore {
  private bounds: LogBounds;
  /** Segments with a lower seq belong to a replaced log; changed by a leader's snapshot. */
  private firstSeq: number;
  /** The last accepted write; each batch starts after it, so writes never reorder. */
  private tail: Promise<void> = Promise.resolve();
  private inFlight = 0;
  /** Set by the first failed write: later batches are not written, or the log could get a hole. */
  private failure: Error | null = null;
  private closed = false;
  /** Set while a mark written without a sync waits for the write that syncs it. */
  private markSyncTimer: NodeJS.Timeout | null = null;
  /** The last mark written without a sync, until a synced LevelDB write covers it. */
  private unsyncedMark: { index: number; term: number } | null = null;

  private constructor(
    private readonly db: Db,
    private readonly wal: SegmentLog,
    /** Where the LevelDB files live: `${dir}/raft`. */
    readonly dbPath: string,
    bounds: LogBounds,
    firstSeq: number,
  ) {
    this.bounds = bounds;
    this.firstSeq = firstSeq;
  }

  /**
   * Opens (or creates) the store in `dir`. Refuses, before writing anything,
   * a directory that belongs to another node, another cluster or another
   * program; refuses a damaged record with a CorruptRecordError naming the
   * file, the byte offset and the index; migrates format 1.
   */
  static async open(dir: string, identity: StorageIdentity, opts: DiskLogStoreOptions = {}): Promise<{ store: DiskLogStore; recovered: RecoveredState; report: OpenReport }> {
    assert(identity.clusterId !== '' && identity.nodeId !== '', 'storage identity needs a cluster id and a node id');
    const dbPath = join(dir, 'raft');
    const walPath = join(dir, 'wal');
    const db = await openLevel(dir, dbPath, walPath, identity);
    let wal: SegmentLog | null = null;
    try {
      const format = await checkIdentity(db, dir, dbPath, identity);
      const meta = await readMetadata(db, dbPath);
      let logState = meta.logState;
      let migratedFrom: number | null = null;
      if (format === FORMAT_VERSION_ENTRIES_IN_LEVELDB) {
        logState = await migrateFormat1(db, dbPath, walPath, identity, meta.snapshot, opts);
        migratedFrom = format;
      }
      const snapIndex = meta.snapshot.metadata.index;
      const ls: LogState = logState ?? { highWaterIndex: snapIndex, highWaterTerm: meta.snapshot.metadata.term, firstSeq: 1 };
      const truncated: TruncatedTail[] = [];
      const opened = await SegmentLog.open(walPath, {
        snapIndex,
        firstSeq: ls.firstSeq,
        highWaterIndex: ls.highWaterIndex,
        segmentBytes: opts.segmentBytes,
        onTruncated: (t) => truncated.push(t),
      });
      wal = opened.log;
      const entries = opened.entries;
      const last = entries.at(-1);
      const lastIndex = last?.index ?? snapIndex;
      const lastTerm = last?.term ?? meta.snapshot.metadata.term;
      if (entries.length > 0 && entries[0].term < meta.snapshot.metadata.term) {
        // Checked like the rest of the log: a record that passed its checksum may still not fit.
        throw new CorruptRecordError(walPath, `raft log record at index ${entries[0].index}`, `term ${entries[0].term} is lower than the snapshot's term ${meta.snapshot.metadata.term}`);
      }
      // Synced entries are missing when the log ends below what this node acknowledged.
      const acknowledged = Math.max(ls.highWaterIndex, meta.hardState.commit);
      const recoverIndex = acknowledged > lastIndex ? acknowledged : 0;
      const hardState = { ...meta.hardState, commit: Math.min(meta.hardState.commit, lastIndex) };
      await writeIdentityFile(dir, identity);
      const bounds: LogBounds = {
        snapIndex,
        snapTerm: meta.snapshot.metadata.term,
        lastIndex,
        lastTerm,
        hardState,
        highWater: { index: Math.max(ls.highWaterIndex, lastIndex), term: ls.highWaterIndex >= lastIndex ? ls.highWaterTerm : lastTerm },
      };
      const store = new DiskLogStore(db, wal, dbPath, bounds, ls.firstSeq);
      const report: OpenReport = { truncated, migratedFrom, highWater: { index: ls.highWaterIndex, term: ls.highWaterTerm }, lastIndex };
      return { store, recovered: { hardState, snapshot: meta.snapshot, entries, recoverIndex }, report };
    } catch (err) {
      await wal?.close();
      await db.close();
      throw err;
    }
  }

  persist(batch: PersistBatch, onSynced: (err: Error | null) => void): void {
    assert(!this.closed, 'persist after close');
    assert(this.inFlight < PERSIST_QUEUE_MAX, `more than ${PERSIST_QUEUE_MAX} persist batches waiting for sync`);
    const plan = this.plan(batch);
    this.inFlight += 1;
    const write = this.tail.then(async () => {
      if (this.failure) throw this.failure;
      await this.write(plan);
    });
    this.tail = write.then(
      () => {},
      (err: unknown) => {
        this.failure ??= toError(err);
      },
    );
    // An exception thrown by onSynced surfaces as an unhandled rejection (a
    // crash) instead of being swallowed; it cannot break the write chain.
    void write.then(
      () => {
        this.inFlight -= 1;
        onSynced(null);
      },
      (err: unknown) => {
        this.inFlight -= 1;
        onSynced(toError(err));
      },
    );
  }

  /** Waits for every accepted batch to be synced (or fail), then closes the files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.markSyncTimer !== null) clearTimeout(this.markSyncTimer);
    this.markSyncTimer = null;
    await this.tail;
    await this.wal.close();
    await this.db.close();
  }

  private async write(p: WritePlan): Promise<void> {
    if (p.restartAfterSnapshot !== null) {
      // The snapshot and the new log's first seq land in one LevelDB write;
      // before it the old log is whole, after it the old segments are garbage.
      const seq = await this.wal.restartAt(p.restartAfterSnapshot + 1);
      this.firstSeq = seq;
      assert(p.snapshotOp !== null && p.highWater !== null, 'store: a snapshot restart without its record');
      await this.levelWrite([p.snapshotOp, this.logStateOp(p.highWater)], true);
      await this.wal.dropBefore(seq);
    }
    if (p.lowerHighWater) await this.levelWrite([this.logStateOp(p.lowerHighWater)], true);
    await this.wal.append(p.entries);
    const ops = [...p.meta];
    const mark = p.highWater && p.entries.length > 0 ? p.highWater : null;
    if (mark) ops.push(this.logStateOp(mark));
    if (ops.length > 0) await this.levelWrite(ops, p.metaSync);
    // The entries are synced already; the mark rode without a sync.
    if (mark && !p.metaSync) this.scheduleMarkSync(mark);
    if (p.compactTo > 0) await this.wal.compact(p.compactTo);
  }

  /**
   * Syncs LevelDB's log (and with it the mark written without a sync) within
   * MARK_SYNC_EVERY_MS, in the write chain so it never reorders with a batch.
   * The mark re-written is the one already written, never a planned one.
   */
  private scheduleMarkSync(mark: { index: number; term: number }): void {
    this.unsyncedMark = mark;
    if (this.markSyncTimer !== null) return;
    this.markSyncTimer = setTimeout(() => {
      this.markSyncTimer = null;
      if (this.closed) return;
      this.tail = this.tail
        .then(async () => {
          const hw = this.unsyncedMark;
          this.unsyncedMark = null;
          if (this.failure || hw === null) return;
          await this.levelWrite([this.logStateOp(hw)], true);
        })
        .catch((err: unknown) => {
          this.failure ??= toError(err);
        });
    }, MARK_SYNC_EVERY_MS);
    this.markSyncTimer.unref();
  }

  /** One LevelDB write; a synced one makes every earlier unsynced one durable, the mark included. */
  private async levelWrite(ops: Op[], sync: boolean): Promise<void> {
    await this.db.batch(ops, { sync });
    if (sync) this.unsyncedMark = null;
  }

  private logStateOp(hw: { index: number; term: number }): Op {
    return { type: 'put', key: KEY_LOG_STATE, value: encodeLogState({ highWaterIndex: hw.index, highWaterTerm: hw.term, firstSeq: this.firstSeq }) };
  }

  /**
   * Checks a batch against the log as it will be once every earlier batch is
   * synced, plans its writes in the order PersistBatch documents, and
   * advances the in-memory bounds. A violated precondition is a bug in the
   * caller: it throws before anything is queued.
   */
  private plan(batch: PersistBatch): WritePlan {
    const b: LogBounds = { ...this.bounds, hardState: { ...this.bounds.hardState }, highWater: { ...this.bounds.highWater } };
    const plan: WritePlan = { restartAfterSnapshot: null, lowerHighWater: null, entries: batch.entries, snapshotOp: null, meta: [], highWater: null, compactTo: batch.compactTo, metaSync: false };

    if (batch.snapshot) {
      // A leader's snapshot replaces the whole log: entries after it may
      // belong to a history the snapshot overrode.
      const snapIndex = batch.snapshot.metadata.index;
      assert(snapIndex >= b.snapIndex, `snapshot index ${snapIndex} is behind the stored snapshot ${b.snapIndex}`);
      assert(snapIndex >= b.hardState.commit, `snapshot index ${snapIndex} would drop committed entries (commit ${b.hardState.commit})`);
      plan.restartAfterSnapshot = snapIndex;
      plan.snapshotOp = { type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(batch.snapshot) };
      // A leader sends its snapshot only when this log lacks the entry at its
      // index (or has another term there): what this node acknowledged past
      // it conflicts with the leader, so it was never committed and the mark
      // moves to the snapshot. Unless the disk already lost acknowledged
      // entries (the mark is above the log): that debt stays until paid.
      const owed = b.highWater.index > b.lastIndex;
      b.snapIndex = snapIndex;
      b.snapTerm = batch.snapshot.metadata.term;
      b.lastIndex = snapIndex;
      b.lastTerm = b.snapTerm;
      if (!owed || snapIndex >= b.highWater.index) b.highWater = { index: snapIndex, term: b.snapTerm };
      plan.highWater = { ...b.highWater };
    }

    if (batch.entries.length > 0) {
      checkEntries(batch.entries);
      const first = batch.entries[0].index;
      const last = batch.entries[batch.entries.length - 1];
      assert(first > b.snapIndex, `entry ${first} is at or below the snapshot index ${b.snapIndex}`);
      assert(first <= b.lastIndex + 1, `entry ${first} leaves a gap after the last index ${b.lastIndex}`);
      // Committed entries are never replaced: doing so would break state machine safety.
      assert(first > b.hardState.commit, `entry ${first} would overwrite committed entries (commit ${b.hardState.commit})`);
      if (first <= b.lastIndex && first <= b.highWater.index) {
        // A leader replaces entries this node acknowledged. They were not
        // committed (a leader holds every committed entry), so the mark may go
        // back; it does so durably before the cut, so a crash in between
        // never looks like lost records.
        const at = first - 1;
        // The segment log may lag this plan by queued batches; the mark's term
        // is for the operator's log line only (recovery compares indexes).
        const term = at === b.snapIndex ? b.snapTerm : (this.wal.termAt(at) ?? 0);
        b.highWater = { index: at, term };
        plan.lowerHighWater = { ...b.highWater };
      }
      b.lastIndex = last.index;
      b.lastTerm = last.term;
      // While recovering the mark stays above the log: it still names what is owed.
      if (last.index >= b.highWater.index) b.highWater = { index: last.index, term: last.term };
      plan.highWater = { ...b.highWater };
    }

    if (batch.hardState) {
      const hs = batch.hardState;
      const prev = b.hardState;
      assert(hs.term >= prev.term, `hard state term goes back from ${prev.term} to ${hs.term}`);
      assert(hs.term > prev.term || prev.vote === NONE || hs.vote === prev.vote, `vote in term ${hs.term} changes from ${prev.vote} to ${hs.vote}`);
      assert(hs.commit >= prev.commit, `commit goes back from ${prev.commit} to ${hs.commit}`);
      assert(hs.commit <= b.lastIndex, `commit ${hs.commit} is beyond the last index ${b.lastIndex}`);
      plan.meta.push({ type: 'put', key: KEY_HARD_STATE, value: encodeHardState(hs) });
      // R6: a term or vote is synced before anything that depends on it is sent; a commit index is not needed for safety.
      if (hs.term !== prev.term || hs.vote !== prev.vote) plan.metaSync = true;
      b.hardState = { term: hs.term, vote: hs.vote, commit: hs.commit };
    }

    if (batch.localSnapshot) {
      // This node's own snapshot: the log stays, so slow followers can still be sent entries.
      const snapIndex = batch.localSnapshot.metadata.index;
      assert(snapIndex >= b.snapIndex, `local snapshot index ${snapIndex} is behind the stored snapshot ${b.snapIndex}`);
      assert(snapIndex <= b.lastIndex, `local snapshot index ${snapIndex} is beyond the last index ${b.lastIndex}`);
      plan.meta.push({ type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(batch.localSnapshot) });
      // Compaction deletes segments this snapshot covers: it must be durable first.
      plan.metaSync = true;
      b.snapIndex = snapIndex;
      b.snapTerm = batch.localSnapshot.metadata.term;
    }

    if (batch.compactTo > 0) {
      // Recovery rebuilds the log from the snapshot onward: compacting past
      // the stored snapshot would lose the only copy of those entries.
      assert(batch.compactTo <= b.snapIndex, `compactTo ${batch.compactTo} is beyond the snapshot index ${b.snapIndex}`);
    }

    this.bounds = b;
    return plan;
  }
}

function checkEntries(entries: readonly Entry[]): void {
  for (let i = 1; i < entries.length; i++) {
    const prev = entries[i - 1];
    const e = entries[i];
    assert(e.index === prev.index + 1, `entries not contiguous: ${prev.index} then ${e.index}`);
    assert(e.term >= prev.term, `entry terms go back: ${prev.term} at ${prev.index}, ${e.term} at ${e.index}`);
  }
}

/**
 * Format 1 kept the entries in LevelDB. They are written to a fresh segment
 * log (synced), then one LevelDB write deletes them, records the log state
 * and moves the identity to format 2. A crash before that write leaves
 * format 1 intact and the migration starts over.
 */
async function migrateFormat1(db: Db, dbPath: string, walPath: string, identity: StorageIdentity, snapshot: RecoveredState['snapshot'], opts: DiskLogStoreOptions): Promise<LogState> {
  const { entries, keys } = await readFormat1Entries(db, dbPath, snapshot);
  await rm(walPath, { recursive: true, force: true });
  const snapIndex = snapshot.metadata.index;
  const { log } = await SegmentLog.open(walPath, { snapIndex, firstSeq: 1, highWaterIndex: 0, segmentBytes: opts.segmentBytes });
  try {
    await log.append(entries);
  } finally {
    await log.close();
  }
  const last = entries.at(-1);
  const logState: LogState = { highWaterIndex: last?.index ?? snapIndex, highWaterTerm: last?.term ?? snapshot.metadata.term, firstSeq: 1 };
  const ops: Op[] = keys.map((key) => ({ type: 'del', key }));
  ops.push({ type: 'put', key: KEY_LOG_STATE, value: encodeLogState(logState) });
  ops.push({ type: 'put', key: KEY_IDENTITY, value: encodeIdentity(identity) });
  await db.batch(ops, { sync: true });
  return logState;
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
