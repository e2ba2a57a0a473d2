// The coordinator engine's vocabulary: its configuration and I/O, the
// transaction it keeps in memory (Txn, Member, Phase), the answers and
// errors it gives, and the small pure helpers the protocol
// (./commit-protocol.ts), the operator actions (./operator-actions.ts) and
// the read views (./engine-views.ts) share.

import {
  outcomeOfDecision,
  type ClusterOutcome,
  type Decide,
  type DecisionOutcome,
  type Outcome,
  type ParticipantMethod,
  type Prepare,
  type Vote,
  type VoteAnswer,
} from '../domain/protocol.ts';
import type { ApplyResult, Command, Decision, HeuristicRecord, ParticipantRecord, Resolution } from './state.ts';
import { txnIdProblem } from '../domain/txn-id.ts';
import type { TxnStatus } from '../domain/protocol.ts';

/** PREPARE as the engine asks it; the link adds the cluster id. */
export type PrepareRequest = Omit<Prepare, 'clusterId'>;

/** DECISION as the engine sends it; the link adds the cluster id. */
export type DecisionRequest = Omit<Decide, 'clusterId'>;

/** VOTE as the engine hears it: YES or NO, why NO, and a TCC reserve's TTL (checked by the link: 1..30 days). */
export type EngineVote = Pick<VoteAnswer, 'vote' | 'reason' | 'reserveTtlMs'>;

export interface EngineIO {
  nowMs(): number;
  /** A uniform float in [0, 1), for backoff jitter. */
  random(): number;
  /**
   * Proposes a command through Raft; the callback gets the applied result or
   * an error. With `lingerMs` the command may wait up to that long for other
   * proposals to share its log entry (it goes at once with the first that comes).
   */
  propose(cmd: Command, cb: (err: Error | null, result?: ApplyResult) => void, lingerMs?: number): void;
  sendPrepare(
    to: ParticipantRecord,
    req: PrepareRequest,
    timeoutMs: number,
    cb: (err: Error | null, vote?: EngineVote) => void,
  ): void;
  sendDecision(to: ParticipantRecord, req: DecisionRequest, timeoutMs: number, cb: (err: Error | null) => void): void;
  /** The status question of parallel commit's recovery (./parallel-commit.ts). */
  sendStatus(
    to: ParticipantRecord,
    txnId: string,
    timeoutMs: number,
    cb: (err: Error | null, status?: TxnStatus) => void,
  ): void;
  /**
   * A test's fault point, absent in production: the node wires it only from
   * its environment (src/node/fault-point.ts), never from a request.
   * 'halt': the process is about to die here; go no further.
   */
  faultPoint?(point: FaultPoint, txnId: string): 'go-on' | 'halt';
  /**
   * Where leadership is going while it leaves this leader: the node it is
   * being handed to (a transfer under way, or about to start once the
   * transactions in flight have decided), '' when its Raft core has already
   * stepped down and this engine has yet to hear, null while it stays
   * (absent: always null). Meanwhile a new transaction is refused as not the
   * leader, which a client retries elsewhere: the next leader would abort one
   * whose PREPAREs it did not send (R2), a transaction that could have
   * committed (AC3).
   */
  handingOverTo?(): string | null;
}

/**
 * Where a test may stop the leader: after the implied COMMITTED is answered, before the explicit COMMIT is proposed.
 */
export type FaultPoint = 'before-explicit-commit';

