// A page of the history store (./store.ts): the transactions one write turn
// writes, as ONE LevelDB value, each kept as the changes that reached it —
// the applied entries' (decision, Forget, operator acts) and the leader's
// sightings — in arrival order, not as a record. The record is built only
// when it is read (replay: ./record.ts applyChange, the same fold a record
// in memory goes through), so writing a transaction costs a line of text,
// not a record, its encoding, a LevelDB op and index entries of its own.
//
// The value, utf8, lines split by "\n":
//   H4,<baseAtMs>,<indexBytes>,<buckets .-joined>,<participant 0>,<participant 1>,...
//   <txnId>\t<change>\t<change>...                       one line per transaction
// A change:
//   D<c|a><1|0>,<index>,<at>,<participant numbers .-joined>,<reason>   a decision (outcome, first)
//   F,<index>,<at>                                        the Forget
//   A,<act as JSON>                                      an operator's act
//   S<kind>,<at>,<participant number>,<detail>           a sighting (a row of the leader's timeline)
// Times are from baseAtMs ('' for none); a participant is its number in the
// header's list; a kind is one letter (./codec.ts KIND_CODES) or "~" and the
// kind; a text is as it is when plain, else URI-encoded (it then holds a "%",
// which plain text never does), so no text holds a "," "\t" or "\n".
//
// Its index (./keys.ts): per time bucket its transactions fall in, one key
// `G␀<bucket>␀<seq>` whose value is the oldest time and a Bloom filter of
// the ids in that bucket, and one key `Q␀<participant>␀<bucket>␀<seq>` per
// participant. An id is found by testing the filters (narrowed by the time
// a decision or a timed id carries), then decoding the pages that answer
// yes: a false positive is decoded and passed over.
//
// Pure.

import type { DecisionOutcome } from '../domain/protocol.ts';
import { KIND_CODES, KINDS } from './codec.ts';
import { bucketOf, gKey, qKey, type Batch } from './keys.ts';
import { applyChange, type HistoryAct, type HistoryChange, type HistoryRecord, withSightingRows } from './record.ts';

/** The page form (a record's own forms, ./codec.ts, go up to 3). */
export const PAGE_FORM = 4;
const DETAIL_CHARS_MAX = 200;

/**
 * What a page line needs of a decision, as the decision table holds it (src/commit/state.ts Decision, a value never
 * changed once applied: a later change makes a new one), so the store keeps the table's own value instead of a copy.
 */
export interface DecidedTxn {
  readonly txnId: string;
  readonly outcome: DecisionOutcome;
  readonly reason: string;
  readonly participants: readonly string[];
  readonly index: number;
}

/** A first decision in an OpenTxn's slots: this mark, then the DecidedTxn (its time is the OpenTxn's atMs). */
export const DECIDED_SLOT = '\u0000D';
/** A Forget in an OpenTxn's slots: this mark, then its log index and time. */
export const FORGOTTEN_SLOT = '\u0000F';

/**
 * A transaction the store holds in memory until it is written into a page: what reached it, as it came, with no value
 * made for it. A sighting takes four slots (its time less t0, kind, participantId, detail: small numbers, no boxed time
 * each); its first decision two (DECIDED_SLOT and the decision table's own value); its Forget three (FORGOTTEN_SLOT,
 * index, time); any other change of the log one (the HistoryChange itself).
 */
export interface OpenTxn {
  txnId: string;
  changes: (HistoryChange | DecidedTxn | string | number)[];
  /** The time its sightings are counted from. */
  t0: number;
  /** The time it is indexed by: its decision's. */
  atMs: number;
  /** The lowest log index among its changes; 0 when none (sightings only). */
  minIndex: number;
  /** The write turn its decision was applied in (its age, for the hold). */
  turn: number;
  /** Its Forget is applied: every participant acknowledged. */
  settled: boolean;
}

/** One transaction of a page read back: its line, kept as written (a prune rewrites a page with the lines it keeps). */
export interface PageLine {
  txnId: string;
  text: string;
}

export interface Page {
  baseAtMs: number;
  /** The bytes of the page's index keys and values. */
  indexBytes: number;
  buckets: number[];
  participants: string[];
  lines: PageLine[];
}

/** What a page indexes of one transaction: its time and its participants. */
export interface PageItem {
  txnId: string;
  atMs: number;
  participants: readonly string[];
}

