// The node's transaction history on disk: a LevelDB of its own in
// `<dataDir>/history/`, apart from the Raft log and its snapshots, so the
// commit path never waits for it. Changes (./record.ts) are applied to
// records in memory and written in batches, at most every FLUSH_MS, off the
// commit path; each batch also writes the highest log index whose changes it
// holds. A crash loses at most the batches not yet written, and those come
// back on start: the node re-applies its retained log after its snapshot,
// and the changes of entries above that index are applied again (a change
// seen twice leaves a record as once). What a node applied only by
// installing a snapshot never passed through here: the store records that
// range of the log as lacking and says so in every answer.
//
// Keys (utf8):
//   r␀<txnId>                         the record (JSON); a saga's under r␀saga/<id> (./record.ts)
//   t␀<time, 16 digits>␀<txnId>       by time (the decision's)
//   p␀<participant>␀<time>␀<txnId>     by participant and time
//   m␀applied  m␀bytes  m␀lacks       the highest index held, the records' bytes, the lacking ranges
//
// Bounded by age and by bytes (retentionMs, bytesMax): the oldest records go
// first. `bytes` counts the records' keys and values as written; LevelDB's
// files hold them compressed, plus compaction's slack.

import { mkdir } from 'node:fs/promises';
import { Level } from 'level';
import { applyChange, HISTORY_LIMIT_DEFAULT, HISTORY_LIMIT_MAX, recordProblem, type HistoryAnswer, type HistoryChange, type HistoryQuery, type HistoryRecord, type LogRange } from './record.ts';
import { kindOf, startsRecord } from './record.ts';

export { HISTORY_BYTES_MAX_DEFAULT, HISTORY_LIMIT_MAX, HISTORY_RETENTION_MS_DEFAULT, type HistoryAnswer, type HistoryQuery, type LogRange } from './record.ts';

export interface HistoryOptions {
  /** Records older than this (by their decision's time) are deleted. */
  retentionMs: number;
  /** The records' bytes kept at most; beyond, the oldest are deleted. */
  bytesMax: number;
  nowMs: () => number;
  /** Whether the decision table knows `txnId` as decided (a row for a decided transaction not in memory goes to its record on disk). */
  decided: (txnId: string) => boolean;
  /** A failed write or read: the history is not the commit path, so the node goes on and says so. */
  onError: (err: Error, what: string) => void;
}

/** Keys a list query reads at most (a filter that matches little must not walk a whole week). */
const SCAN_KEYS_MAX = 100_000;
const FLUSH_MS = 200;
/** Changed records that start a write at once. */
const FLUSH_RECORDS = 2_000;
/** Records kept in memory after they are written (recent ones change again: ACKs, the Forget). */
const HOT_MAX = 2_000;
/** Undecided transactions whose rows (PREPARE, votes) wait in memory for their decision. */
const PENDING_MAX = 10_000;
const PRUNE_EVERY_MS = 60_000;
/** Records deleted per pruning batch. */
const PRUNE_BATCH = 1_000;
const LACKS_MAX = 100;

const SEP = '\u0000';
const rKey = (id: string): string => `r${SEP}${id}`;
const ms16 = (ms: number): string => String(Math.max(0, Math.floor(ms))).padStart(16, '0');
const tKey = (atMs: number, id: string): string => `t${SEP}${ms16(atMs)}${SEP}${id}`;
const pKey = (p: string, atMs: number, id: string): string => `p${SEP}${p}${SEP}${ms16(atMs)}${SEP}${id}`;
const M_APPLIED = `m${SEP}applied`;
const M_BYTES = `m${SEP}bytes`;
const M_LACKS = `m${SEP}lacks`;

/** The time a record is indexed by: its decision's, else its first act's or row's (a transaction known only by a heuristic report). */
export function indexAtMs(r: HistoryRecord): number {
  return r.decidedAtMs || r.acts[0]?.atMs || r.rows[0]?.atMs || 0;
}

/** The bytes a record takes in the store: its key and value, and its index keys. */
function costOf(r: HistoryRecord, json: string): number {
  const at = indexAtMs(r);
  let n = rKey(r.txnId).length + Buffer.byteLength(json) + tKey(at, r.txnId).length;
  for (const p of r.participants) n += Buffer.byteLength(pKey(p.participantId, at, r.txnId));
  return n;
}