export interface EngineConfig {
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  inFlightMax: number;
  participantsMax: number;
  payloadBytesMax: number;
  retryMinMs: number;
  retryMaxMs: number;
  /** Forget records wait at most this long, or until forgetBatchMax are pending. */
  forgetDelayMs: number;
  forgetBatchMax: number;
  /**
   * How far a timed transaction id's creation time may lie ahead of this
   * leader's clock. Bounds how far one id can push the retention horizon.
   */
  clockSkewMaxMs: number;
  /**
   * Untimed ids (no UUIDv7 at the end) at Begin: 'trust' begins them and
   * relies on the client never reusing one whose decision may be forgotten;
   * 'refuse' begins only ids the cluster can prove new (docs/protocol-outcomes.md).
   */
  untimedIds: 'trust' | 'refuse';
  rpcTimeoutMs: number;
  /** An undecided transaction older than this is listed as in doubt (`verdict txn list --in-doubt`). */
  inDoubtAfterMs: number;
  /** Parallel commit for transactions that do not choose (docs/protocol.md, "Parallel commit"). */
  parallelCommit: boolean;
  /**
   * The explicit COMMIT of a transaction already answered COMMITTED (parallel
   * commit) waits up to this long for another proposal, the next
   * transaction's STAGING record say, to share its log entry and its syncs.
   * 0: it is proposed in its own turn.
   */
  explicitCommitLingerMs: number;
}

export const defaultEngineConfig: EngineConfig = {
  defaultTimeoutMs: 30_000,
  maxTimeoutMs: 600_000,
  inFlightMax: 10_000,
  participantsMax: 64,
  payloadBytesMax: 1 << 20,
  retryMinMs: 100,
  retryMaxMs: 10_000,
  forgetDelayMs: 200,
  forgetBatchMax: 512,
  clockSkewMaxMs: 60_000,
  untimedIds: 'trust',
  rpcTimeoutMs: 10_000,
  inDoubtAfterMs: 2_000,
  parallelCommit: false,
  explicitCommitLingerMs: 5,
};

/**
 * The engine's map holds at most this many transactions per inFlightMax (aborted ones remembered, decided ones awaiting
 * ACKs).
 */
export const TXNS_PER_IN_FLIGHT = 4;

export type ClientOutcome = ClusterOutcome;

export interface OutcomeAnswer {
  txnId: string;
  outcome: ClientOutcome;
  reason: string;
  decisionIndex: number;
}

export type OutcomeCallback = (err: EngineError | null, answer?: OutcomeAnswer) => void;

/**
 * What the caller may do next, as the service tells it (src/node/coordinator-service.ts):
 *   not-leader       nothing was done here; ask the leader (or wait for one)
 *   outcome-unknown  the request may have taken effect; retry with the same id (never with begin) or ask the outcome
 *   exists           the id is decided (`recorded` says how): use a new id
 *   exhausted / invalid / precondition  refused, nothing was done
 */
export type EngineErrorCode = 'not-leader' | 'exhausted' | 'invalid' | 'precondition' | 'exists' | 'outcome-unknown';

