// Verdict's protocol vocabulary, one spelling per idea, as the article names
// them: PREPARE / VOTE / DECISION / ACK, a vote YES or NO, a decision COMMIT
// or ABORT, an outcome COMMITTED or ABORTED. The pure layers (commit engine,
// participant engine, simulator) and the SDKs speak only this: `Outcome` and
// `ClusterOutcome` are the very types verdict/client and verdict/participant
// export, so no layer above the wire translates an outcome. The wire's enums
// ('VOTE_YES', 'DECISION_COMMIT', 'OUTCOME_COMMITTED') are translated at the
// transport edge (src/transport/protocol-wire.ts) and nowhere else; the
// lower-case words a participant's journal and heuristic tables store on disk
// are translated where those records are read and written.

/** A participant's answer to PREPARE: YES means prepared and durable (R4). */
export type Vote = 'yes' | 'no';

/**
 * What Decide(T, …) writes into the log: the decision, in the log's own
 * spelling (the records on disk carry it, so it stays).
 */
export type DecisionOutcome = 'commit' | 'abort';

/** A transaction's final outcome (AC1: there is one per transaction). */
export type Outcome = 'COMMITTED' | 'ABORTED';

/**
 * What a question about T may be answered: final, or not known here —
 * IN_PROGRESS (not decided yet: ask again later) or UNKNOWN (never heard of,
 * or forgotten after every participant acknowledged it).
 */
export type ClusterOutcome = Outcome | 'IN_PROGRESS' | 'UNKNOWN';

/** True when `o` is final (COMMITTED or ABORTED). */
export const isFinal = (o: ClusterOutcome): o is Outcome => o === 'COMMITTED' || o === 'ABORTED';

/**
 * A participant's answer to the status question about T (parallel commit's
 * recovery): YES-equivalent (prepared, committed) or never (aborted, refused).
 */
export type TxnStatus = 'prepared' | 'committed' | 'aborted' | 'refused';

export const outcomeOfDecision = (d: DecisionOutcome): Outcome => (d === 'commit' ? 'COMMITTED' : 'ABORTED');
export const decisionOfOutcome = (o: Outcome): DecisionOutcome => (o === 'COMMITTED' ? 'commit' : 'abort');
export const statusOfOutcome = (o: Outcome): TxnStatus => (o === 'COMMITTED' ? 'committed' : 'aborted');

/** PREPARE: do everything but commit, make the prepared state durable, vote. */
export interface Prepare {
  clusterId: string;
  txnId: string;
  participantId: string;
  /** Every participant of the transaction, for the participant's records. */
  participants: string[];
  /** The application's work for this participant, opaque to the coordinator. */
  payload: Uint8Array;
  /** The transaction's remaining budget (a duration). */
  timeoutMs: number;
}

/** VOTE: the answer to one PREPARE. */
export interface VoteAnswer {
  txnId: string;
  participantId: string;
  vote: Vote;
  /** Why NO, or empty. */
  reason: string;
  /**
   * A YES of a TCC participant whose Try gave its reserve a time to live: the
   * milliseconds the reserve has left as the vote leaves (a duration, so the
   * two machines' clocks need not agree; the leader counts it from the vote's
   * arrival). Absent: not given (no TTL, not TCC, or a participant that does
   * not send it). Informational: no decision depends on it.
   */
  reserveTtlMs?: number;
}

/** A reserve TTL longer than this (30 days) is nonsense: a participant refuses it from its Try, a node in a vote. */
export const RESERVE_TTL_MS_MAX = 30 * 24 * 3_600_000;

/** null when `ttlMs` is a reserve TTL a vote may carry (whole ms in 1..RESERVE_TTL_MS_MAX), else why not. */
export function reserveTtlProblem(ttlMs: number): string | null {
  if (ttlMs > RESERVE_TTL_MS_MAX)
    return `reserve TTL ${ttlMs} ms is more than ${RESERVE_TTL_MS_MAX} ms (30 days): a reserve is not held that long`;
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1)
    return `reserve TTL ${ttlMs} ms is not a positive whole number of milliseconds`;
  return null;
}

