// The coordinator engine: the leader's side of Paxos Commit on the Raft log.
//
//   client Commit(T) → PREPARE to every participant → VOTEs
//     all YES (and still the leader of the term that sent PREPARE) → propose Decide(T, COMMIT)
//     a NO, an unreachable participant or the deadline → propose Decide(T, ABORT)
//   Decide applied → answer the client from applied state (R1) → DECISION to every
//   participant that may be prepared, retried with capped exponential backoff
//   until ACKed → Forget(T), batched (R5)
//
// An answered outcome never changes: every outcome a client or a participant
// is told is in the log before it is told, ABORT included. The ABORT entry
// rides the same group-committed proposal batch as the COMMITs (src/node/node.ts),
// so it costs no round of its own. The decided id can then never be begun
// again (the table remembers it, then its tombstone, then the retention
// horizon of src/commit/state.ts refuses its time).
//
// Pure: time, randomness and I/O come in through EngineIO, with callbacks, so
// the simulator can run this code on a seeded schedule. Only the leader's
// engine is active; a node that loses leadership drops its in-memory state,
// and a new leader re-drives every decided-but-unforgotten transaction it
// finds in the table. It never resumes another leader's prepare (R2): a
// Commit for a transaction it did not begin is answered by logging ABORT.

import type { ClusterOutcome, Decide, DecisionOutcome, Prepare, Vote } from '../domain/protocol.ts';
import type { ApplyResult, Command, Decision, DecisionTable, HeuristicRecord, OperatorAct, ParticipantRecord, Resolution } from './state.ts';
import { beginRefusal, forgottenReason, futureIdRefusal } from './id-newness.ts';
import { txnIdProblem } from '../domain/txn-id.ts';
import type { TxnStatus } from '../participant/types.ts';
import { ParallelCommit, type ParallelState } from './parallel-commit.ts';

/** PREPARE as the engine asks it; the link adds the cluster id. */
export type PrepareRequest = Omit<Prepare, 'clusterId'>;

/** DECISION as the engine sends it; the link adds the cluster id. */
export type DecisionRequest = Omit<Decide, 'clusterId'>;

export interface EngineIO {
  nowMs(): number;
  /** A uniform float in [0, 1), for backoff jitter. */
  random(): number;
  /** Proposes a command through Raft; the callback gets the applied result or an error. */
  propose(cmd: Command, cb: (err: Error | null, result?: ApplyResult) => void): void;
  sendPrepare(to: ParticipantRecord, req: PrepareRequest, timeoutMs: number, cb: (err: Error | null, vote?: { vote: Vote; reason: string }) => void): void;
  sendDecision(to: ParticipantRecord, req: DecisionRequest, timeoutMs: number, cb: (err: Error | null) => void): void;
  /** The status question of parallel commit's recovery (src/commit/parallel-commit.ts). */
  sendStatus(to: ParticipantRecord, txnId: string, timeoutMs: number, cb: (err: Error | null, status?: TxnStatus) => void): void;
}

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
  rpcDeadlineMs: number;
  /** An undecided transaction older than this is listed as in doubt (`verdict txn list --in-doubt`). */
  inDoubtAfterMs: number;
  /** Parallel commit for transactions that do not choose (docs/protocol.md, "Parallel commit"). */
  parallelCommit: boolean;
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
  rpcDeadlineMs: 10_000,
  inDoubtAfterMs: 2_000,
  parallelCommit: false,
};

/** The engine's map holds at most this many transactions per inFlightMax (aborted ones remembered, decided ones awaiting ACKs). */
const TXNS_PER_IN_FLIGHT = 4;

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
    readonly recorded?: 'committed' | 'aborted',
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

export type Phase = 'begun' | 'preparing' | 'deciding' | 'delivering';

export interface Member {
  record: ParticipantRecord;
  payload: Uint8Array;
  vote: Vote | null;
  voteReason: string;
  acked: boolean;
  retries: number;
  nextRetryAtMs: number;
  inFlight: boolean;
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
  /** Set when T commits in parallel (src/commit/parallel-commit.ts). */
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
  participants: { id: string; vote: Vote | null; acked: boolean; retries: number }[];
  heuristics: HeuristicRecord[];
  resolutions: Resolution[];
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

/** The leader's view of a participant: when it last heard from it, and how many of its YES votes wait for a decision or an ACK. */
export interface ParticipantActivity {
  id: string;
  /** 0: not heard from since this node became leader. */
  lastSeenMs: number;
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
export type AbortClass = 'vote_no' | 'timeout' | 'unreachable' | 'client' | 'leader_change' | 'presumed_abort_query' | 'operator' | 'heuristic_report' | 'staging_recovery';
export const ABORT_CLASSES: readonly AbortClass[] = ['vote_no', 'timeout', 'unreachable', 'client', 'leader_change', 'presumed_abort_query', 'operator', 'heuristic_report', 'staging_recovery'];

/** Monotonic counts of what this node's engine did while it led; read-only, for metrics. */
export interface EngineCounters {
  begun: number;
  /** COMMIT decisions applied first while this node led. */
  committed: number;
  aborted: Record<AbortClass, number>;
  /** DECISION deliveries that failed and were rescheduled. */
  decisionRetries: number;
}

export class CoordinatorEngine {
  protected readonly cfg: EngineConfig;
  protected readonly stats: EngineCounters = {
    begun: 0,
    committed: 0,
    aborted: { vote_no: 0, timeout: 0, unreachable: 0, client: 0, leader_change: 0, presumed_abort_query: 0, operator: 0, heuristic_report: 0, staging_recovery: 0 },
    decisionRetries: 0,
  };
  private leaderTerm = 0;
  protected readonly txns = new Map<string, Txn>();
  /** Forget(T) waiting to be proposed, batched off the critical path (R5). */
  private forgetQueue: string[] = [];
  private forgetSinceMs = 0;
  private forgetInFlight = false;
  /** When each registered participant was last heard from (an answer, a question, a report); bounded by the registry. */
  private readonly lastSeen = new Map<string, number>();
  /** Parallel commit: the STAGING record, the implicit COMMITTED, and recovery of staged transactions. */
  protected readonly pc: ParallelCommit;

