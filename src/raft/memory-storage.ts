// The core's view of the log that is already durable. The driver appends to
// it only after the entries were synced, so anything the core reads from here
// survives a crash. Everything after the last snapshot stays in memory: a
// commit coordinator compacts often, so the tail is short.

import { assert } from '../util/assert.ts';
import {
  emptyConfState,
  type ConfState,
  type Entry,
  type HardState,
  type Snapshot,
  EntryType,
  EMPTY,
  entryBytes,
} from './types.ts';

export class MemoryStorage {
  hardState: HardState = { term: 0, vote: '', commit: 0 };
  private snap: Snapshot = { metadata: { index: 0, term: 0, confState: emptyConfState() }, data: EMPTY };
  /** ents[0] is a placeholder standing for the snapshot's last entry. */
  private ents: Entry[] = [{ term: 0, index: 0, type: EntryType.Normal, data: EMPTY }];

  static from(hardState: HardState, snapshot: Snapshot, entries: Entry[]): MemoryStorage {
    const s = new MemoryStorage();
    s.applySnapshot(snapshot);
    s.append(entries);
    s.hardState = { ...hardState };
    return s;
  }

  private offset(): number {
    return this.ents[0].index;
  }

  firstIndex(): number {
    return this.offset() + 1;
  }

  lastIndex(): number {
    return this.offset() + this.ents.length - 1;
  }

  /** The term of entry `i`, or null when it is compacted or not yet written. */
  term(i: number): number | null {
    const off = this.offset();
    if (i < off || i > this.lastIndex()) return null;
    return this.ents[i - off].term;
  }

  /** Entries [lo, hi), at most `bytesMax` of them but never fewer than one. */
  entries(lo: number, hi: number, bytesMax: number): Entry[] {
    assert(
      lo >= this.firstIndex() && hi <= this.lastIndex() + 1 && lo <= hi,
      `storage.entries(${lo}, ${hi}) outside [${this.firstIndex()}, ${this.lastIndex() + 1}]`,
    );
    const off = this.offset();
    const out: Entry[] = [];
    let size = 0;
    for (let i = lo; i < hi; i++) {
      const e = this.ents[i - off];
      size += entryBytes(e);
      if (out.length > 0 && size > bytesMax) break;
      out.push(e);
    }
    return out;
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  confState(): ConfState {
    return this.snap.metadata.confState;
  }

  /** Durable entries: replaces any suffix that conflicts with them. */
  append(entries: Entry[]): void {
    if (entries.length === 0) return;
    const first = this.firstIndex();
    let es = entries;
    // Entries already covered by the snapshot are dropped.
    if (es[es.length - 1].index < first) return;
    if (es[0].index < first) es = es.slice(first - es[0].index);
    const off = es[0].index - this.offset();
    assert(
      off >= 1 && off <= this.ents.length,
      `storage.append: gap (last ${this.lastIndex()}, appending ${es[0].index})`,
    );
    this.ents.length = off;
    for (const e of es) this.ents.push(e);
  }

  applySnapshot(snap: Snapshot): void {
    assert(
      snap.metadata.index >= this.snap.metadata.index || this.snap.metadata.index === 0,
      'storage: snapshot older than the current one',
    );
    this.snap = snap;
    this.ents = [{ term: snap.metadata.term, index: snap.metadata.index, type: EntryType.Normal, data: EMPTY }];
  }

  /** A local snapshot of the state machine at `index` (already applied). */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Snapshot {
    assert(
      index > this.snap.metadata.index && index <= this.lastIndex(),
      `storage: snapshot at ${index} outside (${this.snap.metadata.index}, ${this.lastIndex()}]`,
    );
    const term = this.term(index);
    assert(term !== null, 'storage: snapshot term unknown');
    this.snap = { metadata: { index, term, confState }, data };
    return this.snap;
  }

  /** Drops entries before `index`; entry `index` becomes the placeholder. */
  compact(index: number): void {
    const off = this.offset();
    if (index <= off) return;
    assert(index <= this.lastIndex(), `storage: compact ${index} beyond last ${this.lastIndex()}`);
    const keep = this.ents[index - off];
    this.ents = [
      { term: keep.term, index: keep.index, type: EntryType.Normal, data: EMPTY },
      ...this.ents.slice(index - off + 1),
    ];
  }
}
