// A history record's bytes in the store (./store.ts): a JSON array with its
// fields in a fixed order, times relative to the record's own, votes and
// ACKs as small numbers, and no transaction id (the key holds it). About a
// third of the same record as a JSON object, and cheaper to encode, which
// every node does once per transaction. A record written as a JSON object
// (the first form) is still read, and a saga's record is written in it.
//
//   [2, outcome, reason, decisionIndex, baseAtMs, decidedΔ, forgottenIndex, forgottenΔ, rowsDropped,
//    [[participantId, vote, acked, ackedΔ?], ...], [act, ...], [[atΔ, kind, participantId?, detail?, count?, lastΔ?], ...]]
//
// A Δ is a time minus baseAtMs (the decision's time, else the record's
// first); null for a time not known (0 in the record). vote: 0 unknown,
// 1 YES, 2 NO; acked: 0 or 1. A row's kind is a letter for the kinds the
// node records (KIND_CODES), its lastΔ is from its own atMs, and its last
// fields are left out while they hold their defaults ('', '', 1, 0).
//
// Pure. Reading checks every field: the bytes come from disk.

import type { HistoryAct, HistoryParticipant, HistoryRecord, HistoryRow } from './record.ts';
import { recordProblem } from './record.ts';

const FORM = 2;
const VOTES = ['', 'yes', 'no'] as const;
/** The row kinds a node records (src/node/history-feed.ts), a letter each; any other kind is written out (never one letter long). */
const KIND_CODES = new Map([
  ['begin', 'b'],
  ['prepare', 'p'],
  ['vote', 'v'],
  ['proposed', 'P'],
  ['decision-sent', 'd'],
  ['ack', 'a'],
  ['no-ack', 'n'],
  ['status', 's'],
]);
const KINDS = new Map([...KIND_CODES].map(([k, c]) => [c, k]));
/** A row's fields after its kind at their defaults, as written: participant, detail, count, lastΔ. */
const ROW_DEFAULTS = ['""', '""', '1', '0'];

/** The time a record is indexed by: its decision's, else its first act's or row's (a transaction known only by a heuristic report). */
export function indexAtMs(r: HistoryRecord): number {
  return r.decidedAtMs || r.acts[0]?.atMs || r.rows[0]?.atMs || 0;
}

export function encodeRecord(r: HistoryRecord): string {
  // A saga's record (./record.ts) keeps the first form, a JSON object: its steps, calls and timeline have no positions here.
  if (r.saga !== undefined) return JSON.stringify(r);
  // Built as text, not as arrays handed to JSON.stringify: every node encodes every transaction once, and the garbage counts.
  const base = indexAtMs(r);
  let ps = '';
  for (const p of r.participants) {
    const v = p.vote === 'yes' ? 1 : p.vote === 'no' ? 2 : 0;
    ps += `${ps === '' ? '' : ','}[${text(p.participantId)},${v},${p.acked ? 1 : 0}${p.ackedAtMs === 0 ? '' : `,${p.ackedAtMs - base}`}]`;
  }
  let rows = '';
  for (const w of r.rows) {
    const kind = KIND_CODES.get(w.kind) ?? w.kind;
    const last = w.lastAtMs - w.atMs;
    // The fields after the kind, the trailing ones at their defaults left out.
    const tail = [text(w.participantId), text(w.detail), String(w.count), String(last)];
    let n = tail.length;
    while (n > 0 && tail[n - 1] === ROW_DEFAULTS[n - 1]) n--;
    rows += `${rows === '' ? '' : ','}[${w.atMs - base},${text(kind)}${n > 0 ? `,${tail.slice(0, n).join(',')}` : ''}]`;
  }
  const acts = r.acts.length === 0 ? '[]' : JSON.stringify(r.acts);
  return `[${FORM},${text(r.outcome)},${text(r.reason)},${r.decisionIndex},${base},${rel(r.decidedAtMs, base)},${r.forgottenIndex},${rel(r.forgottenAtMs, base)},${r.rowsDropped},[${ps}],${acts},[${rows}]]`;
}