  constructor(
    private readonly table: DecisionTable,
    protected readonly io: EngineIO,
    cfg: Partial<EngineConfig> = {},
  ) {
    this.cfg = { ...defaultEngineConfig, ...cfg };
    this.pc = this.parallelCommit({
      io,
      table,
      cfg: this.cfg,
      proposeCommit: (t) => this.proposeCommit(t),
      countRecoveryAbort: () => this.stats.aborted.staging_recovery++,
    });
  }

  /** The parallel-commit halves; a test mutant swaps them. */
  protected parallelCommit(host: ConstructorParameters<typeof ParallelCommit>[0]): ParallelCommit {
    return new ParallelCommit(host);
  }

  isLeader(): boolean {
    return this.leaderTerm > 0;
  }

  inFlight(): number {
    return this.txns.size;
  }

  counters(): EngineCounters {
    return { ...this.stats, aborted: { ...this.stats.aborted } };
  }

  /**
   * How many of this leader's transactions are in each phase: begun,
   * preparing and deciding are undecided; delivering ones (COMMIT or ABORT)
   * wait for ACKs (R5).
   */
  phases(): Record<Phase, number> {
    const n: Record<Phase, number> = { begun: 0, preparing: 0, deciding: 0, delivering: 0 };
    for (const t of this.txns.values()) n[t.phase]++;
    return n;
  }

  // ---- leadership ------------------------------------------------------

  /** Called when this node becomes leader of `term`, or stops leading (term 0). */
  setLeadership(term: number): void {
    if (term === this.leaderTerm) return;
    const was = this.leaderTerm;
    this.leaderTerm = term;
    if (was > 0) this.dropAll();
    if (term > 0) {
      // Re-drive every decision still in the table: its participants may not
      // have heard it, or their ACKs died with the previous leader (R5).
      for (const d of this.table.decisions.values()) this.deliver(d);
      // A STAGING record with no decision: its stager is gone; recover it.
      for (const id of this.table.staged.keys()) this.pc.start(id);
    }
  }

  private dropAll(): void {
    const err = new EngineError('outcome-unknown', 'leadership changed while the transaction was in flight; retry Commit with the same id on the new leader, or query its outcome');
    for (const t of this.txns.values()) for (const w of t.waiters.splice(0)) w(err);
    this.txns.clear();
    this.pc.drop(err);
    this.forgetQueue = [];
    this.forgetInFlight = false;
  }

  private requireLeader(): void {
    if (!this.isLeader()) throw new EngineError('not-leader', 'not the leader');
  }

  // ---- client API --------------------------------------------------------

  begin(txnId: string, timeoutMs: number): { deadlineAtMs: number } {
    this.requireLeader();
    validateTxnId(txnId);
    const now = this.io.nowMs();
    const existing = this.txns.get(txnId);
    // R7: a repeated Begin of an undecided transaction answers as the first did.
    if (existing && existing.outcome === null) return { deadlineAtMs: existing.deadlineAtMs };
    this.refuseUnlessNew(txnId);
    if (this.pc.isStaged(txnId)) throw new EngineError('outcome-unknown', `transaction ${txnId} was staged by an earlier leader (parallel commit) and is being recovered; query its outcome`);
    if (this.txns.size >= this.cfg.inFlightMax) this.checkRoom();
    const t = timeoutMs > 0 ? timeoutMs : this.cfg.defaultTimeoutMs;
    if (t > this.cfg.maxTimeoutMs) throw new EngineError('invalid', `timeout ${t} ms exceeds the limit of ${this.cfg.maxTimeoutMs} ms`);
    this.stats.begun++;
    this.txns.set(txnId, {
      id: txnId,
      phase: 'begun',
      term: this.leaderTerm,
      startedAtMs: now,
      deadlineAtMs: now + t,
      members: new Map(),
      waiters: [],
      outcome: null,
      reason: '',
      decisionIndex: 0,
    });
    return { deadlineAtMs: now + t };
  }

  /** Begin's id check (src/commit/id-newness.ts): a decided id, or one that cannot be proved new, is never begun again. */
  private refuseUnlessNew(txnId: string): void {
    const r = beginRefusal(this.table, txnId, this.io.nowMs(), this.cfg);
    if (r) throw new EngineError(r.code, r.message, r.recorded);
  }

  private forgotten(txnId: string): EngineError {
    return new EngineError('precondition', forgottenReason(this.table, txnId));
  }

  /**
   * Only undecided transactions (begun, preparing, deciding) count toward
   * inFlightMax: an aborted one is remembered for idempotent retries but no
   * longer holds a place, and a decided one waiting for ACKs is the
   * participants' business. Counted only at the bound, so the common path
   * stays O(1); the map as a whole is still bounded (TXNS_PER_IN_FLIGHT).
   * The refusal names what holds the limit: counts by phase and the oldest ids.
   */
  private checkRoom(): void {
    const undecided: Txn[] = [];
    for (const t of this.txns.values()) if (t.phase === 'begun' || t.phase === 'preparing' || t.phase === 'deciding') undecided.push(t);
    if (undecided.length < this.cfg.inFlightMax && this.txns.size < this.cfg.inFlightMax * TXNS_PER_IN_FLIGHT) return;
    const p = this.phases();
    const oldest = undecided
      .sort((a, b) => a.startedAtMs - b.startedAtMs)
      .slice(0, 3)
      .map((t) => t.id);
    const held = `${undecided.length} undecided (begun ${p.begun}, preparing ${p.preparing}, deciding ${p.deciding}), ${p.delivering} delivering`;
    throw new EngineError(
      'exhausted',
      `the leader holds ${held}: limit inFlightMax=${this.cfg.inFlightMax} undecided (${this.cfg.inFlightMax * TXNS_PER_IN_FLIGHT} in all); oldest undecided: ${oldest.join(', ') || 'none'}; commit or abort them, or retry later`,
    );
  }

