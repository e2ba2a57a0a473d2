// A simulated disk behind the same LogStore interface as the real store
// (src/storage/store.ts). A write is durable only when its callback fires; a
// crash keeps a random prefix of the writes still in flight (the OS may have
// flushed some) and loses the rest.
//
// Disk faults, as docs/storage.md models them: a corrupted record (the node
// refuses to start until the operator repairs it: the log is moved aside,
// hard state, snapshot and high-water mark stay) and a lost synced tail
// (synced entries vanish; the high-water mark, kept apart, does not). Either
// way the node restarts recovering (src/raft/raft.ts, recoverIndex).
//
// The mark has the real store's two fields: "acknowledged through" and "may
// hold up to". By default (as in the real store) it is written after a
// batch's entries and covers them. With `markBesideSegment` it is written
// beside them, so a crash may land a batch's mark (and its hard state)
// without its entries, and an idle store's confirmation, an internal write
// in the same FIFO that a crash may lose, moves it up later.

import { foundingHardState } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import { emptySnapshot, type Entry, type HardState, type Snapshot } from '../../src/raft/types.ts';
import { CONFIRM_DELAY_MS } from '../../src/storage/store.ts';
import type { LogStore, PersistBatch, RecoveredState } from '../../src/storage/types.ts';
import type { EventQueue } from './event-queue.ts';

interface Durable {
  hardState: HardState;
  snapshot: Snapshot;
  entries: Entry[];
}

/** The reference semantics of PersistBatch (the LevelDB store must agree). */
export function applyBatch(d: Durable, b: PersistBatch): void {
  if (b.snapshot) {
    d.snapshot = b.snapshot;
    d.entries = [];
  }
  if (b.entries.length > 0) {
    const first = b.entries[0].index;
    const base = d.snapshot.metadata.index;
    if (first <= base) throw new Error(`sim disk: entries at ${first} at or below the snapshot ${base}`);
    if (first > base + d.entries.length + 1) throw new Error(`sim disk: gap before entry ${first}`);
    d.entries = d.entries.slice(0, first - base - 1).concat(b.entries);
  }
  if (b.hardState) d.hardState = { ...b.hardState };
  if (b.localSnapshot) {
    const base = d.snapshot.metadata.index;
    const idx = b.localSnapshot.metadata.index;
    d.entries = d.entries.slice(Math.max(0, idx - base));
    d.snapshot = b.localSnapshot;
  }
  if (b.compactTo > 0) {
    const base = d.snapshot.metadata.index;
    d.entries = d.entries.filter((e) => e.index > Math.max(b.compactTo, base));
  }
}

/** The last index a durable log holds (its snapshot's when it has no entries). */
function lastIndexOf(d: Durable): number {
  return d.snapshot.metadata.index + d.entries.length;
}

interface SimMark {
  /** Acknowledged through. */
  acked: number;
  /** May hold up to. */
  mayHold: number;
}

/**
 * Whether a store with markBesideSegment writes a batch's LevelDB half beside its entries (src/storage/store.ts,
 * plan()).
 */
function besideable(b: PersistBatch): boolean {
  return b.snapshot === null && b.localSnapshot === null && b.entries.length > 0;
}

/** Where the durable log ends, synced, before batch `b`'s entries. */
function syncedBefore(d: Durable, b: PersistBatch): number {
  return Math.min(lastIndexOf(d), b.entries[0].index - 1);
}

/** The mark after batch `b` lands on `d` (its entries and its LevelDB write): the rules of src/storage/store.ts. */
function markAfter(m: SimMark, d: Durable, b: PersistBatch, parallel: boolean): SimMark {
  let acked = m.acked;
  let last = lastIndexOf(d);
  if (b.snapshot) {
    const snapIndex = b.snapshot.metadata.index;
    if (acked <= last || snapIndex >= acked) acked = snapIndex;
    last = snapIndex;
  }
  if (b.entries.length === 0) return { acked, mayHold: Math.max(m.mayHold, acked) };
  const first = b.entries[0].index;
  if (first <= last && first <= acked) acked = first - 1;
  const newLast = b.entries[b.entries.length - 1].index;
  const synced = parallel ? Math.min(last, first - 1) : newLast;
  if (synced >= acked) acked = synced;
  return { acked, mayHold: newLast };
}

