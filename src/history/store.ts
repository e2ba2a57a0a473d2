// The node's transaction history on disk: a LevelDB of its own in
// `<dataDir>/history/`, apart from the Raft log and its snapshots, so the
// commit path never waits for it. Changes (./record.ts) are applied to
// records in memory and written in batches, one LevelDB batch at most every
// FLUSH_MS, off the commit path. A record is written once its transaction
// is settled (the Forget: every participant acknowledged), so the decision,
// the leader's sightings and the ACKs cost one write, not one each; a record
// not settled within HOLD_TURNS flushes, or past HELD_MAX held records, is
// written anyway (and again when it changes). Each batch also writes the
// highest log index below which every change is on disk: the lowest log
// index a held record has not written yet, less one. A crash loses at most
// what was not written, and that comes back on start: the node re-applies
// its retained log after its snapshot, and the changes of entries above
// that index are applied again (a change seen twice leaves a record as
// once; a decision at or below the highest index ever written is merged
// into the record on disk, never written over it). What a node applied only
// by installing a snapshot never passed through here: the store records
// that range of the log as lacking and says so in every answer.
//
// Keys: ./keys.ts. A saga's record is under the id `saga/<id>` (./record.ts),
// which no transaction id can be.
//
// Bounded by age and by bytes (retentionMs, bytesMax): the oldest records go
// first. `bytes` counts the records' keys and values as written; LevelDB's
// files hold them compressed, plus compaction's slack.

import { mkdir } from 'node:fs/promises';
import { Level } from 'level';
import { decodeRecord, encodeRecord, indexAtMs } from './codec.ts';
import {
  addLine,
  type Batch,
  bucketOf,
  costOf,
  ENTRY_SEP,
  entriesOf,
  entryOf,
  indexIds,
  type IndexLines,
  indexPuts,
  M_APPLIED,
  M_BYTES,
  M_LACKS,
  M_SEQ,
  M_WRITTEN,
  pPrefix,
  rKey,
  SEP,
  seq12,
  tPrefix,
  upgradeIndexKeys,
} from './keys.ts';
import {
  addSighting,
  applyChange,
  emptyRecord,
  HISTORY_LIMIT_DEFAULT,
  HISTORY_LIMIT_MAX,
  type HistoryAnswer,
  type HistoryChange,
  type HistoryQuery,
  type HistoryRecord,
  type LogRange,
} from './record.ts';
import { kindOf, startsRecord, withSightingRows } from './record.ts';

export {
  HISTORY_BYTES_MAX_DEFAULT,
  HISTORY_LIMIT_MAX,
  HISTORY_RETENTION_MS_DEFAULT,
  type HistoryAnswer,
  type HistoryQuery,
  type LogRange,
} from './record.ts';
export { indexAtMs } from './codec.ts';

export interface HistoryOptions {
  /** Records older than this (by their decision's time) are deleted. */
  retentionMs: number;
  /** The records' bytes kept at most; beyond, the oldest are deleted. */
  bytesMax: number;
  nowMs: () => number;
  /**
   * Whether the decision table knows `txnId` as decided (a row for a decided transaction not in memory goes to its
   * record on disk).
   */
  decided: (txnId: string) => boolean;
  /** A failed write or read: the history is not the commit path, so the node goes on and says so. */
  onError: (err: Error, what: string) => void;
  /** The write turn (FLUSH_MS by default). */
  flushMs?: number;
  /** Turns a changed record waits for its transaction to settle (HOLD_TURNS by default). */
  holdTurns?: number;
  /** Changed records waiting at most (HELD_MAX by default). */
  heldMax?: number;
}

/** Index lines a list query reads at most (a filter that matches little must not walk a whole week). */
const SCAN_KEYS_MAX = 100_000;
const FLUSH_MS = 200;
/** Settled records (their Forget applied) that start a write at once, before the next turn. */
const FLUSH_RECORDS = 2_000;
/** Write turns (of FLUSH_MS) a changed record waits for its transaction to settle before it is written anyway. */
const HOLD_TURNS = 10;
/**
 * Changed records waiting to be written at most: past it, the oldest are written at the next turn, which starts at
 * once.
 */