  /** True while txnId is begun, preparing or deciding on this leader (what counts toward inFlightMax). */
  isUndecided(txnId: string): boolean {
    const t = this.txns.get(txnId);
    return t !== undefined && (t.phase === 'begun' || t.phase === 'preparing' || t.phase === 'deciding');
  }

  /** The leader check and id check every client call starts with; false once cb got the error. */
  private accept(txnId: string, cb: OutcomeCallback): boolean {
    try {
      this.requireLeader();
      validateTxnId(txnId);
      return true;
    } catch (err) {
      cb(err as EngineError);
      return false;
    }
  }

  /**
   * `begin` set: begin the transaction first unless this leader already has
   * (one round trip for the client). The client sets it on its first attempt
   * only, so a retry that reaches a leader which did not begin T still finds
   * no T and aborts it (R2).
   */
  commit(txnId: string, enlist: { participantId: string; payload: Uint8Array }[], cb: OutcomeCallback, begin?: { timeoutMs: number }, parallelCommit?: boolean): void {
    if (!this.accept(txnId, cb)) return;
    const decided = this.table.lookup(txnId);
    // A Commit that begins is a new transaction (the SDK sends begin on a first attempt only): a decided id is refused, not answered.
    if (decided && begin !== undefined) {
      try {
        this.refuseUnlessNew(txnId);
      } catch (err) {
        return cb(err as EngineError);
      }
    }
    if (decided) {
      this.deliverToEnlisted(decided, enlist);
      return cb(null, answerOf(decided));
    }
    // Staged by an earlier leader: only recovery decides it (never a presumed ABORT).
    if (!this.txns.has(txnId) && this.pc.isStaged(txnId)) return this.pc.wait(txnId, cb);
    if (begin !== undefined && !this.txns.has(txnId)) {
      try {
        this.begin(txnId, begin.timeoutMs);
      } catch (err) {
        return cb(err as EngineError);
      }
    }
    const t = this.txns.get(txnId);
    if (!t) {
      if (this.table.beyondHorizon(txnId)) return cb(this.forgotten(txnId));
      // R2: we did not begin it, so another leader may have prepared it. The
      // enlisted participants are the ones that may be: ABORT goes to them until acknowledged.
      const named = this.validateEnlistment(enlist) === null ? enlist.map((e) => e.participantId) : [];
      return this.logAbort(txnId, 'the transaction was not begun on the current leader (leader change?); it is aborted', 'leader_change', cb, named);
    }
    if (t.outcome !== null) return cb(null, this.answerFor(t));
    const implicit = this.pc.implicitAnswer(t);
    if (implicit) return cb(null, implicit);
    if (t.phase !== 'begun') {
      t.waiters.push(cb);
      return;
    }
    const err = this.validateEnlistment(enlist);
    if (err) return cb(err);
    for (const e of enlist) {
      const record = this.table.participants.get(e.participantId) as ParticipantRecord;
      t.members.set(e.participantId, { record, payload: e.payload, vote: null, voteReason: '', acked: false, retries: 0, nextRetryAtMs: 0, inFlight: false });
    }
    t.waiters.push(cb);
    t.phase = 'preparing';
    this.prepare(t);
    if (parallelCommit ?? this.cfg.parallelCommit) this.pc.stage(t);
  }

  /**
   * A retried Commit names participants the leader that sent PREPARE may have
   * prepared. An ABORT logged without them (a participant's question, R3,
   * named only the one that asked) must reach them too: a no-op Decide adds
   * them to the decision, which is then delivered to them until they
   * acknowledge (a forgotten one lives again for that).
   */
  private deliverToEnlisted(d: Decision, enlist: { participantId: string; payload: Uint8Array }[]): void {
    if (d.outcome !== 'abort' || this.validateEnlistment(enlist) !== null) return;
    const t = this.txns.get(d.txnId);
    // A NO voter aborted on its own: it is owed nothing.
    const missing = enlist.map((e) => e.participantId).filter((p) => !d.participants.includes(p) && t?.members.get(p)?.vote !== 'no');
    if (missing.length === 0) return;
    this.io.propose({ t: 'decide', txnId: d.txnId, outcome: 'abort', reason: d.reason, participants: missing, atMs: this.io.nowMs() }, () => {});
  }

  abort(txnId: string, reason: string, cb: OutcomeCallback): void {
    if (!this.accept(txnId, cb)) return;
    const decided = this.table.lookup(txnId);
    if (decided) return cb(null, answerOf(decided));
    const t = this.txns.get(txnId);
    const why = reason || 'aborted by the application';
    if (!t) {
      if (this.table.beyondHorizon(txnId)) return cb(this.forgotten(txnId));
      if (this.pc.isStaged(txnId)) return this.pc.wait(txnId, cb);
      return this.logAbort(txnId, why, 'client', cb);
    }
    if (t.phase === 'delivering') return cb(null, this.answerFor(t));
    // A decision already proposed is what the log will tell; otherwise ABORT is proposed now.
    t.waiters.push(cb);
    this.decideAbort(t, why, 'client');
  }

  /**
   * Outcome of `txnId`. From a participant in doubt (`participantId` set),
   * an undecided transaction this leader is not working on is aborted
   * through the log first (R3); from a client it is `unknown`.
   */
  outcome(txnId: string, participantId: string, cb: OutcomeCallback): void {
    const problem = txnIdProblem(txnId);
    if (problem !== null) return cb(new EngineError('invalid', problem));
    if (participantId !== '') this.heardFrom(participantId);
    const decided = this.table.lookup(txnId);
    if (decided) return cb(null, answerOf(decided));
    if (!this.isLeader()) return cb(new EngineError('not-leader', 'not the leader'));
    this.answerUndecided(txnId, participantId, cb);
  }

