// The decision batch: one log entry that carries the Decides and Forgets of
// one proposal batch in a compact binary form (docs/storage.md has the byte
// layout). It replaces, on the hot path, one JSON entry per command: one
// entry per batch instead of one per transaction, and no JSON.stringify on
// the leader nor JSON.parse at each follower's edge and at every apply.
//
// A command that fits a batch is only ever read from one: as a JSON entry of
// its own (the JSON commands of ./state.ts, tag 0x02) it is refused
// (./command-check.ts).
//
// Every byte is checked on the way in: this decoder runs at a follower's edge
// (src/node/machine.ts entryProblem) on what a peer sent, and on the node's own
// log at apply. Each length is bounded, nothing is read past the end, trailing
// bytes are refused, and what comes out is a command DecisionTable.apply takes
// without further checks.

import type { ApplyResult, Command } from './state.ts';
import { assert } from '../util/assert.ts';

export const TAG_DECISION_BATCH = 0x04;
/** The layout version after the tag; a node refuses versions it does not know. */
const VERSION = 1;
/** Records in one batch entry, at most. */
export const BATCH_RECORDS_MAX = 4_096;
/** Encoded bytes of one batch entry, at most (the batcher starts a new entry beyond it). */
export const BATCH_BYTES_MAX = 1 << 20;
/** Participants of one decision, and txnIds of one forget, at most. */
const LIST_MAX = 4_096;
/** Strings are length-prefixed with a u16. */
const STRING_BYTES_MAX = 0xffff;