const HELD_MAX = 10_000;
/** Records not settled kept in memory after they are written (they may change again: a late ACK, the Forget). */
const HOT_MAX = 2_000;
/** Undecided transactions whose sightings (PREPARE, votes) wait in memory for their decision. */
const PENDING_MAX = 10_000;
const PRUNE_EVERY_MS = 60_000;
const LACKS_MAX = 100;

/** What is on disk of a record: where its index keys are and what it costs. */
interface Stored {
  atMs: number;
  participants: string[];
  cost: number;
}

/** A record changed since it was last written. */
interface Held {
  /** The write turn of its first change since. */
  turn: number;
  /** The lowest log index among those changes; 0 when all were this node's own sightings (not in the log). */
  minIndex: number;
}

/** The lower of two log indexes where 0 is none. */
function minIndexOf(a: number, b: number): number {
  return a === 0 ? b : b === 0 ? a : Math.min(a, b);
}

export class HistoryStore {
  /**
   * Records in memory: changed and not written yet, or written recently; the oldest written ones leave past HOT_MAX.
   */
  private readonly hot = new Map<string, HistoryRecord>();
  private readonly stored = new Map<string, Stored>();
  /** Records in `hot` changed since written, oldest change first. */
  private readonly dirty = new Map<string, Held>();
  /** Changes to records not in memory, applied once read from disk. */
  private deferred = new Map<string, HistoryChange[]>();
  /** The lowest log index among the deferred changes; 0 when all were sightings. */
  private deferredMinIndex = 0;
  /**
   * What this node saw of transactions not decided yet, folded into a record each (./record.ts addSighting) that their
   * decision joins.
   */
  private readonly pending = new Map<string, HistoryRecord>();
  /** The highest log index applied here (in memory). */
  private applied: number;
  /** Every change of the log up to this index is on disk (invariant: durable <= applied). */
  private durable: number;
  /** No record on disk holds a change above this index: a decision at or below it may have a record already. */
  private written: number;
  private bytes: number;
  private lacks: LogRange[];
  private lacksChanged = false;
  /** Write turns started: a held record's age. */
  private turn = 0;
  /** Records settled since the last write started. */
  private settled = 0;
  private flushing: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  /** Whether the queued write writes every changed record (a flush), not only those due. */
  private queuedAll = false;
  private timer: NodeJS.Timeout | null = null;
  private pruneTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly stats = { batches: 0, records: 0, ops: 0, bytes: 0 };
  /** The number of the last index key written (keys of one bucket are told apart by it). */
  private seq = 0;

  private constructor(
    private readonly db: Level<string, string>,
    private readonly o: HistoryOptions,
    meta: { applied: number; written: number; bytes: number; lacks: LogRange[] },
  ) {
    this.applied = meta.applied;
    this.durable = meta.applied;
    this.written = Math.max(meta.applied, meta.written);
    this.bytes = meta.bytes;
    this.lacks = meta.lacks;
  }

  /** Opens (or creates) the store in `dir`. */
  static async open(dir: string, o: HistoryOptions): Promise<HistoryStore> {
    await mkdir(dir, { recursive: true });
    const db = new Level<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open({ createIfMissing: true });
    const [applied, written, bytes, lacks, seq] = await db.getMany([M_APPLIED, M_WRITTEN, M_BYTES, M_LACKS, M_SEQ]);
    const s = new HistoryStore(db, o, {
      applied: Number(applied ?? 0) || 0,
      written: Number(written ?? 0) || 0,
      bytes: Number(bytes ?? 0) || 0,
      lacks: parseLacks(lacks),
    });
    s.seq = Number(seq ?? 0) || 0;
    s.seq = await upgradeIndexKeys(db, s.seq);
    s.pruneTimer = setInterval(() => void s.prune(), PRUNE_EVERY_MS);
    s.pruneTimer.unref();
    return s;
  }

  /** Every change of the log up to this index is on disk: an entry at or below it is not applied again. */
  get durableIndex(): number {
    return this.durable;
  }

  /**
   * The changes of the applied entry at `index` (0: what this node saw
   * itself, not in the log). An entry already on disk is skipped.
   */
  apply(index: number, changes: readonly HistoryChange[]): void {
    if (this.closed) return;
    if (index > 0) {
      if (index <= this.durable) return;
      if (index > this.applied) this.applied = index;
    }
    for (const c of changes) this.change(c, index);
    this.due();
  }