  /** outcome() on the leader for a transaction with no decision applied. */
  protected answerUndecided(txnId: string, participantId: string, cb: OutcomeCallback): void {
    const t = this.txns.get(txnId);
    // A client may hear an implicit COMMITTED again; a participant learns its decision from the log only (R4).
    if (t) return cb(null, (participantId === '' ? this.pc.implicitAnswer(t) : null) ?? this.answerFor(t));
    if (this.pc.isStaged(txnId)) {
      // A prepared participant waits for recovery's decision; a client hears that one is coming.
      if (participantId !== '') return this.pc.wait(txnId, cb);
      this.pc.start(txnId);
      return cb(null, { txnId, outcome: 'in-progress', reason: 'staged (parallel commit); a new leader is recovering it', decisionIndex: 0 });
    }
    if (participantId === '') return cb(null, { txnId, outcome: 'unknown', reason: 'no decision is recorded for this transaction', decisionIndex: 0 });
    // A participant in doubt on a forgotten decision cannot be answered from the log: ABORT could contradict it. Its operator decides (R4).
    if (this.table.beyondHorizon(txnId)) return cb(null, { txnId, outcome: 'unknown', reason: forgottenReason(this.table, txnId), decisionIndex: 0 });
    const asker = this.table.participants.has(participantId) ? [participantId] : [];
    this.logAbort(txnId, `participant ${participantId} was in doubt and no decision was logged (presumed abort)`, 'presumed_abort_query', cb, asker);
  }

  /**
   * The transactions this leader knows, by filter: 'in-flight' those it is
   * working on (undecided, or decided and not acknowledged by all),
   * 'in-doubt' the undecided ones older than inDoubtAfterMs, 'unacked' the
   * decided ones some participant has not acknowledged, 'heuristic' every
   * transaction with a heuristic record or an operator's resolution (kept
   * after Forget), 'all' the in-flight ones and the decisions still in the
   * table.
   */
  list(filter: ListFilter, limit: number): TxnView[] {
    const out: TxnView[] = [];
    const push = (v: TxnView | null): boolean => {
      if (v && out.length < limit) out.push(v);
      return out.length < limit;
    };
    if (filter === 'heuristic') {
      const ids = new Set([...this.table.heuristics.keys(), ...this.table.resolutions.keys()]);
      for (const id of ids) if (!push(this.view(id))) break;
      return out;
    }
    const now = this.io.nowMs();
    for (const t of this.txns.values()) {
      const undecided = t.phase === 'begun' || t.phase === 'preparing' || t.phase === 'deciding';
      if (filter === 'in-doubt' && !(undecided && now - t.startedAtMs >= this.cfg.inDoubtAfterMs)) continue;
      if (filter === 'unacked' && !(t.phase === 'delivering' && [...t.members.values()].some((m) => !m.acked))) continue;
      if (!push(this.viewOf(t))) return out;
    }
    if (filter !== 'all') return out;
    for (const d of this.table.decisions.values()) {
      if (this.txns.has(d.txnId)) continue;
      if (!push(this.view(d.txnId))) break;
    }
    return out;
  }

  /** One transaction as this leader knows it, or null if it knows nothing of it. */
  view(txnId: string): TxnView | null {
    const t = this.txns.get(txnId);
    if (t) return this.viewOf(t);
    const d = this.table.lookup(txnId);
    const heuristics = this.table.heuristics.get(txnId) ?? [];
    const resolutions = this.table.resolutions.get(txnId) ?? [];
    if (!d && heuristics.length === 0 && resolutions.length === 0) return null;
    const now = this.io.nowMs();
    // A forgotten decision (a tombstone) has no decision time: its age is
    // that of the oldest heuristic report or resolution on record instead.
    const sinceAtMs = d && d.decidedAtMs > 0 ? d.decidedAtMs : Math.min(...heuristics.map((h) => h.atMs), ...resolutions.map((r) => r.atMs), now);
    return {
      txnId,
      phase: 'decided',
      outcome: d ? (d.outcome === 'commit' ? 'committed' : 'aborted') : 'unknown',
      reason: d?.reason ?? '',
      ageMs: Math.max(0, now - sinceAtMs),
      decisionIndex: d?.index ?? 0,
      participants: (d?.participants ?? []).map((id) => ({ id, vote: null, acked: false, retries: 0 })),
      heuristics: [...heuristics],
      resolutions: [...resolutions],
    };
  }

  private viewOf(t: Txn): TxnView {
    const a = this.answerFor(t);
    return {
      txnId: t.id,
      phase: t.phase,
      outcome: a.outcome,
      reason: t.reason,
      ageMs: this.io.nowMs() - t.startedAtMs,
      decisionIndex: t.decisionIndex,
      participants: [...t.members.values()].map((m) => ({ id: m.record.id, vote: m.vote, acked: m.acked, retries: m.retries })),
      heuristics: [...(this.table.heuristics.get(t.id) ?? [])],
      resolutions: [...(this.table.resolutions.get(t.id) ?? [])],
    };
  }

  /** Every registered participant as this leader sees it: last heard from, and its YES votes still waiting for a decision or an ACK. */
  participantActivity(): ParticipantActivity[] {
    const inDoubt = new Map<string, number>();
    for (const t of this.txns.values()) {
      for (const m of t.members.values()) {
        // Prepared there and not yet told (or not yet acknowledged) the outcome.
        const waiting = t.phase === 'delivering' ? !m.acked && m.vote !== 'no' : m.vote === 'yes';
        if (waiting) inDoubt.set(m.record.id, (inDoubt.get(m.record.id) ?? 0) + 1);
      }
    }
    return [...this.table.participants.keys()].map((id) => ({ id, lastSeenMs: this.lastSeen.get(id) ?? 0, inDoubt: inDoubt.get(id) ?? 0 }));
  }

  /** Notes that participantId was heard from now (only registered ids are kept, so the map is bounded by the registry). */
  heardFrom(participantId: string): void {
    if (this.table.participants.has(participantId)) this.lastSeen.set(participantId, this.io.nowMs());
  }

  // ---- heuristic outcomes and operators' resolutions (R4) ----------------

