// The node's transaction history on disk: a LevelDB of its own in
// `<dataDir>/history/`, apart from the Raft log and its snapshots, so the
// commit path never waits for it. Changes (./record.ts) are kept in memory
// and written in batches, one LevelDB batch at most every FLUSH_MS, off the
// commit path.
//
// A transaction costs almost nothing as it goes: what reaches it — its
// decision, the leader's sightings, its Forget — is appended as it comes to
// a list of its own (./page.ts OpenTxn), and no record is built. It is
// written once its transaction is settled (the Forget: every participant
// acknowledged), or past HOLD_TURNS flushes or HELD_MAX waiting, as a line
// of one page: the LevelDB value that holds the transactions of a write
// turn, indexed per time bucket (a Bloom filter of the ids) and per
// participant, not per transaction. Its record is built only when it is
// read, by replaying its line. A transaction changed after its page was
// written (a late Forget or ACK, a retry, an operator's act), a saga, and a
// transaction known only by an operator's act are records (./codec.ts) under
// keys of their own, built in memory and written as before; a record
// replaces the copy of a page, and one read from a page comes back whole.
//
// Each batch also writes the highest log index below which every change is
// on disk: the lowest log index a held transaction or record has not
// written yet, less one. A crash loses at most what was not written, and
// that comes back on start: the node re-applies its retained log after its
// snapshot, and the changes of entries above that index are applied again
// (a change seen twice leaves a record as once; a decision at or below the
// highest index ever written is merged into what is on disk, never written
// over it). What a node applied only by installing a snapshot never passed
// through here: the store records that range of the log as lacking and says
// so in every answer.
//
// Keys: ./keys.ts. A saga's record is under the id `saga/<id>` (./record.ts),
// which no transaction id can be.
//
// Bounded by age and by bytes (retentionMs, bytesMax): the oldest records go
// first. `bytes` counts the keys and values as written; LevelDB's files hold
// them compressed, plus compaction's slack.

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
  gPrefix,
  indexIds,
  type IndexLines,
  indexPuts,
  M_APPLIED,
  M_BYTES,
  M_FORM,
  M_LACKS,
  M_SEQ,
  M_WRITTEN,
  pageKey,
  pPrefix,
  qKey,
  qPrefix,
  rKey,
  SEP,
  seq12,
  seqOfKey,
  tPrefix,
  upgradeIndexKeys,
  writeBatch,
} from './keys.ts';
import {
  buildPage,
  DECIDED_SLOT,
  type DecidedTxn,
  decidedChange,
  FORGOTTEN_SLOT,
  openChanges,
  type OpenTxn,
  type Page,
  type PageItem,
  type PageLine,
  pageIndexDels,
  PAGE_FORM,
  parseBucketValue,
  rebuildPage,
  replayLine,
} from './page.ts';
import { PageReads, RecentPages } from './page-reads.ts';
import {
  addSighting,
  applyChange,
  HISTORY_LIMIT_DEFAULT,
  HISTORY_LIMIT_MAX,
  type HistoryAnswer,
  type HistoryChange,
  type HistoryQuery,
  type HistoryRecord,
  type LogRange,
} from './record.ts';
import { kindOf, SAGA_KEY_PREFIX, startsRecord } from './record.ts';

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
/** The write turn of one store (HistoryOptions.flushMs). */
export const FLUSH_MS = 200;
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
/** Transactions written before they settled, remembered with their page (a late change finds it at once). */
const PAGE_OF_MAX = 100_000;

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

/**
 * A sighting's time from its transaction's t0, as a small integer where it is one (about ±12 days): V8 keeps it in
 * the list as it is, where a difference of two times would be a new heap number for each of the leader's rows.
 */