/** An error the caller can act on; the service maps `code` to a gRPC status. */
export class EngineError extends Error {
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    /** For 'exists': the outcome the log recorded for the id. */
    readonly recorded?: Outcome,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

/**
 * How the Coordinator service answers an engine error: the gRPC status
 * (by name) and the `verdict-reason` metadata a client's retry rule reads
 * (docs/protocol-outcomes.md). The one table of it: the gRPC service
 * (src/node/coordinator-service.ts) and the simulator's RPCs both use it,
 * so the simulator's clients see exactly what the SDK sees.
 */
export interface EngineStatus {
  code:
    | 'UNAVAILABLE'
    | 'DEADLINE_EXCEEDED'
    | 'ALREADY_EXISTS'
    | 'INVALID_ARGUMENT'
    | 'FAILED_PRECONDITION'
    | 'RESOURCE_EXHAUSTED'
    | 'NOT_FOUND';
  reason?: 'NOT_LEADER' | 'UNKNOWN_OUTCOME' | 'ALREADY_DECIDED';
}

/** The engines' error codes: the commit engine's, and 'not-found' of a product's (a saga id nobody started). */
export type StatusErrorCode = EngineErrorCode | 'not-found';

const ENGINE_STATUS: Readonly<Record<StatusErrorCode, EngineStatus>> = {
  'not-leader': { code: 'UNAVAILABLE', reason: 'NOT_LEADER' },
  // "May have taken effect": the gRPC code whose meaning, for a state change, is exactly that.
  'outcome-unknown': { code: 'DEADLINE_EXCEEDED', reason: 'UNKNOWN_OUTCOME' },
  exists: { code: 'ALREADY_EXISTS', reason: 'ALREADY_DECIDED' },
  invalid: { code: 'INVALID_ARGUMENT' },
  precondition: { code: 'FAILED_PRECONDITION' },
  exhausted: { code: 'RESOURCE_EXHAUSTED' },
  'not-found': { code: 'NOT_FOUND' },
};

export function engineStatusOf(code: StatusErrorCode): EngineStatus {
  return ENGINE_STATUS[code];
}

export type Phase = 'begun' | 'preparing' | 'deciding' | 'delivering';

export interface Member {
  record: ParticipantRecord;
  payload: Uint8Array;
  vote: Vote | null;
  voteReason: string;
  /**
   * With a YES that carried a reserve TTL (a TCC participant's): when the reserve runs out, this leader's clock (the
   * vote's arrival plus the TTL). Absent: unknown.
   */
  reserveExpiresAtMs?: number;
  acked: boolean;
  retries: number;
  nextRetryAtMs: number;
  inFlight: boolean;
  /**
   * True once a PREPARE was sent and its fate is unknown or a YES: the
   * participant may hold T prepared. False while no PREPARE left, and after
   * one that provably never reached it (NotDeliveredError): an ABORT is then
   * not owed to it (presumed abort, R3; docs/protocol.md).
   */
  mayBePrepared?: boolean;
  /** Set when its last DECISION was answered UNIMPLEMENTED (a participant without Decide), for `txn show`. */
  unimplemented?: ParticipantMethod;
}

/** What a transaction of this leader carries when it commits in parallel (./parallel-commit.ts). */
export interface ParallelState {
  /** The STAGING proposal: in flight, applied (at `index`), or failed (then T commits the classic way). */
  staged: 'pending' | 'applied' | 'failed';
  index: number;
  /** True once the client was answered COMMITTED from (every YES, STAGING applied). */
  implicit: boolean;
}

export interface Txn {
  id: string;
  phase: Phase;
  /** The term of the leader that began it: only it may commit it (R2). */
  term: number;
  startedAtMs: number;
  /** When the transaction times out and is aborted (an instant, this leader's clock). */
  deadlineAtMs: number;
  members: Map<string, Member>;
  waiters: OutcomeCallback[];
  outcome: DecisionOutcome | null;
  reason: string;
  decisionIndex: number;
  /** While deciding: the outcome proposed (COMMIT only by the term that collected every YES, R2). */
  proposing?: DecisionOutcome;
  /** While deciding: when to propose again after the proposal failed; 0 while one is in flight. */
  reproposeAtMs?: number;
  /** Set when T commits in parallel (./parallel-commit.ts). */
  parallel?: ParallelState;
}

export interface TxnView {
  txnId: string;
  /** 'decided' for a transaction the leader no longer tracks (every ACK came). */
  phase: Phase | 'decided';
  outcome: ClientOutcome;
  reason: string;
  ageMs: number;
  decisionIndex: number;
  /**
   * `unimplemented`: the method it answered UNIMPLEMENTED to (its DECISION, or recovery's status question); '' when
   * none.
   */
  participants: { id: string; vote: Vote | null; acked: boolean; retries: number; unimplemented: string }[];
  heuristics: HeuristicRecord[];
  resolutions: Resolution[];
  /** Participants removed with `participant remove --force` while the decision was still owed to them. */
  removals: Removal[];
}

/** An operator's forced removal of a participant a decision was owed to: who, when, why, at which log index. */
export interface Removal {
  participantId: string;
  operator: string;
  reason: string;
  atMs: number;
  index: number;
}

/** Which transactions `list` returns. */
export type ListFilter = 'all' | 'in-flight' | 'in-doubt' | 'unacked' | 'heuristic';

/** A heuristic act a participant reports (R4): what its operator did by hand, and who, when, why. */
export interface HeuristicReport {
  txnId: string;
  participantId: string;
  outcome: DecisionOutcome;
  gid: string;
  operator: string;
  reason: string;
  atMs: number;
}

/**
 * The leader's view of a participant: when it last heard from it, and how many of its YES votes wait for a decision or
 * an ACK.
 */
export interface ParticipantActivity {
  id: string;
  /** 0: not heard from since this node became leader. */
  lastSeenAtMs: number;
  inDoubt: number;
}

export interface ResolveAnswer {
  answer: OutcomeAnswer;
  /** True when the operator's act made the decision; false when it confirmed the one already logged. */
  decided: boolean;
}

/**
 * Why a transaction aborted, as a small closed set (metrics labels must not
 * carry free text): the class is named where the abort is decided.
 */
export type AbortClass =
  | 'vote_no'
  | 'timeout'
  | 'unreachable'
  | 'client'
  | 'leader_change'
  | 'presumed_abort_query'
  | 'operator'
  | 'heuristic_report'
  | 'staging_recovery';
export const ABORT_CLASSES: readonly AbortClass[] = [
  'vote_no',
  'timeout',
  'unreachable',
  'client',
  'leader_change',
  'presumed_abort_query',
  'operator',
  'heuristic_report',
  'staging_recovery',
];

/** Monotonic counts of what this node's engine did while it led; read-only, for metrics. */
export interface EngineCounters {
  begun: number;
  /** COMMIT decisions applied first while this node led. */
  committed: number;
  aborted: Record<AbortClass, number>;
  /** DECISION deliveries that failed and were rescheduled. */
  decisionRetries: number;
}

export function answerOf(d: Decision): OutcomeAnswer {
  return { txnId: d.txnId, outcome: outcomeOfDecision(d.outcome), reason: d.reason, decisionIndex: d.index };
}

/** What a client is told about t from this leader's memory: in progress until the log decided it. */
export function txnAnswer(t: Txn): OutcomeAnswer {
  if (t.outcome === null) return { txnId: t.id, outcome: 'IN_PROGRESS', reason: t.phase, decisionIndex: 0 };
  return { txnId: t.id, outcome: outcomeOfDecision(t.outcome), reason: t.reason, decisionIndex: t.decisionIndex };
}

/** True while t is begun, preparing or deciding (what counts toward inFlightMax). */
export function isUndecidedPhase(phase: Phase): boolean {
  return phase === 'begun' || phase === 'preparing' || phase === 'deciding';
}

/**
 * Who must acknowledge `outcome` for t: for COMMIT every member; for ABORT
 * every member that was sent PREPARE and did not vote NO (it may be
 * prepared, or may yet prepare from a late PREPARE; a NO voter aborted on
 * its own). A transaction that never sent PREPARE owes nobody anything.
 */
/**
 * Who a decision is delivered to: COMMIT to every participant (each voted
 * YES, AC2); ABORT only to those that may hold T prepared (R3, presumed
 * abort): not a NO voter (it aborted on its own), not one whose PREPARE
 * provably never reached it (NotDeliveredError). A participant whose vote is
 * merely unknown (in flight, timed out, lost) is named: the leader cannot
 * know it did not vote YES.
 */
export function decisionParticipants(t: Txn, outcome: DecisionOutcome): string[] {
  return [...t.members.values()]
    .filter((m) => outcome === 'commit' || (m.vote !== 'no' && m.mayBePrepared !== false))
    .map((m) => m.record.id);
}

export function validateTxnId(id: string): void {
  const problem = txnIdProblem(id);
  if (problem !== null) throw new EngineError('invalid', problem);
}
