// Durable Raft storage: the entries in a segment log of their own
// (`${dir}/wal`, src/storage/segment-log.ts), everything else in LevelDB
// (`${dir}/raft`: identity, hard state, snapshot, log state).
//
// One PersistBatch with entries is the segment write and its fdatasync,
// then the two-field mark written and synced in its own file
// (`${dir}/raft/high-water`, src/storage/mark-file.ts): "acknowledged
// through" and "may hold up to", both at the batch's end. The sync worker
// (src/storage/sync-worker.ts) does the two syncs in one trip off the event
// loop. A hard state with a new term or vote follows in a synced LevelDB
// write; one that only moves the commit index waits for the store to go idle
// (the commit index is not needed for safety, and a synced write per batch
// would cost a second trip). onSynced fires once all are synced (R6), so every batch a
// node acknowledged is under its mark. On start, a log shorter than
// "acknowledged through" means the disk lost synced entries: the node starts
// recovering instead of answering with a log shorter than one it
// acknowledged. A log that ends between the two fields is an ordinary crash.
// With `markBesideSegment` the mark goes to LevelDB beside the segment's sync
// instead, "acknowledged through" names only what earlier batches synced,
// and a confirmation moves it up once the store is idle; not the default,
// because it leaves the last batch unguarded until then (docs/storage.md).

import { assert } from '../util/assert.ts';
import { join } from 'node:path';
import { NONE, REJOINING_VOTE, type Entry, type HardState } from '../raft/types.ts';
import {
  CorruptRecordError,
  encodeHardState,
  encodeLogState,
  encodeSnapshot,
  KEY_HARD_STATE,
  KEY_LOG_STATE,
  KEY_SNAPSHOT,
  type LogState,
} from './codec.ts';
import {
  checkFoundedGroups,
  checkIdentity,
  openLevel,
  readMetadata,
  writeIdentityFile,
  type Db,
  type Op,
} from './level.ts';
import { MARK_FILE, MarkFile, encodeMarkSlot, newestMark } from './mark-file.ts';
import { SegmentLog, type TruncatedTail } from './segment-log.ts';
import { SyncWorker } from './sync-worker.ts';
import type { LogStore, PersistBatch, RecoveredState, StorageIdentity } from './types.ts';

/**
 * Batches accepted but not yet synced. The driver waits for onSynced before
 * it advances, so a deep queue means a caller that stopped waiting: fail
 * loudly rather than buffer without bound.
 */
export const PERSIST_QUEUE_MAX = 1024;

/**
 * How long the store stays idle before it writes the confirmation. Under
 * load the next batch's mark comes sooner and makes it unnecessary; a
 * confirmation written at once would hold up that mark behind its own sync.
 */
export const CONFIRM_DELAY_MS = 10;

export interface DiskLogStoreOptions {
  /** Segment size before a roll-over (tests use small ones). */
  segmentBytes?: number;
  /** Zeros written ahead of the log's records (src/storage/segment-log.ts); 0 grows the file with each batch. */
  preallocBytes?: number;
  /**
   * Write the mark beside the segment's fdatasync instead of after it: one
   * sync less on the critical path, but a disk that loses exactly the last
   * acknowledged batch goes unnoticed until the idle confirmation lands
   * (docs/storage.md, "the order of one batch"). Off by default: a node
   * never trades that detection for latency; bench/analysis/store-sync.ts's A/B
   * measures what it would save.
   */
  markBesideSegment?: boolean;
}

/** What the open found that an operator should hear about (the node logs it). */
export interface OpenReport {
  /** Torn tails that were cut (and lost synced records that were cut, with where their bytes went). */
  truncated: TruncatedTail[];
  /** Acknowledged through, as found. */
  highWater: { index: number; term: number };
  /** May hold up to, as found. */
  mayHoldIndex: number;
  /** The log's last index as found. */
  lastIndex: number;
  /** A slot of the mark file without a valid record beside a valid one (a write a crash cut short, or damage). */
  markProblems: string[];
}

interface Mark {
  index: number;
  term: number;
}