const PLAIN = /^[A-Za-z0-9 ._:()-]*$/;
function enc(s: string): string {
  return PLAIN.test(s) ? s : encodeURIComponent(s.replace(LONE_SURROGATE, '\uFFFD'));
}
/** A half of a surrogate pair alone: encodeURIComponent refuses it, so it is read back as U+FFFD. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
function dec(s: string): string {
  return s.includes('%') ? decodeURIComponent(s) : s;
}

/**
 * The page `seq` of `txns`: its value, its index ops and what it costs (key, value and index). Every transaction is
 * written as it came; none is a record yet.
 */
export function buildPage(
  seq: number,
  pageKey: string,
  txns: readonly OpenTxn[],
): { value: Buffer; ops: Batch[]; cost: number } {
  const base = txns[0]?.atMs ?? 0;
  const numbers = new Map<string, number>();
  const participants: string[] = [];
  const numberOf = (p: string): number => {
    let n = numbers.get(p);
    if (n === undefined) {
      n = participants.length;
      numbers.set(p, n);
      participants.push(p);
    }
    return n;
  };
  const groups: Groups = new Map();
  // Written as bytes, not built as strings: every node writes every transaction, and a leader's has a dozen changes.
  const w = new TextWriter(txns.length * 200);
  for (const t of txns) {
    w.byte(NL);
    w.text(t.txnId);
    const cs = t.changes;
    const g = groupOf(groups, t.txnId, t.atMs);
    for (let i = 0; i < cs.length; ) {
      const c = cs[i];
      if (typeof c === 'number') {
        const kind = cs[i + 1] as string;
        const pid = cs[i + 2] as string;
        const raw = cs[i + 3] as string;
        w.byte(TAB);
        w.byte(S);
        const code = KIND_CODES.get(kind);
        if (code !== undefined) w.text(code);
        else w.text(`~${encodeURIComponent(kind)}`);
        w.byte(COMMA);
        w.int(t.t0 + c - base);
        w.byte(COMMA);
        if (pid !== '') {
          w.int(numberOf(pid));
          g.participants.add(pid);
        }
        w.byte(COMMA);
        if (raw !== '') w.text(enc(raw.length > DETAIL_CHARS_MAX ? raw.slice(0, DETAIL_CHARS_MAX) : raw));
        i += 4;
        continue;
      }
      if (c === DECIDED_SLOT) {
        writeDecision(w, cs[i + 1] as DecidedTxn, true, t.atMs, base, numberOf, g.participants);
        i += 2;
        continue;
      }
      if (c === FORGOTTEN_SLOT) {
        writeForget(w, cs[i + 1] as number, cs[i + 2] as number, base);
        i += 3;
        continue;
      }
      i++;
      if (c === undefined || typeof c === 'string' || !('t' in c)) continue;
      switch (c.t) {
        case 'decide':
          writeDecision(w, c, c.first, c.atMs, base, numberOf, g.participants);
          break;
        case 'forget':
          writeForget(w, c.index, c.atMs, base);
          break;
        case 'act':
          w.text('\tA,');
          w.text(encodeURIComponent(JSON.stringify(c.act)));
          break;
        default:
          // A row goes in as a sighting, a saga never into a page (./store.ts keeps sagas as records).
          throw new Error(`a page holds no ${c.t} change`);
      }
    }
  }
  return assemble(seq, pageKey, base, participants, w.done(), groups);
}

/** A decision's change in a page line (D…): the same bytes whether it came as a change or as the table's value. */
function writeDecision(
  w: TextWriter,
  d: DecidedTxn,
  first: boolean,
  atMs: number,
  base: number,
  numberOf: (p: string) => number,
  indexed: Set<string>,
): void {
  w.text(d.outcome === 'commit' ? (first ? '\tDc1,' : '\tDc0,') : first ? '\tDa1,' : '\tDa0,');
  w.int(d.index);
  w.byte(COMMA);
  if (atMs !== 0) w.int(atMs - base);
  w.byte(COMMA);
  for (let k = 0; k < d.participants.length; k++) {
    const p = d.participants[k] as string;
    if (k > 0) w.byte(DOT);
    w.int(numberOf(p));
    indexed.add(p);
  }
  w.byte(COMMA);
  if (d.reason !== '') w.text(enc(d.reason));
}