function offsetOf(atMs: number, t0: number): number {
  const d = atMs - t0;
  return d >= -0x3fffffff && d <= 0x3fffffff ? d | 0 : d;
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
   * Decided transactions not written yet, in the order of their decisions: what reached each, as it came (no record
   * is built for them; ./page.ts).
   */
  private readonly open = new Map<string, OpenTxn>();
  /** What this node saw of transactions not decided yet, kept as it came; the decision makes it open. */
  private readonly pending = new Map<string, OpenTxn>();
  /** The page of each transaction written before it settled (bounded by PAGE_OF_MAX). */
  private readonly pageOf = new RecentPages(PAGE_OF_MAX);
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
  private readonly pages: PageReads;

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
    this.pages = new PageReads(db, o.onError);
  }

  /**
   * Opens (or creates) the store in `dir`. A store of a form newer than this version writes is refused: this version
   * would not see what it holds.
   */
  static async open(dir: string, o: HistoryOptions): Promise<HistoryStore> {
    await mkdir(dir, { recursive: true });
    const db = new Level<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open({ createIfMissing: true });
    const [applied, written, bytes, lacks, seq, form] = await db.getMany([
      M_APPLIED,
      M_WRITTEN,
      M_BYTES,
      M_LACKS,
      M_SEQ,
      M_FORM,
    ]);
    if (form !== undefined && !(Number(form) <= PAGE_FORM)) {
      await db.close();
      throw new Error(
        `the history in ${dir} is of form ${form}, written by a newer version of Verdict than this one (form ${PAGE_FORM}); run that version, or stop the node and move the folder aside to start a new history`,
      );
    }
    const s = new HistoryStore(db, o, {
      applied: Number(applied ?? 0) || 0,
      written: Number(written ?? 0) || 0,
      bytes: Number(bytes ?? 0) || 0,
      lacks: parseLacks(lacks),
    });
    s.seq = Number(seq ?? 0) || 0;
    s.seq = await upgradeIndexKeys(db, s.seq);
    // Records of an older form are read as they are; from now on the store writes pages too.
    if (form === undefined) await db.put(M_FORM, String(PAGE_FORM));
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
    if (!this.entered(index)) return;
    for (const c of changes) this.change(c, index);
    this.due();
  }

  /**
   * The applied entry at `index` carries nothing for the history (or its changes follow): only the applied index
   * moves, and the next write turn takes it to disk. Called for every applied entry, so it makes nothing.
   */
  advance(index: number): void {
    if (this.closed || index <= this.applied) return;
    this.applied = index;
    if (this.timer === null) this.arm();
  }

  /**
   * A decision applied at `index`, as the decision table holds it (`atMs`: its time as the history records it). A new
   * one is kept as the table's own value, not as a change: its page line is written from it.
   */
  decided(index: number, d: DecidedTxn, first: boolean, atMs: number): void {
    if (!this.entered(index)) return;
    if (first && d.index > this.written && !this.open.has(d.txnId) && !this.hot.has(d.txnId)) {
      const o = this.opened(d.txnId, atMs);
      o.changes.push(DECIDED_SLOT, d);
      o.minIndex = minIndexOf(o.minIndex, index);
    } else this.change(decidedChange(d, first, atMs), index);
    this.due();
  }

  /** The Forget applied at `index` (every participant of `txnIds` acknowledged), about at `atMs`. */
  forgotten(index: number, txnIds: readonly string[], atMs: number): void {
    if (!this.entered(index)) return;
    for (const txnId of txnIds) {
      const o = this.open.get(txnId);
      if (o === undefined) {
        this.change({ t: 'forget', txnId, index, atMs }, index);
        continue;
      }
      o.changes.push(FORGOTTEN_SLOT, index, atMs);
      o.minIndex = minIndexOf(o.minIndex, index);
      this.settle(o);
    }
    this.due();
  }

  /** Whether the entry at `index` (0: a sighting) is still to be taken: not closed, not on disk already. */
  private entered(index: number): boolean {
    if (this.closed) return false;
    if (index > 0) {
      if (index <= this.durable) return false;
      if (index > this.applied) this.applied = index;
    }
    return true;
  }

  /**
   * What this node saw itself of `txnId` (a row of the leader's timeline,
   * not in the log): appended to what reached the transaction, with no
   * change value made for it — the leader sees about ten per transaction.
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
      this.open.size + this.dirty.size > (this.o.heldMax ?? HELD_MAX) ||
      this.deferred.size >= FLUSH_RECORDS
    )
      void this.write(false);
    else this.arm();
  }

  private seen(txnId: string, atMs: number, kind: string, participantId: string, detail: string): void {
    const o = this.open.get(txnId) ?? this.pending.get(txnId);
    if (o !== undefined) {
      o.changes.push(offsetOf(atMs, o.t0), kind, participantId, detail);
      return;
    }
    const r = this.hot.get(txnId);
    if (r !== undefined) {
      addSighting(r, atMs, kind, participantId, detail);
      this.touch(txnId, 0);
      return;
    }
    if (!this.o.decided(txnId)) {
      // Not decided yet (begin, PREPARE, votes): kept until the decision, which joins them.
      const p: OpenTxn = { txnId, changes: [], t0: atMs, atMs: 0, minIndex: 0, turn: 0, settled: false };
      // Pushed, not a literal of four: the list then grows once for a leader's dozen changes instead of twice.
      p.changes.push(0, kind, participantId, detail);
      this.pending.set(txnId, p);
      if (this.pending.size > PENDING_MAX) this.pending.delete(this.pending.keys().next().value as string);
      return;
    }
    this.defer(txnId, [{ t: 'row', txnId, atMs, kind, participantId, detail }]);
  }

  /**
   * The state machine was restored from a snapshot at `index`: the entries
   * from the last one applied here up to it never pass through apply(), so
   * the range is recorded as lacking (unless it is already on disk).
   * `decisions`: the snapshot's live decisions, kept so what the snapshot
   * still holds is served.
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

  /** A change of log entry `index` (0: a sighting) appended to an open transaction. */
  private append(o: OpenTxn, c: HistoryChange, index: number): void {
    if (c.t === 'row') {
      o.changes.push(offsetOf(c.atMs, o.t0), c.kind, c.participantId, c.detail);
      return;
    }
    o.changes.push(c);
    o.minIndex = minIndexOf(o.minIndex, index);
    if (c.t === 'forget') this.settle(o);
  }

  private settle(o: OpenTxn): void {
    if (o.settled) return;
    o.settled = true;
    this.settled++;
  }

  /** A new decision of `txnId` at `atMs` opens its transaction: what this node saw before it (PREPARE, votes) joins. */
  private opened(txnId: string, atMs: number): OpenTxn {
    const seen = this.pending.get(txnId);
    if (seen !== undefined) this.pending.delete(txnId);
    const t: OpenTxn = seen ?? { txnId, changes: [], t0: atMs, atMs: 0, minIndex: 0, turn: 0, settled: false };
    t.atMs = atMs;
    t.turn = this.turn;
    this.open.set(txnId, t);
    return t;
  }

  private change(c: HistoryChange, index: number): void {
    const o = this.open.get(c.txnId);
    if (o !== undefined) {
      this.append(o, c, index);
      return;
    }
    const r = this.hot.get(c.txnId);
    if (r !== undefined) {
      const wasSettled = r.forgottenIndex > 0;
      applyChange(r, c);
      this.touch(c.txnId, index);
      if (!wasSettled && r.forgottenIndex > 0) this.settled++;
      return;
    }
    if (c.t === 'decide' && c.first) {
      if (c.index <= this.written) {
        // Replayed after a restart (or a snapshot's): it may be on disk already; the change is merged into it.
        const seen = this.pending.get(c.txnId);
        this.pending.delete(c.txnId);
        this.defer(c.txnId, seen === undefined ? [c] : [c, ...openChanges(seen)], index);
        return;
      }
      this.append(this.opened(c.txnId, c.atMs), c, index);
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
    if (
      this.timer !== null ||
      this.closed ||
      (this.dirty.size === 0 && this.deferred.size === 0 && this.open.size === 0 && this.durable === this.applied)
    )
      return;
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
    if (
      this.dirty.size === 0 &&
      this.deferred.size === 0 &&
      this.open.size === 0 &&
      this.durable === this.applied &&
      !this.lacksChanged
    )
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
    let paged: OpenTxn[] = [];
    let pageCost = 0;
    try {
      // Changed while not in memory: read (a record, else a page's copy), changed, written as a record (one that is
      // gone — pruned, or lacking — takes only a decision or an act).
      const ids = [...deferred.keys()].filter((id) => !this.hot.has(id) && !this.open.has(id));
      const values = ids.length > 0 ? await this.db.getMany(ids.map(rKey)) : [];
      const missing = ids.filter((_, i) => values[i] === undefined);
      const fromPages =
        missing.length > 0 ? await this.pages.find(missing, (id) => decidedAtOf(deferred.get(id)), this.pageOf) : null;
      deferredTaken = true;
      const now = new Set<string>();
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i] as string;
        const cs = deferred.get(id) ?? [];
        if (this.takeMeanwhile(id, cs, deferredMinIndex)) {
          now.add(id);
          continue;
        }
        const v = values[i];
        const rec = v === undefined ? (fromPages?.get(id) ?? null) : this.decode(id, v);
        if (rec !== null && v !== undefined) {
          const ids = indexIds(rec);
          this.stored.set(id, { atMs: indexAtMs(rec), participants: ids, cost: costOf(rec, v, ids) });
        }
        this.pageOf.delete(id);
        let r = rec;
        for (const c of cs) if (r !== null || startsRecord(c)) r = applyChange(r, c);
        if (r === null) continue;
        this.hot.set(id, r);
        this.touch(id, deferredMinIndex);
        now.add(id);
      }
      const read = new Set(ids);
      for (const [id, cs] of deferred) if (!read.has(id) && this.takeMeanwhile(id, cs, deferredMinIndex)) now.add(id);
      // Due: settled, held long enough, the oldest past the bound, read back just now, or all of them (a flush).
      const ops: Batch[] = [];
      const index: IndexLines = new Map();
      let floor = appliedIndex;
      let overflow = this.open.size + this.dirty.size - (this.o.heldMax ?? HELD_MAX);
      const holdTurns = this.o.holdTurns ?? HOLD_TURNS;
      // Open transactions (the oldest decisions first) go into this turn's page. (forEach: each held one is visited
      // every turn, and a for-of would make an entry pair for it each time.)
      this.open.forEach((t, id) => {
        if (all || overflow-- > 0 || t.settled || this.turn - t.turn >= holdTurns) {
          this.open.delete(id);
          paged.push(t);
        } else if (t.minIndex > 0 && t.minIndex - 1 < floor) floor = t.minIndex - 1;
      });
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
      let pageSeq = 0;
      if (paged.length > 0) {
        pageSeq = ++this.seq;
        const key = pageKey(pageSeq);
        const p = buildPage(pageSeq, key, paged);
        ops.push({ type: 'put', key, value: p.value, valueEncoding: 'buffer' });
        for (const op of p.ops) ops.push(op);
        pageCost = p.cost;
        this.bytes += pageCost;
      }
      // The records and the page just encoded hold every change applied so far, and none later.
      const writtenTo = Math.max(this.written, this.applied);
      ops.push(
        { type: 'put', key: M_APPLIED, value: String(Math.max(this.durable, floor)) },
        { type: 'put', key: M_WRITTEN, value: String(writtenTo) },
        { type: 'put', key: M_BYTES, value: String(this.bytes) },
        { type: 'put', key: M_SEQ, value: String(this.seq) },
      );
      if (lacksChanged) ops.push({ type: 'put', key: M_LACKS, value: JSON.stringify(this.lacks) });
      await writeBatch(this.db, ops);
      this.count(ops, taken.size + paged.length);
      this.durable = Math.max(this.durable, floor);
      this.written = writtenTo;
      // One written before it settled will change again (its ACKs, its Forget, retries): its page is remembered.
      for (const t of paged) if (!t.settled) this.pageOf.set(t.txnId, pageSeq);
      paged = [];
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
      // disk; the page's transactions open again.
      for (const [id, prev] of undo) {
        this.bytes += (prev?.cost ?? 0) - (this.stored.get(id)?.cost ?? 0);
        if (prev === undefined) this.stored.delete(id);
        else this.stored.set(id, prev);
      }
      this.bytes -= pageCost;
      for (const t of paged) this.open.set(t.txnId, t);
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
   * Changes read for `id` while it came back into memory (a decision applied meanwhile, a page that failed to write):
   * that record or open transaction takes them. Whether it did.
   */
  private takeMeanwhile(id: string, cs: readonly HistoryChange[], minIndex: number): boolean {
    const o = this.open.get(id);
    if (o !== undefined) {
      for (const c of cs) this.append(o, c, minIndex);
      return true;
    }
    const r = this.hot.get(id);
    if (r === undefined) return false;
    for (const c of cs) applyChange(r, c);
    this.touch(id, minIndex);
    return true;
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
        const bucket = await this.oldestBucket();
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

  /** The oldest time bucket of the records' index and of the pages'; -1 when both are empty. */
  private async oldestBucket(): Promise<number> {
    let bucket = -1;
    for (const prefix of [`T${SEP}`, `G${SEP}`])
      for await (const k of this.db.keys({ gte: prefix, lt: `${prefix}\uffff`, limit: 1 })) {
        const b = Number(k.slice(2, 18));
        if (bucket < 0 || b < bucket) bucket = b;
      }
    return bucket;
  }

  /**
   * Deletes the records and page lines of the oldest bucket past the retention, then the oldest while over the byte
   * bound; rewrites its index keys and its pages with what is kept.
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
    // seq 0: a record of its own; else the page whose line it is.
    const live: { id: string; atMs: number; participants: string[]; cost: number; seq: number }[] = [];
    for (let i = 0; i < ids.length; i++) {
      const v = values[i];
      const id = ids[i] as string;
      const rec = v === undefined ? null : this.decode(id, v);
      // Gone, or moved to another bucket (listed there): a stale line.
      if (rec === null || bucketOf(indexAtMs(rec)) !== bucket) continue;
      const pids = indexIds(rec);
      live.push({ id, atMs: indexAtMs(rec), participants: pids, cost: costOf(rec, v as string, pids), seq: 0 });
    }
    const gKeys: string[] = [];
    for await (const k of this.db.keys({ gte: gPrefix(bucket), lt: `${gPrefix(bucket)}\uffff` })) gKeys.push(k);
    const seqs = gKeys.map(seqOfKey);
    const pageValues = seqs.length > 0 ? await this.db.getMany(seqs.map(pageKey)) : [];
    const pages = new Map<number, { value: string; page: Page; lines: { line: PageLine; item: PageItem | null }[] }>();
    const ops: Batch[] = [];
    for (let i = 0; i < seqs.length; i++) {
      const seq = seqs[i] as number;
      const v = pageValues[i];
      const page = v === undefined ? null : this.pages.decode(seq, v);
      if (v === undefined || page === null) {
        // Gone, or unreadable: its key in this bucket goes (and an unreadable page with it).
        ops.push({ type: 'del', key: gKeys[i] as string });
        if (v !== undefined) {
          ops.push({ type: 'del', key: pageKey(seq) });
          this.bytes = Math.max(0, this.bytes - pageKey(seq).length - v.length);
        }
        continue;
      }
      const lines = page.lines.map((line) => {
        const rec = replayLine(page, line);
        if (typeof rec === 'string') {
          this.o.onError(new Error(`the history page ${seq} is malformed (${rec}); the line is dropped`), 'read');
          return { line, item: null };
        }
        return { line, item: { txnId: line.txnId, atMs: indexAtMs(rec), participants: indexIds(rec) } };
      });
      pages.set(seq, { value: v, page, lines });
      let here = 0;
      for (const { line, item } of lines)
        if (item !== null && bucketOf(item.atMs) === bucket) {
          live.push({ id: item.txnId, atMs: item.atMs, participants: [], cost: line.text.length + 1, seq });
          here++;
        }
      // Listed here with nothing of this bucket (a time read back otherwise): a stale key, which goes.
      if (here === 0) {
        ops.push({ type: 'del', key: gKeys[i] as string });
        for (const p of page.participants) ops.push({ type: 'del', key: qKey(p, bucket, seq) });
      }
    }
    live.sort((a, b) => a.atMs - b.atMs || (a.id < b.id ? -1 : 1));
    const keep: typeof live = [];
    const gone = new Map<number, Set<string>>();
    let freed = 0;
    let deleted = 0;
    let freedRecords = 0;
    for (const x of live) {
      // Past the age bound, or over the byte bound: the oldest goes.
      if (x.atMs < cutoffAtMs || this.bytes - freed > this.o.bytesMax) {
        freed += x.cost;
        deleted++;
        this.hot.delete(x.id);
        this.pageOf.delete(x.id);
        if (x.seq > 0) {
          const g = gone.get(x.seq);
          if (g === undefined) gone.set(x.seq, new Set([x.id]));
          else g.add(x.id);
          continue;
        }
        ops.push({ type: 'del', key: rKey(x.id) });
        freedRecords += x.cost;
        this.stored.delete(x.id);
        this.dirty.delete(x.id);
      } else if (x.seq === 0) keep.push(x);
    }
    // Only stale lines left: the bucket's keys go too.
    if (deleted === 0 && live.length > 0 && ops.length === 0) return 0;
    await this.pruneRecordIndex(bucket, tKeys, live, keep, ops);
    // Pages that lost lines are written again with the rest (or go): their index with them.
    for (const [seq, p] of pages) {
      const g = gone.get(seq);
      const dropped = p.lines.some((l) => l.item === null);
      if (g === undefined && !dropped) continue;
      const kept = p.lines.filter((l) => l.item !== null && !g?.has(l.line.txnId)) as {
        line: PageLine;
        item: PageItem;
      }[];
      const key = pageKey(seq);
      for (const op of pageIndexDels(seq, p.page)) ops.push(op);
      const oldCost = key.length + p.value.length + p.page.indexBytes;
      if (kept.length === 0) {
        ops.push({ type: 'del', key });
        this.bytes -= oldCost;
        continue;
      }
      const next = rebuildPage(seq, key, p.page, kept);
      ops.push({ type: 'put', key, value: next.value, valueEncoding: 'buffer' });
      for (const op of next.ops) ops.push(op);
      this.bytes += next.cost - oldCost;
    }
    this.bytes = Math.max(0, this.bytes - freedRecords);
    ops.push({ type: 'put', key: M_BYTES, value: String(this.bytes) });
    await writeBatch(this.db, ops);
    // A bucket of stale lines only counts as one deletion, so pruning goes on to the next.
    return Math.max(deleted, 1);
  }

  /** The records' index keys of a pruned bucket: deleted, and what is kept written under one key each. */
  private async pruneRecordIndex(
    bucket: number,
    tKeys: readonly string[],
    live: readonly { id: string; atMs: number; participants: string[]; seq: number }[],
    keep: readonly { id: string; atMs: number; participants: string[] }[],
    ops: Batch[],
  ): Promise<void> {
    for (const k of tKeys) ops.push({ type: 'del', key: k });
    const participants = new Set(live.filter((x) => x.seq === 0).flatMap((x) => x.participants));
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
      let rec = v === undefined ? null : this.decode(q.txnId, v);
      // Not a record of its own: a transaction's is in a page.
      if (v === undefined && !q.txnId.startsWith(SAGA_KEY_PREFIX))
        rec = (await this.pages.find([q.txnId], () => 0, this.pageOf)).get(q.txnId) ?? null;
      return { ...base, records: rec ? [rec] : [], truncated: false };
    }
    const limit = Math.min(Math.max(1, q.limit ?? HISTORY_LIMIT_DEFAULT), HISTORY_LIMIT_MAX);
    const sinceAtMs = q.sinceAtMs ?? 0;
    const untilAtMs = Math.min(q.untilAtMs || Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    const pid = q.participantId;
    const first = bucketOf(sinceAtMs);
    const last = bucketOf(untilAtMs - 1);
    // Records (T, or P of the participant) and pages (G, or Q), each bucket by bucket, newest first.
    const recordPrefix = (b: number): string => (pid ? pPrefix(pid, b) : tPrefix(b));
    const pagePrefix = (b: number): string => (pid ? qPrefix(pid, b) : gPrefix(b));
    const bucketAt = pid ? `P${SEP}${pid}${SEP}`.length : 2;
    const recordGroups = byBucket<[string, string]>(
      this.db.iterator({ gte: recordPrefix(first), lt: `${recordPrefix(last)}\uffff`, reverse: true }),
      ([k]) => Number(k.slice(bucketAt, bucketAt + 16)),
    );
    // Sagas are records only.
    const pageGroups = byBucket<string>(
      q.kind === 'saga'
        ? emptyKeys()
        : this.db.keys({ gte: pagePrefix(first), lt: `${pagePrefix(last)}\uffff`, reverse: true }),
      (k) => Number(k.slice(bucketAt, bucketAt + 16)),
    );
    const records: HistoryRecord[] = [];
    let truncated = false;
    let scanned = 0;
    const seen = new Set<string>();
    try {
      let a = await recordGroups.next();
      let b = await pageGroups.next();
      while (!a.done || !b.done) {
        const bucket = Math.max(a.done ? -1 : a.value.bucket, b.done ? -1 : b.value.bucket);
        const lines: { atMs: number; id: string }[] = [];
        const seqs: number[] = [];
        if (!a.done && a.value.bucket === bucket) {
          for (const [, v] of a.value.items) {
            scanned++;
            for (const e of entriesOf(v)) {
              if (e.atMs < sinceAtMs || e.atMs >= untilAtMs || seen.has(e.id)) continue;
              seen.add(e.id);
              lines.push(e);
            }
          }
          a = await recordGroups.next();
        }
        if (!b.done && b.value.bucket === bucket) {
          for (const k of b.value.items) seqs.push(seqOfKey(k));
          scanned += seqs.length;
          b = await pageGroups.next();
        }
        const found = await this.bucketRecords(bucket, lines, seqs, q, sinceAtMs, untilAtMs, seen);
        found.sort((x, y) => indexAtMs(y) - indexAtMs(x) || (x.txnId < y.txnId ? 1 : -1));
        for (const rec of found) {
          if (records.length >= limit) {
            truncated = true;
            break;
          }
          records.push(rec);
        }
        if (truncated) break;
        if (seen.size >= SCAN_KEYS_MAX || scanned >= SCAN_KEYS_MAX) {
          truncated = true;
          break;
        }
      }
    } finally {
      await recordGroups.return(undefined);
      await pageGroups.return(undefined);
    }
    return { ...base, records, truncated };
  }

  /**
   * The records of one bucket that match `q`: those of their own its index lines name (still at that time), and the
   * transactions of its pages (a record of its own replaces a page's copy).
   */
  private async bucketRecords(
    bucket: number,
    lines: readonly { atMs: number; id: string }[],
    seqs: readonly number[],
    q: HistoryQuery,
    sinceAtMs: number,
    untilAtMs: number,
    seen: Set<string>,
  ): Promise<HistoryRecord[]> {
    const out: HistoryRecord[] = [];
    const matches = (rec: HistoryRecord): boolean =>
      !(q.outcome && rec.outcome !== q.outcome) && !(q.kind && kindOf(rec) !== q.kind);
    for (let i = 0; i < lines.length; i += 256) {
      const chunk = lines.slice(i, i + 256);
      const values = await this.db.getMany(chunk.map((e) => rKey(e.id)));
      for (let j = 0; j < chunk.length; j++) {
        const v = values[j];
        const e = chunk[j] as { atMs: number; id: string };
        const rec = v === undefined ? null : this.decode(e.id, v);
        if (rec !== null && indexAtMs(rec) === e.atMs && matches(rec)) out.push(rec);
      }
    }
    if (seqs.length === 0) return out;
    const inRange = (rec: HistoryRecord): boolean => {
      const at = indexAtMs(rec);
      // A page may hold transactions of other buckets too: each is taken in its own.
      if (at < sinceAtMs || at >= untilAtMs || bucketOf(at) !== bucket || !matches(rec)) return false;
      return !q.participantId || rec.participants.some((p) => p.participantId === q.participantId);
    };
    for (const rec of await this.pages.inBucket(seqs, inRange, seen)) out.push(rec);
    return out;
  }

  private async oldestAtMs(): Promise<number> {
    let oldest = 0;
    for await (const v of this.db.values({ gte: `T${SEP}`, lt: `T${SEP}\uffff`, limit: 1 }))
      oldest = entriesOf(v).reduce((m, e) => Math.min(m, e.atMs), Number.MAX_SAFE_INTEGER) % Number.MAX_SAFE_INTEGER;
    for await (const v of this.db.values({ gte: `G${SEP}`, lt: `G${SEP}\uffff`, limit: 1 })) {
      const b = parseBucketValue(v);
      if (b !== null && (oldest === 0 || b.oldestAtMs < oldest)) oldest = b.oldestAtMs;
    }
    return oldest;
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

/** The time of the decision among `cs`, 0 when none says it (the bucket of the page that may hold the transaction). */
function decidedAtOf(cs: readonly HistoryChange[] | undefined): number {
  for (const c of cs ?? []) if (c.t === 'decide' && c.atMs > 0) return c.atMs;
  return 0;
}

/** An index read in reverse, grouped by the time bucket each key names. */
async function* byBucket<T>(
  it: AsyncIterable<T>,
  bucketOfItem: (x: T) => number,
): AsyncGenerator<{ bucket: number; items: T[] }, void, undefined> {
  let bucket = -1;
  let items: T[] = [];
  for await (const x of it) {
    const b = bucketOfItem(x);
    if (b !== bucket && items.length > 0) {
      yield { bucket, items };
      items = [];
    }
    bucket = b;
    items.push(x);
  }
  if (items.length > 0) yield { bucket, items };
}

async function* emptyKeys(): AsyncGenerator<string, void, undefined> {}

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
