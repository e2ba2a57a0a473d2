// The history store's keys (./store.ts), utf8:
//   g␀<seq>                                a page: the transactions one write turn wrote, as the changes that reached
//                                          them (./page.ts); most transactions are only here
//   G␀<bucket, 16 digits>␀<seq>            page <seq> holds transactions of this time bucket: the value is the oldest
//                                          one's time and a Bloom filter of their ids
//   Q␀<participant>␀<bucket>␀<seq>         the same, by participant
//   r␀<txnId>                              a record (./codec.ts): a saga's, a transaction changed after its page was
//                                          written (it then replaces the page's copy), one known only by an act, and
//                                          every record of a store written before pages
//   T␀<bucket>␀<seq> by time: "<time> <txnId>" lines, the records of one write whose time (the decision's) falls in
//   the bucket
//   P␀<participant>␀<bucket>␀<seq>         the same, by participant
//   m␀form                                 the store's form: 4 once it writes pages (./page.ts)
//   m␀applied                              every change of the log up to this index is on disk
//   m␀written                              no record on disk holds a change of the log above this index
//   m␀bytes  m␀lacks  m␀seq                the bytes kept, the lacking ranges, the last page or index key's number
//
// A write turn adds one page, one G key per time bucket and one Q key per
// participant and bucket, and for records one index key per time bucket
// (BUCKET_MS) and per participant and bucket, not one per record. A record
// whose time moved (a heuristic report's record that learns its decision)
// leaves a stale line behind, which a read skips (the record's time no
// longer matches) and pruning drops.

import type { Level } from 'level';
import { indexAtMs } from './codec.ts';
import type { HistoryRecord } from './record.ts';

/** A LevelDB op; a page is written as bytes (./page.ts), everything else as text. */
export type Batch =
  | { type: 'put'; key: string; value: string }
  | { type: 'put'; key: string; value: Buffer; valueEncoding: 'buffer' }
  | { type: 'del'; key: string };

/** Keys of the first index form turned into bucket lines per batch. */
const UPGRADE_KEYS = 10_000;

export const SEP = '\u0000';
export const rKey = (id: string): string => `r${SEP}${id}`;
export const ms16 = (ms: number): string => String(Math.max(0, Math.floor(ms))).padStart(16, '0');
/** The time index's span of one key: records decided in the same BUCKET_MS share index keys. */
const BUCKET_MS = 10_000;
export const bucketOf = (atMs: number): number => Math.max(0, Math.floor(atMs / BUCKET_MS) * BUCKET_MS);
export const seq12 = (n: number): string => String(n).padStart(12, '0');
export const tPrefix = (bucket: number): string => `T${SEP}${ms16(bucket)}${SEP}`;
export const pPrefix = (p: string, bucket: number): string => `P${SEP}${p}${SEP}${ms16(bucket)}${SEP}`;
/** An index entry: the record's time and id, one a line. */
export const entryOf = (atMs: number, id: string): string => `${atMs} ${id}`;
export const ENTRY_SEP = '\n';
/** A page (./page.ts): the transactions of one write turn, one value. */
export const pageKey = (seq: number): string => `g${SEP}${seq12(seq)}`;
/** A page's time index, per bucket its transactions fall in (the value: the oldest time and a Bloom filter of ids). */
export const gPrefix = (bucket: number): string => `G${SEP}${ms16(bucket)}${SEP}`;
export const gKey = (bucket: number, seq: number): string => `${gPrefix(bucket)}${seq12(seq)}`;
/** A page's participant index, per participant and bucket. */
export const qPrefix = (p: string, bucket: number): string => `Q${SEP}${p}${SEP}${ms16(bucket)}${SEP}`;
export const qKey = (p: string, bucket: number, seq: number): string => `${qPrefix(p, bucket)}${seq12(seq)}`;
/** The page number at the end of a G or Q key. */
export const seqOfKey = (key: string): number => Number(key.slice(-12));
export const M_FORM = `m${SEP}form`;
export const M_APPLIED = `m${SEP}applied`;
export const M_WRITTEN = `m${SEP}written`;
export const M_BYTES = `m${SEP}bytes`;
export const M_SEQ = `m${SEP}seq`;
export const M_LACKS = `m${SEP}lacks`;

/**
 * The ids a record is indexed by participant under: a transaction's participants; a saga's step services, each once.
 */
