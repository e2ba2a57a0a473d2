// The coordinator engine: the leader's side of Paxos Commit on the Raft log.
//
//   client Commit(T) → PREPARE to every participant → VOTEs
//     all YES (and still the leader of the term that sent PREPARE) → propose Decide(T, COMMIT)
//     a NO, an unreachable participant or the deadline → ABORT, no log write (presumed abort, R3)
//   Decide applied → answer the client from applied state (R1) → DECISION to every
//   participant, retried with capped exponential backoff until ACKed → Forget(T), batched (R5)
//
// Pure: time, randomness and I/O come in through EngineIO, with callbacks, so
// the simulator can run this code on a seeded schedule. Only the leader's
// engine is active; a node that loses leadership drops its in-memory state,
// and a new leader re-drives every decided-but-unforgotten transaction it
// finds in the table. It never resumes another leader's prepare (R2): a
// Commit for a transaction it did not begin is answered by logging ABORT.

import type { ApplyResult, Command, Decision, DecisionOutcome, DecisionTable, ParticipantRecord } from './state.ts';

export type VoteValue = 'yes' | 'no';

export interface PrepareRequest {
  txnId: string;
  participantId: string;
  participants: string[];
  payload: Uint8Array;
  timeoutMs: number;
}

export interface DecisionRequest {
  txnId: string;
  participantId: string;
  outcome: DecisionOutcome;
  reason: string;
}

export interface EngineIO {
  nowMs(): number;
  /** A uniform float in [0, 1), for backoff jitter. */
  random(): number;
  /** Proposes a command through Raft; the callback gets the applied result or an error. */
  propose(cmd: Command, cb: (err: Error | null, result?: ApplyResult) => void): void;
  sendPrepare(to: ParticipantRecord, req: PrepareRequest, deadlineMs: number, cb: (err: Error | null, vote?: { vote: VoteValue; reason: string }) => void): void;
  sendDecision(to: ParticipantRecord, req: DecisionRequest, deadlineMs: number, cb: (err: Error | null) => void): void;
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
  /** Aborts decided in memory are remembered this long for idempotent retries. */
  abortMemoryMs: number;
  rpcDeadlineMs: number;
  /** Test only: a deliberately broken protocol for the simulator's checker self-test (test/sim). Never set in production. */
  mutant?: EngineMutant;
}

/**
 * Broken variants the whole-system simulator must catch:
 *   presume-abort-unlogged  answer an in-doubt participant ABORTED without logging it (breaks R3)
 *   commit-on-majority      propose COMMIT on a majority of YES votes (breaks R2, AC2)
 *   forget-before-acks      forget a decision once any participant acknowledged it (breaks R5)
 */
export type EngineMutant = 'presume-abort-unlogged' | 'commit-on-majority' | 'forget-before-acks';

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
  abortMemoryMs: 60_000,
  rpcDeadlineMs: 10_000,
};

export type ClientOutcome = 'committed' | 'aborted' | 'in-progress' | 'unknown';

export interface OutcomeAnswer {
  txnId: string;
  outcome: ClientOutcome;
  reason: string;
  decisionIndex: number;
}

export type OutcomeCallback = (err: EngineError | null, answer?: OutcomeAnswer) => void;

export type EngineErrorCode = 'not-leader' | 'exhausted' | 'invalid' | 'precondition' | 'unavailable';