/** DECISION: the outcome read from the coordinator's applied log (R1). */
export interface Decide {
  clusterId: string;
  txnId: string;
  participantId: string;
  outcome: DecisionOutcome;
  reason: string;
}

/** ACK: the decision is applied and durable at the participant. */
export interface Ack {
  txnId: string;
  participantId: string;
}

/**
 * The optional methods of the participant protocol (proto/participant.proto),
 * by the names a participant lists in `serves` at registration. PREPARE and
 * DECISION are what every participant serves; a method added to the protocol
 * later is optional, and the cluster uses it only with a participant that
 * said it serves it, so a participant built from an older protocol never
 * waits for an answer it cannot give (docs/protocol.md, "Compatibility").
 *
 *   Status    parallel commit's recovery asks it; a transaction commits in
 *             parallel only when every participant of it serves Status.
 *   Exchange  the batched stream; a leader tries it and falls back to the
 *             unary calls on UNIMPLEMENTED, so listing it is a courtesy.
 */
export type OptionalMethod = 'Exchange' | 'Status';

/** What a participant must serve for its transactions to commit in parallel. */
export const PARALLEL_COMMIT_NEEDS: OptionalMethod = 'Status';

/** The methods of verdict.participant.Participant the cluster calls. */
export type ParticipantMethod = 'Prepare' | 'Decide' | 'Exchange' | 'Status';

/**
 * A participant answered UNIMPLEMENTED to a method the cluster needed of it
 * (a participant written from the protos without it, or one that said it
 * serves a method it does not). Made at the transport edge from the gRPC
 * code, so the commit protocol can name the method in its views
 * (`verdict txn show`) without knowing gRPC. Not a transient failure: the
 * call is retried, but it keeps failing until the participant is fixed.
 */
export class MethodUnimplementedError extends Error {
  constructor(
    readonly participantId: string,
    readonly method: ParticipantMethod,
    detail = '',
  ) {
    super(
      `participant ${participantId} does not implement ${method} (gRPC UNIMPLEMENTED${detail ? `: ${detail}` : ''})`,
    );
    this.name = 'MethodUnimplementedError';
  }
}

/**
 * A PREPARE that provably never reached its participant: the connection to
 * it could not be made (refused, no route), or the participant said it has
 * closed. Made at the transport edge; the commit protocol then knows the
 * participant holds nothing prepared for T, so an ABORT is not owed to it
 * (presumed abort, R3). Any failure that may have followed delivery (a
 * timeout, a connection lost mid-call) is not this error.
 */
export class NotDeliveredError extends Error {
  constructor(
    readonly participantId: string,
    message: string,
  ) {
    super(message);
    this.name = 'NotDeliveredError';
  }
}

/** The method a participant lacks when err says so, else null. */
export function unimplementedMethod(err: Error | null | undefined): ParticipantMethod | null {
  return err instanceof MethodUnimplementedError ? err.method : null;
}

/** Names in one `serves` list, at most; each a method name of 1–32 characters. */
export const SERVES_MAX = 16;
const SERVED_METHOD = /^[A-Z][A-Za-z0-9]{0,31}$/;

/** Why a `serves` list is refused, or null. Names this version does not know are kept: a newer leader may use them. */
export function servesProblem(serves: readonly string[]): string | null {
  if (serves.length > SERVES_MAX) return `serves names ${serves.length} methods (limit ${SERVES_MAX})`;
  const bad = serves.find((m) => !SERVED_METHOD.test(m));
  if (bad !== undefined)
    return `serves: ${JSON.stringify(bad.slice(0, 40))} is not a method name (1–32 of A-Z, a-z, 0-9, starting with an upper-case letter)`;
  return null;
}

/** One spelling of a `serves` list: sorted, each name once, so equal lists compare equal. */
export function normalServes(serves: readonly string[]): string[] {
  return [...new Set(serves)].sort();
}