/** A Forget's change in a page line (F…). */
function writeForget(w: TextWriter, index: number, atMs: number, base: number): void {
  w.text('\tF,');
  w.int(index);
  w.byte(COMMA);
  if (atMs !== 0) w.int(atMs - base);
}

/** An open transaction's slots as changes, in the order they came (its record replayed from them is its line's). */
export function openChanges(t: OpenTxn): HistoryChange[] {
  const out: HistoryChange[] = [];
  const cs = t.changes;
  for (let i = 0; i < cs.length; ) {
    const c = cs[i];
    if (typeof c === 'number') {
      const kind = cs[i + 1] as string;
      const participantId = cs[i + 2] as string;
      out.push({ t: 'row', txnId: t.txnId, atMs: t.t0 + c, kind, participantId, detail: cs[i + 3] as string });
      i += 4;
    } else if (c === DECIDED_SLOT) {
      out.push(decidedChange(cs[i + 1] as DecidedTxn, true, t.atMs));
      i += 2;
    } else if (c === FORGOTTEN_SLOT) {
      out.push({ t: 'forget', txnId: t.txnId, index: cs[i + 1] as number, atMs: cs[i + 2] as number });
      i += 3;
    } else {
      if (c !== undefined && typeof c !== 'string' && 't' in c) out.push(c);
      i++;
    }
  }
  return out;
}

/** A decision as the table holds it, as a change (`atMs`: its time as the history records it). */
export function decidedChange(d: DecidedTxn, first: boolean, atMs: number): HistoryChange {
  return {
    t: 'decide',
    txnId: d.txnId,
    outcome: d.outcome,
    reason: d.reason,
    participants: d.participants,
    index: d.index,
    atMs,
    first,
  };
}

/** A page of the lines kept (a prune), with the items they index: the header as it was, less the index it had. */
export function rebuildPage(
  seq: number,
  pageKey: string,
  page: Page,
  kept: readonly { line: PageLine; item: PageItem }[],
): { value: Buffer; ops: Batch[]; cost: number } {
  const w = new TextWriter(kept.length * 200);
  const groups: Groups = new Map();
  for (const k of kept) {
    w.byte(NL);
    w.text(k.line.text);
    const g = groupOf(groups, k.item.txnId, k.item.atMs);
    for (const p of k.item.participants) g.participants.add(p);
  }
  return assemble(seq, pageKey, page.baseAtMs, page.participants, w.done(), groups);
}

const NL = 0x0a;
const TAB = 0x09;
const COMMA = 0x2c;
const DOT = 0x2e;
const S = 0x53;

/**
 * Text written into one growing buffer: ASCII a byte a character (ids, codes, plain or URI-encoded texts), else UTF-8.
 */
class TextWriter {
  private buf: Buffer;
  private n = 0;

  constructor(bytes: number) {
    this.buf = Buffer.allocUnsafe(Math.max(256, bytes));
  }

  private room(bytes: number): void {
    if (this.n + bytes <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.n + bytes));
    this.buf.copy(next, 0, 0, this.n);
    this.buf = next;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.n++] = b;
  }

  text(s: string): void {
    this.room(s.length);
    const start = this.n;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) {
        this.n = start;
        this.room(Buffer.byteLength(s));
        this.n += this.buf.write(s, this.n, 'utf8');
        return;
      }
      this.buf[this.n++] = c;
    }
  }

  /** A whole number in decimal. */
  int(x: number): void {
    if (x < 0) {
      this.byte(0x2d);
      x = -x;
    }
    this.room(16);
    if (x < 10) {
      this.buf[this.n++] = 0x30 + x;
      return;
    }
    let digits = 1;
    for (let y = x; y >= 10; y = Math.floor(y / 10)) digits++;
    for (let k = digits - 1; k >= 0; k--) {
      this.buf[this.n + k] = 0x30 + (x % 10);
      x = Math.floor(x / 10);
    }
    this.n += digits;
  }

  done(): Buffer {
    return this.buf.subarray(0, this.n);
  }
}

/** A page's transactions by the time bucket they fall in: their ids, participants and oldest time (its index). */
type Groups = Map<number, { ids: string[]; participants: Set<string>; oldestAtMs: number }>;

