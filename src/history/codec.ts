// A history record's bytes in the store (./store.ts): a JSON array with its
// fields in a fixed order, times relative to the record's own, votes and
// ACKs as small numbers, this node's ordinary sightings as a time each on
// the participant they concern, and no transaction id (the key holds it).
// Far smaller than the same record as a JSON object, and cheaper to encode,
// which every node does once per transaction. Records written in an
// earlier form (form 2, below without the sightings; the first form, a JSON
// object) are still read, and a saga's record is written as a JSON object.
//
//   [3, outcome, reason, decisionIndex, baseAtMs, decidedΔ, forgottenIndex, forgottenΔ, rowsDropped,
//    [[participantId, vote, acked, ackedΔ?, preparedΔ?, votedΔ?, sentΔ?, ackSeen?], ...], [act, ...],
//    [[atΔ, kind, participantId?, detail?, count?, lastΔ?], ...], beganΔ, proposedΔ, proposed]
//
// The last three are left out when the record has neither (a follower's).
//
// A Δ is a time minus baseAtMs (the decision's time, else the record's
// first); null for a time not known (0 in the record). vote: 0 unknown,
// 1 YES, 2 NO; acked, ackSeen: 0 or 1; a participant's fields after acked
// are left out from the last one that is null or 0. preparedΔ, votedΔ,
// sentΔ, ackSeen: the sightings folded into the participant
// (./record.ts addSighting); `proposed` is '' when it is the outcome. A
// row's kind is a letter for the kinds the node records (KIND_CODES), its
// lastΔ is from its own atMs, and its last fields are left out while they
// hold their defaults ('', '', 1, 0). Read back, the sightings are rows
// again (withSightingRows).
//
// Pure. Reading checks every field: the bytes come from disk.

import type { HistoryAct, HistoryParticipant, HistoryRecord, HistoryRow } from './record.ts';
import { recordProblem, withSightingRows } from './record.ts';

const FORM = 3;
/** The form before the sightings were folded (no beganΔ, proposedΔ, proposed; participants of three or four fields). */
const FORM_2 = 2;
const VOTES = ['', 'yes', 'no'] as const;
/**
 * The row kinds a node records (src/node/history-feed.ts), a letter each; any other kind is written out (never one
 * letter long).
 */
export const KIND_CODES = new Map([
  ['begin', 'b'],
  ['prepare', 'p'],
  ['vote', 'v'],
  ['proposed', 'P'],
  ['decision-sent', 'd'],
  ['ack', 'a'],
  ['no-ack', 'n'],
  ['status', 's'],
]);
export const KINDS = new Map([...KIND_CODES].map(([k, c]) => [c, k]));

/**
 * The time a record is indexed by: its decision's, else its first act's or row's (a transaction known only by a
 * heuristic report).
 */
export function indexAtMs(r: HistoryRecord): number {
  return r.decidedAtMs || r.acts[0]?.atMs || r.rows[0]?.atMs || 0;
}

