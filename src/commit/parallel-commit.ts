// Parallel commit (docs/protocol.md, "Parallel commit"): the leader that
// began T replicates a STAGING record naming T's participants in parallel
// with PREPARE. T is committed once the STAGING record is applied and every
// participant it names holds a durable YES: the client hears COMMITTED then,
// after one round of durable writes instead of two, and the explicit COMMIT
// decision is logged afterwards, off the critical path.
//
// Two halves live here:
//
//   Stager    the leader's side: the STAGING proposal, and the implicit
//             COMMITTED answer when the last of (every YES, STAGING applied)
//             arrives, before the deadline, in the phase that still prepares.
//   Recovery  a leader that finds a STAGING record with no decision (the
//             stager is gone) asks every participant the status question. A
//             participant that is not prepared answers only after recording
//             durably that it will refuse any later PREPARE of T. All
//             prepared or committed → COMMIT; any refusal or abort → ABORT.
//             Every other way of deciding an undecided staged T (a prepared
//             participant's question, a retried or aborted Commit, an
//             operator) waits for recovery instead of logging a presumed
//             ABORT, which could contradict an implicit COMMITTED.
//
// The stager changes a transaction only through the protocol's asserted
// transitions (./commit-protocol.ts: stage, commitImplicitly, proposeCommit);
// recovery never touches a Txn at all, it proposes Decide entries and
// asserts the implicit rule before each one.
//
// Pure, like the engine: time, randomness and I/O come in through EngineIO.

import { assert } from '../util/assert.ts';
import type { ApplyResult, Decision, DecisionTable, Staging } from './state.ts';
import {
  answerOf,
  EngineError,
  type EngineConfig,
  type EngineIO,
  type OutcomeAnswer,
  type OutcomeCallback,
  type ParallelState,
  type Txn,
} from './engine-types.ts';
import { type ParticipantMethod, type TxnStatus, unimplementedMethod } from '../domain/protocol.ts';

/** What the halves need of the engine that holds them. */
export interface ParallelHost {
  readonly io: EngineIO;
  readonly table: DecisionTable;
  readonly cfg: EngineConfig;
  /** Whether the protocol still tracks t (it drops everything when leadership is lost). */
  tracks(t: Txn): boolean;
  /** preparing → deciding COMMIT, the client answered COMMITTED at once (the protocol's asserted transition). */
  commitImplicitly(t: Txn): void;
  /** preparing → deciding COMMIT the classic way: through the log before anyone hears it (R2). */
  proposeCommit(t: Txn): void;
  /** Counts an ABORT recovery decided first, for the engine's counters. */
  countRecoveryAbort(): void;
}

/** A status question per participant and recovery at once, at most, in flight while recovering. */
export const RECOVERIES_MAX = 10_000;

export interface Recovery {
  staging: Staging;
  answers: Map<string, TxnStatus>;
  inFlight: Set<string>;
  retries: number;
  nextAtMs: number;
  /** The decision proposed, while its entry is in flight. */
  proposing: boolean;
  waiters: OutcomeCallback[];
  /** Participants whose last status question was answered UNIMPLEMENTED, and the method (for `txn show`). */
  unimplemented: Map<string, ParticipantMethod>;
}

export class ParallelCommit {
  private readonly recoveries = new Map<string, Recovery>();

  constructor(private readonly host: ParallelHost) {}

  // ---- the stager ----------------------------------------------------------

  /** Replicates T's STAGING record; PREPAREs are already on their way (the protocol asserted the transition). */
  stage(t: Txn): void {
    const p: ParallelState = { staged: 'pending', index: 0, implicit: false };
    t.parallel = p;
    const cmd = { t: 'stage' as const, txnId: t.id, participants: [...t.members.keys()], atMs: this.host.io.nowMs() };
    this.host.io.propose(cmd, (err, r) => {
      // Dropped with this leader's term, or decided and forgotten: nothing to do.
      if (t.parallel !== p || !this.host.tracks(t)) return;
      assert(p.staged === 'pending', `${t.id}: the STAGING proposal is answered once`);
      if (err || !r || r.t !== 'stage' || r.staging === null) {
        // Not known to be in the log: T commits the classic way (its COMMIT
        // goes through the log before anyone hears it), which is safe whether
        // or not the record lands later. A decision already applied (staging
        // null) is what the engine's onApplied answers.
        p.staged = 'failed';
      } else {
        p.staged = 'applied';
        p.index = r.staging.index;
      }
      // Every YES came while the record was in flight: answer now, or commit the classic way.
      if (t.phase === 'preparing' && t.outcome === null && allYes(t) && !this.allYes(t)) this.host.proposeCommit(t);
    });
  }