/** A time relative to `base`, null when not known. */
function rel(atMs: number, base: number): string {
  return atMs === 0 ? 'null' : String(atMs - base);
}

/** A string as JSON: plain ids and words as they are, anything else through JSON.stringify. */
function text(s: string): string {
  return s === '' ? '""' : PLAIN.test(s) ? `"${s}"` : JSON.stringify(s);
}
const PLAIN = /^[A-Za-z0-9 ._:-]*$/;

/** The record `txnId`'s bytes read back, or why they are not a record. */
export function decodeRecord(txnId: string, text: string): HistoryRecord | string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return `does not parse (${(err as Error).message})`;
  }
  if (!Array.isArray(v)) {
    // The first form: the record as a JSON object.
    const problem = recordProblem(v);
    return problem ?? (v as HistoryRecord);
  }
  if (v.length !== 12 || v[0] !== FORM) return `not a record of form ${FORM}`;
  const [, outcome, reason, decisionIndex, base, decidedRel, forgottenIndex, forgottenRel, rowsDropped, ps, acts, rows] = v as unknown[];
  if (outcome !== '' && outcome !== 'commit' && outcome !== 'abort') return `outcome ${JSON.stringify(outcome)}`;
  if (typeof reason !== 'string') return 'reason is not text';
  if (!isInt(decisionIndex) || !isInt(base) || !isInt(forgottenIndex) || !isInt(rowsDropped)) return 'an index, time or count is not a whole number';
  if (!(decidedRel === null || isInt(decidedRel)) || !(forgottenRel === null || isInt(forgottenRel))) return 'a time is not a whole number';
  if (!Array.isArray(ps) || !Array.isArray(acts) || !Array.isArray(rows)) return 'participants, acts or rows is not a list';
  const at = (d: unknown): number => (d === null ? 0 : (d as number) + base);
  const participants: HistoryParticipant[] = [];
  for (const p of ps) {
    if (!Array.isArray(p) || p.length < 3 || typeof p[0] !== 'string' || !(p[1] === 0 || p[1] === 1 || p[1] === 2) || !(p[2] === 0 || p[2] === 1)) return 'a participant is malformed';
    if (p.length > 3 && !isInt(p[3])) return "a participant's ACK time is not a whole number";
    participants.push({ participantId: p[0], vote: VOTES[p[1]], acked: p[2] === 1, ackedAtMs: p.length > 3 ? (p[3] as number) + base : 0 });
  }
  const out: HistoryRow[] = [];
  for (const w of rows) {
    if (!Array.isArray(w) || w.length < 2 || w.length > 6) return 'a row is malformed';
    const [at, code, participantId = '', detail = '', count = 1, last = 0] = w as unknown[];
    if (!isInt(at) || typeof code !== 'string' || typeof participantId !== 'string' || typeof detail !== 'string' || !isInt(count) || !isInt(last)) return 'a row is malformed';
    const kind = code.length === 1 ? KINDS.get(code) : code;
    if (kind === undefined) return `a row's kind ${JSON.stringify(code)} is unknown`;
    const atMs = at + base;
    out.push({ atMs, lastAtMs: atMs + last, kind, participantId, detail, count });
  }
  for (const a of acts) if (a === null || typeof a !== 'object' || typeof (a as HistoryAct).kind !== 'string' || !isInt((a as HistoryAct).index)) return 'an act is malformed';
  return {
    txnId,
    outcome,
    reason,
    decisionIndex,
    decidedAtMs: at(decidedRel),
    participants,
    forgottenIndex,
    forgottenAtMs: at(forgottenRel),
    acts: acts as HistoryAct[],
    rows: out,
    rowsDropped,
  };
}

function isInt(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x);
}