const KIND_DECIDE = 1;
const KIND_FORGET = 2;
const KIND_STAGE = 3;
/** A Decide or Stage with its trace context after the participants (written only when the command has one). */
const KIND_DECIDE_TRACED = 4;
const KIND_STAGE_TRACED = 5;
/** A W3C traceparent as Verdict writes it: version 00, trace id, parent span id, flags, in lower-case hex. */
const TRACEPARENT_BYTES = 55;
const TRACEPARENT_SHAPE = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * Whether `s` is a traceparent a decision record may carry (the shape only: all-zero ids are the sender's to refuse).
 */
export function isRecordTrace(s: unknown): s is string {
  return typeof s === 'string' && s.length === TRACEPARENT_BYTES && TRACEPARENT_SHAPE.test(s);
}
const OUTCOME_COMMIT = 0;
const OUTCOME_ABORT = 1;

export type BatchCommand = Extract<Command, { t: 'decide' } | { t: 'forget' } | { t: 'stage' }>;

const fitsU16 = (s: string): boolean =>
  s.length <= STRING_BYTES_MAX / 3 || Buffer.byteLength(s, 'utf8') <= STRING_BYTES_MAX;

/**
 * Whether `cmd` can ride a batch entry: a Decide without an operator's act
 * (those are rare and keep the JSON form) or a Forget, whose strings and
 * lists fit the layout's bounds. Anything else goes as its own JSON entry.
 */
export function batchable(cmd: Command): cmd is BatchCommand {
  if (cmd.t === 'decide') {
    return (
      cmd.operator === undefined &&
      cmd.txnId !== '' &&
      fitsU16(cmd.txnId) &&
      fitsU16(cmd.reason) &&
      cmd.participants.length <= LIST_MAX &&
      cmd.participants.every(fitsU16) &&
      Number.isFinite(cmd.atMs) &&
      cmd.atMs >= 0 &&
      (cmd.trace === undefined || isRecordTrace(cmd.trace))
    );
  }
  if (cmd.t === 'forget') return cmd.txnIds.length <= LIST_MAX && cmd.txnIds.every(fitsU16);
  if (cmd.t === 'stage') {
    return (
      cmd.txnId !== '' &&
      fitsU16(cmd.txnId) &&
      cmd.participants.length <= LIST_MAX &&
      cmd.participants.every(fitsU16) &&
      Number.isFinite(cmd.atMs) &&
      cmd.atMs >= 0 &&
      (cmd.trace === undefined || isRecordTrace(cmd.trace))
    );
  }
  return false;
}

/** An upper bound of a batchable command's encoded bytes, for cutting batches without encoding twice. */
export function recordBytesBound(cmd: BatchCommand): number {
  if (cmd.t === 'forget') return 3 + cmd.txnIds.reduce((n, id) => n + 2 + 3 * id.length, 0);
  const traced = cmd.trace === undefined ? 0 : 2 + TRACEPARENT_BYTES;
  if (cmd.t === 'stage')
    return traced + 13 + 3 * cmd.txnId.length + cmd.participants.reduce((n, p) => n + 2 + 3 * p.length, 0);
  return (
    traced +
    16 +
    3 * cmd.txnId.length +
    3 * cmd.reason.length +
    cmd.participants.reduce((n, p) => n + 2 + 3 * p.length, 0)
  );
}

/** The bytes one record takes in a batch, after asserting it is one a follower's edge accepts. */
function recordSize(c: BatchCommand): number {
  let size = 0;
  // Paired with decodeDecisionBatch: nothing is written that a follower's edge would refuse.
  if (c.t === 'forget') assert(c.txnIds.length <= LIST_MAX, `a forget record names at most ${LIST_MAX} txnIds`);
  else {
    assert(
      c.txnId !== '' && Number.isFinite(c.atMs) && c.atMs >= 0,
      `${c.txnId || '(empty txnId)'}: a ${c.t} record has a txnId and a finite time ≥ 0, not ${c.atMs}`,
    );
    assert(c.participants.length <= LIST_MAX, `${c.txnId}: a ${c.t} record names at most ${LIST_MAX} participants`);
    assert(
      c.t === 'stage' || c.outcome === 'commit' || c.outcome === 'abort',
      `${c.txnId}: a decide record's outcome is commit or abort`,
    );
  }
  if (c.t !== 'forget' && c.trace !== undefined) {
    if (!isRecordTrace(c.trace))
      throw new RangeError(`${c.txnId}: a decision record's trace is a traceparent of ${TRACEPARENT_BYTES} characters`);
    size += 2 + TRACEPARENT_BYTES;
  }
  if (c.t === 'decide') {
    size += 1 + 1 + 8 + 2 + Buffer.byteLength(c.txnId, 'utf8') + 2 + Buffer.byteLength(c.reason, 'utf8') + 2;
    for (const p of c.participants) size += 2 + Buffer.byteLength(p, 'utf8');
  } else if (c.t === 'stage') {
    size += 1 + 8 + 2 + Buffer.byteLength(c.txnId, 'utf8') + 2;
    for (const p of c.participants) size += 2 + Buffer.byteLength(p, 'utf8');
  } else {
    size += 1 + 2;
    for (const id of c.txnIds) size += 2 + Buffer.byteLength(id, 'utf8');
  }
  return size;
}

/**
 * [tag 0x04][version u8][count u16] then `count` records, big-endian:
 *   decide: [1][outcome u8: 0 commit, 1 abort][atMs f64][txnId][reason][n u16][participant]×n
 *   forget: [2][n u16][txnId]×n
 *   stage:  [3][atMs f64][txnId][n u16][participant]×n   (parallel commit's STAGING record)
 *   decide with a trace: [4] then as decide, then [traceparent]
 *   stage with a trace:  [5] then as stage, then [traceparent]
 * where a string is [byte length u16][UTF-8].
 */
export function encodeDecisionBatch(cmds: readonly BatchCommand[]): Uint8Array {
  if (cmds.length === 0 || cmds.length > BATCH_RECORDS_MAX)
    throw new RangeError(`a decision batch holds 1–${BATCH_RECORDS_MAX} records, not ${cmds.length}`);
  let size = 4;
  for (const c of cmds) size += recordSize(c);
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  const str = (s: string): void => {
    const n = out.write(s, pos + 2, 'utf8');
    if (n > STRING_BYTES_MAX) throw new RangeError(`a string of ${n} bytes does not fit a decision batch`);
    out.writeUInt16BE(n, pos);
    pos += 2 + n;
  };
  out[pos++] = TAG_DECISION_BATCH;
  out[pos++] = VERSION;
  out.writeUInt16BE(cmds.length, pos);
  pos += 2;
  for (const c of cmds) {
    if (c.t === 'decide') {
      out[pos++] = c.trace === undefined ? KIND_DECIDE : KIND_DECIDE_TRACED;
      out[pos++] = c.outcome === 'commit' ? OUTCOME_COMMIT : OUTCOME_ABORT;
      out.writeDoubleBE(c.atMs, pos);
      pos += 8;
      str(c.txnId);
      str(c.reason);
      out.writeUInt16BE(c.participants.length, pos);
      pos += 2;
      for (const p of c.participants) str(p);
      if (c.trace !== undefined) str(c.trace);
    } else if (c.t === 'stage') {
      out[pos++] = c.trace === undefined ? KIND_STAGE : KIND_STAGE_TRACED;
      out.writeDoubleBE(c.atMs, pos);
      pos += 8;
      str(c.txnId);
      out.writeUInt16BE(c.participants.length, pos);
      pos += 2;
      for (const p of c.participants) str(p);
      if (c.trace !== undefined) str(c.trace);
    } else {
      out[pos++] = KIND_FORGET;
      out.writeUInt16BE(c.txnIds.length, pos);
      pos += 2;
      for (const id of c.txnIds) str(id);
    }
  }
  if (pos !== size) throw new Error(`decision batch encoder: wrote ${pos} of ${size} bytes`);
  return out;
}

export function isDecisionBatch(data: Uint8Array): boolean {
  return data.byteLength > 0 && data[0] === TAG_DECISION_BATCH;
}

/** A malformed batch, caught in decodeDecisionBatch and turned into its problem; never escapes this module. */
class Malformed extends Error {}

/**
 * A cursor over one entry's bytes that refuses to read past the end. One
 * class and no closures, and an error's words are put together only when it
 * is thrown: this runs for every entry at a follower's edge and at apply.
 * `what` names the field, `r` its record (-1: the header).
 */
class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  need(n: number, what: string, r: number): void {
    if (this.pos + n > this.buf.byteLength)
      throw new Malformed(
        `${r < 0 ? what : `record ${r}'s ${what}`} (${n} bytes) runs past the entry's ${this.buf.byteLength} bytes`,
      );
  }

  u8(what: string, r: number): number {
    this.need(1, what, r);
    return this.buf[this.pos++];
  }

  u16(what: string, r: number): number {
    this.need(2, what, r);
    const v = (this.buf[this.pos] << 8) | this.buf[this.pos + 1];
    this.pos += 2;
    return v;
  }

  str(what: string, r: number): string {
    const n = this.u16(what, r);
    this.need(n, what, r);
    const start = this.pos;
    this.pos += n;
    // Ids are short ASCII: built by hand, which is cheaper than a UTF-8 decode call for a few dozen bytes.
    if (n <= 64) {
      let s = '';
      for (let i = start; i < start + n; i++) {
        const b = this.buf[i];
        if (b >= 0x80) return this.buf.toString('utf8', start, start + n);
        s += String.fromCharCode(b);
      }
      return s;
    }
    return this.buf.toString('utf8', start, start + n);
  }

  list(what: string, r: number): string[] {
    const n = this.u16(what, r);
    if (n > LIST_MAX) throw new Malformed(`record ${r} has ${n} ${what}, over the limit of ${LIST_MAX}`);
    // Each takes at least its 2-byte length: a count the bytes cannot hold is refused before anything is allocated.
    this.need(2 * n, `${n} ${what}`, r);
    const out = new Array<string>(n);
    for (let i = 0; i < n; i++) out[i] = this.str(what, r);
    return out;
  }
}

export type BatchDecoded = { cmds: BatchCommand[]; problem: null } | { cmds: null; problem: string };

/** The time and transaction id that open a Decide or Stage record. */
function timeAndTxn(rd: Reader, r: number): { atMs: number; txnId: string } {
  rd.need(8, 'time', r);
  const atMs = rd.buf.readDoubleBE(rd.pos);
  rd.pos += 8;
  if (!Number.isFinite(atMs) || atMs < 0) throw new Malformed(`record ${r} has time ${atMs}`);
  const txnId = rd.str('txnId', r);
  if (txnId === '') throw new Malformed(`record ${r} has an empty txnId`);
  return { atMs, txnId };
}

/** A traced record's traceparent, refused unless it has the shape Verdict writes. */
function readTrace(rd: Reader, r: number): string {
  const trace = rd.str('trace', r);
  if (!isRecordTrace(trace)) throw new Malformed(`record ${r}'s trace is not a traceparent`);
  return trace;
}

/** The commands of a batch entry, or why the bytes are not one. Never throws on any input. */
export function decodeDecisionBatch(data: Uint8Array): BatchDecoded {
  const rd = new Reader(Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  try {
    if (rd.u8('the tag', -1) !== TAG_DECISION_BATCH) throw new Malformed(`tag ${rd.buf[0]} is not a decision batch`);
    const version = rd.u8('the version', -1);
    if (version !== VERSION) throw new Malformed(`unknown version ${version}`);
    const count = rd.u16('the record count', -1);
    if (count === 0 || count > BATCH_RECORDS_MAX)
      throw new Malformed(`${count} records (1–${BATCH_RECORDS_MAX} allowed)`);
    const cmds: BatchCommand[] = new Array(count);
    for (let r = 0; r < count; r++) {
      const kind = rd.u8('kind', r);
      if (kind === KIND_DECIDE || kind === KIND_DECIDE_TRACED) {
        const o = rd.u8('outcome', r);
        if (o !== OUTCOME_COMMIT && o !== OUTCOME_ABORT)
          throw new Malformed(`record ${r} has outcome ${o} (0 commit, 1 abort)`);
        const { atMs, txnId } = timeAndTxn(rd, r);
        const reason = rd.str('reason', r);
        const participants = rd.list('participants', r);
        const outcome = o === OUTCOME_COMMIT ? 'commit' : 'abort';
        cmds[r] =
          kind === KIND_DECIDE
            ? { t: 'decide', txnId, outcome, reason, participants, atMs }
            : { t: 'decide', txnId, outcome, reason, participants, atMs, trace: readTrace(rd, r) };
      } else if (kind === KIND_STAGE || kind === KIND_STAGE_TRACED) {
        const { atMs, txnId } = timeAndTxn(rd, r);
        const participants = rd.list('participants', r);
        cmds[r] =
          kind === KIND_STAGE
            ? { t: 'stage', txnId, participants, atMs }
            : { t: 'stage', txnId, participants, atMs, trace: readTrace(rd, r) };
      } else if (kind === KIND_FORGET) {
        cmds[r] = { t: 'forget', txnIds: rd.list('txnIds', r) };
      } else throw new Malformed(`record ${r} has unknown kind ${kind}`);
    }
    if (rd.pos !== rd.buf.byteLength) throw new Malformed(`${rd.buf.byteLength - rd.pos} bytes after the last record`);
    return { cmds, problem: null };
  } catch (err) {
    if (!(err instanceof Malformed)) throw err;
    return { cmds: null, problem: `decision batch: ${err.message}` };
  }
}

/** The results of one applied entry, one per command: a batch's records, or the single result of any other entry. */
export function eachResult(result: ApplyResult | null): readonly ApplyResult[] {
  if (result === null) return [];
  return result.t === 'batch' ? result.results : [result];
}