/** What is on disk of a record: where its index keys are and what it costs. */
interface Stored {
  atMs: number;
  participants: string[];
  cost: number;
}

type Batch = { type: 'put'; key: string; value: string } | { type: 'del'; key: string };

export class HistoryStore {
  /** Records in memory: recently changed or written; the oldest written ones leave past HOT_MAX. */
  private readonly hot = new Map<string, HistoryRecord>();
  private readonly stored = new Map<string, Stored>();
  private dirty = new Set<string>();
  /** Changes to records not in memory, applied once read from disk. */
  private deferred = new Map<string, HistoryChange[]>();
  /** Rows of transactions not decided yet. */
  private readonly pending = new Map<string, HistoryChange[]>();
  /** The highest log index applied here (in memory). */
  private applied: number;
  private durable: number;
  private bytes: number;
  private lacks: LogRange[];
  private flushing: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private pruneTimer: NodeJS.Timeout | null = null;
  private closed = false;

  private constructor(
    private readonly db: Level<string, string>,
    private readonly o: HistoryOptions,
    meta: { applied: number; bytes: number; lacks: LogRange[] },
  ) {
    this.applied = meta.applied;
    this.durable = meta.applied;
    this.bytes = meta.bytes;
    this.lacks = meta.lacks;
  }

  /** Opens (or creates) the store in `dir`. */
  static async open(dir: string, o: HistoryOptions): Promise<HistoryStore> {
    await mkdir(dir, { recursive: true });
    const db = new Level<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open({ createIfMissing: true });
    const [applied, bytes, lacks] = await db.getMany([M_APPLIED, M_BYTES, M_LACKS]);
    const s = new HistoryStore(db, o, { applied: Number(applied ?? 0) || 0, bytes: Number(bytes ?? 0) || 0, lacks: parseLacks(lacks) });
    s.pruneTimer = setInterval(() => void s.prune(), PRUNE_EVERY_MS);
    s.pruneTimer.unref();
    return s;
  }