/** The two-field log state record's content (src/storage/codec.ts, LogState). */
interface TwoFieldMark {
  acked: Mark;
  mayHoldIndex: number;
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
  /**
   * "Acknowledged through" as the last planned mark says it. Above lastIndex
   * while recovering: what the disk lost and the leader still owes.
   */
  acked: Mark;
}

/** The writes of one batch, planned in order by plan(). */
interface WritePlan {
  /** A leader's snapshot: the log restarts after it. */
  restartAfterSnapshot: number | null;
  /** The mark written with the snapshot record, before the entries. */
  restartMark: TwoFieldMark | null;
  /** Lowered (synced) before a truncation below "acknowledged through" (a new leader replaced uncommitted entries). */
  lowerMark: Mark | null;
  entries: Entry[];
  /** The leader's snapshot record, written with the restart. */
  snapshotOp: Op | null;
  /** Hard state and local snapshot. */
  meta: Op[];
  /** The mark that goes with the entries, or null when the batch has none. */
  mark: TwoFieldMark | null;
  /**
   * The LevelDB write goes beside the segment's fdatasync. Not for a batch
   * with a snapshot: a snapshot record must never get ahead of the log it
   * ends (see write()).
   */
  parallel: boolean;
  /** The commit index the hard state record of this batch stores (null: no hard state). */
  storedCommit: number | null;
  compactTo: number;
  sync: boolean;
}

export class DiskLogStore implements LogStore {
  private bounds: LogBounds;
  /** Segments with a lower seq belong to a replaced log; changed by a leader's snapshot. */
  private firstSeq: number;
  /** The last accepted write; each batch starts after it, so writes never reorder. */
  private tail: Promise<void> = Promise.resolve();
  private inFlight = 0;
  /** Batches accepted whose write has not started: the store is idle when none are. */
  private queued = 0;
  /** The last LevelDB write; LevelDB writes go in the order they were issued. */
  private levelTail: Promise<void> = Promise.resolve();
  /** "Acknowledged through" in the last mark issued. */
  private markedIndex: number;
  /** The seq of the last mark issued, to LevelDB or the mark file: the newest one is the mark. */
  private markSeq: number;
  /** Started with the first batch that needs it (a store opened only to be read never starts a thread). */
  private syncWorker: SyncWorker | null = null;
  /** The commit index in the last hard state record issued to LevelDB. */
  private storedCommit: number;
  /** The pending confirmation (see confirm()); cleared by the next batch. */
  private confirmTimer: ReturnType<typeof setTimeout> | null = null;
  /** Set by the first failed write: later batches are not written, or the log could get a hole. */
  private failure: Error | null = null;
  private closed = false;

  private constructor(
    private readonly db: Db,
    private readonly wal: SegmentLog,
    private readonly markFile: MarkFile,
    /** Where the LevelDB files live: `${dir}/raft`. */
    readonly dbPath: string,
    bounds: LogBounds,
    firstSeq: number,
    markedIndex: number,
    markSeq: number,
    private readonly markBesideSegment: boolean,
  ) {
    this.bounds = bounds;
    this.firstSeq = firstSeq;
    this.markedIndex = markedIndex;
    this.markSeq = markSeq;
    this.storedCommit = bounds.hardState.commit;
  }