/** The hard state a batch with entries stores beside them: its commit held back to what was synced before. */
function storedHardState(d: Durable, b: PersistBatch, parallel: boolean): HardState | null {
  if (!b.hardState) return null;
  return parallel ? { ...b.hardState, commit: Math.min(b.hardState.commit, syncedBefore(d, b)) } : { ...b.hardState };
}

/** The idle store's confirmation: not a batch of the node's, so it has no callback. */
const CONFIRM = Symbol('confirm');
type Pending = PersistBatch | { [CONFIRM]: HardState };

/** The node refused to start: a record of its log fails its checksum. */
export class SimCorruptLogError extends Error {}

export class SimDisk implements LogStore {
  /** What survives any crash: every write up to the last synced one. */
  private durable: Durable = { hardState: { term: 0, vote: '', commit: 0 }, snapshot: emptySnapshot(), entries: [] };
  /** What the node has written: durable plus the completed unsynced writes. */
  private current: Durable = { hardState: { term: 0, vote: '', commit: 0 }, snapshot: emptySnapshot(), entries: [] };
  /** Completed writes without sync since the last synced one: a crash may lose them. */
  private volatile: Pending[] = [];
  private inFlight: Pending[] = [];
  private epoch = 0;
  private lastDoneAt = 0;
  /** Batches accepted so far: a pending confirmation is dropped when another arrives. */
  private persists = 0;
  /** The durable two-field mark. */
  private mark: SimMark = { acked: 0, mayHold: 0 };
  /** A record of the durable log is damaged: recover() refuses until repair(). */
  corrupted = false;
  /** Extra latency while a slow-disk fault is on. */
  slowMs = 0;
  writes = 0;

  /**
   * `lies`: a broken disk for the checker's own test — it reports a write as
   * synced at once but makes it durable only later, so a crash loses
   * acknowledged writes. The real simulator never sets it.
   */
  constructor(
    private readonly q: EventQueue,
    private readonly rng: Rng,
    private readonly lies = false,
    /** The store's `markBesideSegment` (off by default, as in the real store). */
    private readonly markBesideSegment = false,
  ) {}

  private parallel(b: PersistBatch): boolean {
    return this.markBesideSegment && besideable(b);
  }

  persist(batch: PersistBatch, onSynced: (err: Error | null) => void): void {
    const epoch = this.epoch;
    this.persists++;
    this.inFlight.push(batch);
    // FIFO like a real log device: a write never completes before an earlier one.
    const doneAt = Math.max(this.q.now + 1 + this.rng.int(4) + (batch.sync ? this.slowMs : 0), this.lastDoneAt);
    this.lastDoneAt = doneAt;
    if (this.lies) this.q.after(0, () => epoch === this.epoch && onSynced(null));
    this.q.at(doneAt + (this.lies ? 200 : 0), () => {
      if (epoch !== this.epoch) return;
      this.inFlight.shift();
      applyBatch(this.current, batch);
      if (batch.sync || this.lies) {
        // A synced write makes everything written before it durable too.
        for (const v of this.volatile) this.makeDurable(v);
        this.makeDurable(batch);
        this.volatile = [];
      } else {
        this.volatile.push(batch);
      }
      this.writes++;
      if (!this.lies) onSynced(null);
      if (this.inFlight.length === 0 && !this.lies) {
        // The real store waits CONFIRM_DELAY_MS of idleness; a batch in between makes it unnecessary.
        const persists = this.persists;
        this.q.after(CONFIRM_DELAY_MS, () => epoch === this.epoch && persists === this.persists && this.confirm(epoch));
      }
    });
  }

  /** The store is idle: "acknowledged through" catches up with the synced log, and the full commit index is stored. */
  private confirm(epoch: number): void {
    const c: Pending = { [CONFIRM]: { ...this.current.hardState } };
    this.inFlight.push(c);
    const doneAt = Math.max(this.q.now + 1, this.lastDoneAt);
    this.lastDoneAt = doneAt;
    this.q.at(doneAt, () => {
      if (epoch !== this.epoch) return;
      this.inFlight.shift();
      this.makeDurable(c);
    });
  }