  /** The highest log index whose changes are on disk: an entry at or below it is not applied again. */
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
    for (const c of changes) this.change(c);
    if (this.dirty.size + this.deferred.size >= FLUSH_RECORDS) void this.flush();
    else if (this.timer === null && (this.dirty.size > 0 || this.deferred.size > 0)) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.flush();
      }, FLUSH_MS);
    }
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
    for (const c of decisions) this.change(c);
    this.lacksChanged = true;
    void this.flush();
  }

  private lacksChanged = false;

  private change(c: HistoryChange): void {
    const r = this.hot.get(c.txnId);
    if (r !== undefined) {
      applyChange(r, c);
      this.dirty.add(c.txnId);
      return;
    }
    if (c.t === 'decide' && c.first) {
      // A new decision: the rows seen before it (PREPARE, votes) join it.
      let rec = applyChange(null, c);
      for (const p of this.pending.get(c.txnId) ?? []) rec = applyChange(rec, p);
      this.pending.delete(c.txnId);
      this.hot.set(c.txnId, rec);
      this.dirty.add(c.txnId);
      return;
    }
    if (c.t === 'row' && !this.o.decided(c.txnId)) {
      const list = this.pending.get(c.txnId) ?? [];
      if (list.length === 0) {
        this.pending.set(c.txnId, list);
        if (this.pending.size > PENDING_MAX) this.pending.delete(this.pending.keys().next().value as string);
      }
      if (list.length < 4 * 64) list.push(c);
      return;
    }
    const list = this.deferred.get(c.txnId) ?? [];
    list.push(c);
    this.deferred.set(c.txnId, list);
  }

  /** Writes what changed; resolves once it is on disk (or failed, said through onError). */
  flush(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    // One write at a time, and at most one waiting behind it: it takes whatever changed until it starts.
    if (this.queued !== null) return this.queued;
    const prev = this.flushing ?? Promise.resolve();
    const next = prev.then(() => {
      this.queued = null;
      return this.writeOnce();
    });
    this.queued = next;
    this.flushing = next;
    void next.finally(() => {
      if (this.flushing === next) this.flushing = null;
    });
    return next;
  }

  private async writeOnce(): Promise<void> {
    if (this.dirty.size === 0 && this.deferred.size === 0 && this.durable === this.applied && !this.lacksChanged) return;
    const dirty = this.dirty;
    const deferred = this.deferred;
    const appliedAt = this.applied;
    this.dirty = new Set();
    this.deferred = new Map();
    try {
      // Records changed while not in memory: read, changed, written (a record that is gone — pruned, or lacking — takes only a decision).
      const ids = [...deferred.keys()].filter((id) => !this.hot.has(id));
      const values = ids.length > 0 ? await this.db.getMany(ids.map(rKey)) : [];
      for (let i = 0; i < ids.length; i++) {
        const rec = values[i] === undefined ? null : this.decode(values[i] as string);
        if (rec !== null) this.stored.set(ids[i], { atMs: indexAtMs(rec), participants: rec.participants.map((p) => p.participantId), cost: costOf(rec, values[i] as string) });
        let r = rec;
        for (const c of deferred.get(ids[i]) ?? []) if (r !== null || startsRecord(c)) r = applyChange(r, c);
        if (r === null) continue;
        this.hot.set(ids[i], r);
        dirty.add(ids[i]);
      }
      const read = new Set(ids);
      for (const [id, cs] of deferred) {
        if (read.has(id)) continue;
        const r = this.hot.get(id);
        if (r === undefined) continue;
        for (const c of cs) applyChange(r, c);
        dirty.add(id);
      }
      const ops: Batch[] = [];
      for (const id of dirty) {
        const r = this.hot.get(id);
        if (r === undefined) continue;
        this.putOps(r, ops);
      }
      const lacks = this.lacks;
      ops.push({ type: 'put', key: M_APPLIED, value: String(appliedAt) }, { type: 'put', key: M_BYTES, value: String(this.bytes) });
      if (this.lacksChanged) ops.push({ type: 'put', key: M_LACKS, value: JSON.stringify(lacks) });
      this.lacksChanged = false;
      await this.db.batch(ops);
      this.durable = Math.max(this.durable, appliedAt);
      this.trimHot();
      if (this.bytes > this.o.bytesMax) await this.prune();
    } catch (err) {
      // Written again with the next batch.
      for (const id of dirty) this.dirty.add(id);
      this.o.onError(err as Error, 'write');
    }
  }

  /** The ops that write `r` and its index keys (moving them when its time changed), with the byte count kept. */
  private putOps(r: HistoryRecord, ops: Batch[]): void {
    const json = JSON.stringify(r);
    const at = indexAtMs(r);
    const before = this.stored.get(r.txnId);
    if (before !== undefined && before.atMs !== at) {
      ops.push({ type: 'del', key: tKey(before.atMs, r.txnId) });
      for (const p of before.participants) ops.push({ type: 'del', key: pKey(p, before.atMs, r.txnId) });
    }
    ops.push({ type: 'put', key: rKey(r.txnId), value: json });
    ops.push({ type: 'put', key: tKey(at, r.txnId), value: '' });
    for (const p of r.participants) ops.push({ type: 'put', key: pKey(p.participantId, at, r.txnId), value: '' });
    const cost = costOf(r, json);
    this.bytes += cost - (before?.cost ?? 0);
    this.stored.set(r.txnId, { atMs: at, participants: r.participants.map((p) => p.participantId), cost });
  }

  private trimHot(): void {
    for (const id of this.hot.keys()) {
      if (this.hot.size <= HOT_MAX) break;
      if (this.dirty.has(id)) continue;
      this.hot.delete(id);
      this.stored.delete(id);
    }
  }

  private decode(json: string): HistoryRecord | null {
    try {
      const v = JSON.parse(json) as unknown;
      const problem = recordProblem(v);
      if (problem === null) return v as HistoryRecord;
      this.o.onError(new Error(`a history record on disk is malformed (${problem}); it is skipped`), 'read');
    } catch (err) {
      this.o.onError(new Error(`a history record on disk does not parse (${(err as Error).message}); it is skipped`), 'read');
    }
    return null;
  }

  /** Deletes the oldest records while any is older than the retention or the bytes exceed their bound. */
  async prune(): Promise<number> {
    if (this.closed) return 0;
    let deleted = 0;
    try {
      for (;;) {
        const cutoff = this.o.nowMs() - this.o.retentionMs;
        const keys: string[] = [];
        const end = this.bytes > this.o.bytesMax ? `t${SEP}\uffff` : tKey(cutoff, '');
        for await (const k of this.db.keys({ gte: `t${SEP}`, lt: end, limit: PRUNE_BATCH })) keys.push(k);
        const ops: Batch[] = [];
        let taken = 0;
        for (const k of keys) {
          // Past the age bound, or over the byte bound: the oldest goes.
          if (Number(k.slice(2, 18)) >= cutoff && this.bytes <= this.o.bytesMax) break;
          const id = k.slice(k.lastIndexOf(SEP) + 1);
          const v = await this.db.get(rKey(id));
          const rec = v === undefined ? null : this.decode(v);
          ops.push({ type: 'del', key: k }, { type: 'del', key: rKey(id) });
          if (rec !== null) {
            for (const p of rec.participants) ops.push({ type: 'del', key: pKey(p.participantId, indexAtMs(rec), id) });
            this.bytes = Math.max(0, this.bytes - costOf(rec, v as string));
          }
          this.hot.delete(id);
          this.stored.delete(id);
          this.dirty.delete(id);
          taken++;
        }
        if (taken === 0) break;
        deleted += taken;
        ops.push({ type: 'put', key: M_BYTES, value: String(this.bytes) });
        await this.db.batch(ops);
        if (taken < keys.length || keys.length < PRUNE_BATCH) break;
      }
    } catch (err) {
      this.o.onError(err as Error, 'prune');
    }
    return deleted;
  }

  /** One record, or a page of them newest first, with what this store lacks. Writes what changed first, so a read sees every applied entry. */
  async query(q: HistoryQuery): Promise<HistoryAnswer> {
    await this.flush();
    const base = { lacks: [...this.lacks], appliedIndex: this.durable, bytes: this.bytes, oldestAtMs: await this.oldestAtMs() };
    if (q.txnId !== undefined && q.txnId !== '') {
      const v = await this.db.get(rKey(q.txnId));
      const rec = v === undefined ? null : this.decode(v);
      return { ...base, records: rec ? [rec] : [], truncated: false };
    }
    const limit = Math.min(Math.max(1, q.limit ?? HISTORY_LIMIT_DEFAULT), HISTORY_LIMIT_MAX);
    const since = q.sinceAtMs ?? 0;
    const until = q.untilAtMs || Number.MAX_SAFE_INTEGER;
    const prefix = q.participantId ? `p${SEP}${q.participantId}${SEP}` : `t${SEP}`;
    const records: HistoryRecord[] = [];
    let truncated = false;
    let scanned = 0;
    const batch: string[] = [];
    let done = false;
    const take = async (): Promise<void> => {
      const values = await this.db.getMany(batch.map(rKey));
      batch.length = 0;
      for (const v of values) {
        const rec = v === undefined ? null : this.decode(v);
        if (rec === null || (q.outcome && rec.outcome !== q.outcome) || (q.kind && kindOf(rec) !== q.kind)) continue;
        if (records.length >= limit) {
          truncated = true;
          done = true;
          return;
        }
        records.push(rec);
      }
    };
    for await (const k of this.db.keys({ gte: `${prefix}${ms16(since)}`, lt: `${prefix}${ms16(until)}`, reverse: true })) {
      batch.push(k.slice(k.lastIndexOf(SEP) + 1));
      if (++scanned >= SCAN_KEYS_MAX) {
        truncated = true;
        break;
      }
      if (batch.length >= 256) await take();
      if (done) break;
    }
    if (!done && batch.length > 0) await take();
    return { ...base, records, truncated };
  }

  private async oldestAtMs(): Promise<number> {
    for await (const k of this.db.keys({ gte: `t${SEP}`, lt: `t${SEP}\uffff`, limit: 1 })) return Number(k.slice(2, 18));
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

function parseLacks(v: string | undefined): LogRange[] {
  if (v === undefined) return [];
  try {
    const a = JSON.parse(v) as unknown;
    if (!Array.isArray(a)) return [];
    return a.filter((x): x is LogRange => x !== null && typeof x === 'object' && Number.isSafeInteger(x.firstIndex) && Number.isSafeInteger(x.lastIndex));
  } catch {
    return [];
  }
}