  /**
   * A participant reports that its operator decided T by hand. The report is
   * compared with T's decision where every node sees it (the `heuristic`
   * command, src/commit/state.ts); an undecided T is first decided through
   * the log the way an in-doubt participant's question is (R3): ABORT, since
   * this leader cannot have every YES for a transaction it is not deciding.
   * A repeated report answers the first record (R7).
   */
  reportHeuristic(r: HeuristicReport, cb: (err: EngineError | null, record?: HeuristicRecord) => void): void {
    try {
      this.requireLeader();
      validateTxnId(r.txnId);
    } catch (err) {
      return cb(err as EngineError);
    }
    if (!this.table.participants.has(r.participantId)) return cb(new EngineError('precondition', `participant ${r.participantId} is not registered with this cluster`));
    this.heardFrom(r.participantId);
    const known = this.table.heuristics.get(r.txnId)?.find((h) => h.participantId === r.participantId);
    if (known) return cb(null, known);
    const record = (): void =>
      this.io.propose({ t: 'heuristic', txnId: r.txnId, participantId: r.participantId, outcome: r.outcome, gid: r.gid, operator: r.operator, reason: r.reason, atMs: r.atMs }, (err, res) => {
        if (err || !res || res.t !== 'heuristic') return cb(new EngineError('outcome-unknown', `the heuristic report could not be logged (${err?.message ?? 'no result'}); retry`));
        cb(null, res.record);
      });
    this.decideFirst(
      r.txnId,
      `participant ${r.participantId} was resolved by hand (heuristic ${r.outcome.toUpperCase()} by ${r.operator}: ${r.reason}); no decision was logged, so the transaction is aborted`,
      'heuristic_report',
      (err) => (err ? cb(err) : record()),
    );
  }

  /**
   * Makes sure T has a logged decision, then calls back: a decided T at once;
   * a T whose COMMIT is being proposed when the log says; any other undecided
   * T after ABORT is logged (presumed abort, R3: this leader holds no YES
   * from every participant that it could still turn into COMMIT).
   */
  private decideFirst(txnId: string, reason: string, why: AbortClass, cb: (err: EngineError | null) => void): void {
    if (this.table.lookup(txnId)) return cb(null);
    const t = this.txns.get(txnId);
    if (t) {
      // Deciding already: the log will tell. Otherwise ABORT is proposed now, and applied before cb.
      t.waiters.push((err) => cb(err));
      this.decideAbort(t, reason, why);
      return;
    }
    if (this.pc.isStaged(txnId)) return this.pc.wait(txnId, (err) => cb(err));
    this.logAbort(txnId, reason, why, (err) => cb(err));
  }

  /**
   * `verdict txn resolve`: an operator asks for an outcome on the cluster
   * side, recorded in the log with who, when and why. ABORT of an undecided
   * T decides it (presumed abort needs no vote). COMMIT of an undecided T is
   * refused unless this leader is already committing it with every YES in
   * hand: AC2 (COMMIT only if every participant voted YES) is never traded
   * away. Against a decided T the same outcome is confirmed (and recorded);
   * the contrary one is refused: a decision is never reversed (R1).
   */
  resolve(txnId: string, outcome: DecisionOutcome, act: Omit<OperatorAct, 'atMs'> & { forceUnknown?: boolean }, cb: (err: EngineError | null, r?: ResolveAnswer) => void): void {
    try {
      this.requireLeader();
      validateTxnId(txnId);
    } catch (err) {
      return cb(err as EngineError);
    }
    const want = outcome === 'commit' ? 'COMMIT' : 'ABORT';
    const contrary = (d: DecisionOutcome): EngineError =>
      new EngineError(
        'precondition',
        `transaction ${txnId} is decided ${d === 'commit' ? 'COMMIT' : 'ABORT'}; ${want} is refused: the cluster never reverses a decision (R1). ` +
          `If a participant cannot apply the decision and must be forced by hand while the cluster is unreachable, that is a heuristic act at the participant: verdict participant resolve ${txnId} --${outcome} --reason TEXT`,
      );
    const decided = this.table.lookup(txnId);
    if (decided && decided.outcome !== outcome) return cb(contrary(decided.outcome));
    const t = this.txns.get(txnId);
    // Staged by an earlier leader: recovery decides it (an operator's ABORT
    // could contradict an implicit COMMITTED); the act is then recorded
    // against that decision, or refused.
    if (!decided && !t && this.pc.isStaged(txnId)) return this.pc.wait(txnId, (err) => (err ? cb(err) : this.resolve(txnId, outcome, act, cb)));
    // A mistyped id would otherwise be decided and listed as an operator's
    // act on a transaction nobody ran: an id with no trace here is refused
    // unless the operator says it is meant (a transaction begun on an earlier
    // leader leaves no trace on this one).
    if (!decided && !t && !this.table.heuristics.has(txnId) && !this.table.resolutions.has(txnId) && act.forceUnknown !== true) {
      return cb(
        new EngineError(
          'precondition',
          `the cluster has no record of transaction ${txnId} (not in flight on this leader, no decision, no heuristic report): a mistyped id? See verdict txn list. ` +
            `A transaction begun on an earlier leader leaves no record here, and its prepared participants ask the cluster themselves (presumed abort); to decide it anyway, add --force-unknown`,
        ),
      );
    }
    if (!decided && outcome === 'commit' && !(t?.phase === 'deciding' && t.proposing === 'commit')) {
      const why = !t
        ? "this leader did not prepare it, so it does not hold every participant's YES vote (a new leader never resumes another leader's prepare, R2)"
        : t.phase === 'deciding'
          ? `it is being aborted (${t.reason})`
          : `not every participant voted YES (${[...t.members.values()].map((m) => `${m.record.id}: ${m.vote ?? 'no vote yet'}`).join(', ') || 'no PREPARE sent yet'})`;
      return cb(
        new EngineError(
          'precondition',
          `COMMIT of undecided transaction ${txnId} refused: ${why}. AC2 — COMMIT only if every participant voted YES — is never traded away; use --abort, or wait for the transaction to be decided`,
        ),
      );
    }
    const propose = (): void => {
      const members = t ? decisionParticipants(t, outcome) : [];
      const now = this.io.nowMs();
      const reason = `resolved by operator ${act.operator}: ${act.reason}`;
      this.io.propose({ t: 'decide', txnId, outcome, reason, participants: members, atMs: now, operator: { operator: act.operator, reason: act.reason, atMs: now } }, (err, r) => {
        if (err || !r || r.t !== 'decide') {
          // The transaction this act moved to deciding must still be decided: tick proposes ABORT again.
          if (t && this.txns.get(txnId) === t && t.phase === 'deciding' && t.proposing === 'abort') t.reproposeAtMs = this.io.nowMs() + this.cfg.retryMinMs;
          return cb(new EngineError('outcome-unknown', `the resolution could not be logged (${err?.message ?? 'no result'}); retry`));
        }
        if (r.decision.outcome !== outcome) return cb(contrary(r.decision.outcome));
        if (r.first && outcome === 'abort') this.stats.aborted.operator++;
        cb(null, { answer: answerOf(r.decision), decided: r.first });
      });
    };
    if (t?.phase === 'deciding') {
      // COMMIT is already proposed: the log decides; then the act is recorded against what it says (or refused).
      t.waiters.push((err, a) => {
        if (err) return cb(err);
        const d = this.table.lookup(txnId);
        if (d && d.outcome !== outcome) return cb(contrary(d.outcome));
        propose();
        void a;
      });
      return;
    }
    if (t && !decided && (t.phase === 'begun' || t.phase === 'preparing')) {
      // The operator's own Decide entry is the ABORT: no other is proposed for it.
      t.phase = 'deciding';
      t.proposing = 'abort';
      t.reproposeAtMs = 0;
      t.reason = `aborted by operator ${act.operator}: ${act.reason}`;
    }
    propose();
  }