  /**
   * What this node saw itself of `txnId` (a row of the leader's timeline,
   * not in the log): folded into its record in memory as it arrives
   * (./record.ts addSighting), with no change value made for it — the
   * leader sees about ten per transaction.
   */
  sighting(txnId: string, atMs: number, kind: string, participantId: string, detail: string): void {
    if (this.closed) return;
    this.seen(txnId, atMs, kind, participantId, detail);
    this.due();
  }

  /** Starts a write now if enough waits, else at the next turn. */
  private due(): void {
    if (
      this.settled >= FLUSH_RECORDS ||
      this.dirty.size > (this.o.heldMax ?? HELD_MAX) ||
      this.deferred.size >= FLUSH_RECORDS
    )
      void this.write(false);
    else this.arm();
  }

  private seen(txnId: string, atMs: number, kind: string, participantId: string, detail: string): void {
    const r = this.hot.get(txnId);
    if (r !== undefined) {
      addSighting(r, atMs, kind, participantId, detail);
      this.touch(txnId, 0);
      return;
    }
    if (!this.o.decided(txnId)) {
      // Not decided yet (PREPARE, votes): kept until the decision, which joins them.
      let p = this.pending.get(txnId);
      if (p === undefined) {
        p = emptyRecord(txnId);
        this.pending.set(txnId, p);
        if (this.pending.size > PENDING_MAX) this.pending.delete(this.pending.keys().next().value as string);
      }
      addSighting(p, atMs, kind, participantId, detail);
      return;
    }
    this.defer(txnId, [{ t: 'row', txnId, atMs, kind, participantId, detail }]);
  }

  /**
   * The state machine was restored from a snapshot at `index`: the entries
   * from the last one applied here up to it never pass through apply(), so
   * the range is recorded as lacking (unless it is already on disk).
   * `decisions`: the snapshot's live decisions, kept as records so what the
   * snapshot still holds is served.
   */
  restored(index: number, decisions: readonly HistoryChange[]): void {
    if (this.closed || index <= this.applied) return;
    const gap = { firstIndex: this.applied + 1, lastIndex: index };
    this.lacks = [...this.lacks, gap].slice(-LACKS_MAX);
    this.applied = index;
    for (const c of decisions) this.change(c, index);
    this.lacksChanged = true;
    void this.flush();
  }

  /** Marks `id` changed by a change of log entry `index` (0: a sighting). */
  private touch(id: string, index: number): void {
    const h = this.dirty.get(id);
    if (h === undefined) this.dirty.set(id, { turn: this.turn, minIndex: index });
    else h.minIndex = minIndexOf(h.minIndex, index);
  }

  private change(c: HistoryChange, index: number): void {
    const r = this.hot.get(c.txnId);
    if (r !== undefined) {
      const wasSettled = r.forgottenIndex > 0;
      applyChange(r, c);
      this.touch(c.txnId, index);
      if (!wasSettled && r.forgottenIndex > 0) this.settled++;
      return;
    }
    if (c.t === 'decide' && c.first) {
      const seen = this.pending.get(c.txnId);
      this.pending.delete(c.txnId);
      if (c.index <= this.written) {
        // Replayed after a restart (or a snapshot's): a record may be on disk already; the change is merged into it.
        this.defer(c.txnId, seen === undefined ? [c] : [c, ...rowChanges(seen)], index);
        return;
      }
      // A new decision: what this node saw before it (PREPARE, votes) joins it.
      this.hot.set(c.txnId, applyChange(seen ?? null, c));
      this.touch(c.txnId, index);
      return;
    }
    if (c.t === 'row') {
      this.seen(c.txnId, c.atMs, c.kind, c.participantId, c.detail);
      return;
    }
    this.defer(c.txnId, [c], index);
  }

  private defer(id: string, cs: HistoryChange[], index = 0): void {
    this.deferredMinIndex = minIndexOf(this.deferredMinIndex, index);
    const list = this.deferred.get(id);
    if (list === undefined) this.deferred.set(id, cs);
    else list.push(...cs);
  }