  /** Power loss: a random prefix of the unsynced and in-flight writes made it, the rest did not. */
  crash(): void {
    const pending = this.volatile.concat(this.inFlight);
    const survive = this.lies ? 0 : this.rng.int(pending.length + 1);
    for (let i = 0; i < survive; i++) this.makeDurable(pending[i]);
    // The first write lost may have had its LevelDB half land without its entries.
    const lost = pending[survive];
    if (lost && !(CONFIRM in lost) && this.parallel(lost) && this.rng.int(2) === 0) this.landMarkOnly(lost);
    this.volatile = [];
    this.inFlight = [];
    this.current = {
      hardState: { ...this.durable.hardState },
      snapshot: this.durable.snapshot,
      entries: this.durable.entries.slice(),
    };
    this.epoch++;
    this.lastDoneAt = 0;
  }

  private makeDurable(p: Pending): void {
    const d = this.durable;
    if (CONFIRM in p) {
      // While recovering (the mark above the log) the debt stays, as in the real store.
      if (this.mark.acked <= lastIndexOf(d)) this.mark = { acked: lastIndexOf(d), mayHold: lastIndexOf(d) };
      if (p[CONFIRM].commit > d.hardState.commit && p[CONFIRM].commit <= lastIndexOf(d))
        d.hardState = { ...d.hardState, commit: p[CONFIRM].commit };
      return;
    }
    const hs = storedHardState(d, p, this.parallel(p));
    this.mark = markAfter(this.mark, d, p, this.parallel(p));
    applyBatch(d, p);
    if (hs) d.hardState = hs;
  }

  /** A crash between the two syncs of a batch: its mark and hard state landed, its entries did not. */
  private landMarkOnly(b: PersistBatch): void {
    const d = this.durable;
    const hs = storedHardState(d, b, this.parallel(b));
    this.mark = markAfter(this.mark, d, b, this.parallel(b));
    if (hs) d.hardState = hs;
  }

  /** While the node is down: the last `records` synced entries vanish; the high-water mark stays. */
  loseSyncedTail(records: number): void {
    const d = this.durable;
    d.entries = d.entries.slice(0, Math.max(0, d.entries.length - records));
    this.current = { hardState: { ...d.hardState }, snapshot: d.snapshot, entries: d.entries.slice() };
  }

  /**
   * Before the node's first start: the bootstrap act of a new cluster
   * (\`verdict cluster init\`) writes the founding hard state to its empty store.
   */
  found(): void {
    if (this.durable.entries.length > 0 || this.durable.snapshot.metadata.index > 0 || this.durable.hardState.term > 0)
      throw new Error('sim disk: only an empty store is founded');
    this.durable.hardState = foundingHardState();
    this.current = { hardState: { ...this.durable.hardState }, snapshot: this.durable.snapshot, entries: [] };
  }

  /**
   * While the node is down: its data directory is replaced by an empty one.
   * Everything is gone, the high-water mark too; the node starts rejoining
   * (src/raft/raft.ts, Raft.rejoining).
   */
  wipe(): void {
    this.durable = { hardState: { term: 0, vote: '', commit: 0 }, snapshot: emptySnapshot(), entries: [] };
    this.current = { hardState: { term: 0, vote: '', commit: 0 }, snapshot: emptySnapshot(), entries: [] };
    this.mark = { acked: 0, mayHold: 0 };
    this.corrupted = false;
  }

  /** While the node is down: a record of its log fails its checksum. */
  corrupt(): void {
    if (this.durable.entries.length > 0) this.corrupted = true;
  }

  /** The operator's `verdict node repair`: the log is moved aside; hard state, snapshot and mark stay. */
  repair(): void {
    this.durable.entries = [];
    this.current = { hardState: { ...this.durable.hardState }, snapshot: this.durable.snapshot, entries: [] };
    this.corrupted = false;
  }

  /** The term of entry `i` as written (synced or not), or null if not on disk (or compacted). */
  termAt(i: number): number | null {
    const d = this.current;
    const base = d.snapshot.metadata.index;
    if (i === base) return d.snapshot.metadata.term;
    if (i < base || i > base + d.entries.length) return null;
    return d.entries[i - base - 1].term;
  }

  /** What the node finds on start; a corrupted log refuses, like the real store. */
  recover(): RecoveredState {
    if (this.corrupted) throw new SimCorruptLogError('a raft log record fails its checksum');
    const d = this.durable;
    const last = lastIndexOf(d);
    const acknowledged = Math.max(this.mark.acked, d.hardState.commit);
    return {
      hardState: { ...d.hardState, commit: Math.min(d.hardState.commit, last) },
      snapshot: d.snapshot,
      entries: d.entries.slice(),
      recoverIndex: acknowledged > last ? acknowledged : 0,
    };
  }
}