  /**
   * Opens (or creates) the store in `dir`. Refuses, before writing anything,
   * a directory that belongs to another node, another cluster or another
   * program; refuses a damaged record with a CorruptRecordError naming the
   * file, the byte offset and the index; refuses a directory in another
   * storage format (earlier development builds) with a StorageIdentityError.
   */
  static async open(
    dir: string,
    identity: StorageIdentity,
    opts: DiskLogStoreOptions = {},
  ): Promise<{ store: DiskLogStore; recovered: RecoveredState; report: OpenReport }> {
    assert(identity.clusterId !== '' && identity.nodeId !== '', 'storage identity needs a cluster id and a node id');
    const dbPath = join(dir, 'raft');
    const walPath = join(dir, 'wal');
    const db = await openLevel(dir, dbPath, walPath, identity);
    let wal: SegmentLog | null = null;
    let markFile: MarkFile | null = null;
    try {
      await checkIdentity(db, dir, dbPath, identity);
      // A directory founded with more groups keeps them in the shared group log (src/storage/group-store.ts): refused
      // here.
      await checkFoundedGroups(db, dir, dbPath, 1, async () => false);
      const meta = await readMetadata(db, dbPath);
      const snapIndex = meta.snapshot.metadata.index;
      const inLevel: LogState = meta.logState ?? {
        highWaterIndex: snapIndex,
        highWaterTerm: meta.snapshot.metadata.term,
        firstSeq: 1,
        mayHoldIndex: snapIndex,
        markSeq: 0,
      };
      const marks = await MarkFile.open(join(dbPath, MARK_FILE), inLevel);
      markFile = marks.file;
      // The newest mark wins, wherever it was written.
      const ls = newestMark([inLevel, marks.newest]) ?? inLevel;
      const truncated: TruncatedTail[] = [];
      const opened = await SegmentLog.open(walPath, {
        snapIndex,
        firstSeq: ls.firstSeq,
        highWaterIndex: ls.highWaterIndex,
        segmentBytes: opts.segmentBytes,
        preallocBytes: opts.preallocBytes,
        onTruncated: (t) => truncated.push(t),
      });
      wal = opened.log;
      const entries = opened.entries;
      const last = entries.at(-1);
      const lastIndex = last?.index ?? snapIndex;
      const lastTerm = last?.term ?? meta.snapshot.metadata.term;
      if (entries.length > 0 && entries[0].term < meta.snapshot.metadata.term) {
        // Checked like the rest of the log: a record that passed its checksum may still not fit.
        throw new CorruptRecordError(
          walPath,
          `raft log record at index ${entries[0].index}`,
          `term ${entries[0].term} is lower than the snapshot's term ${meta.snapshot.metadata.term}`,
        );
      }
      // Synced entries are missing when the log ends below what this node
      // acknowledged: "acknowledged through", or a commit index (a stored
      // commit never passes what was synced before it was written). A log
      // that ends between "acknowledged through" and "may hold up to" lost
      // only a batch that was never synced, so never acknowledged.
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
        // What was read back is synced (SegmentLog.open syncs the last segment), so the next mark may claim it.
        acked:
          recoverIndex > 0
            ? { index: recoverIndex, term: recoverIndex === ls.highWaterIndex ? ls.highWaterTerm : 0 }
            : { index: lastIndex, term: lastTerm },
      };
      const store = new DiskLogStore(
        db,
        wal,
        markFile,
        dbPath,
        bounds,
        ls.firstSeq,
        ls.highWaterIndex,
        ls.markSeq,
        opts.markBesideSegment === true,
      );
      const report: OpenReport = {
        truncated,
        highWater: { index: ls.highWaterIndex, term: ls.highWaterTerm },
        mayHoldIndex: ls.mayHoldIndex,
        lastIndex,
        markProblems: marks.problems,
      };
      return { store, recovered: { hardState, snapshot: meta.snapshot, entries, recoverIndex }, report };
    } catch (err) {
      await wal?.close();
      markFile?.close();
      await db.close();
      throw err;
    }
  }

  persist(batch: PersistBatch, onSynced: (err: Error | null) => void): void {
    assert(!this.closed, 'persist after close');
    assert(this.inFlight < PERSIST_QUEUE_MAX, `more than ${PERSIST_QUEUE_MAX} persist batches waiting for sync`);
    const plan = this.plan(batch);
    this.inFlight += 1;
    this.queued += 1;
    this.cancelConfirm();
    const write = this.tail.then(async () => {
      this.queued -= 1;
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
    await this.tail;
    // A clean stop leaves the mark covering everything synced.
    if (this.cancelConfirm()) this.confirm();
    await this.levelTail;
    await this.syncWorker?.close();
    this.markFile.close();
    await this.wal.close();
    await this.db.close();
  }

  private async write(p: WritePlan): Promise<void> {
    if (p.restartAfterSnapshot !== null) {
      // The snapshot and the new log's first seq land in one LevelDB write;
      // before it the old log is whole, after it the old segments are garbage.
      const seq = await this.wal.restartAt(p.restartAfterSnapshot + 1);
      this.firstSeq = seq;
      assert(p.snapshotOp !== null && p.restartMark !== null, 'store: a snapshot restart without its record');
      await this.levelWrite([p.snapshotOp, this.logStateOp(p.restartMark)], true);
      await this.wal.dropBefore(seq);
    }
    if (p.lowerMark)
      await this.levelWrite([this.logStateOp({ acked: p.lowerMark, mayHoldIndex: p.lowerMark.index })], true);
    if (p.mark !== null && !p.parallel) {
      // The segment's fdatasync, then the mark's slot written and synced:
      // one trip to the sync worker. LevelDB takes what else the batch holds
      // after both (a stored commit index never passes what was synced).
      const record = encodeMarkSlot(this.logStateRecord(p.mark));
      const offset = this.markFile.takeSlotOffset();
      this.syncWorker ??= new SyncWorker(this.dbPath);
      const worker = this.syncWorker;
      await this.wal.append(p.entries, (fd) => worker.run(fd, this.markFile.fd, record, offset));
      if (p.storedCommit !== null) this.storedCommit = p.storedCommit;
      if (p.meta.length > 0) await this.levelWrite(p.meta, true);
      await this.afterWrite(p);
      return;
    }
    const ops = [...p.meta];
    if (p.mark) ops.push(this.logStateOp(p.mark));
    if (p.storedCommit !== null) this.storedCommit = p.storedCommit;
    // Every mark with entries is synced: onSynced must find it on disk.
    const sync = p.sync || p.mark !== null;
    if (p.parallel && ops.length > 0) {
      // "Acknowledged through" names only what earlier batches synced, and
      // "may hold up to" bounds a crash in between: either write may land
      // first (docs/storage.md, the two-field mark).
      await Promise.all([this.wal.append(p.entries), this.levelWrite(ops, sync)]);
    } else {
      await this.wal.append(p.entries);
      if (ops.length > 0) await this.levelWrite(ops, sync);
    }
    await this.afterWrite(p);
  }

  /** Compaction, then the confirmation scheduled once the store is idle. */
  private async afterWrite(p: WritePlan): Promise<void> {
    if (p.compactTo > 0) await this.wal.compact(p.compactTo);
    if (this.queued === 0 && !this.closed) {
      this.confirmTimer = setTimeout(() => {
        this.confirmTimer = null;
        this.confirm();
      }, CONFIRM_DELAY_MS);
      this.confirmTimer.unref();
    } else if (this.queued === 0) this.confirm();
  }

  /** Drops the pending confirmation; true when there was one. */
  private cancelConfirm(): boolean {
    if (this.confirmTimer === null) return false;
    clearTimeout(this.confirmTimer);
    this.confirmTimer = null;
    return true;
  }

  /**
   * The store has been idle for CONFIRM_DELAY_MS (or is closing) and the
   * last mark's "acknowledged through" lags the synced log by one batch: a
   * synced write moves it up, off the critical path (the batch was
   * acknowledged already). Without it a disk that later
   * lost that batch would look like an ordinary crash. It also stores the
   * commit index a batch with entries held back (see plan()).
   */
  private confirm(): void {
    const b = this.bounds;
    if (this.failure) return;
    const ops: Op[] = [];
    if (this.markedIndex < b.lastIndex) {
      b.acked = { index: b.lastIndex, term: b.lastTerm };
      ops.push(this.logStateOp({ acked: b.acked, mayHoldIndex: b.lastIndex }));
    }
    if (this.storedCommit < b.hardState.commit) {
      ops.push({ type: 'put', key: KEY_HARD_STATE, value: encodeHardState(b.hardState) });
      this.storedCommit = b.hardState.commit;
    }
    if (ops.length > 0) void this.levelWrite(ops, true).catch(() => {});
  }

  /** One LevelDB write, after every earlier one; a failure stops later batches. */
  private levelWrite(ops: Op[], sync: boolean): Promise<void> {
    const w = this.levelTail.then(() => this.db.batch(ops, { sync }));
    this.levelTail = w.then(
      () => {},
      (err: unknown) => {
        this.failure ??= toError(err);
      },
    );
    return w;
  }

  private logStateOp(m: TwoFieldMark): Op {
    return { type: 'put', key: KEY_LOG_STATE, value: this.logStateRecord(m) };
  }

  /** The next mark's record (for LevelDB or the mark file), with the next mark seq. */
  private logStateRecord(m: TwoFieldMark): Uint8Array {
    this.markedIndex = m.acked.index;
    this.markSeq += 1;
    return encodeLogState({
      highWaterIndex: m.acked.index,
      highWaterTerm: m.acked.term,
      firstSeq: this.firstSeq,
      mayHoldIndex: Math.max(m.mayHoldIndex, m.acked.index),
      markSeq: this.markSeq,
    });
  }

  /**
   * Checks a batch against the log as it will be once every earlier batch is
   * synced, plans its writes in the order PersistBatch documents, and
   * advances the in-memory bounds. A violated precondition is a bug in the
   * caller: it throws before anything is queued.
   */
  private plan(batch: PersistBatch): WritePlan {
    const b: LogBounds = { ...this.bounds, hardState: { ...this.bounds.hardState }, acked: { ...this.bounds.acked } };
    const plan: WritePlan = {
      restartAfterSnapshot: null,
      restartMark: null,
      lowerMark: null,
      entries: batch.entries,
      snapshotOp: null,
      meta: [],
      mark: null,
      parallel: this.markBesideSegment && batch.snapshot === null && batch.localSnapshot === null,
      storedCommit: null,
      compactTo: batch.compactTo,
      sync: batch.sync,
    };
    const lastOf = batch.entries.at(-1);
    /** Where the log ends, synced, before this batch's entries (null without entries). */
    let syncedBefore: number | null = null;

    if (batch.snapshot) {
      // A leader's snapshot replaces the whole log: entries after it may
      // belong to a history the snapshot overrode.
      const snapIndex = batch.snapshot.metadata.index;
      assert(snapIndex >= b.snapIndex, `snapshot index ${snapIndex} is behind the stored snapshot ${b.snapIndex}`);
      assert(
        snapIndex >= b.hardState.commit,
        `snapshot index ${snapIndex} would drop committed entries (commit ${b.hardState.commit})`,
      );
      plan.restartAfterSnapshot = snapIndex;
      plan.snapshotOp = { type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(batch.snapshot) };
      // A leader sends its snapshot only when this log lacks the entry at its
      // index (or has another term there): what this node acknowledged past
      // it conflicts with the leader, so it was never committed and the mark
      // moves to the snapshot. Unless the disk already lost acknowledged
      // entries (the mark is above the log): that debt stays until paid.
      const owed = b.acked.index > b.lastIndex;
      b.snapIndex = snapIndex;
      b.snapTerm = batch.snapshot.metadata.term;
      b.lastIndex = snapIndex;
      b.lastTerm = b.snapTerm;
      if (!owed || snapIndex >= b.acked.index) b.acked = { index: snapIndex, term: b.snapTerm };
      plan.restartMark = { acked: { ...b.acked }, mayHoldIndex: Math.max(snapIndex, lastOf?.index ?? 0) };
    }

    if (lastOf) {
      checkEntries(batch.entries);
      const first = batch.entries[0].index;
      assert(first > b.snapIndex, `entry ${first} is at or below the snapshot index ${b.snapIndex}`);
      assert(first <= b.lastIndex + 1, `entry ${first} leaves a gap after the last index ${b.lastIndex}`);
      // Committed entries are never replaced: doing so would break state machine safety.
      assert(
        first > b.hardState.commit,
        `entry ${first} would overwrite committed entries (commit ${b.hardState.commit})`,
      );
      // The segment log may lag this plan by queued batches; a mark's term
      // is for the operator's log line only (recovery compares indexes).
      const termAt = (i: number): number =>
        i === b.lastIndex ? b.lastTerm : i === b.snapIndex ? b.snapTerm : (this.wal.termAt(i) ?? 0);
      if (first <= b.lastIndex && first <= b.acked.index) {
        // A leader replaces entries this node acknowledged. They were not
        // committed (a leader holds every committed entry), so the mark may go
        // back; it does so durably before the cut, so a crash in between
        // never looks like lost records.
        b.acked = { index: first - 1, term: termAt(first - 1) };
        plan.lowerMark = { ...b.acked };
      }
      // What is synced before these entries: every earlier batch, up to where these start.
      const before = Math.min(b.lastIndex, first - 1);
      syncedBefore = before;
      const synced: Mark = plan.parallel
        ? { index: before, term: termAt(before) }
        : { index: lastOf.index, term: lastOf.term };
      // While recovering "acknowledged through" stays above the log: it still names what is owed.
      if (synced.index >= b.acked.index) b.acked = synced;
      b.lastIndex = lastOf.index;
      b.lastTerm = lastOf.term;
      plan.mark = { acked: { ...b.acked }, mayHoldIndex: lastOf.index };
    }

    if (batch.hardState) {
      const hs = batch.hardState;
      const prev = b.hardState;
      assert(hs.term >= prev.term, `hard state term goes back from ${prev.term} to ${hs.term}`);
      // REJOINING_VOTE promises no vote; the leader that proves the node whole replaces it (src/raft/raft.ts,
      // Raft.rejoining).
      assert(
        hs.term > prev.term || prev.vote === NONE || prev.vote === REJOINING_VOTE || hs.vote === prev.vote,
        `vote in term ${hs.term} changes from ${prev.vote} to ${hs.vote}`,
      );
      assert(hs.commit >= prev.commit, `commit goes back from ${prev.commit} to ${hs.commit}`);
      assert(hs.commit <= b.lastIndex, `commit ${hs.commit} is beyond the last index ${b.lastIndex}`);
      // A commit index stored beside entries being synced names only what was
      // synced before them: on start, a log below a stored commit is lost
      // records, never a crash in the middle of a batch.
      const stored = plan.parallel && syncedBefore !== null ? { ...hs, commit: Math.min(hs.commit, syncedBefore) } : hs;
      // Beside entries synced with the mark in one trip, a hard state that
      // only moves the commit index is left for the confirmation once the
      // store is idle (confirm()): a LevelDB write per batch would be a second
      // trip, and the commit index is not needed for safety. A new term or
      // vote is written, and synced, before the batch is acknowledged.
      const commitOnly = hs.term === prev.term && hs.vote === prev.vote;
      if (!(commitOnly && !plan.parallel && lastOf !== undefined)) {
        plan.meta.push({ type: 'put', key: KEY_HARD_STATE, value: encodeHardState(stored) });
        plan.storedCommit = stored.commit;
      }
      b.hardState = { term: hs.term, vote: hs.vote, commit: hs.commit };
    }

    if (batch.localSnapshot) {
      // This node's own snapshot: the log stays, so slow followers can still be sent entries.
      const snapIndex = batch.localSnapshot.metadata.index;
      assert(
        snapIndex >= b.snapIndex,
        `local snapshot index ${snapIndex} is behind the stored snapshot ${b.snapIndex}`,
      );
      assert(snapIndex <= b.lastIndex, `local snapshot index ${snapIndex} is beyond the last index ${b.lastIndex}`);
      plan.meta.push({ type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(batch.localSnapshot) });
      b.snapIndex = snapIndex;
      b.snapTerm = batch.localSnapshot.metadata.term;
    }

    if (batch.compactTo > 0) {
      // Recovery rebuilds the log from the snapshot onward: compacting past
      // the stored snapshot would lose the only copy of those entries.
      assert(
        batch.compactTo <= b.snapIndex,
        `compactTo ${batch.compactTo} is beyond the snapshot index ${b.snapIndex}`,
      );
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

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