  /**
   * `verdict participant remove`: unregisters a participant, logged like its
   * registration. Refused while the participant has transactions in doubt
   * (a YES vote waiting for a decision, or a decision it has not
   * acknowledged, R5), listing them; removing an id that is not registered
   * is a no-op (R7).
   */
  unregisterParticipant(id: string, operator: string, cb: (err: EngineError | null, removed?: boolean) => void): void {
    if (!this.isLeader()) return cb(new EngineError('not-leader', 'not the leader'));
    if (!this.table.participants.has(id)) return cb(null, false);
    const pending = new Set<string>();
    const acked: string[] = [];
    for (const t of this.txns.values()) {
      const m = t.members.get(id);
      if (m === undefined) continue;
      if (t.phase !== 'delivering' || !m.acked) pending.add(t.id);
      else acked.push(t.id);
    }
    for (const d of this.table.decisions.values()) if (d.participants.includes(id) && !this.txns.get(d.txnId)?.members.get(id)?.acked) pending.add(d.txnId);
    if (pending.size > 0) return cb(inDoubtRefusal(id, [...pending]));
    this.io.propose({ t: 'unregister', id, operator, atMs: this.io.nowMs(), acked }, (err, r) => {
      if (err || !r || r.t !== 'unregister') return cb(new EngineError('outcome-unknown', `the removal could not be logged (${err?.message ?? 'no result'}); retry`));
      if (r.refusedBy.length > 0) return cb(inDoubtRefusal(id, r.refusedBy));
      this.lastSeen.delete(id);
      cb(null, r.removed);
    });
  }

  /** `kind`: the resource kind, already checked against RESOURCE_KIND by the caller (the edge). */
  registerParticipant(id: string, endpoint: string, kind: string, cb: (err: EngineError | null, p?: ParticipantRecord) => void): void {
    if (!this.isLeader()) return cb(new EngineError('not-leader', 'not the leader'));
    this.io.propose({ t: 'register', id, endpoint, kind, atMs: this.io.nowMs() }, (err, r) => {
      if (err || !r || r.t !== 'register') return cb(new EngineError('outcome-unknown', `registration not committed: ${err?.message ?? 'no result'}; retry`));
      this.heardFrom(id);
      cb(null, r.participant);
    });
  }

  // ---- the protocol ------------------------------------------------------

  private validateEnlistment(enlist: { participantId: string; payload: Uint8Array }[]): EngineError | null {
    if (enlist.length === 0) return new EngineError('invalid', 'a transaction needs at least one participant');
    if (enlist.length > this.cfg.participantsMax) return new EngineError('invalid', `${enlist.length} participants exceed the limit of ${this.cfg.participantsMax}`);
    const seen = new Set<string>();
    for (const e of enlist) {
      if (seen.has(e.participantId)) return new EngineError('invalid', `participant ${e.participantId} is enlisted twice`);
      seen.add(e.participantId);
      if (!this.table.participants.has(e.participantId)) return new EngineError('precondition', `participant ${e.participantId} is not registered with this cluster`);
      if (e.payload.byteLength > this.cfg.payloadBytesMax) return new EngineError('invalid', `payload for ${e.participantId} is ${e.payload.byteLength} bytes (limit ${this.cfg.payloadBytesMax})`);
    }
    return null;
  }

  private prepare(t: Txn): void {
    const ids = [...t.members.keys()];
    const remainingMs = Math.max(1, t.deadlineAtMs - this.io.nowMs());
    for (const m of t.members.values()) {
      const req: PrepareRequest = { txnId: t.id, participantId: m.record.id, participants: ids, payload: m.payload, timeoutMs: remainingMs };
      m.inFlight = true;
      this.io.sendPrepare(m.record, req, Math.min(remainingMs, this.cfg.rpcDeadlineMs), (err, vote) => {
        m.inFlight = false;
        if (this.txns.get(t.id) !== t || t.phase !== 'preparing') return;
        if (err || !vote) return this.decideAbort(t, `participant ${m.record.id} did not vote: ${err?.message ?? 'no answer'}`, 'unreachable');
        this.heardFrom(m.record.id);
        m.vote = vote.vote;
        m.voteReason = vote.reason;
        this.countVote(t, m);
      });
    }
  }

