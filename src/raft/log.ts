// The Raft log as the core sees it: the durable part (MemoryStorage, which
// mirrors what was synced) followed by the unstable part (entries and maybe a
// snapshot that the next Ready asks the driver to persist).
//
// Invariants: applied <= committed <= lastIndex();
//             unstable entries start at unstableOffset and are contiguous;
//             applied <= stableLastIndex() (nothing is applied before it is durable here).

import { MemoryStorage } from './memory-storage.ts';
import { assert } from '../util/assert.ts';
import { entryBytes, type Entry, type Snapshot } from './types.ts';

export class RaftLog {
  committed: number;
  applied: number;
  private unstableSnapshot: Snapshot | null = null;
  private unstable: Entry[] = [];
  private unstableOffset: number;

  constructor(
    readonly storage: MemoryStorage,
    private readonly applyBytesMax: number,
  ) {
    const first = storage.firstIndex();
    this.committed = first - 1;
    this.applied = first - 1;
    this.unstableOffset = storage.lastIndex() + 1;
  }

  firstIndex(): number {
    if (this.unstableSnapshot) return this.unstableSnapshot.metadata.index + 1;
    return this.storage.firstIndex();
  }

  lastIndex(): number {
    if (this.unstable.length > 0) return this.unstableOffset + this.unstable.length - 1;
    if (this.unstableSnapshot) return this.unstableSnapshot.metadata.index;
    return this.storage.lastIndex();
  }

  /** The last index that is durable on this node. */
  stableLastIndex(): number {
    return Math.min(this.storage.lastIndex(), this.unstableOffset - 1);
  }

  lastTerm(): number {
    const t = this.term(this.lastIndex());
    assert(t !== null, 'term of the last entry is unknown');
    return t;
  }

  /** The term of entry `i`, or null if compacted away or not in the log. */
  term(i: number): number | null {
    if (this.unstableSnapshot) {
      const m = this.unstableSnapshot.metadata;
      if (i === m.index) return m.term;
      if (i < m.index) return null;
    }
    if (i >= this.unstableOffset) {
      const k = i - this.unstableOffset;
      return k < this.unstable.length ? this.unstable[k].term : null;
    }
    if (this.unstableSnapshot) return null;
    return this.storage.term(i);
  }

  matchTerm(i: number, term: number): boolean {
    return this.term(i) === term;
  }

  /** Whether a candidate's log (last index and term) is at least as up to date as ours. */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /**
   * Appends a leader's entries after (index, logTerm) if our log matches
   * there. Returns the last index known to match the leader, or null.
   */
  maybeAppend(index: number, logTerm: number, committed: number, entries: Entry[]): number | null {
    if (!this.matchTerm(index, logTerm)) return null;
    const lastNew = index + entries.length;
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      assert(
        conflict > this.committed,
        `entry ${conflict} conflicts with committed entry (committed ${this.committed})`,
      );
      this.append(entries.slice(conflict - (index + 1)));
    }
    this.commitTo(Math.min(committed, lastNew));
    return lastNew;
  }

  /** The first index where `entries` disagree with our log (or extend it), or 0. */
  private findConflict(entries: Entry[]): number {
    for (const e of entries) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /**
   * The largest index <= `index` whose term is <= `term`, with that term:
   * the fast-backtracking hint. Logs cannot agree above it.
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    let i = index;
    for (;;) {
      const t = this.term(i);
      if (t === null) return { index: i, term: 0 };
      if (t <= term) return { index: i, term: t };
      i--;
    }
  }

  append(entries: Entry[]): number {
    if (entries.length === 0) return this.lastIndex();
    const after = entries[0].index;
    assert(after - 1 >= this.committed, `append at ${after} would overwrite committed ${this.committed}`);
    if (after === this.unstableOffset + this.unstable.length) {
      for (const e of entries) this.unstable.push(e);
    } else if (after <= this.unstableOffset) {
      // Replaces the whole unstable tail and the durable entries from `after` on.
      this.unstableOffset = after;
      this.unstable = entries.slice();
    } else {
      this.unstable = this.unstable.slice(0, after - this.unstableOffset).concat(entries);
    }
    return this.lastIndex();
  }

  /** Entries [lo, hi) with at most `bytesMax` (never fewer than one); null if compacted. */
  slice(lo: number, hi: number, bytesMax: number): Entry[] | null {
    if (lo < this.firstIndex()) return null;
    assert(hi <= this.lastIndex() + 1, `slice(${lo}, ${hi}) past last ${this.lastIndex()}`);
    if (lo >= hi) return [];
    const out: Entry[] = [];
    let size = 0;
    if (lo < this.unstableOffset) {
      const stable = this.storage.entries(lo, Math.min(hi, this.unstableOffset), bytesMax);
      for (const e of stable) {
        size += entryBytes(e);
        out.push(e);
      }
      if (stable.length < Math.min(hi, this.unstableOffset) - lo) return out;
    }
    for (let i = Math.max(lo, this.unstableOffset); i < hi; i++) {
      const e = this.unstable[i - this.unstableOffset];
      size += entryBytes(e);
      if (out.length > 0 && size > bytesMax) break;
      out.push(e);
    }
    return out;
  }

  unstableEntries(): Entry[] {
    return this.unstable.slice();
  }

  pendingSnapshot(): Snapshot | null {
    return this.unstableSnapshot;
  }

  snapshot(): Snapshot {
    return this.unstableSnapshot ?? this.storage.snapshot();
  }

  /** Committed, durable entries not yet handed out for applying. */
  nextCommittedEntries(): Entry[] {
    if (this.unstableSnapshot) return [];
    const lo = Math.max(this.applied + 1, this.firstIndex());
    const hi = Math.min(this.committed, this.stableLastIndex()) + 1;
    if (lo >= hi) return [];
    return this.slice(lo, hi, this.applyBytesMax) ?? [];
  }

  hasNextCommittedEntries(): boolean {
    if (this.unstableSnapshot) return false;
    return Math.min(this.committed, this.stableLastIndex()) > this.applied;
  }

  commitTo(index: number): void {
    if (index <= this.committed) return;
    assert(index <= this.lastIndex(), `commit ${index} is past the last index ${this.lastIndex()}`);
    this.committed = index;
  }

  /** Commits `index` only if its entry is of the current `term` (Raft §5.4.2). */
  maybeCommit(index: number, term: number): boolean {
    if (index > this.committed && this.term(index) === term) {
      this.commitTo(index);
      return true;
    }
    return false;
  }

  appliedTo(index: number): void {
    if (index === 0) return;
    assert(
      index <= this.committed && index >= this.applied,
      `applied ${index} outside [${this.applied}, ${this.committed}]`,
    );
    this.applied = index;
  }

  /** The driver synced unstable entries through (index, term). */
  stableTo(index: number, term: number): void {
    if (index < this.unstableOffset) return;
    const k = index - this.unstableOffset;
    // A truncation since the Ready was made means these entries are stale.
    if (k >= this.unstable.length || this.unstable[k].term !== term) return;
    this.unstable = this.unstable.slice(k + 1);
    this.unstableOffset = index + 1;
  }

  stableSnapTo(index: number): void {
    if (this.unstableSnapshot && this.unstableSnapshot.metadata.index === index) {
      this.unstableSnapshot = null;
    }
  }

  /** Replaces the whole log with a leader's snapshot. */
  restore(snap: Snapshot): void {
    this.committed = snap.metadata.index;
    this.unstableSnapshot = snap;
    this.unstable = [];
    this.unstableOffset = snap.metadata.index + 1;
  }
}
