// The participant's vocabulary and the small interfaces the pure engine is
// driven through. The real runtime and a simulator implement the same ones:
// a Resource owns the data, a Journal makes records durable, a Clock and a
// Schedule stand in for time. Everything is callback style so a deterministic
// simulator can decide when each callback fires.

import type { ClusterOutcome, Outcome } from '../domain/protocol.ts';
import type { TxnId } from '../domain/txn-id.ts';

// The protocol's vocabulary is the domain's (src/domain); re-exported for the participant package.
export type { ClusterOutcome, Outcome, TxnStatus } from '../domain/protocol.ts';
export type { TxnId } from '../domain/txn-id.ts';

/** Journal records of the transaction state machine: (none) → prepared → committed | aborted. */
export interface PreparedRecord {
  kind: 'prepared';
  txnId: TxnId;
  atMs: number;
  /** The PREPARE payload, base64, so the resource can rebuild its prepared state on replay. */
  payloadB64: string;
  participants: string[];
}

/**
 * A decided record's kind: the outcome in the spelling a participant's
 * records on disk use (lower case, as every journal and heuristic table
 * written so far holds it). Translated to and from the Outcome only by
 * recordKindOf and outcomeOfRecord, where records are written and read.
 */
export type DecidedKind = 'committed' | 'aborted';

export const recordKindOf = (o: Outcome): DecidedKind => (o === 'COMMITTED' ? 'committed' : 'aborted');
export const outcomeOfRecord = (k: DecidedKind): Outcome => (k === 'committed' ? 'COMMITTED' : 'ABORTED');

export interface DecidedRecord {
  kind: DecidedKind;
  txnId: TxnId;
  atMs: number;
}

/**
 * A durable refusal (parallel commit's recovery, docs/protocol.md): this
 * participant answered a status question "not prepared" and promised never
 * to prepare T afterwards, so a delayed PREPARE gets NO. Synced before the
 * answer leaves, like a prepared record (never deferred).
 */
export interface RefusedRecord {
  kind: 'refused';
  txnId: TxnId;
  atMs: number;
}

export type TxnRecord = PreparedRecord | DecidedRecord | RefusedRecord;

/** What a journal's fold remembers of a decided or refused transaction: the record's kind. */
export type Settled = DecidedKind | 'refused';

/** A compaction snapshot's chunk of committed key/value data (memory resource). */
export interface DataRecord {
  kind: 'data';
  entries: [string, string][];
}

/** Everything the participant's journal file holds. */
export type JournalRecord = TxnRecord | DataRecord;

export interface ResourceVote {
  yes: boolean;
  /** Why NO; empty for YES. */
  reason: string;
}

/**
 * The data a participant protects. prepare does everything but commit and
 * says whether it could; NO means nothing is held for the transaction.
 * commit and abort must be idempotent: after a crash the engine may apply a
 * decision the resource already applied.
 */
export interface Resource {
  prepare(txnId: TxnId, payload: Uint8Array, cb: (err: Error | null, vote: ResourceVote) => void): void;
  commit(txnId: TxnId, cb: (err: Error | null) => void): void;
  abort(txnId: TxnId, cb: (err: Error | null) => void): void;
  /**
   * Optional: ABORT arrived for T before it was prepared here. A resource
   * holding work for T before PREPARE (an open PostgreSQL transaction)
   * releases it now instead of waiting for its own timeout. Best effort: the
   * engine ACKs the ABORT whatever happens (nothing was promised for T).
   */
  abortUnprepared?(txnId: TxnId, cb: (err: Error | null) => void): void;
  /**
   * Optional: true when the resource's own prepare of T is durable by the
   * time it answers yes, and is found again after a crash by T's id alone,
   * with no help from the journal (PostgreSQL flushes PREPARE TRANSACTION to
   * its WAL and lists T in pg_prepared_xacts under a gid that spells T's id).
   * The engine then votes YES without waiting for the journal's sync: R4 is
   * kept by the resource, and the prepared record is journaled unsynced.
   * A resource answering true also answers a COMMIT for a T it no longer
   * holds prepared from what it committed (the PostgreSQL commit marker),
   * since after a crash the journal may not know T at all.
   */
  durableAtPrepare?(txnId: TxnId): boolean;
  /**
   * Optional: the engine refused a PREPARE of T without asking the resource,
   * because T is already aborted here (its ABORT came first, or a status
   * question made a durable refusal). A TCC resource counts it as a refused
   * hanging Try, as it counts the ones its own barrier refuses.
   */
  latePrepareRefused?(txnId: TxnId): void;
  /**
   * Optional: how many milliseconds T's reserve has left now (a TCC resource whose Try gave it a TTL), for the YES
   * vote to carry (a duration: the leader counts it from the vote's arrival, so clocks need not agree); undefined when
   * nothing held for T has a TTL. At least 1, so a reserve already past its TTL reads as expired on the leader, never
   * as unknown.
   */
  reserveTtlMs?(txnId: TxnId): number | undefined;
}

