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

import { Rng } from '../../src/raft/rng.ts';
import { emptySnapshot, type Entry, type HardState, type Snapshot } from '../../src/raft/types.ts';
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

/** The high-water mark after batch `b` lands on `d`: the rules of src/storage/store.ts. */
function highWaterAfter(highWater: number, d: Durable, b: PersistBatch): number {
  let hw = highWater;
  let last = lastIndexOf(d);
  if (b.snapshot) {
    const snapIndex = b.snapshot.metadata.index;
    if (hw <= last || snapIndex >= hw) hw = snapIndex;
    last = snapIndex;
  }
  if (b.entries.length > 0) {
    const first = b.entries[0].index;
    if (first <= last && first <= hw) hw = first - 1;
    const newLast = b.entries[b.entries.length - 1].index;
    if (newLast >= hw) hw = newLast;
  }
  return hw;
}

/** The node refused to start: a record of its log fails its checksum. */
export class SimCorruptLogError extends Error {}

export class SimDisk implements LogStore {
  /** What survives any crash: every write up to the last synced one. */
  private durable: Durable = { hardState: { term: 0, vote: '', commit: 0 }, snapshot: emptySnapshot(), entries: [] };
  /** What the node has written: durable plus the completed unsynced writes. */
  private current: Durable = { hardState: { term: 0, vote: '', commit: 0 }, snapshot: emptySnapshot(), entries: [] };
  /** Completed writes without sync since the last synced one: a crash may lose them. */
  private volatile: PersistBatch[] = [];
  private inFlight: PersistBatch[] = [];
  private epoch = 0;
  private lastDoneAt = 0;
  /** The durable high-water mark: the last index synced and acknowledged. */
  private highWater = 0;
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
  ) {}

  persist(batch: PersistBatch, onSynced: (err: Error | null) => void): void {
    const epoch = this.epoch;
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
    });
  }

  /** Power loss: a random prefix of the unsynced and in-flight writes made it, the rest did not. */
  crash(): void {
    const pending = this.volatile.concat(this.inFlight);
    const survive = this.lies ? 0 : this.rng.int(pending.length + 1);
    for (let i = 0; i < survive; i++) this.makeDurable(pending[i]);
    this.volatile = [];
    this.inFlight = [];
    this.current = { hardState: { ...this.durable.hardState }, snapshot: this.durable.snapshot, entries: this.durable.entries.slice() };
    this.epoch++;
    this.lastDoneAt = 0;
  }

  private makeDurable(b: PersistBatch): void {
    this.highWater = highWaterAfter(this.highWater, this.durable, b);
    applyBatch(this.durable, b);
  }

  /** While the node is down: the last `records` synced entries vanish; the high-water mark stays. */
  loseSyncedTail(records: number): void {
    const d = this.durable;
    d.entries = d.entries.slice(0, Math.max(0, d.entries.length - records));
    this.current = { hardState: { ...d.hardState }, snapshot: d.snapshot, entries: d.entries.slice() };
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
    const acknowledged = Math.max(this.highWater, d.hardState.commit);
    return {
      hardState: { ...d.hardState, commit: Math.min(d.hardState.commit, last) },
      snapshot: d.snapshot,
      entries: d.entries.slice(),
      recoverIndex: acknowledged > last ? acknowledged : 0,
    };
  }
}