  /**
   * Every participant of t voted YES. True when the parallel path took it
   * (answered COMMITTED, or waits for the STAGING record); false when the
   * engine should propose COMMIT the classic way.
   */
  allYes(t: Txn): boolean {
    const p = t.parallel;
    if (p === undefined || p.staged === 'failed') return false;
    if (p.staged === 'pending' && !this.stagingCommitted(t)) return true;
    // Past its deadline the leader answers nothing from votes: a refusal is
    // remembered for much longer than any deadline (docs/protocol.md), so a
    // YES counted here was not given after a recovery refused it.
    if (this.host.io.nowMs() >= t.deadlineAtMs) return false;
    this.host.commitImplicitly(t);
    return true;
  }

  /**
   * The COMMITTED a client is answered before the explicit decision is applied, or null; decisionIndex is the STAGING
   * record's.
   */
  implicitAnswer(t: Txn): OutcomeAnswer | null {
    if (t.outcome !== null || !t.parallel?.implicit) return null;
    return { txnId: t.id, outcome: 'COMMITTED', reason: '', decisionIndex: t.parallel.index };
  }

  /** Whether t's STAGING record is applied. A test mutant answers early by overriding it. */
  protected stagingCommitted(t: Txn): boolean {
    return t.parallel?.staged === 'applied';
  }

  // ---- recovery ------------------------------------------------------------

  /** True while T has a STAGING record and no decision: only recovery (or its stager) may decide it. */
  isStaged(txnId: string): boolean {
    return this.host.table.staged.has(txnId);
  }

  /** Starts recovering T (if not already) and calls cb with what the log then says. */
  wait(txnId: string, cb: OutcomeCallback): void {
    const r = this.start(txnId);
    if (r === null)
      return cb(new EngineError('exhausted', `${RECOVERIES_MAX} staged transactions are being recovered; retry later`));
    r.waiters.push(cb);
  }

  /**
   * Participant `participantId` of staged T asked for T's outcome: it is in
   * doubt, and a participant is in doubt only after its durable YES (R4), so
   * its question answers recovery's status question for it: prepared. A
   * participant that does not serve Status (built before it existed) is
   * still counted, as soon as it asks. Its callback hears the decision.
   */
  waitInDoubt(txnId: string, participantId: string, cb: OutcomeCallback): void {
    const r = this.start(txnId);
    if (r === null)
      return cb(new EngineError('exhausted', `${RECOVERIES_MAX} staged transactions are being recovered; retry later`));
    r.waiters.push(cb);
    if (r.staging.participants.includes(participantId) && !r.answers.has(participantId))
      this.answered(r, participantId, 'prepared');
  }

  /** Recovers T unless it is decided or already being recovered; null at the bound. */
  start(txnId: string): Recovery | null {
    const known = this.recoveries.get(txnId);
    if (known) return known;
    const staging = this.host.table.staged.get(txnId);
    if (!staging) return null;
    if (this.recoveries.size >= RECOVERIES_MAX) return null;
    const r: Recovery = {
      staging,
      answers: new Map(),
      inFlight: new Set(),
      retries: 0,
      nextAtMs: 0,
      proposing: false,
      waiters: [],
      unimplemented: new Map(),
    };
    this.recoveries.set(txnId, r);
    this.ask(r);
    return r;
  }

  /** Asks every participant that has not answered, once per round. */
  private ask(r: Recovery): void {
    const { io, table, cfg } = this.host;
    for (const id of r.staging.participants) {
      if (r.answers.has(id) || r.inFlight.has(id)) continue;
      const record = table.participants.get(id);
      // An unregistered participant cannot be asked; an operator must register it again (it is refused removal while
      // named).
      if (!record) continue;
      r.inFlight.add(id);
      io.sendStatus(record, r.staging.txnId, cfg.rpcTimeoutMs, (err, status) => {
        r.inFlight.delete(id);
        if (this.recoveries.get(r.staging.txnId) !== r) return;
        const gap = unimplementedMethod(err);
        if (gap !== null) r.unimplemented.set(id, gap);
        else r.unimplemented.delete(id);
        if (err || status === undefined) return this.unanswered(r, id);
        r.answers.set(id, status);
        this.maybeDecide(r);
      });
    }
  }

