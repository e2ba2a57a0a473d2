// The commit protocol: the leader's side of Paxos Commit on the Raft log.
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
//
// This file is the protocol alone, the part the simulator's AC checks are
// about. Operator actions (./operator-actions.ts) reach its state through
// the narrow ProtocolPort below; read views (./engine-views.ts) are pure
// functions of it; ./engine.ts puts the three behind one façade.
//
// Every state change of a transaction asserts its preconditions
// (src/util/assert.ts): a failure is a bug in Verdict. Input from clients,
// participants and operators is refused with an EngineError or ignored
// before it gets near one.

import { assert } from '../util/assert.ts';
import type { ApplyResult, Decision, DecisionTable } from './state.ts';
import {
  type DecisionOutcome,
  NotDeliveredError,
  PARALLEL_COMMIT_NEEDS,
  reserveTtlProblem,
  unimplementedMethod,
} from '../domain/protocol.ts';
import { beginRefusal, forgottenReason, futureIdRefusal } from './id-newness.ts';
import { phaseCounts } from './engine-views.ts';
import {
  type AbortClass,
  answerOf,
  decisionParticipants,
  defaultEngineConfig,
  type DecisionRequest,
  type EngineConfig,
  type EngineCounters,
  EngineError,
  type EngineIO,
  type EngineVote,
  isUndecidedPhase,
  type Member,
  type OutcomeAnswer,
  type OutcomeCallback,
  type PrepareRequest,
  type Txn,
  TXNS_PER_IN_FLIGHT,
  txnAnswer,
  validateTxnId,
} from './engine-types.ts';
import { txnIdProblem } from '../domain/txn-id.ts';
import { ParallelCommit, type ParallelHost } from './parallel-commit.ts';

/**
 * What operator actions (./operator-actions.ts) may see and do on the
 * protocol's state: read the transactions, and change one only through a
 * protocol transition that asserts its preconditions.
 */
export interface ProtocolPort {
  readonly table: DecisionTable;
  readonly io: EngineIO;
  readonly cfg: Readonly<EngineConfig>;
  /** Throws EngineError('not-leader') unless this node leads. */
  requireLeader(): void;
  isLeader(): boolean;
  txn(txnId: string): Txn | undefined;
  txns(): Iterable<Txn>;
  heardFrom(participantId: string): void;
  /** Drops a participant's last-seen time (it left the registry). */
  forgetSeen(participantId: string): void;
  /** A NO-like abort of a transaction this leader works on (see decideAbort). */
  decideAbort(t: Txn, reason: string, why: AbortClass): void;
  /** ABORT for a transaction this leader is not working on, logged before anyone hears it. */
  logAbort(txnId: string, reason: string, why: AbortClass, cb: OutcomeCallback): void;
  /**
   * begun|preparing → deciding ABORT for an operator whose own Decide entry is the ABORT (nothing is proposed here).
   */
  operatorTakesOver(t: Txn, reason: string): void;
  /** The operator's ABORT could not be logged: tick proposes ABORT again. */
  reproposeLater(t: Txn): void;
  countAbort(why: AbortClass): void;
  /** True while T has a STAGING record and no decision (parallel commit): only recovery may decide it. */
  isStaged(txnId: string): boolean;
  /** Recovers a staged T (./parallel-commit.ts) and calls back with what the log then says. */
  awaitRecovery(txnId: string, cb: OutcomeCallback): void;
}

export class CommitProtocol {
  protected readonly cfg: EngineConfig;
  protected readonly stats: EngineCounters = {
    begun: 0,
    committed: 0,
    aborted: {
      vote_no: 0,
      timeout: 0,
      unreachable: 0,
      client: 0,
      leader_change: 0,
      presumed_abort_query: 0,
      operator: 0,
      heuristic_report: 0,
      staging_recovery: 0,
    },
    decisionRetries: 0,
  };
  private leaderTerm = 0;
  protected readonly txns = new Map<string, Txn>();
  /** Forget(T) waiting to be proposed, batched off the critical path (R5). */
  private forgetQueue: string[] = [];
  private forgetSinceMs = 0;
  private forgetInFlight = false;
  /**
   * When each registered participant was last heard from (an answer, a question, a report); bounded by the registry.
   */
  protected readonly lastSeenAtMs = new Map<string, number>();