export function indexIds(r: HistoryRecord): string[] {
  if (r.saga === undefined) return r.participants.map((p) => p.participantId);
  return [...new Set(r.saga.steps.map((s) => s.service))];
}

/**
 * The bytes a record takes in the store: its key and value, and its entries in the indexes (by time, by each
 * participant).
 */
export function costOf(r: HistoryRecord, value: string, ids: readonly string[]): number {
  const entry = String(indexAtMs(r)).length + r.txnId.length + 2;
  return 2 + r.txnId.length + Buffer.byteLength(value) + entry * (1 + ids.length);
}

/** A write turn's index lines: bucket → participant ('' for the time index: no participant id is empty) → lines. */
export type IndexLines = Map<number, Map<string, string[]>>;

/** Adds an index line (a plain function: this runs once per record and participant). */
export function addLine(index: IndexLines, bucket: number, participantId: string, line: string): void {
  let byId = index.get(bucket);
  if (byId === undefined) {
    byId = new Map();
    index.set(bucket, byId);
  }
  const lines = byId.get(participantId);
  if (lines === undefined) byId.set(participantId, [line]);
  else lines.push(line);
}

/**
 * The puts of a write turn's index lines, one key per bucket and participant, numbered from `seq` + 1; returns the last
 * number.
 */
export function indexPuts(index: IndexLines, seq: number, ops: Batch[]): number {
  let n = seq;
  for (const [bucket, byId] of index)
    for (const [id, lines] of byId)
      ops.push({
        type: 'put',
        key: `${id === '' ? tPrefix(bucket) : pPrefix(id, bucket)}${seq12(++n)}`,
        value: lines.join(ENTRY_SEP),
      });
  return n;
}

/** An index key's entries: time and id, the lines that do not parse left out. */
export function entriesOf(value: string): { atMs: number; id: string }[] {
  const out: { atMs: number; id: string }[] = [];
  for (const line of value.split(ENTRY_SEP)) {
    const i = line.indexOf(' ');
    const atMs = Number(line.slice(0, i));
    if (i > 0 && Number.isSafeInteger(atMs) && i < line.length - 1) out.push({ atMs, id: line.slice(i + 1) });
  }
  return out;
}

/**
 * A store written before the index keys were shared (a key per record:
 * t␀<time>␀<txnId>, p␀<participant>␀<time>␀<txnId>): its keys become
 * bucket lines, once, when it is opened.
 */
export async function upgradeIndexKeys(db: Level<string, string>, seqAtOpen: number): Promise<number> {
  let seq = seqAtOpen;
  for (const prefix of ['t', 'p']) {
    for (;;) {
      const keys: string[] = [];
      for await (const k of db.keys({ gte: `${prefix}${SEP}`, lt: `${prefix}${SEP}\uffff`, limit: UPGRADE_KEYS }))
        keys.push(k);
      if (keys.length === 0) break;
      const lists = new Map<string, string[]>();
      const ops: Batch[] = [];
      for (const k of keys) {
        ops.push({ type: 'del', key: k });
        // No id holds the separator (the id rule), so the parts are whole.
        const parts = k.split(SEP);
        const [time, id, participant] = prefix === 't' ? [parts[1], parts[2], ''] : [parts[2], parts[3], parts[1]];
        const atMs = Number(time);
        if (!Number.isSafeInteger(atMs) || id === undefined || id === '' || participant === undefined) continue;
        const list = prefix === 't' ? tPrefix(bucketOf(atMs)) : pPrefix(participant, bucketOf(atMs));
        const lines = lists.get(list);
        if (lines === undefined) lists.set(list, [entryOf(atMs, id)]);
        else lines.push(entryOf(atMs, id));
      }
      for (const [list, lines] of lists)
        ops.push({ type: 'put', key: `${list}${seq12(++seq)}`, value: lines.join(ENTRY_SEP) });
      ops.push({ type: 'put', key: M_SEQ, value: String(seq) });
      await writeBatch(db, ops);
    }
  }
  return seq;
}

/** Writes `ops` as one LevelDB batch (a page's value is bytes: the store's values are text otherwise). */
export function writeBatch(db: Level<string, string>, ops: readonly Batch[]): Promise<void> {
  return (db as unknown as Level<string, string | Buffer>).batch(ops as Batch[]);
}