/** The group of a transaction decided at `atMs`, with its id added. */
function groupOf(groups: Groups, txnId: string, atMs: number): { participants: Set<string> } {
  const b = bucketOf(atMs);
  let g = groups.get(b);
  if (g === undefined) {
    g = { ids: [], participants: new Set(), oldestAtMs: atMs };
    groups.set(b, g);
  }
  g.ids.push(txnId);
  if (atMs < g.oldestAtMs) g.oldestAtMs = atMs;
  return g;
}

function assemble(
  seq: number,
  pageKey: string,
  base: number,
  participants: readonly string[],
  body: Buffer,
  groups: Groups,
): { value: Buffer; ops: Batch[]; cost: number } {
  // Per bucket, its oldest time and a Bloom filter of its ids; its participants.
  const ops: Batch[] = [];
  for (const [b, g] of groups) {
    ops.push({ type: 'put', key: gKey(b, seq), value: `${g.oldestAtMs},${bloomOf(g.ids)}` });
    for (const p of g.participants) ops.push({ type: 'put', key: qKey(p, b, seq), value: '' });
  }
  let indexBytes = 0;
  for (const op of ops) indexBytes += op.key.length + (op.type === 'put' ? op.value.length : 0);
  let head = `H${PAGE_FORM},${base},${indexBytes},${[...groups.keys()].join('.')}`;
  for (const p of participants) head += `,${enc(p)}`;
  const value = Buffer.concat([Buffer.from(head, 'utf8'), body]);
  return { value, ops, cost: pageKey.length + value.length + indexBytes };
}

/** The deletions of every index key a page had (from its header: buckets × participants; a missing key is no harm). */
export function pageIndexDels(seq: number, page: Page): Batch[] {
  const ops: Batch[] = [];
  for (const b of page.buckets) {
    ops.push({ type: 'del', key: gKey(b, seq) });
    for (const p of page.participants) ops.push({ type: 'del', key: qKey(p, b, seq) });
  }
  return ops;
}

/** A page's bytes read back, or why they are not a page. Lines are split, not decoded (replayLine decodes one). */
export function decodePage(value: string): Page | string {
  const nl = value.indexOf('\n');
  const head = (nl < 0 ? value : value.slice(0, nl)).split(',');
  if (head[0] !== `H${PAGE_FORM}` || head.length < 4) return `not a page of form ${PAGE_FORM}`;
  const baseAtMs = Number(head[1]);
  const indexBytes = Number(head[2]);
  if (!Number.isSafeInteger(baseAtMs) || !Number.isSafeInteger(indexBytes) || indexBytes < 0)
    return "the page's base time or index size is not a whole number";
  const buckets = head[3] === '' ? [] : (head[3] as string).split('.').map(Number);
  if (!buckets.every((b) => Number.isSafeInteger(b) && b >= 0)) return "the page's buckets are malformed";
  let participants: string[];
  try {
    participants = head.slice(4).map(dec);
  } catch {
    return "the page's participants are malformed";
  }
  const lines: PageLine[] = [];
  if (nl >= 0)
    for (const text of value.slice(nl + 1).split('\n')) {
      const tab = text.indexOf('\t');
      if (tab <= 0) return 'a line of the page has no transaction id';
      lines.push({ txnId: text.slice(0, tab), text });
    }
  return { baseAtMs, indexBytes, buckets, participants, lines };
}

/** A page line's transaction as a record (its changes replayed, sightings as rows), or why the line is malformed. */
export function replayLine(page: Page, line: PageLine): HistoryRecord | string {
  const parts = line.text.split('\t');
  let r: HistoryRecord | null = null;
  for (let i = 1; i < parts.length; i++) {
    const c = changeOf(page, line.txnId, parts[i] as string);
    if (typeof c === 'string') return `${c} (change ${i} of ${line.txnId})`;
    r = applyChange(r, c);
  }
  if (r === null) return `the line of ${line.txnId} holds no change`;
  return withSightingRows(r);
}