  /** Starts the next write turn in FLUSH_MS, if anything waits to be written. */
  private arm(): void {
    if (this.timer !== null || this.closed || (this.dirty.size === 0 && this.deferred.size === 0)) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.write(false);
    }, this.o.flushMs ?? FLUSH_MS);
  }

  /** Writes every changed record, settled or not; resolves once it is on disk (or failed, said through onError). */
  flush(): Promise<void> {
    return this.write(true);
  }

  private write(all: boolean): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    // One write at a time, and at most one waiting behind it: it takes whatever changed until it starts.
    if (this.queued !== null) {
      this.queuedAll ||= all;
      return this.queued;
    }
    const prev = this.flushing ?? Promise.resolve();
    const next = prev.then(() => {
      const writeAll = this.queuedAll;
      this.queued = null;
      this.queuedAll = false;
      return this.writeOnce(writeAll);
    });
    this.queued = next;
    this.queuedAll = all;
    this.flushing = next;
    void next.finally(() => {
      if (this.flushing === next) this.flushing = null;
      this.arm();
    });
    return next;
  }

  private async writeOnce(all: boolean): Promise<void> {
    this.turn++;
    this.settled = 0;
    if (this.dirty.size === 0 && this.deferred.size === 0 && this.durable === this.applied && !this.lacksChanged)
      return;
    const deferred = this.deferred;
    const deferredMinIndex = this.deferredMinIndex;
    const appliedIndex = this.applied;
    const lacksChanged = this.lacksChanged;
    this.deferred = new Map();
    this.deferredMinIndex = 0;
    this.lacksChanged = false;
    let deferredTaken = false;
    const taken = new Map<string, Held>();
    const undo = new Map<string, Stored | undefined>();
    try {
      // Records changed while not in memory: read, changed, written (a record that is gone — pruned, or lacking — takes
      // only a decision or an act).
      const ids = [...deferred.keys()].filter((id) => !this.hot.has(id));
      const values = ids.length > 0 ? await this.db.getMany(ids.map(rKey)) : [];
      deferredTaken = true;
      const now = new Set<string>();
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i];
        const cs = deferred.get(id) ?? [];
        // Changed in memory while it was read (a decision applied meanwhile): that record takes the changes.
        const meanwhile = this.hot.get(id);
        if (meanwhile !== undefined) {
          for (const c of cs) applyChange(meanwhile, c);
          this.touch(id, deferredMinIndex);
          now.add(id);
          continue;
        }
        const v = values[i];
        const rec = v === undefined ? null : this.decode(id, v);
        if (rec !== null) {
          const ids = indexIds(rec);
          this.stored.set(id, { atMs: indexAtMs(rec), participants: ids, cost: costOf(rec, v as string, ids) });
        }
        let r = rec;
        for (const c of cs) if (r !== null || startsRecord(c)) r = applyChange(r, c);
        if (r === null) continue;
        this.hot.set(id, r);
        this.touch(id, deferredMinIndex);
        now.add(id);
      }
      const read = new Set(ids);
      for (const [id, cs] of deferred) {
        if (read.has(id)) continue;
        const r = this.hot.get(id);
        if (r === undefined) continue;
        for (const c of cs) applyChange(r, c);
        this.touch(id, deferredMinIndex);
        now.add(id);
      }
      // Due: settled, held long enough, the oldest past the bound, read back just now, or all of them (a flush).
      const ops: Batch[] = [];
      const index: IndexLines = new Map();
      let floor = appliedIndex;
      let overflow = this.dirty.size - (this.o.heldMax ?? HELD_MAX);
      const holdTurns = this.o.holdTurns ?? HOLD_TURNS;
      for (const [id, h] of this.dirty) {
        const r = this.hot.get(id);
        if (r === undefined) {
          this.dirty.delete(id);
          continue;
        }
        const due =
          all ||
          overflow-- > 0 ||
          now.has(id) ||
          r.forgottenIndex > 0 ||
          r.outcome === '' ||
          this.turn - h.turn >= holdTurns;
        if (!due) {
          // Held: the log from its first unwritten change on is not on disk until it is.
          if (h.minIndex > 0 && h.minIndex - 1 < floor) floor = h.minIndex - 1;
          continue;
        }
        this.dirty.delete(id);
        taken.set(id, h);
        undo.set(id, this.stored.get(id));
        this.putOps(r, ops, index);
      }
      this.seq = indexPuts(index, this.seq, ops);
      // The records just encoded hold every change applied so far, and none later.
      const writtenTo = Math.max(this.written, this.applied);
      ops.push(
        { type: 'put', key: M_APPLIED, value: String(Math.max(this.durable, floor)) },
        { type: 'put', key: M_WRITTEN, value: String(writtenTo) },
        { type: 'put', key: M_BYTES, value: String(this.bytes) },
        { type: 'put', key: M_SEQ, value: String(this.seq) },
      );
      if (lacksChanged) ops.push({ type: 'put', key: M_LACKS, value: JSON.stringify(this.lacks) });
      await this.db.batch(ops);
      this.count(ops, taken.size);
      this.durable = Math.max(this.durable, floor);
      this.written = writtenTo;
      // A settled record rarely changes again (a late operator's act reads it back from disk): it leaves memory at
      // once.
      for (const id of taken.keys()) {
        if (this.dirty.has(id) || !((this.hot.get(id)?.forgottenIndex ?? 0) > 0)) continue;
        this.hot.delete(id);
        this.stored.delete(id);
      }
      this.trimHot();
      if (this.bytes > this.o.bytesMax) await this.prune();
    } catch (err) {
      // Written again with the next batch: the records as changed, their index keys and byte counts as they were on
      // disk.
      for (const [id, prev] of undo) {
        this.bytes += (prev?.cost ?? 0) - (this.stored.get(id)?.cost ?? 0);
        if (prev === undefined) this.stored.delete(id);
        else this.stored.set(id, prev);
      }
      for (const [id, h] of taken) this.touch(id, h.minIndex);
      if (!deferredTaken)
        for (const [id, cs] of deferred) {
          this.defer(id, cs);
          this.deferredMinIndex = minIndexOf(this.deferredMinIndex, deferredMinIndex);
        }
      this.lacksChanged ||= lacksChanged;
      this.o.onError(err as Error, 'write');
    }
  }

  /**
   * What this store wrote since it opened: batches, records, LevelDB ops, and their keys' and values' characters (for
   * the bench).
   */
  writeStats(): { batches: number; records: number; ops: number; bytes: number } {
    return { ...this.stats };
  }

  private count(ops: readonly Batch[], records: number): void {
    this.stats.batches++;
    this.stats.records += records;
    this.stats.ops += ops.length;
    for (const op of ops) this.stats.bytes += op.key.length + (op.type === 'put' ? op.value.length : 0);
  }

  /**
   * The op that writes `r`, and its index entries (the first time it is written at its time, or for a participant new
   * to it), with the byte count kept.
   */
  private putOps(r: HistoryRecord, ops: Batch[], index: IndexLines): void {
    const value = encodeRecord(r);
    const at = indexAtMs(r);
    const before = this.stored.get(r.txnId);
    ops.push({ type: 'put', key: rKey(r.txnId), value });
    const known = before !== undefined && before.atMs === at ? before.participants : null;
    const entry = entryOf(at, r.txnId);
    const bucket = bucketOf(at);
    const ids = indexIds(r);
    if (known === null) addLine(index, bucket, '', entry);
    for (const id of ids) if (known === null || !known.includes(id)) addLine(index, bucket, id, entry);
    const cost = costOf(r, value, ids);
    this.bytes += cost - (before?.cost ?? 0);
    this.stored.set(r.txnId, { atMs: at, participants: ids, cost });
  }

  private trimHot(): void {
    for (const id of this.hot.keys()) {
      if (this.hot.size <= HOT_MAX) break;
      if (this.dirty.has(id)) continue;
      this.hot.delete(id);
      this.stored.delete(id);
    }
  }

  private decode(txnId: string, value: string): HistoryRecord | null {
    const r = decodeRecord(txnId, value);
    if (typeof r !== 'string') return r;
    this.o.onError(new Error(`the history record of ${txnId} on disk is malformed (${r}); it is skipped`), 'read');
    return null;
  }

  /** Deletes the oldest records while any is older than the retention or the bytes exceed their bound. */
  async prune(): Promise<number> {
    if (this.closed) return 0;
    let deleted = 0;
    try {
      for (;;) {
        const cutoff = this.o.nowMs() - this.o.retentionMs;
        let bucket = -1;
        for await (const k of this.db.keys({ gte: `T${SEP}`, lt: `T${SEP}\uffff`, limit: 1 }))
          bucket = Number(k.slice(2, 18));
        if (bucket < 0 || (bucket >= cutoff && this.bytes <= this.o.bytesMax)) break;
        const n = await this.pruneBucket(bucket, cutoff);
        if (n === 0) break;
        deleted += n;
      }
    } catch (err) {
      this.o.onError(err as Error, 'prune');
    }
    return deleted;
  }

  /**
   * Deletes the records of the oldest bucket past the retention, then the oldest while over the byte bound; rewrites
   * its index keys with what is kept.
   */
  private async pruneBucket(bucket: number, cutoffAtMs: number): Promise<number> {
    const tKeys: string[] = [];
    const listed = new Set<string>();
    for await (const [k, v] of this.db.iterator({ gte: tPrefix(bucket), lt: `${tPrefix(bucket)}\uffff` })) {
      tKeys.push(k);
      for (const e of entriesOf(v)) listed.add(e.id);
    }
    const ids = [...listed];
    const values = ids.length > 0 ? await this.db.getMany(ids.map(rKey)) : [];
    const live: { id: string; atMs: number; participants: string[]; cost: number }[] = [];
    for (let i = 0; i < ids.length; i++) {
      const v = values[i];
      const rec = v === undefined ? null : this.decode(ids[i], v);
      // Gone, or moved to another bucket (listed there): a stale line.
      if (rec === null || bucketOf(indexAtMs(rec)) !== bucket) continue;
      const pids = indexIds(rec);
      live.push({ id: ids[i], atMs: indexAtMs(rec), participants: pids, cost: costOf(rec, v as string, pids) });
    }
    live.sort((a, b) => a.atMs - b.atMs || (a.id < b.id ? -1 : 1));
    const ops: Batch[] = [];
    const keep: typeof live = [];
    let freed = 0;
    for (const x of live) {
      // Past the age bound, or over the byte bound: the oldest goes.
      if (x.atMs < cutoffAtMs || this.bytes - freed > this.o.bytesMax) {
        ops.push({ type: 'del', key: rKey(x.id) });
        freed += x.cost;
        this.hot.delete(x.id);
        this.stored.delete(x.id);
        this.dirty.delete(x.id);
      } else keep.push(x);
    }
    const deleted = live.length - keep.length;
    // Only stale lines left: the bucket's keys go too.
    if (deleted === 0 && live.length > 0) return 0;
    for (const k of tKeys) ops.push({ type: 'del', key: k });
    const participants = new Set(live.flatMap((x) => x.participants));
    for (const p of participants)
      for await (const k of this.db.keys({ gte: pPrefix(p, bucket), lt: `${pPrefix(p, bucket)}\uffff` }))
        ops.push({ type: 'del', key: k });
    // What is kept, under one key each (number 0: a write turn's keys have numbers from 1).
    if (keep.length > 0) {
      ops.push({
        type: 'put',
        key: `${tPrefix(bucket)}${seq12(0)}`,
        value: keep.map((x) => entryOf(x.atMs, x.id)).join(ENTRY_SEP),
      });
      for (const p of participants) {
        const lines = keep.filter((x) => x.participants.includes(p)).map((x) => entryOf(x.atMs, x.id));
        if (lines.length > 0)
          ops.push({ type: 'put', key: `${pPrefix(p, bucket)}${seq12(0)}`, value: lines.join(ENTRY_SEP) });
      }
    }
    this.bytes = Math.max(0, this.bytes - freed);
    ops.push({ type: 'put', key: M_BYTES, value: String(this.bytes) });
    await this.db.batch(ops);
    // A bucket of stale lines only counts as one deletion, so pruning goes on to the next.
    return Math.max(deleted, 1);
  }

  /**
   * One record, or a page of them newest first, with what this store lacks. Writes what changed first, so a read sees
   * every applied entry.
   */
  async query(q: HistoryQuery): Promise<HistoryAnswer> {
    await this.flush();
    const base = {
      lacks: [...this.lacks],
      appliedIndex: this.durable,
      bytes: this.bytes,
      oldestAtMs: await this.oldestAtMs(),
    };
    if (q.txnId !== undefined && q.txnId !== '') {
      const v = await this.db.get(rKey(q.txnId));
      const rec = v === undefined ? null : this.decode(q.txnId, v);
      return { ...base, records: rec ? [rec] : [], truncated: false };
    }
    const limit = Math.min(Math.max(1, q.limit ?? HISTORY_LIMIT_DEFAULT), HISTORY_LIMIT_MAX);
    const sinceAtMs = q.sinceAtMs ?? 0;
    const untilAtMs = Math.min(q.untilAtMs || Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    const pid = q.participantId;
    const prefixOf = (bucket: number): string => (pid ? pPrefix(pid, bucket) : tPrefix(bucket));
    const bucketAt = pid ? `P${SEP}${pid}${SEP}`.length : 2;
    const records: HistoryRecord[] = [];
    let truncated = false;
    let scanned = 0;
    const seen = new Set<string>();
    let lines: { atMs: number; id: string }[] = [];
    // One bucket's lines, newest first: the records that are still at that time and match.
    const drain = async (): Promise<boolean> => {
      lines.sort((a, b) => b.atMs - a.atMs || (a.id < b.id ? 1 : -1));
      for (let i = 0; i < lines.length; i += 256) {
        const chunk = lines.slice(i, i + 256);
        const values = await this.db.getMany(chunk.map((e) => rKey(e.id)));
        for (let j = 0; j < chunk.length; j++) {
          const v = values[j];
          const rec = v === undefined ? null : this.decode(chunk[j].id, v);
          if (
            rec === null ||
            indexAtMs(rec) !== chunk[j].atMs ||
            (q.outcome && rec.outcome !== q.outcome) ||
            (q.kind && kindOf(rec) !== q.kind)
          )
            continue;
          if (records.length >= limit) {
            truncated = true;
            return true;
          }
          records.push(rec);
        }
      }
      lines = [];
      return false;
    };
    let current = -1;
    let done = false;
    for await (const [k, v] of this.db.iterator({
      gte: prefixOf(bucketOf(sinceAtMs)),
      lt: `${prefixOf(bucketOf(untilAtMs - 1))}\uffff`,
      reverse: true,
    })) {
      const bucket = Number(k.slice(bucketAt, bucketAt + 16));
      if (bucket !== current) {
        if (await drain()) {
          done = true;
          break;
        }
        current = bucket;
      }
      for (const e of entriesOf(v)) {
        if (e.atMs < sinceAtMs || e.atMs >= untilAtMs || seen.has(e.id)) continue;
        seen.add(e.id);
        lines.push(e);
      }
      scanned++;
      if (seen.size >= SCAN_KEYS_MAX || scanned >= SCAN_KEYS_MAX) {
        truncated = true;
        break;
      }
    }
    if (!done) await drain();
    return { ...base, records, truncated };
  }

  private async oldestAtMs(): Promise<number> {
    for await (const v of this.db.values({ gte: `T${SEP}`, lt: `T${SEP}\uffff`, limit: 1 }))
      return entriesOf(v).reduce((m, e) => Math.min(m, e.atMs), Number.MAX_SAFE_INTEGER) % Number.MAX_SAFE_INTEGER;
    return 0;
  }

  /** Writes what is left, then closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.flush();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.db.close();
  }
}

/** A pending record's sightings as changes, to merge into a record read from disk. */
function rowChanges(r: HistoryRecord): HistoryChange[] {
  return withSightingRows(r).rows.map((w) => ({
    t: 'row',
    txnId: r.txnId,
    atMs: w.atMs,
    kind: w.kind,
    participantId: w.participantId,
    detail: w.detail,
  }));
}

function parseLacks(v: string | undefined): LogRange[] {
  if (v === undefined) return [];
  try {
    const a = JSON.parse(v) as unknown;
    if (!Array.isArray(a)) return [];
    return a.filter(
      (x): x is LogRange =>
        x !== null && typeof x === 'object' && Number.isSafeInteger(x.firstIndex) && Number.isSafeInteger(x.lastIndex),
    );
  } catch {
    return [];
  }
}