export function encodeRecord(r: HistoryRecord): string {
  // A saga's record (./record.ts) keeps the first form, a JSON object: its steps, calls and timeline have no positions
  // here.
  if (r.saga !== undefined) return JSON.stringify(r);
  // Built as text, not as arrays handed to JSON.stringify: every node encodes every transaction once, and the garbage
  // counts.
  const base = indexAtMs(r);
  let ps = '';
  for (const p of r.participants) {
    const v = p.vote === 'yes' ? 1 : p.vote === 'no' ? 2 : 0;
    // The optional fields, up to the last one set.
    const opt = [p.ackedAtMs, p.preparedAtMs ?? 0, p.votedAtMs ?? 0, p.sentAtMs ?? 0];
    let n = p.ackSeen ? 5 : 4;
    while (n > 0 && n <= 4 && opt[n - 1] === 0) n--;
    let tail = '';
    for (let i = 0; i < n; i++) tail += i < 4 ? `,${rel(opt[i] as number, base)}` : ',1';
    ps += `${ps === '' ? '' : ','}[${text(p.participantId)},${v},${p.acked ? 1 : 0}${tail}]`;
  }
  let rows = '';
  for (const w of r.rows) {
    const kind = KIND_CODES.get(w.kind) ?? w.kind;
    const last = w.lastAtMs - w.atMs;
    // The fields after the kind, the trailing ones at their defaults left out.
    let tail = '';
    if (w.participantId !== '' || w.detail !== '' || w.count !== 1 || last !== 0) {
      tail = `,${text(w.participantId)}`;
      if (w.detail !== '' || w.count !== 1 || last !== 0) tail += `,${text(w.detail)}`;
      if (w.count !== 1 || last !== 0) tail += `,${w.count}`;
      if (last !== 0) tail += `,${last}`;
    }
    rows += `${rows === '' ? '' : ','}[${w.atMs - base},${text(kind)}${tail}]`;
  }
  const acts = r.acts.length === 0 ? '[]' : JSON.stringify(r.acts);
  const proposed =
    r.proposed === undefined ||
    r.proposed === (r.outcome === 'commit' ? 'COMMIT' : r.outcome === 'abort' ? 'ABORT' : '')
      ? '""'
      : text(r.proposed);
  // The record's own sightings, left out when none (a follower's record).
  const seen =
    r.beganAtMs || r.proposedAtMs
      ? `,${rel(r.beganAtMs ?? 0, base)},${rel(r.proposedAtMs ?? 0, base)},${proposed}`
      : '';
  return `[${FORM},${text(r.outcome)},${text(r.reason)},${r.decisionIndex},${base},${rel(r.decidedAtMs, base)},${r.forgottenIndex},${rel(r.forgottenAtMs, base)},${r.rowsDropped},[${ps}],${acts},[${rows}]${seen}]`;
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
  const form = v[0];
  if (!((form === FORM && (v.length === 12 || v.length === 15)) || (form === FORM_2 && v.length === 12)))
    return `not a record of form ${FORM} or ${FORM_2}`;
  const [
    ,
    outcome,
    reason,
    decisionIndex,
    base,
    decidedRel,
    forgottenIndex,
    forgottenRel,
    rowsDropped,
    ps,
    acts,
    rows,
    beganRel = null,
    proposedRel = null,
    proposed = '',
  ] = v as unknown[];
  if (outcome !== '' && outcome !== 'commit' && outcome !== 'abort') return `outcome ${JSON.stringify(outcome)}`;
  if (typeof reason !== 'string') return 'reason is not text';
  if (!isInt(decisionIndex) || !isInt(base) || !isInt(forgottenIndex) || !isInt(rowsDropped))
    return 'an index, time or count is not a whole number';
  for (const d of [decidedRel, forgottenRel, beganRel, proposedRel])
    if (!(d === null || isInt(d))) return 'a time is not a whole number';
  if (typeof proposed !== 'string') return 'the outcome proposed is not text';
  if (!Array.isArray(ps) || !Array.isArray(acts) || !Array.isArray(rows))
    return 'participants, acts or rows is not a list';
  const at = (d: unknown): number => (d === null ? 0 : (d as number) + base);
  const participants: HistoryParticipant[] = [];
  for (const p of ps) {
    if (
      !Array.isArray(p) ||
      p.length < 3 ||
      p.length > (form === FORM ? 8 : 4) ||
      typeof p[0] !== 'string' ||
      !(p[1] === 0 || p[1] === 1 || p[1] === 2) ||
      !(p[2] === 0 || p[2] === 1)
    )
      return 'a participant is malformed';
    for (let i = 3; i < Math.min(p.length, 7); i++)
      if (!(p[i] === null || isInt(p[i]))) return "a participant's time is not a whole number";
    if (p.length > 7 && p[7] !== 1) return 'a participant is malformed';
    const q: HistoryParticipant = {
      participantId: p[0],
      vote: VOTES[p[1]],
      acked: p[2] === 1,
      ackedAtMs: at(p[3] ?? null),
    };
    // The folded sightings, set only where seen (withSightingRows turns them into rows).
    const [prepared, voted, sent] = [at(p[4] ?? null), at(p[5] ?? null), at(p[6] ?? null)];
    if (prepared) q.preparedAtMs = prepared;
    if (voted) q.votedAtMs = voted;
    if (sent) q.sentAtMs = sent;
    if (p[7] === 1) {
      if (q.ackedAtMs === 0) return 'a participant is malformed';
      q.ackSeen = true;
    }
    participants.push(q);
  }
  const out: HistoryRow[] = [];
  for (const w of rows) {
    if (!Array.isArray(w) || w.length < 2 || w.length > 6) return 'a row is malformed';
    const [at, code, participantId = '', detail = '', count = 1, last = 0] = w as unknown[];
    if (
      !isInt(at) ||
      typeof code !== 'string' ||
      typeof participantId !== 'string' ||
      typeof detail !== 'string' ||
      !isInt(count) ||
      !isInt(last)
    )
      return 'a row is malformed';
    const kind = code.length === 1 ? KINDS.get(code) : code;
    if (kind === undefined) return `a row's kind ${JSON.stringify(code)} is unknown`;
    const atMs = at + base;
    out.push({ atMs, lastAtMs: atMs + last, kind, participantId, detail, count });
  }
  for (const a of acts)
    if (
      a === null ||
      typeof a !== 'object' ||
      typeof (a as HistoryAct).kind !== 'string' ||
      !isInt((a as HistoryAct).index)
    )
      return 'an act is malformed';
  const rec: HistoryRecord = {
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
  if (beganRel !== null) rec.beganAtMs = at(beganRel);
  if (proposedRel !== null) {
    rec.proposedAtMs = at(proposedRel);
    rec.proposed = proposed !== '' ? proposed : outcome === 'commit' ? 'COMMIT' : outcome === 'abort' ? 'ABORT' : '';
  }
  return withSightingRows(rec);
}

function isInt(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x);
}