/** Append-only and durable: when cb fires with null the record survives a crash. */
export interface Journal {
  append(record: TxnRecord, cb: (err: Error | null) => void): void;
}

export interface Clock {
  nowMs(): number;
}

/** Runs fn once after delayMs; the returned function cancels it. */
export type Schedule = (delayMs: number, fn: () => void) => () => void;

/** Asks the cluster for T's outcome as a participant in doubt (R3: the leader logs ABORT if nothing is decided). */
export type AskOutcome = (txnId: TxnId, cb: (err: Error | null, outcome: ClusterOutcome) => void) => void;
/** One answer of a batched question: the outcome of one id, or why it is not known (asked again later). */
export interface AskedOutcome {
  err: Error | null;
  outcome: ClusterOutcome;
}
/**
 * Many outcome questions in one (Coordinator.GetOutcomes): `err` when the
 * whole question failed (no leader yet), else one answer per asked id (an id
 * missing from the map is asked again later).
 */
export type AskOutcomes = (txnIds: TxnId[], cb: (err: Error | null, answers: Map<TxnId, AskedOutcome>) => void) => void;

/** Error codes the runtime maps one to one onto gRPC status codes. */
export type ParticipantErrorCode =
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'UNAVAILABLE'
  | 'RESOURCE_EXHAUSTED'
  | 'PERMISSION_DENIED';

/** An error the caller can act on: a status code and a reason. */
export class ParticipantError extends Error {
  readonly code: ParticipantErrorCode;
  constructor(code: ParticipantErrorCode, message: string) {
    super(message);
    this.name = 'ParticipantError';
    this.code = code;
  }
}

/**
 * Structured logging without a dependency on pino in the pure layer; a pino
 * Logger fits it. Every line carries the transaction id when there is one.
 */
export interface EngineLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const SILENT_LOG: EngineLog = { info: () => {}, warn: () => {}, error: () => {} };

/** defaults overridden by the options that are set; an option given as undefined keeps its default. */
export function withDefaults<D extends object, O extends object>(defaults: D, given: O): D & O {
  const out = { ...defaults } as Record<string, unknown>;
  for (const [k, v] of Object.entries(given)) if (v !== undefined) out[k] = v;
  return out as D & O;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * A DECISION record (committed / aborted): the journal may let it wait for the next PREPARE's sync (FileJournal's
 * deferred).
 */
export function isDecisionRecord(r: { kind: string }): boolean {
  return r.kind === 'committed' || r.kind === 'aborted';
}

/** Asserts a record read back from disk has the shape it was written with. */
export function isJournalRecord(v: unknown): v is JournalRecord {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  switch (r.kind) {
    case 'prepared':
      return (
        typeof r.txnId === 'string' &&
        r.txnId !== '' &&
        Number.isFinite(r.atMs) &&
        typeof r.payloadB64 === 'string' &&
        BASE64.test(r.payloadB64) &&
        Array.isArray(r.participants) &&
        r.participants.every((p) => typeof p === 'string')
      );
    case 'committed':
    case 'aborted':
    case 'refused':
      return typeof r.txnId === 'string' && r.txnId !== '' && Number.isFinite(r.atMs);
    case 'data':
      return (
        Array.isArray(r.entries) &&
        r.entries.every(
          (e) => Array.isArray(e) && e.length === 2 && typeof e[0] === 'string' && typeof e[1] === 'string',
        )
      );
    default:
      return false;
  }
}

/**
 * Standard base64 with padding; a view over the bytes, no copy (a spread into String.fromCharCode and btoa cost 6× as
 * much per PREPARE).
 */
export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Decodes strictly (atob refuses a character outside the alphabet, where Buffer would skip it). */
export function fromBase64(b64: string): Uint8Array {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