  /**
   * No answer from participant `id`: ask again later, however long it takes.
   * Silence is not a refusal: the participant may hold a YES that completed
   * an implicit COMMITTED. (A test mutant takes silence for a refusal.)
   */
  protected unanswered(r: Recovery, _id: string): void {
    const { io, cfg } = this.host;
    r.retries++;
    const base = Math.min(cfg.retryMaxMs, cfg.retryMinMs * 2 ** Math.min(r.retries - 1, 20));
    r.nextAtMs = io.nowMs() + base / 2 + io.random() * (base / 2);
  }

  /**
   * Records an answer and decides if it can: a participant's own in-doubt question (waitInDoubt), and test mutants that
   * bypass the question.
   */
  protected answered(r: Recovery, id: string, status: TxnStatus): void {
    r.answers.set(id, status);
    this.maybeDecide(r);
  }

  /** The implicit rule, applied: COMMIT iff every participant is prepared or committed; ABORT once one refused. */
  private maybeDecide(r: Recovery): void {
    if (r.proposing) return;
    const never = [...r.answers].find(([, s]) => s === 'refused' || s === 'aborted');
    const all = r.staging.participants.every(
      (p) => r.answers.get(p) === 'prepared' || r.answers.get(p) === 'committed',
    );
    if (!never && !all) return;
    const { table } = this.host;
    // Only an undecided staged T is recovered (decided() ends a recovery; tick skips the rest).
    assert(
      table.staged.get(r.staging.txnId) === r.staging && table.lookup(r.staging.txnId) === null,
      `${r.staging.txnId}: recovery decides a staged, undecided transaction`,
    );
    const outcome = never ? 'abort' : 'commit';
    const reason = never
      ? `recovered by a new leader: participant ${never[0]} had not prepared and refused it durably (${never[1]})`
      : '';
    this.propose(r, outcome, reason);
  }

  private propose(r: Recovery, outcome: 'commit' | 'abort', reason: string): void {
    const { io } = this.host;
    r.proposing = true;
    io.propose(
      {
        t: 'decide',
        txnId: r.staging.txnId,
        outcome,
        reason,
        participants: [...r.staging.participants],
        atMs: io.nowMs(),
      },
      (err, res) => {
        if (this.recoveries.get(r.staging.txnId) !== r) return;
        r.proposing = false;
        if (err || !res || res.t !== 'decide') {
          // Not known to be logged: decided again from tick (a duplicate Decide is a no-op, R1).
          r.nextAtMs = io.nowMs() + this.host.cfg.retryMinMs;
          return;
        }
        if (res.first && res.decision.outcome === 'abort') this.host.countRecoveryAbort();
      },
    );
  }

  /** The first decision of T was applied: recovery (if any) is over; its waiters hear the log. */
  decided(d: Decision): void {
    const r = this.recoveries.get(d.txnId);
    if (!r) return;
    this.recoveries.delete(d.txnId);
    const a = answerOf(d);
    for (const w of r.waiters.splice(0)) w(null, a);
  }

  /** Applied STAGING record of a transaction this leader is not working on (the caller checks): recover it. */
  onApplied(result: Extract<ApplyResult, { t: 'stage' }>): void {
    if (result.staging !== null) this.start(result.txnId);
  }

  /** Retries of unanswered status questions and of decisions not known to be logged. */
  tick(): void {
    const now = this.host.io.nowMs();
    for (const r of this.recoveries.values()) {
      if (r.proposing || now < r.nextAtMs) continue;
      if (!this.host.table.staged.has(r.staging.txnId)) continue;
      this.ask(r);
      this.maybeDecide(r);
    }
  }

  /** The participants of a staged T under recovery whose status question was answered UNIMPLEMENTED, by method. */
  unimplemented(txnId: string): ReadonlyMap<string, ParticipantMethod> | undefined {
    return this.recoveries.get(txnId)?.unimplemented;
  }

  /** Leadership lost: recoveries stop; their waiters must ask again. */
  drop(err: EngineError): void {
    for (const r of this.recoveries.values()) for (const w of r.waiters.splice(0)) w(err);
    this.recoveries.clear();
  }

  /** Staged transactions being recovered, for views and metrics. */
  recovering(): number {
    return this.recoveries.size;
  }
}

function allYes(t: Txn): boolean {
  for (const m of t.members.values()) if (m.vote !== 'yes') return false;
  return true;
}