function changeOf(page: Page, txnId: string, text: string): HistoryChange | string {
  const base = page.baseAtMs;
  const f = text.split(',');
  const int = (s: string | undefined): number | null => {
    if (s === undefined || s === '' || !/^-?\d{1,16}$/.test(s)) return null;
    const n = Number(s);
    return Number.isSafeInteger(n) ? n : null;
  };
  const at = (s: string | undefined): number | null => (s === '' ? 0 : (int(s) ?? Number.NaN) + base);
  const who = (s: string | undefined): string | null => {
    const n = int(s);
    return n === null || n < 0 || n >= page.participants.length ? null : (page.participants[n] as string);
  };
  try {
    const tag = f[0] as string;
    if (tag[0] === 'D' && tag.length === 3 && f.length === 5) {
      const outcome = tag[1] === 'c' ? 'commit' : tag[1] === 'a' ? 'abort' : null;
      const index = int(f[1]);
      const atMs = at(f[2]);
      const participants = f[3] === '' ? [] : (f[3] as string).split('.').map(who);
      if (outcome === null || index === null || atMs === null || !Number.isSafeInteger(atMs))
        return 'a decision is malformed';
      if (participants.some((p) => p === null) || (tag[2] !== '1' && tag[2] !== '0'))
        return "a decision's participants are malformed";
      return {
        t: 'decide',
        txnId,
        outcome,
        reason: dec(f[4] as string),
        participants: participants as string[],
        index,
        atMs,
        first: tag[2] === '1',
      };
    }
    if (tag === 'F' && f.length === 3) {
      const index = int(f[1]);
      const atMs = at(f[2]);
      if (index === null || atMs === null || !Number.isSafeInteger(atMs)) return 'a Forget is malformed';
      return { t: 'forget', txnId, index, atMs };
    }
    if (tag === 'A' && f.length === 2) {
      const a = JSON.parse(dec(f[1] as string)) as HistoryAct | null;
      if (a === null || typeof a !== 'object' || typeof a.kind !== 'string' || !Number.isSafeInteger(a.index))
        return 'an act is malformed';
      return { t: 'act', txnId, act: a };
    }
    if (tag[0] === 'S' && f.length === 4) {
      const code = tag.slice(1);
      const kind = code.startsWith('~') ? decodeURIComponent(code.slice(1)) : KINDS.get(code);
      const atMs = at(f[1]);
      const participantId = f[2] === '' ? '' : who(f[2]);
      if (kind === undefined || kind === '') return `a sighting's kind ${JSON.stringify(code)} is unknown`;
      if (atMs === null || !Number.isSafeInteger(atMs) || f[1] === '' || participantId === null)
        return 'a sighting is malformed';
      return { t: 'row', txnId, atMs, kind, participantId, detail: dec(f[3] as string) };
    }
  } catch (err) {
    return `a text does not decode (${(err as Error).message})`;
  }
  return `a change ${JSON.stringify(text.slice(0, 20))} is unknown`;
}

// A Bloom filter over a bucket's ids: BLOOM_BITS_PER_ID bits each, BLOOM_HASHES probes by double hashing (two
// FNV-1a hashes of the id). About 1 % false positives, each costing a page decoded.
const BLOOM_BITS_PER_ID = 10;
const BLOOM_HASHES = 7;

function hashes(id: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 13;
  }
  return [a >>> 0, (b | 1) >>> 0];
}

/** The filter of `ids`, base64. */
export function bloomOf(ids: readonly string[]): string {
  const bytes = Math.max(8, Math.ceil((ids.length * BLOOM_BITS_PER_ID) / 8));
  const bits = new Uint8Array(bytes);
  const m = bytes * 8;
  for (const id of ids) {
    const [h1, h2] = hashes(id);
    for (let k = 0; k < BLOOM_HASHES; k++) {
      const bit = (h1 + k * h2) % m;
      bits[bit >>> 3] = (bits[bit >>> 3] as number) | (1 << (bit & 7));
    }
  }
  return Buffer.from(bits).toString('base64');
}

/** Whether the filter may hold `id` (false: it certainly does not). */
export function bloomHas(bits: Uint8Array, id: string): boolean {
  const m = bits.length * 8;
  if (m === 0) return false;
  const [h1, h2] = hashes(id);
  for (let k = 0; k < BLOOM_HASHES; k++) {
    const bit = (h1 + k * h2) % m;
    if (((bits[bit >>> 3] as number) & (1 << (bit & 7))) === 0) return false;
  }
  return true;
}

/** A G key's value: its bucket's oldest time and filter, or null when malformed. */
export function parseBucketValue(v: string): { oldestAtMs: number; bloom: Uint8Array } | null {
  const i = v.indexOf(',');
  const oldestAtMs = Number(v.slice(0, i));
  if (i <= 0 || !Number.isSafeInteger(oldestAtMs)) return null;
  return { oldestAtMs, bloom: new Uint8Array(Buffer.from(v.slice(i + 1), 'base64')) };
}