  /** AC2: one NO aborts; COMMIT only once every participant voted YES. */
  protected countVote(t: Txn, m: Member): void {
    if (m.vote === 'no') return this.decideAbort(t, `participant ${m.record.id} voted NO: ${m.voteReason || 'no reason given'}`, 'vote_no');
    // Parallel commit answers COMMITTED here when its STAGING record is applied, then logs COMMIT.
    if ([...t.members.values()].every((x) => x.vote === 'yes') && !this.pc.allYes(t)) this.proposeCommit(t);
  }

  /** R2: only the leader of the term that sent PREPARE, holding every YES, proposes COMMIT. */
  protected proposeCommit(t: Txn): void {
    if (t.term !== this.leaderTerm) return this.decideAbort(t, 'leadership changed during prepare', 'leader_change');
    t.phase = 'deciding';
    t.proposing = 'commit';
    this.proposeDecision(t);
  }

  private proposeDecision(t: Txn): void {
    t.reproposeAtMs = 0;
    const outcome = t.proposing ?? 'abort';
    const participants = decisionParticipants(t, outcome);
    // Forgets waiting for their batch ride this decision's log entry instead
    // of taking one of their own (proposals of one turn share a batch entry,
    // src/node/proposal-batcher.ts); docs/protocol.md says why that is safe.
    this.flushForgets();
    this.io.propose({ t: 'decide', txnId: t.id, outcome, reason: outcome === 'commit' ? '' : t.reason, participants, atMs: this.io.nowMs() }, (err) => {
      // Success is handled where every node sees it: onApplied. A proposal
      // that failed leaves the outcome to the log (the entry may still
      // commit under a later leader), so the client must ask again.
      if (!err || this.txns.get(t.id) !== t) return;
      // The entry may also never have reached the log (Raft drops proposals
      // during a leadership transfer, or under back-pressure) while this node
      // stays leader: then nothing would ever decide T. Propose it again from
      // tick; only this leader, of the term that collected every YES, may (R2),
      // and a duplicate Decide is a no-op (R1). ABORT likewise.
      if (t.phase === 'deciding') t.reproposeAtMs = this.io.nowMs() + this.cfg.retryMinMs;
      const e = new EngineError(
        'outcome-unknown',
        `the ${outcome === 'commit' ? 'COMMIT' : 'ABORT'} decision could not be confirmed (${err.message}); query the outcome or retry Commit with the same id`,
      );
      for (const w of t.waiters.splice(0)) w(e);
    });
  }

  /**
   * A NO vote, an unreachable participant, the deadline, the client or the
   * operator: no YES can become COMMIT now. ABORT is proposed like COMMIT,
   * and nobody hears ABORTED before the log says so (the waiters are answered
   * in onApplied): an answer that lived only in this leader's memory would be
   * gone after a leader change, and the id could be begun and committed again.
   */
  protected decideAbort(t: Txn, reason: string, why: AbortClass): void {
    if (t.phase !== 'begun' && t.phase !== 'preparing') return;
    this.stats.aborted[why]++;
    t.reason = reason;
    this.proposeAbort(t);
  }

  /** R1, R3: ABORT goes through the log like COMMIT. */
  protected proposeAbort(t: Txn): void {
    t.phase = 'deciding';
    t.proposing = 'abort';
    this.proposeDecision(t);
  }

  /** ABORT for a transaction this leader is not working on, logged before anyone hears it; `participants` get it until they acknowledge. */
  private logAbort(txnId: string, reason: string, why: AbortClass, cb: OutcomeCallback, participants: string[] = []): void {
    const future = futureIdRefusal(txnId, this.io.nowMs(), this.cfg.clockSkewMaxMs);
    if (future) return cb(new EngineError(future.code, future.message));
    this.io.propose({ t: 'decide', txnId, outcome: 'abort', reason, participants, atMs: this.io.nowMs() }, (err, r) => {
      if (err || !r || r.t !== 'decide') return cb(new EngineError('outcome-unknown', `the decision could not be logged (${err?.message ?? 'no result'}); retry`));
      if (r.first && r.decision.outcome === 'abort') this.stats.aborted[why]++;
      cb(null, answerOf(r.decision));
    });
  }

  /** Every node calls this for every applied command; only the leader acts on it. */
  onApplied(result: ApplyResult): void {
    if (!this.isLeader()) return;
    if (result.t === 'batch') {
      for (const r of result.results) this.onApplied(r);
      return;
    }
    if (result.t === 'decide') {
      const d = result.decision;
      const t = this.txns.get(d.txnId);
      if (t) {
        t.outcome = d.outcome;
        t.reason = d.reason;
        t.decisionIndex = d.index;
        // R1: the answer is what the log says, whatever this leader proposed.
        const a = answerOf(d);
        for (const w of t.waiters.splice(0)) w(null, a);
      }
      if (result.first && d.outcome === 'commit') this.stats.committed++;
      if (result.first) this.pc.decided(d);
      // A later Decide may have added participants to a live decision (deliverToEnlisted).
      if (result.first || this.table.decisions.has(d.txnId)) this.deliver(d);
    } else if (result.t === 'forget') {
      this.forgetInFlight = false;
    } else if (result.t === 'stage' && !this.txns.has(result.txnId)) {
      this.pc.onApplied(result);
    }
  }

  /** Sends the DECISION, COMMIT or ABORT, to every participant the decision names until each acknowledges it (R5). */
  private deliver(d: Decision): void {
    let t = this.txns.get(d.txnId);
    if (!t) {
      const members = new Map<string, Member>();
      for (const id of d.participants) {
        const record = this.table.participants.get(id);
        if (record) members.set(id, { record, payload: new Uint8Array(), vote: null, voteReason: '', acked: false, retries: 0, nextRetryAtMs: 0, inFlight: false });
      }
      t = { id: d.txnId, phase: 'delivering', term: this.leaderTerm, startedAtMs: d.decidedAtMs, deadlineAtMs: 0, members, waiters: [], outcome: d.outcome, reason: d.reason, decisionIndex: d.index };
      this.txns.set(d.txnId, t);
    }
    for (const id of d.participants) {
      const record = this.table.participants.get(id);
      if (record && !t.members.has(id)) t.members.set(id, { record, payload: new Uint8Array(), vote: null, voteReason: '', acked: false, retries: 0, nextRetryAtMs: 0, inFlight: false });
    }
    t.phase = 'delivering';
    t.outcome = d.outcome;
    t.reason = d.reason;
    t.decisionIndex = d.index;
    // A member the decision does not name (a NO voter: it aborted on its own) is owed nothing.
    const named = new Set(d.participants);
    for (const m of t.members.values()) if (!named.has(m.record.id)) m.acked = true;
    for (const m of t.members.values()) this.sendDecision(t, m);
    this.maybeDone(t);
  }