/** An error the caller can act on; the service maps `code` to a gRPC status. */
export class EngineError extends Error {
  constructor(
    readonly code: EngineErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

export type Phase = 'begun' | 'preparing' | 'deciding' | 'delivering' | 'aborted';

interface Member {
  record: ParticipantRecord;
  payload: Uint8Array;
  vote: VoteValue | null;
  voteReason: string;
  acked: boolean;
  retries: number;
  nextRetryAtMs: number;
  inFlight: boolean;
}

interface Txn {
  id: string;
  phase: Phase;
  /** The term of the leader that began it: only it may commit it (R2). */
  term: number;
  startedAtMs: number;
  deadlineMs: number;
  members: Map<string, Member>;
  waiters: OutcomeCallback[];
  outcome: DecisionOutcome | null;
  reason: string;
  decisionIndex: number;
  /** While deciding: when to propose COMMIT again after the proposal failed; 0 while one is in flight. */
  reproposeAtMs?: number;
}

export interface TxnView {
  txnId: string;
  phase: Phase;
  outcome: ClientOutcome;
  reason: string;
  ageMs: number;
  decisionIndex: number;
  participants: { id: string; vote: VoteValue | null; acked: boolean; retries: number }[];
}

/**
 * Why a transaction aborted, as a small closed set (metrics labels must not
 * carry free text): the class is named where the abort is decided.
 */
export type AbortClass = 'vote_no' | 'timeout' | 'unreachable' | 'client' | 'leader_change' | 'presumed_abort_query';
export const ABORT_CLASSES: readonly AbortClass[] = ['vote_no', 'timeout', 'unreachable', 'client', 'leader_change', 'presumed_abort_query'];

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
  private readonly cfg: EngineConfig;
  private readonly stats: EngineCounters = {
    begun: 0,
    committed: 0,
    aborted: { vote_no: 0, timeout: 0, unreachable: 0, client: 0, leader_change: 0, presumed_abort_query: 0 },
    decisionRetries: 0,
  };
  private leaderTerm = 0;
  private readonly txns = new Map<string, Txn>();
  /** Forget(T) waiting to be proposed, batched off the critical path (R5). */
  private forgetQueue: string[] = [];
  private forgetSinceMs = 0;
  private forgetInFlight = false;

  constructor(
    private readonly table: DecisionTable,
    private readonly io: EngineIO,
    cfg: Partial<EngineConfig> = {},
  ) {
    this.cfg = { ...defaultEngineConfig, ...cfg };
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
   * preparing and deciding are undecided; delivering ones wait for ACKs (R5);
   * aborted ones are remembered for idempotent retries.
   */
  phases(): Record<Phase, number> {
    const n: Record<Phase, number> = { begun: 0, preparing: 0, deciding: 0, delivering: 0, aborted: 0 };
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
    }
  }

  private dropAll(): void {
    const err = new EngineError('unavailable', 'leadership changed while the transaction was in flight; retry Commit with the same id on the new leader, or query its outcome');
    for (const t of this.txns.values()) for (const w of t.waiters.splice(0)) w(err);
    this.txns.clear();
    this.forgetQueue = [];
    this.forgetInFlight = false;
  }

  private requireLeader(): void {
    if (!this.isLeader()) throw new EngineError('not-leader', 'not the leader');
  }

  // ---- client API --------------------------------------------------------

  begin(txnId: string, timeoutMs: number): { deadlineMs: number } {
    this.requireLeader();
    validateTxnId(txnId);
    const now = this.io.nowMs();
    const existing = this.txns.get(txnId);
    if (existing) return { deadlineMs: existing.deadlineMs };
    if (this.table.lookup(txnId)) throw new EngineError('precondition', `transaction ${txnId} is already decided; use a new transaction id`);
    if (this.txns.size >= this.cfg.inFlightMax) throw new EngineError('exhausted', `${this.txns.size} transactions in flight (limit ${this.cfg.inFlightMax}); retry later`);
    const t = timeoutMs > 0 ? timeoutMs : this.cfg.defaultTimeoutMs;
    if (t > this.cfg.maxTimeoutMs) throw new EngineError('invalid', `timeout ${t} ms exceeds the limit of ${this.cfg.maxTimeoutMs} ms`);
    this.stats.begun++;
    this.txns.set(txnId, {
      id: txnId,
      phase: 'begun',
      term: this.leaderTerm,
      startedAtMs: now,
      deadlineMs: now + t,
      members: new Map(),
      waiters: [],
      outcome: null,
      reason: '',
      decisionIndex: 0,
    });
    return { deadlineMs: now + t };
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

  commit(txnId: string, enlist: { participantId: string; payload: Uint8Array }[], cb: OutcomeCallback): void {
    if (!this.accept(txnId, cb)) return;
    const decided = this.table.lookup(txnId);
    if (decided) return cb(null, answerOf(decided));
    const t = this.txns.get(txnId);
    if (!t) {
      // R2: we did not begin it, so another leader may have prepared it.
      return this.logAbort(txnId, 'the transaction was not begun on the current leader (leader change?); it is aborted', 'leader_change', cb);
    }
    if (t.outcome !== null) return cb(null, this.answerFor(t));
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
  }

  abort(txnId: string, reason: string, cb: OutcomeCallback): void {
    if (!this.accept(txnId, cb)) return;
    const decided = this.table.lookup(txnId);
    if (decided) return cb(null, answerOf(decided));
    const t = this.txns.get(txnId);
    const why = reason || 'aborted by the application';
    if (!t) return this.logAbort(txnId, why, 'client', cb);
    if (t.phase === 'deciding') {
      // COMMIT is already proposed: the log will tell.
      t.waiters.push(cb);
      return;
    }
    if (t.phase === 'delivering' || t.phase === 'aborted') return cb(null, this.answerFor(t));
    this.abortInMemory(t, why, 'client');
    cb(null, this.answerFor(t));
  }

  /**
   * Outcome of `txnId`. From a participant in doubt (`participantId` set),
   * an undecided transaction this leader is not working on is aborted
   * through the log first (R3); from a client it is `unknown`.
   */
  outcome(txnId: string, participantId: string, cb: OutcomeCallback): void {
    const decided = this.table.lookup(txnId);
    if (decided) return cb(null, answerOf(decided));
    if (!this.isLeader()) return cb(new EngineError('not-leader', 'not the leader'));
    if (this.cfg.mutant === 'presume-abort-unlogged' && participantId !== '') return cb(null, { txnId, outcome: 'aborted', reason: 'mutant: presumed abort, not logged', decisionIndex: 0 });
    const t = this.txns.get(txnId);
    if (t) return cb(null, this.answerFor(t));
    if (participantId === '') return cb(null, { txnId, outcome: 'unknown', reason: 'no decision is recorded for this transaction', decisionIndex: 0 });
    this.logAbort(txnId, `participant ${participantId} was in doubt and no decision was logged (presumed abort)`, 'presumed_abort_query', cb);
  }

  list(inFlightOnly: boolean, limit: number): TxnView[] {
    const now = this.io.nowMs();
    const out: TxnView[] = [];
    for (const t of this.txns.values()) {
      if (out.length >= limit) return out;
      const a = this.answerFor(t);
      out.push({
        txnId: t.id,
        phase: t.phase,
        outcome: a.outcome,
        reason: t.reason,
        ageMs: now - t.startedAtMs,
        decisionIndex: t.decisionIndex,
        participants: [...t.members.values()].map((m) => ({ id: m.record.id, vote: m.vote, acked: m.acked, retries: m.retries })),
      });
    }
    if (inFlightOnly) return out;
    for (const d of this.table.decisions.values()) {
      if (out.length >= limit) break;
      if (this.txns.has(d.txnId)) continue;
      out.push({ txnId: d.txnId, phase: 'delivering', outcome: d.outcome === 'commit' ? 'committed' : 'aborted', reason: d.reason, ageMs: now - d.decidedAtMs, decisionIndex: d.index, participants: d.participants.map((id) => ({ id, vote: null, acked: false, retries: 0 })) });
    }
    return out;
  }

  registerParticipant(id: string, endpoint: string, cb: (err: EngineError | null, p?: ParticipantRecord) => void): void {
    if (!this.isLeader()) return cb(new EngineError('not-leader', 'not the leader'));
    this.io.propose({ t: 'register', id, endpoint, atMs: this.io.nowMs() }, (err, r) => {
      if (err || !r || r.t !== 'register') return cb(new EngineError('unavailable', `registration not committed: ${err?.message ?? 'no result'}; retry`));
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
    const remainingMs = Math.max(1, t.deadlineMs - this.io.nowMs());
    for (const m of t.members.values()) {
      const req: PrepareRequest = { txnId: t.id, participantId: m.record.id, participants: ids, payload: m.payload, timeoutMs: remainingMs };
      m.inFlight = true;
      this.io.sendPrepare(m.record, req, Math.min(remainingMs, this.cfg.rpcDeadlineMs), (err, vote) => {
        m.inFlight = false;
        if (this.txns.get(t.id) !== t || t.phase !== 'preparing') return;
        if (err || !vote) return this.abortInMemory(t, `participant ${m.record.id} did not vote: ${err?.message ?? 'no answer'}`, 'unreachable');
        m.vote = vote.vote;
        m.voteReason = vote.reason;
        if (this.cfg.mutant === 'commit-on-majority') return this.majorityMutant(t);
        if (vote.vote === 'no') return this.abortInMemory(t, `participant ${m.record.id} voted NO: ${vote.reason || 'no reason given'}`, 'vote_no');
        if ([...t.members.values()].every((x) => x.vote === 'yes')) this.proposeCommit(t);
      });
    }
  }

  /** The commit-on-majority mutant: COMMIT once more than half voted YES, ABORT once that is impossible. */
  private majorityMutant(t: Txn): void {
    const votes = [...t.members.values()];
    const yes = votes.filter((x) => x.vote === 'yes').length;
    if (yes * 2 > votes.length) return this.proposeCommit(t);
    if (votes.every((x) => x.vote !== null)) this.abortInMemory(t, 'mutant: no majority of YES votes', 'vote_no');
  }

  /** R2: only the leader of the term that sent PREPARE, holding every YES, proposes COMMIT. */
  private proposeCommit(t: Txn): void {
    if (t.term !== this.leaderTerm) return this.abortInMemory(t, 'leadership changed during prepare', 'leader_change');
    t.phase = 'deciding';
    this.proposeCommitEntry(t);
  }

  private proposeCommitEntry(t: Txn): void {
    t.reproposeAtMs = 0;
    const participants = [...t.members.keys()];
    this.io.propose({ t: 'decide', txnId: t.id, outcome: 'commit', reason: '', participants, atMs: this.io.nowMs() }, (err) => {
      // Success is handled where every node sees it: onApplied. A proposal
      // that failed leaves the outcome to the log (the entry may still
      // commit under a later leader), so the client must ask again.
      if (!err || this.txns.get(t.id) !== t) return;
      // The entry may also never have reached the log (Raft drops proposals
      // during a leadership transfer, or under back-pressure) while this node
      // stays leader: then nothing would ever decide T. Propose it again from
      // tick; only this leader, of the term that collected every YES, may (R2),
      // and a duplicate Decide is a no-op (R1).
      if (t.phase === 'deciding') t.reproposeAtMs = this.io.nowMs() + this.cfg.retryMinMs;
      const e = new EngineError('unavailable', `the COMMIT decision could not be confirmed (${err.message}); query the outcome or retry Commit with the same id`);
      for (const w of t.waiters.splice(0)) w(e);
    });
  }

  /** Presumed abort: no YES can become COMMIT now, so no log write is needed (R3). */
  private abortInMemory(t: Txn, reason: string, why: AbortClass): void {
    if (t.phase !== 'begun' && t.phase !== 'preparing') return;
    this.stats.aborted[why]++;
    t.phase = 'aborted';
    t.outcome = 'abort';
    t.reason = reason;
    // Remembered for a while so that a retried Commit gets the same answer.
    t.deadlineMs = this.io.nowMs() + this.cfg.abortMemoryMs;
    const a = this.answerFor(t);
    for (const w of t.waiters.splice(0)) w(null, a);
    // Tell everyone who might be prepared; ABORT needs no acknowledgement.
    for (const m of t.members.values()) {
      if (m.vote === 'no') continue;
      this.io.sendDecision(m.record, { txnId: t.id, participantId: m.record.id, outcome: 'abort', reason }, this.cfg.rpcDeadlineMs, () => {});
    }
  }

  private logAbort(txnId: string, reason: string, why: AbortClass, cb: OutcomeCallback): void {
    this.io.propose({ t: 'decide', txnId, outcome: 'abort', reason, participants: [], atMs: this.io.nowMs() }, (err, r) => {
      if (err || !r || r.t !== 'decide') return cb(new EngineError('unavailable', `the decision could not be logged (${err?.message ?? 'no result'}); retry`));
      if (r.first && r.decision.outcome === 'abort') this.stats.aborted[why]++;
      cb(null, answerOf(r.decision));
    });
  }

  /** Every node calls this for every applied command; only the leader acts on it. */
  onApplied(result: ApplyResult): void {
    if (!this.isLeader()) return;
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
      if (result.first) this.deliver(d);
    } else if (result.t === 'forget') {
      this.forgetInFlight = false;
    }
  }

  /** Sends the DECISION to every participant until each acknowledges it (R5). */
  private deliver(d: Decision): void {
    let t = this.txns.get(d.txnId);
    if (!t || t.phase === 'aborted') {
      const members = new Map<string, Member>();
      for (const id of d.participants) {
        const record = this.table.participants.get(id);
        if (record) members.set(id, { record, payload: new Uint8Array(), vote: null, voteReason: '', acked: false, retries: 0, nextRetryAtMs: 0, inFlight: false });
      }
      t = { id: d.txnId, phase: 'delivering', term: this.leaderTerm, startedAtMs: d.decidedAtMs, deadlineMs: 0, members, waiters: [], outcome: d.outcome, reason: d.reason, decisionIndex: d.index };
      this.txns.set(d.txnId, t);
    }
    t.phase = 'delivering';
    t.outcome = d.outcome;
    t.decisionIndex = d.index;
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
      m.acked = true;
      this.maybeDone(t);
    });
  }

  private maybeDone(t: Txn): void {
    if (t.phase !== 'delivering') return;
    if (this.cfg.mutant === 'forget-before-acks') {
      if (![...t.members.values()].some((m) => m.acked) && t.members.size > 0) return;
    } else for (const m of t.members.values()) if (!m.acked) return;
    // Every participant acknowledged: the decision may be forgotten (R5).
    this.txns.delete(t.id);
    if (this.forgetQueue.length === 0) this.forgetSinceMs = this.io.nowMs();
    this.forgetQueue.push(t.id);
    if (this.forgetQueue.length >= this.cfg.forgetBatchMax) this.flushForgets();
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
          if (now >= t.deadlineMs) this.abortInMemory(t, `the transaction timed out after ${t.deadlineMs - t.startedAtMs} ms`, 'timeout');
          break;
        case 'aborted':
          if (now >= t.deadlineMs) this.txns.delete(t.id);
          break;
        case 'delivering':
          for (const m of t.members.values()) if (!m.acked && !m.inFlight && now >= m.nextRetryAtMs) this.sendDecision(t, m);
          break;
        case 'deciding':
          if (t.reproposeAtMs && now >= t.reproposeAtMs && t.term === this.leaderTerm) this.proposeCommitEntry(t);
          break;
      }
    }
    if (this.forgetQueue.length > 0 && now - this.forgetSinceMs >= this.cfg.forgetDelayMs) this.flushForgets();
  }

  private answerFor(t: Txn): OutcomeAnswer {
    if (t.outcome === null) return { txnId: t.id, outcome: 'in-progress', reason: t.phase, decisionIndex: 0 };
    return { txnId: t.id, outcome: t.outcome === 'commit' ? 'committed' : 'aborted', reason: t.reason, decisionIndex: t.decisionIndex };
  }
}

function answerOf(d: Decision): OutcomeAnswer {
  return { txnId: d.txnId, outcome: d.outcome === 'commit' ? 'committed' : 'aborted', reason: d.reason, decisionIndex: d.index };
}

const TXN_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

function validateTxnId(id: string): void {
  if (!TXN_ID.test(id)) throw new EngineError('invalid', `transaction id ${JSON.stringify(id)} must be 1–128 characters of letters, digits, "_", ".", ":" or "-"`);
}
