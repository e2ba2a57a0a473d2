// The oldest entry of a Map, in insertion order, in constant time.
//
// Many tables here are a Map bounded by dropping its oldest entries: decided
// ids, tombstones, ended sagas. The obvious way, a fresh `map.keys()` each
// time, is slow in V8 once entries have been deleted: a deleted entry stays
// in the table as a hole until the table is rebuilt, so a fresh iterator
// walks every hole at the front before it finds a live entry. A table of
// 10,000 that drops one entry per insert spends about 5 µs per insert there
// (most of a participant's fold at load).
//
// A Map iterator is live: it sees entries added after it was made and skips
// entries deleted behind its back, and V8 moves it along when the table is
// rebuilt. So one iterator kept for the Map's lifetime, whose every yielded
// entry is deleted (or held as the head, below), always stands just before
// the oldest live entry, and finding it costs no more than the holes since
// the last call.
//
// Invariant: every live entry of the map is ahead of the iterator, or is the
// head. Whoever deletes or re-inserts keys directly keeps it for free: a
// re-inserted key goes to the end, ahead of the iterator.

export class OldestFirst<K, V> {
  private it: Iterator<[K, V]>;
  /**
   * An entry taken from the iterator by peek and not deleted: the oldest, while the map still maps its key to its
   * value.
   */
  private head: [K, V] | null = null;

  constructor(private readonly map: Map<K, V>) {
    this.it = map.entries();
  }

  /**
   * The oldest entry, or null when the map is empty. Only for maps whose
   * keys are deleted before they are set again, each time to a new object: a
   * re-inserted key is told from the peeked entry by its value's identity.
   */
  peek(): readonly [K, V] | null {
    if (!this.headIsLive()) this.head = this.take();
    return this.head;
  }

  /** Deletes the oldest entry and returns its key; undefined when the map is empty. */
  shift(): K | undefined {
    const e = this.headIsLive() ? this.head : this.take();
    this.head = null;
    if (e === null) return undefined;
    this.map.delete(e[0]);
    return e[0];
  }

  /** Shifts until the map holds at most `max` entries, handing each key removed to `dropped`, oldest first. */
  trimTo(max: number, dropped?: (key: K) => void): void {
    while (this.map.size > max) {
      const k = this.shift();
      if (k === undefined) return;
      dropped?.(k);
    }
  }

  /** The peeked entry is still in the map, under the same value (not deleted, not re-inserted). */
  private headIsLive(): boolean {
    return this.head !== null && this.map.get(this.head[0]) === this.head[1];
  }

  private take(): [K, V] | null {
    if (this.map.size === 0) return null;
    let r = this.it.next();
    // Not reachable while the invariant holds (a live entry is ahead); a new iterator from the front is always right,
    // only slower.
    if (r.done === true) {
      this.it = this.map.entries();
      r = this.it.next();
    }
    return r.done === true ? null : r.value;
  }
}