  /** The door operator actions use (./operator-actions.ts). */
  protected readonly port: ProtocolPort;
  /** Parallel commit: the STAGING record, the implicit COMMITTED, and recovery of staged transactions. */
  protected readonly pc: ParallelCommit;

  constructor(
    protected readonly table: DecisionTable,
    protected readonly io: EngineIO,
    cfg: Partial<EngineConfig> = {},
  ) {
    this.cfg = { ...defaultEngineConfig, ...cfg };
    this.port = {
      table,
      io,
      cfg: this.cfg,
      requireLeader: () => this.requireLeader(),
      isLeader: () => this.isLeader(),
      txn: (id) => this.txns.get(id),
      txns: () => this.txns.values(),
      heardFrom: (id) => this.heardFrom(id),
      forgetSeen: (id) => this.lastSeenAtMs.delete(id),
      decideAbort: (t, reason, why) => this.decideAbort(t, reason, why),
      logAbort: (id, reason, why, cb) => this.logAbort(id, reason, why, cb),
      operatorTakesOver: (t, reason) => this.operatorTakesOver(t, reason),
      reproposeLater: (t) => this.reproposeLater(t),
      countAbort: (why) => this.stats.aborted[why]++,
      isStaged: (id) => this.pc.isStaged(id),
      awaitRecovery: (id, cb) => this.pc.wait(id, cb),
    };
    this.pc = this.parallelCommit({
      io,
      table,
      cfg: this.cfg,
      tracks: (t) => this.txns.get(t.id) === t,
      commitImplicitly: (t) => this.commitImplicitly(t),
      proposeCommit: (t) => this.proposeCommit(t),
      countRecoveryAbort: () => this.stats.aborted.staging_recovery++,
    });
  }