  private sendDecision(t: Txn, m: Member): void {
    if (m.acked || m.inFlight || t.outcome === null) return;
    m.inFlight = true;
    const req: DecisionRequest = { txnId: t.id, participantId: m.record.id, outcome: t.outcome, reason: t.reason };
    this.io.sendDecision(m.record, req, this.cfg.rpcDeadlineMs, (err) => {
      m.inFlight = false;
      if (this.txns.get(t.id) !== t) return;
      if (err) {
        m.retries++;
        this.stats.decisionRetries++;
        // Capped exponential backoff with jitter: a participant that is down
        // for an hour costs one attempt per retryMaxMs, not a storm.
        const base = Math.min(this.cfg.retryMaxMs, this.cfg.retryMinMs * 2 ** Math.min(m.retries - 1, 20));
        m.nextRetryAtMs = this.io.nowMs() + base / 2 + this.io.random() * (base / 2);
        return;
      }
      this.heardFrom(m.record.id);
      m.acked = true;
      this.maybeDone(t);
    });
  }

  private maybeDone(t: Txn): void {
    if (t.phase !== 'delivering') return;
    if (!this.mayForget(t)) return;
    this.txns.delete(t.id);
    if (this.forgetQueue.length === 0) this.forgetSinceMs = this.io.nowMs();
    this.forgetQueue.push(t.id);
    if (this.forgetQueue.length >= this.cfg.forgetBatchMax) this.flushForgets();
  }

  /** R5: a decision is forgotten only once every participant acknowledged it. */
  protected mayForget(t: Txn): boolean {
    for (const m of t.members.values()) if (!m.acked) return false;
    return true;
  }

  private flushForgets(): void {
    if (this.forgetQueue.length === 0 || this.forgetInFlight) return;
    const batch = this.forgetQueue.splice(0, this.cfg.forgetBatchMax);
    this.forgetInFlight = true;
    this.io.propose({ t: 'forget', txnIds: batch }, (err) => {
      if (!err) return;
      this.forgetInFlight = false;
      // Not forgotten yet: harmless, a later batch (or the next leader's re-drive) retries.
      if (this.isLeader()) this.forgetQueue.unshift(...batch);
    });
  }

  /** Timeouts, decision redelivery and forget batching; call every few tens of ms. */
  tick(): void {
    if (!this.isLeader()) return;
    const now = this.io.nowMs();
    for (const t of this.txns.values()) {
      switch (t.phase) {
        case 'begun':
        case 'preparing':
          if (now >= t.deadlineAtMs) this.decideAbort(t, `the transaction timed out after ${t.deadlineAtMs - t.startedAtMs} ms`, 'timeout');
          break;
        case 'delivering':
          for (const m of t.members.values()) if (!m.acked && !m.inFlight && now >= m.nextRetryAtMs) this.sendDecision(t, m);
          break;
        case 'deciding':
          // COMMIT only by the term that collected the votes (R2); ABORT by any leader.
          if (t.reproposeAtMs && now >= t.reproposeAtMs && (t.proposing === 'abort' || t.term === this.leaderTerm)) this.proposeDecision(t);
          break;
      }
    }
    if (this.forgetQueue.length > 0 && now - this.forgetSinceMs >= this.cfg.forgetDelayMs) this.flushForgets();
    this.pc.tick();
  }

  protected answerFor(t: Txn): OutcomeAnswer {
    if (t.outcome === null) return { txnId: t.id, outcome: 'in-progress', reason: t.phase, decisionIndex: 0 };
    return { txnId: t.id, outcome: t.outcome === 'commit' ? 'committed' : 'aborted', reason: t.reason, decisionIndex: t.decisionIndex };
  }
}

function answerOf(d: Decision): OutcomeAnswer {
  return { txnId: d.txnId, outcome: d.outcome === 'commit' ? 'committed' : 'aborted', reason: d.reason, decisionIndex: d.index };
}

/**
 * Who must acknowledge `outcome` for t: for COMMIT every member; for ABORT
 * every member that was sent PREPARE and did not vote NO (it may be
 * prepared, or may yet prepare from a late PREPARE; a NO voter aborted on
 * its own). A transaction that never sent PREPARE owes nobody anything.
 */
function decisionParticipants(t: Txn, outcome: DecisionOutcome): string[] {
  return [...t.members.values()].filter((m) => outcome === 'commit' || m.vote !== 'no').map((m) => m.record.id);
}

function validateTxnId(id: string): void {
  const problem = txnIdProblem(id);
  if (problem !== null) throw new EngineError('invalid', problem);
}

/** Transactions listed in a refusal, at most; the count says how many more. */
const LISTED_TXNS_MAX = 20;

function inDoubtRefusal(participantId: string, txnIds: string[]): EngineError {
  const shown = txnIds.slice(0, LISTED_TXNS_MAX).join(', ');
  const more = txnIds.length > LISTED_TXNS_MAX ? ` and ${txnIds.length - LISTED_TXNS_MAX} more` : '';
  return new EngineError(
    'precondition',
    `participant ${participantId} has ${txnIds.length} transaction(s) in doubt: ${shown}${more}. They must be decided and acknowledged by it first ` +
      `(verdict txn show ID: an undecided one can be ended with verdict txn resolve ID --abort; a decided one needs the participant running to acknowledge it); then remove it`,
  );
}