  /** The parallel-commit halves; a test mutant swaps them (test/sim/protocol-mutants.ts). */
  protected parallelCommit(host: ParallelHost): ParallelCommit {
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

  // ---- leadership ------------------------------------------------------

  /** Called when this node becomes leader of `term`, or stops leading (term 0). */
  setLeadership(term: number): void {
    assert(Number.isSafeInteger(term) && term >= 0, `leadership term ${term} is a non-negative integer`);
    if (term === this.leaderTerm) return;
    const was = this.leaderTerm;
    // Terms only grow: a node leads a term once (the driver reports 0 between terms).
    assert(term === 0 || was === 0 || term > was, `leadership moves from term ${was} to a later one, not ${term}`);
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
    const err = new EngineError(
      'outcome-unknown',
      'leadership changed while the transaction was in flight; retry Commit with the same id on the new leader, or query its outcome',
    );
    for (const t of this.txns.values()) for (const w of t.waiters.splice(0)) w(err);
    this.txns.clear();
    this.pc.drop(err);
    this.forgetQueue = [];
    this.forgetInFlight = false;
  }

  private requireLeader(): void {
    if (!this.isLeader()) throw new EngineError('not-leader', 'not the leader');
  }

  /**
   * A new transaction is not taken while leadership moves: its next leader would abort it (R2). The refusal is the
   * follower's, which the SDK retries with `begin` still on (nothing was done).
   */
  private refuseWhileHandingOver(): void {
    const to = this.io.handingOverTo?.() ?? null;
    if (to === null) return;
    throw new EngineError(
      'not-leader',
      `not the leader: leadership is moving to ${to === '' ? 'another node' : to}; retry in a moment`,
    );
  }

  // ---- client API --------------------------------------------------------

  begin(txnId: string, timeoutMs: number): { deadlineAtMs: number } {
    this.requireLeader();
    validateTxnId(txnId);
    const now = this.io.nowMs();
    const existing = this.txns.get(txnId);
    // R7: a repeated Begin of an undecided transaction answers as the first did.
    if (existing && existing.outcome === null) return { deadlineAtMs: existing.deadlineAtMs };
    this.refuseWhileHandingOver();
    this.refuseUnlessNew(txnId);
    if (this.pc.isStaged(txnId))
      throw new EngineError(
        'outcome-unknown',
        `transaction ${txnId} was staged by an earlier leader (parallel commit) and is being recovered; query its outcome`,
      );
    if (this.txns.size >= this.cfg.inFlightMax) this.checkRoom();
    const t = timeoutMs > 0 ? timeoutMs : this.cfg.defaultTimeoutMs;
    if (t > this.cfg.maxTimeoutMs)
      throw new EngineError('invalid', `timeout ${t} ms exceeds the limit of ${this.cfg.maxTimeoutMs} ms`);
    assert(
      existing === undefined || existing.outcome !== null,
      `begin of ${txnId} replaces only a decided transaction`,
    );
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

  /**
   * Begin's id check (src/commit/id-newness.ts): a decided id, or one that cannot be proved new, is never begun again.
   */
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
    for (const t of this.txns.values()) if (isUndecidedPhase(t.phase)) undecided.push(t);
    if (undecided.length < this.cfg.inFlightMax && this.txns.size < this.cfg.inFlightMax * TXNS_PER_IN_FLIGHT) return;
    const p = phaseCounts(this.txns);
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
    return t !== undefined && isUndecidedPhase(t.phase);
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
  commit(
    txnId: string,
    enlist: { participantId: string; payload: Uint8Array }[],
    cb: OutcomeCallback,
    begin?: { timeoutMs: number },
    parallelCommit?: boolean,
  ): void {
    if (!this.accept(txnId, cb)) return;
    if (begin !== undefined && !this.txns.has(txnId)) {
      try {
        this.refuseWhileHandingOver();
      } catch (err) {
        return cb(err as EngineError);
      }
    }
    const decided = this.table.lookup(txnId);
    // A Commit that begins is a new transaction (the SDK sends begin on a first attempt only): a decided id is refused,
    // not answered.
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
      return this.logAbort(
        txnId,
        'the transaction was not begun on the current leader (leader change?); it is aborted',
        'leader_change',
        cb,
        named,
      );
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
    t.waiters.push(cb);
    this.startPrepare(t, enlist);
    if ((parallelCommit ?? this.cfg.parallelCommit) && this.recoverable(t)) this.stage(t);
  }

  /**
   * Whether a new leader could recover t if it were staged: recovery asks
   * every participant the status question, and a participant that never
   * prepared answers nothing else. So t commits in parallel only when every
   * participant said at registration that it serves Status; otherwise
   * classic two-phase commit, which a new leader ends by ABORT without asking
   * anyone (R2, R3). A participant built before Status existed never leaves
   * a transaction waiting for an answer it cannot give. (A test mutant stages regardless.)
   */
  protected recoverable(t: Txn): boolean {
    for (const m of t.members.values()) if (!m.record.serves.includes(PARALLEL_COMMIT_NEEDS)) return false;
    return true;
  }

  /** begun → preparing: enlists the (validated) participants and sends PREPARE to each. */
  private startPrepare(t: Txn, enlist: { participantId: string; payload: Uint8Array }[]): void {
    assert(t.phase === 'begun' && t.outcome === null, `${t.id}: PREPARE from phase begun, not ${t.phase}`);
    assert(t.members.size === 0, `${t.id}: participants are enlisted once`);
    assert(
      t.term === this.leaderTerm,
      `${t.id}: PREPARE by the term that began it (${t.term}), not ${this.leaderTerm}`,
    );
    for (const e of enlist) {
      const record = this.table.participants.get(e.participantId);
      assert(record !== undefined, `${t.id}: enlisted participant ${e.participantId} was checked registered`);
      t.members.set(e.participantId, {
        record,
        payload: e.payload,
        vote: null,
        voteReason: '',
        acked: false,
        retries: 0,
        nextRetryAtMs: 0,
        inFlight: false,
      });
    }
    assert(t.members.size === enlist.length, `${t.id}: enlisted participants were checked distinct`);
    t.phase = 'preparing';
    this.prepare(t);
  }

  /** preparing, PREPAREs sent → STAGING proposed beside them (parallel commit, ./parallel-commit.ts). */
  private stage(t: Txn): void {
    assert(
      t.phase === 'preparing' && t.outcome === null,
      `${t.id}: STAGING is proposed from phase preparing, not ${t.phase}`,
    );
    assert(t.parallel === undefined, `${t.id}: STAGING is proposed once`);
    assert(
      t.term === this.leaderTerm,
      `${t.id}: STAGING by the term that sent PREPARE (${t.term}), not ${this.leaderTerm}`,
    );
    assert(t.members.size > 0, `${t.id}: a STAGING record names the enlisted participants`);
    this.pc.stage(t);
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
    // Nor is one whose PREPARE from this leader provably never reached it (R3).
    const owed = (p: string): boolean => t?.members.get(p)?.vote !== 'no' && t?.members.get(p)?.mayBePrepared !== false;
    const missing = enlist.map((e) => e.participantId).filter((p) => !d.participants.includes(p) && owed(p));
    if (missing.length === 0) return;
    this.io.propose(
      { t: 'decide', txnId: d.txnId, outcome: 'abort', reason: d.reason, participants: missing, atMs: this.io.nowMs() },
      () => {},
    );
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
      // A participant in doubt is prepared: its question counts as its status answer, and it waits for recovery's
      // decision; a client hears that one is coming.
      if (participantId !== '') return this.pc.waitInDoubt(txnId, participantId, cb);
      this.pc.start(txnId);
      return cb(null, {
        txnId,
        outcome: 'IN_PROGRESS',
        reason: 'staged (parallel commit); a new leader is recovering it',
        decisionIndex: 0,
      });
    }
    if (participantId === '')
      return cb(null, {
        txnId,
        outcome: 'UNKNOWN',
        reason: 'no decision is recorded for this transaction',
        decisionIndex: 0,
      });
    // A participant in doubt on a forgotten decision cannot be answered from the log: ABORT could contradict it. Its
    // operator decides (R4).
    if (this.table.beyondHorizon(txnId))
      return cb(null, { txnId, outcome: 'UNKNOWN', reason: forgottenReason(this.table, txnId), decisionIndex: 0 });
    const asker = this.table.participants.has(participantId) ? [participantId] : [];
    this.logAbort(
      txnId,
      `participant ${participantId} was in doubt and no decision was logged (presumed abort)`,
      'presumed_abort_query',
      cb,
      asker,
    );
  }

  /**
   * Notes that participantId was heard from now (only registered ids are kept, so the map is bounded by the registry).
   */
  heardFrom(participantId: string): void {
    if (this.table.participants.has(participantId)) this.lastSeenAtMs.set(participantId, this.io.nowMs());
  }

  // ---- the protocol ------------------------------------------------------

  private validateEnlistment(enlist: { participantId: string; payload: Uint8Array }[]): EngineError | null {
    if (enlist.length === 0) return new EngineError('invalid', 'a transaction needs at least one participant');
    if (enlist.length > this.cfg.participantsMax)
      return new EngineError(
        'invalid',
        `${enlist.length} participants exceed the limit of ${this.cfg.participantsMax}`,
      );
    const seen = new Set<string>();
    for (const e of enlist) {
      if (seen.has(e.participantId))
        return new EngineError('invalid', `participant ${e.participantId} is enlisted twice`);
      seen.add(e.participantId);
      if (!this.table.participants.has(e.participantId))
        return new EngineError('precondition', `participant ${e.participantId} is not registered with this cluster`);
      if (e.payload.byteLength > this.cfg.payloadBytesMax)
        return new EngineError(
          'invalid',
          `payload for ${e.participantId} is ${e.payload.byteLength} bytes (limit ${this.cfg.payloadBytesMax})`,
        );
    }
    return null;
  }

  private prepare(t: Txn): void {
    const ids = [...t.members.keys()];
    const remainingMs = Math.max(1, t.deadlineAtMs - this.io.nowMs());
    for (const m of t.members.values()) {
      const req: PrepareRequest = {
        txnId: t.id,
        participantId: m.record.id,
        participants: ids,
        payload: m.payload,
        timeoutMs: remainingMs,
      };
      m.inFlight = true;
      m.mayBePrepared = true;
      this.io.sendPrepare(m.record, req, Math.min(remainingMs, this.cfg.rpcTimeoutMs), (err, vote) => {
        m.inFlight = false;
        // Provably never delivered: nothing is prepared there, so no ABORT is owed (R3).
        if (err instanceof NotDeliveredError) m.mayBePrepared = false;
        if (this.txns.get(t.id) !== t || t.phase !== 'preparing') return;
        if (err || !vote)
          return this.decideAbort(
            t,
            `participant ${m.record.id} did not vote: ${err?.message ?? 'no answer'}`,
            'unreachable',
          );
        this.heardFrom(m.record.id);
        this.recordVote(t, m, vote);
        this.countVote(t, m);
      });
    }
  }

  /**
   * A member's one VOTE to this PREPARE, while preparing (the link checked it is 'yes' or 'no', and any reserve TTL
   * against reserveTtlProblem). A YES's reserve TTL is counted from now, the vote's arrival: a duration from the
   * participant, so its clock need not agree with this leader's.
   */
  private recordVote(t: Txn, m: Member, vote: EngineVote): void {
    assert(
      t.phase === 'preparing' && t.outcome === null,
      `${t.id}: a vote is recorded while preparing, not ${t.phase}`,
    );
    assert(t.members.get(m.record.id) === m, `${t.id}: ${m.record.id} votes as an enlisted member`);
    assert(m.vote === null, `${t.id}: ${m.record.id} votes once per PREPARE`);
    assert(vote.vote === 'yes' || vote.vote === 'no', `${t.id}: ${m.record.id}'s vote is YES or NO`);
    const ttlMs = vote.vote === 'yes' ? vote.reserveTtlMs : undefined;
    if (ttlMs !== undefined) {
      const problem = reserveTtlProblem(ttlMs);
      assert(problem === null, `${t.id}: ${m.record.id}'s reserve TTL was checked at the link: ${problem}`);
      m.reserveExpiresAtMs = this.io.nowMs() + ttlMs;
    }
    m.vote = vote.vote;
    m.voteReason = vote.reason;
  }

  /** AC2: one NO aborts; COMMIT only once every participant voted YES. */
  protected countVote(t: Txn, m: Member): void {
    if (m.vote === 'no')
      return this.decideAbort(
        t,
        `participant ${m.record.id} voted NO: ${m.voteReason || 'no reason given'}`,
        'vote_no',
      );
    // Parallel commit answers COMMITTED here when its STAGING record is applied, then logs COMMIT.
    if ([...t.members.values()].every((x) => x.vote === 'yes') && !this.pc.allYes(t)) this.proposeCommit(t);
  }

  /**
   * preparing → deciding COMMIT with the client answered at once (parallel
   * commit): every participant holds a durable YES and T's STAGING record is
   * applied, so T is committed whatever happens to this leader (a new one
   * recovers it to COMMIT). The explicit COMMIT follows, off the critical path.
   */
  private commitImplicitly(t: Txn): void {
    const p = t.parallel;
    assert(this.txns.get(t.id) === t, `${t.id}: COMMITTED is implied for a transaction this leader tracks`);
    assert(
      t.phase === 'preparing' && t.outcome === null,
      `${t.id}: COMMITTED is implied from phase preparing, not ${t.phase}`,
    );
    assert(
      p !== undefined && p.staged !== 'failed' && !p.implicit,
      `${t.id}: COMMITTED is implied once, for a STAGING record not known to have failed`,
    );
    assert(
      t.term === this.leaderTerm,
      `${t.id}: COMMITTED is implied only by the term that staged it and collected the votes (R2)`,
    );
    assert(
      [...t.members.values()].every((m) => m.vote === 'yes'),
      `${t.id}: COMMITTED is implied only with every YES (AC2)`,
    );
    p.implicit = true;
    const answer = this.pc.implicitAnswer(t);
    assert(answer !== null, `${t.id}: an implied COMMITTED has an answer`);
    for (const w of t.waiters.splice(0)) w(null, answer);
    // A test's crash between the last YES and the explicit COMMIT (off unless the node's environment sets it).
    if (this.io.faultPoint?.('before-explicit-commit', t.id) === 'halt') return this.haltBeforeExplicitCommit(t);
    this.proposeCommit(t);
  }

  /**
   * preparing → deciding COMMIT with nothing proposed: the process dies at the test's fault point; a new leader
   * recovers T.
   */
  private haltBeforeExplicitCommit(t: Txn): void {
    assert(t.phase === 'preparing' && t.parallel?.implicit === true, `${t.id}: halted only after an implied COMMITTED`);
    t.phase = 'deciding';
    t.proposing = 'commit';
    t.reproposeAtMs = 0;
  }

  /** R2: only the leader of the term that sent PREPARE, holding every YES, proposes COMMIT. */
  protected proposeCommit(t: Txn): void {
    if (t.term !== this.leaderTerm) return this.decideAbort(t, 'leadership changed during prepare', 'leader_change');
    assert(
      t.phase === 'preparing' && t.outcome === null,
      `${t.id}: COMMIT is proposed from phase preparing, not ${t.phase}`,
    );
    assert(t.members.size > 0, `${t.id}: COMMIT needs enlisted participants`);
    t.phase = 'deciding';
    t.proposing = 'commit';
    this.proposeDecision(t);
  }

  private proposeDecision(t: Txn): void {
    assert(
      t.phase === 'deciding' && t.outcome === null,
      `${t.id}: a decision is proposed while deciding, not ${t.phase}`,
    );
    assert(t.proposing !== undefined, `${t.id}: deciding knows which outcome it proposes`);
    assert(
      t.proposing === 'abort' || t.term === this.leaderTerm,
      `${t.id}: COMMIT is proposed only by the term that collected the votes (R2)`,
    );
    t.reproposeAtMs = 0;
    const outcome = t.proposing;
    const participants = decisionParticipants(t, outcome);
    // Forgets waiting for their batch ride this decision's log entry instead
    // of taking one of their own (proposals of one turn share a batch entry,
    // src/node/proposal-batcher.ts); docs/protocol.md says why that is safe.
    // An explicit COMMIT after an implied COMMITTED is off the critical path:
    // it may wait a little for company (the next transaction's STAGING
    // record), and the Forgets that ride it wait with it.
    const lingerMs = outcome === 'commit' && t.parallel?.implicit === true ? this.cfg.explicitCommitLingerMs : 0;
    this.flushForgets(lingerMs);
    const decide = {
      t: 'decide' as const,
      txnId: t.id,
      outcome,
      reason: outcome === 'commit' ? '' : t.reason,
      participants,
      atMs: this.io.nowMs(),
    };
    this.io.propose(decide, (err) => this.decisionProposed(t, outcome, err), lingerMs);
  }

  /** The answer to a Decide proposal: on success nothing (onApplied handles it), on failure a retry from tick. */
  private decisionProposed(t: Txn, outcome: DecisionOutcome, err: Error | null): void {
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
    assert(
      t.phase === 'begun' || t.phase === 'preparing',
      `${t.id}: ABORT is proposed from phase begun or preparing, not ${t.phase}`,
    );
    assert(t.outcome === null, `${t.id}: ABORT is proposed for an undecided transaction`);
    assert(!t.parallel?.implicit, `${t.id}: ABORT is never proposed after an implied COMMITTED`);
    t.phase = 'deciding';
    t.proposing = 'abort';
    this.proposeDecision(t);
  }

  /**
   * ABORT for a transaction this leader is not working on, logged before anyone hears it; `participants` get it until
   * they acknowledge.
   */
  private logAbort(
    txnId: string,
    reason: string,
    why: AbortClass,
    cb: OutcomeCallback,
    participants: string[] = [],
  ): void {
    const future = futureIdRefusal(txnId, this.io.nowMs(), this.cfg.clockSkewMaxMs);
    if (future) return cb(new EngineError(future.code, future.message));
    this.io.propose({ t: 'decide', txnId, outcome: 'abort', reason, participants, atMs: this.io.nowMs() }, (err, r) => {
      if (err || !r || r.t !== 'decide')
        return cb(
          new EngineError(
            'outcome-unknown',
            `the decision could not be logged (${err?.message ?? 'no result'}); retry`,
          ),
        );
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
        // R1: the table's first decision never changes, so what this leader learned of it cannot either.
        assert(t.outcome === null || t.outcome === d.outcome, `${d.txnId}: applied ${d.outcome} after ${t.outcome}`);
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
    } else if (result.t === 'unregister' && result.forced !== null) {
      this.stopDelivering(result.id);
    } else if (result.t === 'register' && result.returned) {
      // Removed with --force and back: the decisions still owed to it are delivered again.
      for (const d of this.table.decisions.values())
        if (d.participants.includes(result.participant.id)) this.deliver(d);
    } else if (result.t === 'forget') {
      this.forgetInFlight = false;
    } else if (result.t === 'stage' && !this.txns.has(result.txnId)) {
      this.pc.onApplied(result);
    }
  }

  /**
   * A participant removed with --force: no DECISION goes to it any more. The
   * transactions that waited only for it leave this leader's memory; their
   * decisions stay in the table, owed to it (maybeDone does not forget them).
   */
  private stopDelivering(participantId: string): void {
    for (const t of [...this.txns.values()]) {
      const m = t.members.get(participantId);
      if (m === undefined || t.phase !== 'delivering') continue;
      t.members.delete(participantId);
      this.maybeDone(t);
    }
  }

  /** Sends the DECISION, COMMIT or ABORT, to every participant the decision names until each acknowledges it (R5). */
  private deliver(d: Decision): void {
    let t = this.txns.get(d.txnId);
    if (!t) {
      // Its members are added below, as for a transaction this leader already tracks.
      t = {
        id: d.txnId,
        phase: 'delivering',
        term: this.leaderTerm,
        startedAtMs: d.decidedAtMs,
        deadlineAtMs: 0,
        members: new Map<string, Member>(),
        waiters: [],
        outcome: d.outcome,
        reason: d.reason,
        decisionIndex: d.index,
      };
      this.txns.set(d.txnId, t);
    }
    for (const id of d.participants) {
      const record = this.table.participants.get(id);
      if (record && !t.members.has(id))
        t.members.set(id, {
          record,
          payload: new Uint8Array(),
          vote: null,
          voteReason: '',
          acked: false,
          retries: 0,
          nextRetryAtMs: 0,
          inFlight: false,
        });
    }
    assert(t.outcome === null || t.outcome === d.outcome, `${d.txnId}: delivering ${d.outcome} after ${t.outcome}`);
    assert(this.table.lookup(d.txnId)?.outcome === d.outcome, `${d.txnId}: the decision delivered is the logged one`);
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
    this.io.sendDecision(m.record, req, this.cfg.rpcTimeoutMs, (err) => {
      m.inFlight = false;
      if (this.txns.get(t.id) !== t) return;
      m.unimplemented = unimplementedMethod(err) ?? undefined;
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
      this.recordAck(t, m);
      this.maybeDone(t);
    });
  }

  /** A member acknowledged the DECISION it was sent. */
  private recordAck(t: Txn, m: Member): void {
    assert(
      t.phase === 'delivering' && t.outcome !== null,
      `${t.id}: an ACK is recorded while delivering, not ${t.phase}`,
    );
    assert(t.members.get(m.record.id) === m, `${t.id}: ${m.record.id} acknowledges as a member`);
    m.acked = true;
  }

  private maybeDone(t: Txn): void {
    if (t.phase !== 'delivering') return;
    if (!this.mayForget(t)) return;
    assert(
      this.txns.get(t.id) === t && t.outcome !== null,
      `${t.id}: only a decided transaction this leader tracks is forgotten`,
    );
    this.txns.delete(t.id);
    // Owed to a participant removed with --force: kept in the table for it (R5), not delivered.
    if (this.table.owedToRemoved(t.id).length > 0) return;
    if (this.forgetQueue.length === 0) this.forgetSinceMs = this.io.nowMs();
    this.forgetQueue.push(t.id);
    if (this.forgetQueue.length >= this.cfg.forgetBatchMax) this.flushForgets();
  }

  /** R5: a decision is forgotten only once every participant acknowledged it. */
  protected mayForget(t: Txn): boolean {
    for (const m of t.members.values()) if (!m.acked) return false;
    return true;
  }

  private flushForgets(lingerMs = 0): void {
    if (this.forgetQueue.length === 0 || this.forgetInFlight) return;
    const batch = this.forgetQueue.splice(0, this.cfg.forgetBatchMax);
    this.forgetInFlight = true;
    const failed = (err: Error | null): void => {
      if (!err) return;
      this.forgetInFlight = false;
      // Not forgotten yet: harmless, a later batch (or the next leader's re-drive) retries.
      if (this.isLeader()) this.forgetQueue.unshift(...batch);
    };
    this.io.propose({ t: 'forget', txnIds: batch }, failed, lingerMs);
  }

  /** Timeouts, decision redelivery and forget batching; call every few tens of ms. */
  tick(): void {
    if (!this.isLeader()) return;
    const now = this.io.nowMs();
    for (const t of this.txns.values()) {
      switch (t.phase) {
        case 'begun':
        case 'preparing':
          if (now >= t.deadlineAtMs)
            this.decideAbort(t, `the transaction timed out after ${t.deadlineAtMs - t.startedAtMs} ms`, 'timeout');
          break;
        case 'delivering':
          for (const m of t.members.values())
            if (!m.acked && !m.inFlight && now >= m.nextRetryAtMs) this.sendDecision(t, m);
          break;
        case 'deciding':
          // COMMIT only by the term that collected the votes (R2); ABORT by any leader.
          if (t.reproposeAtMs && now >= t.reproposeAtMs && (t.proposing === 'abort' || t.term === this.leaderTerm))
            this.proposeDecision(t);
          break;
      }
    }
    if (this.forgetQueue.length > 0 && now - this.forgetSinceMs >= this.cfg.forgetDelayMs) this.flushForgets();
    this.pc.tick();
  }

  protected answerFor(t: Txn): OutcomeAnswer {
    return txnAnswer(t);
  }

  /**
   * begun|preparing → deciding ABORT, for an operator whose own Decide entry is the ABORT: nothing is proposed here.
   */
  private operatorTakesOver(t: Txn, reason: string): void {
    assert(this.txns.get(t.id) === t, `${t.id}: the operator takes over a transaction this leader tracks`);
    assert(
      (t.phase === 'begun' || t.phase === 'preparing') && t.outcome === null,
      `${t.id}: the operator takes over an undecided transaction, not one ${t.phase}`,
    );
    t.phase = 'deciding';
    t.proposing = 'abort';
    t.reproposeAtMs = 0;
    t.reason = reason;
  }

  /** An ABORT this leader is deciding could not be logged: tick proposes it again. */
  private reproposeLater(t: Txn): void {
    if (this.txns.get(t.id) === t && t.phase === 'deciding' && t.proposing === 'abort')
      t.reproposeAtMs = this.io.nowMs() + this.cfg.retryMinMs;
  }
}
