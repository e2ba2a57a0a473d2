// The participant engine: the per-transaction state machine
//
//   (none) ──PREPARE, resource yes, journal synced──▶ prepared ──DECISION──▶ committed | aborted
//
// ("journal synced" is the resource's own durable prepare instead when the
// resource says it finds T again without the journal: durableAtPrepare.)
//
// PURE: no disk, sockets, timers, Date.now() or Math.random(). Time comes
// from the Clock, delays from the Schedule, I/O through the Resource, the
// Journal and askOutcome, all callback style, so a deterministic simulator
// can drive the production engine step by step.
//
// R4 lives here: a YES vote is given only after the journal reports the
// prepared record synced (or the resource says its own prepare is durable and
// findable without the journal), and from then on the engine never decides alone.
// It waits for the DECISION, and when none comes (or after a restart) it asks
// the cluster until it learns a final outcome, however long that takes.
import {
  decisionOfOutcome,
  outcomeOfDecision,
  statusOfOutcome,
  type Ack,
  type Decide,
  type Prepare,
  type VoteAnswer,
} from '../domain/protocol.ts';
import { assert } from '../util/assert.ts';
import { OldestFirst } from '../util/oldest-first.ts';
import { InDoubtResolver } from './in-doubt.ts';
import {
  outcomeOfRecord,
  ParticipantError,
  recordKindOf,
  SILENT_LOG,
  toBase64,
  withDefaults,
  type AskOutcome,
  type AskOutcomes,
  type Clock,
  type EngineLog,
  type Journal,
  type Outcome,
  type Resource,
  type Schedule,
  type TxnId,
  type PreparedRecord,
  type TxnRecord,
  type TxnStatus,
} from './types.ts';

export interface EngineOptions {
  clusterId: string;
  participantId: string;
  resource: Resource;
  journal: Journal;
  clock: Clock;
  schedule: Schedule;
  askOutcome: AskOutcome;
  /** Batched questions (Coordinator.GetOutcomes); absent, each in-doubt transaction is asked about on its own. */
  askOutcomes?: AskOutcomes;
  log?: EngineLog;
  /** Prepared (and preparing) transactions held at once; beyond it PREPARE gets NO. */
  preparedMax?: number;
  /** Decided transaction ids remembered so that late duplicate PREPAREs get the same answer (R7). */
  decidedMax?: number;
  decidedRetentionMs?: number;
  /**
   * Keep nothing of an aborted transaction once ABORT is applied (a resource
   * that drops its state on rollback, as the protocol allows). Verdict's
   * cluster answers every later question from its log, and never begins a
   * decided id again, so an answer stays the same without the participant's
   * memory; the simulator runs such participants to hold the cluster to that.
   */
  forgetAborts?: boolean;
  /**
   * A prepared transaction with no DECISION after this long is asked about.
   * Asking early is cheap and safe: the leader still working on it answers
   * IN_PROGRESS; only a leader that does not know it (the one that sent
   * PREPARE is gone) logs ABORT (R3). Waiting for the PREPARE's timeout would
   * stretch the in-doubt window after a leader crash to the whole timeout.
   */
  inDoubtAfterMs?: number;
  sweepIntervalMs?: number;
  askBackoffMinMs?: number;
  askBackoffMaxMs?: number;
  /** Outcome questions in flight at once, so a restart with many in-doubt transactions does not flood the cluster. */
  asksInFlightMax?: number;
  /** Requests queued behind one another for the same transaction. */
  txnOpsMax?: number;
}

export type PrepareCallback = (err: ParticipantError | null, vote?: VoteAnswer) => void;
export type DecideCallback = (err: ParticipantError | null, ack?: Ack) => void;
export type StatusCallback = (err: ParticipantError | null, status?: TxnStatus) => void;

/**
 * The status question about T (parallel commit's recovery): from a node of the cluster, addressed like PREPARE (R7).
 */
export interface StatusQuestion {
  clusterId: string;
  txnId: TxnId;
  participantId: string;
}

export interface InDoubtTxn {
  txnId: TxnId;
  preparedAtMs: number;
}

export interface EngineCounts {
  prepared: number;
  preparing: number;
  /** Decided ids currently remembered (bounded). */
  decidedRemembered: number;
  /** In-doubt transactions the engine is asking the cluster about. */
  resolving: number;
  votesYes: number;
  votesNo: number;
  committed: number;
  aborted: number;
  outcomeQuestions: number;
  protocolViolations: number;
}

interface PreparedTxn {
  preparedAtMs: number;
  /** When to start asking the cluster if no DECISION has come. */
  askAtMs: number;
}

interface DecidedTxn {
  outcome: Outcome;
  atMs: number;
}

type Op = (done: () => void) => void;

/** Wraps a callback handed to a collaborator and asserts the collaborator calls it exactly once. */
function once<A extends unknown[]>(what: string, fn: (...args: A) => void): (...args: A) => void {
  let called = false;
  return (...args: A) => {
    assert(!called, `${what} calls back once`);
    called = true;
    fn(...args);
  };
}

export class ParticipantEngine {
  protected readonly o: Required<Omit<EngineOptions, 'log' | 'askOutcomes'>> & Pick<EngineOptions, 'askOutcomes'>;
  private readonly log: EngineLog;
  /** Durably prepared and not yet decided. Invariant: disjoint from `decided`. */
  protected readonly prepared = new Map<TxnId, PreparedTxn>();
  /** Decided here, in decision order (Map insertion order), bounded by decidedMax and decidedRetentionMs. */
  private readonly decided = new Map<TxnId, DecidedTxn>();
  /** Each value of `decided` is a new object (rememberDecided), as OldestFirst.peek needs. */
  private readonly oldestDecided = new OldestFirst(this.decided);
  /** Prepares between the resource's yes and the journal's sync; they count toward preparedMax. */
  protected preparing = 0;
  /** Per-transaction serial queue: present while an operation on T runs; holds the ones waiting. */
  private readonly busy = new Map<TxnId, Op[]>();
  private readonly inDoubtResolver: InDoubtResolver;
  private cancelSweep: (() => void) | null = null;
  private phase: 'new' | 'running' | 'stopped' = 'new';
  private readonly stats = { votesYes: 0, votesNo: 0, committed: 0, aborted: 0, protocolViolations: 0 };

  constructor(o: EngineOptions) {
    assert(o.clusterId !== '' && o.participantId !== '', 'engine has a cluster id and a participant id');
    this.o = withDefaults(
      {
        preparedMax: 10_000,
        decidedMax: 100_000,
        decidedRetentionMs: 3_600_000,
        inDoubtAfterMs: 2_000,
        sweepIntervalMs: 500,
        askBackoffMinMs: 100,
        askBackoffMaxMs: 10_000,
        asksInFlightMax: 64,
        txnOpsMax: 16,
        forgetAborts: false,
      },
      o,
    );
    assert(this.o.preparedMax > 0 && this.o.txnOpsMax > 0, 'bounds are positive');
    this.log = o.log ?? SILENT_LOG;
    this.inDoubtResolver = new InDoubtResolver({
      askOutcome: this.o.askOutcome,
      ...(this.o.askOutcomes ? { askOutcomes: this.o.askOutcomes } : {}),
      schedule: this.o.schedule,
      log: this.log,
      askBackoffMinMs: this.o.askBackoffMinMs,
      askBackoffMaxMs: this.o.askBackoffMaxMs,
      asksInFlightMax: this.o.asksInFlightMax,
      isPrepared: (txnId) => this.prepared.has(txnId),
      apply: (txnId, outcome, cb) => {
        const queued = this.exclusive(txnId, (done) =>
          this.applyDecision(txnId, outcome, 'cluster', (err) => {
            done();
            cb(err);
          }),
        );
        if (!queued) cb(this.tooBusy(txnId));
      },
    });
  }

  /**
   * Rebuilds the state machine from the journal, before start() and before
   * any request. Every transaction left prepared is in doubt: start() asks
   * the cluster about it at once.
   */
  recover(records: readonly TxnRecord[]): void {
    assert(
      this.phase === 'new' && this.prepared.size === 0 && this.decided.size === 0,
      'recover() runs once, before start()',
    );
    const now = this.o.clock.nowMs();
    for (const r of records) {
      if (r.kind === 'prepared') {
        // Prepared again after a decision: a very late duplicate PREPARE that arrived after the
        // decided id was forgotten. It is in doubt like any other; the cluster will say ABORT.
        this.decided.delete(r.txnId);
        this.prepared.set(r.txnId, { preparedAtMs: r.atMs, askAtMs: now });
      } else if (r.kind === 'refused') {
        // A durable refusal is kept whatever forgetAborts says: it is a promise never to prepare T.
        this.prepared.delete(r.txnId);
        this.decided.delete(r.txnId);
        this.decided.set(r.txnId, { outcome: 'ABORTED', atMs: r.atMs });
      } else {
        this.prepared.delete(r.txnId);
        this.decided.delete(r.txnId);
        if (!(r.kind === 'aborted' && this.o.forgetAborts))
          this.decided.set(r.txnId, { outcome: outcomeOfRecord(r.kind), atMs: r.atMs });
      }
    }
    this.pruneDecided();
    if (this.prepared.size > 0)
      this.log.info(
        { inDoubt: this.prepared.size },
        'recovered prepared transactions; asking the cluster for their outcome',
      );
  }

  start(): void {
    assert(this.phase === 'new', 'start() runs once');
    this.phase = 'running';
    this.sweep();
  }

  /**
   * Stops asking and scheduling. Requests after stop() are refused with UNAVAILABLE; callbacks in flight still
   * complete.
   */
  stop(): void {
    if (this.phase === 'stopped') return;
    this.phase = 'stopped';
    this.cancelSweep?.();
    this.cancelSweep = null;
    this.inDoubtResolver.stop();
  }

  prepare(req: Prepare, cb: PrepareCallback): void {
    const refusal = this.refuse(req.clusterId, req.participantId, req.txnId);
    if (refusal !== null) return cb(refusal);
    const txnId = req.txnId;
    const queued = this.exclusive(txnId, (done) =>
      this.doPrepare(req, (vote) => {
        if (vote.vote === 'yes') this.stats.votesYes += 1;
        else this.stats.votesNo += 1;
        done();
        cb(null, vote);
      }),
    );
    if (!queued) cb(this.tooBusy(txnId));
  }

  decide(req: Decide, cb: DecideCallback): void {
    const refusal = this.refuse(req.clusterId, req.participantId, req.txnId);
    if (refusal !== null) return cb(refusal);
    const outcome = outcomeOfDecision(req.outcome);
    const queued = this.exclusive(req.txnId, (done) =>
      this.applyDecision(req.txnId, outcome, 'coordinator', (err) => {
        done();
        if (err !== null) cb(err);
        else cb(null, { txnId: req.txnId, participantId: this.o.participantId });
      }),
    );
    if (!queued) cb(this.tooBusy(req.txnId));
  }

  /**
   * The status question of parallel commit's recovery (docs/protocol.md,
   * "Parallel commit"): prepared (a durable YES), committed, aborted, or —
   * when T is neither prepared nor decided here, never prepared or voted NO —
   * a durable refusal: the record that this participant will never prepare
   * T is synced before the answer leaves, so a PREPARE still on its way from
   * an earlier leader gets NO and cannot complete a set of YES votes that
   * recovery has already counted as incomplete. Serialized with PREPARE and
   * DECISION of T, so a PREPARE in progress finishes first.
   */
  status(req: StatusQuestion, cb: StatusCallback): void {
    const refusal = this.refuse(req.clusterId, req.participantId, req.txnId);
    if (refusal !== null) return cb(refusal);
    const txnId = req.txnId;
    const queued = this.exclusive(txnId, (done) =>
      this.statusOf(txnId, (err, status) => {
        done();
        cb(err, status);
      }),
    );
    if (!queued) cb(this.tooBusy(txnId));
  }

  /** Runs inside exclusive(txnId). */
  protected statusOf(txnId: TxnId, cb: StatusCallback): void {
    if (this.prepared.has(txnId)) return cb(null, 'prepared');
    const decided = this.decided.get(txnId);
    if (decided !== undefined) return cb(null, statusOfOutcome(decided.outcome));
    this.o.journal.append(
      { kind: 'refused', txnId, atMs: this.o.clock.nowMs() },
      once('journal.append', (jerr) => {
        if (jerr !== null) {
          this.log.error(
            { txnId, err: jerr.message },
            'the refusal could not be made durable; the status question is not answered',
          );
          return cb(
            new ParticipantError('UNAVAILABLE', `journal write failed for the refusal of ${txnId}: ${jerr.message}`),
          );
        }
        // Remembered whatever forgetAborts says: the promise is what makes recovery's ABORT safe.
        this.decided.delete(txnId);
        this.decided.set(txnId, { outcome: 'ABORTED', atMs: this.o.clock.nowMs() });
        this.pruneDecided();
        this.log.info({ txnId }, 'status question: not prepared here; refused any later PREPARE durably');
        // Work held for T before PREPARE (an open database transaction) will never be prepared now.
        this.o.resource.abortUnprepared?.(
          txnId,
          once('resource.abortUnprepared', (err) => {
            if (err !== null)
              this.log.warn(
                { txnId, err: err.message },
                'could not release the work held for a refused transaction; its own timeout will',
              );
          }),
        );
        cb(null, 'refused');
      }),
    );
  }

  /**
   * The leader that sent these PREPAREs is gone (its stream broke): ask the
   * cluster about each that is still prepared now, and keep asking at a short
   * interval while no leader answers (src/participant/in-doubt.ts), instead
   * of waiting inDoubtAfterMs for a DECISION that the dead leader will not
   * send. A new leader answers from its log, logging ABORT for a transaction
   * it finds undecided (R3).
   */
  askNow(txnIds: Iterable<TxnId>): void {
    if (this.phase !== 'running') return;
    for (const txnId of txnIds) if (this.prepared.has(txnId)) this.inDoubtResolver.resolve(txnId, true);
  }

  /** Asks the cluster now about every prepared transaction not already being asked about. */
  resolveInDoubt(): void {
    if (this.phase !== 'running') return;
    for (const txnId of this.prepared.keys()) this.inDoubtResolver.resolve(txnId);
  }

  inDoubt(): InDoubtTxn[] {
    return [...this.prepared].map(([txnId, p]) => ({ txnId, preparedAtMs: p.preparedAtMs }));
  }

  /** What this participant knows of T: prepared, its outcome, or nothing (never heard of it, or forgotten). */
  stateOf(txnId: TxnId): 'prepared' | Outcome | undefined {
    if (this.prepared.has(txnId)) return 'prepared';
    return this.decided.get(txnId)?.outcome;
  }

  counts(): EngineCounts {
    return {
      prepared: this.prepared.size,
      preparing: this.preparing,
      decidedRemembered: this.decided.size,
      resolving: this.inDoubtResolver.size,
      outcomeQuestions: this.inDoubtResolver.questions,
      ...this.stats,
    };
  }

  // ---- PREPARE → VOTE ----

  private doPrepare(req: Prepare, answer: (vote: VoteAnswer) => void): void {
    const { txnId } = req;
    const vote = (yes: boolean, reason = ''): void => {
      const v: VoteAnswer = { txnId, participantId: this.o.participantId, vote: yes ? 'yes' : 'no', reason };
      // Read as the vote leaves, so a repeated PREPARE carries what is left of the reserve's TTL.
      const ttlMs = yes ? this.o.resource.reserveTtlMs?.(txnId) : undefined;
      if (ttlMs !== undefined) v.reserveTtlMs = ttlMs;
      answer(v);
    };
    // R7: a repeated PREPARE gets the answer the first one got.
    const decided = this.decided.get(txnId);
    if (decided !== undefined) {
      if (decided.outcome === 'COMMITTED') return vote(true);
      this.o.resource.latePrepareRefused?.(txnId);
      return vote(false, 'already aborted');
    }
    if (this.prepared.has(txnId)) return vote(true);
    if (this.phase === 'stopped') return vote(false, 'participant is shutting down');
    if (this.prepared.size + this.preparing >= this.o.preparedMax) {
      this.log.warn(
        { txnId, prepared: this.prepared.size, preparedMax: this.o.preparedMax },
        'vote NO: too many prepared transactions',
      );
      return vote(false, 'too many prepared transactions');
    }
    this.preparing += 1;
    this.o.resource.prepare(
      txnId,
      req.payload,
      once('resource.prepare', (err, rv) => {
        if (err !== null || !rv.yes) {
          this.preparing -= 1;
          const reason = err !== null ? `resource failed to prepare: ${err.message}` : rv.reason || 'resource refused';
          this.log.info({ txnId, reason }, 'vote NO');
          return vote(false, reason);
        }
        const preparedAtMs = this.o.clock.nowMs();
        // A resource whose own prepare is durable holds T's work itself: its journal needs only T's id.
        const held = this.o.resource.durableAtPrepare?.(txnId) === true;
        const record: PreparedRecord = {
          kind: 'prepared',
          txnId,
          atMs: preparedAtMs,
          payloadB64: held ? '' : toBase64(req.payload),
          participants: held ? [] : [...req.participants],
        };
        this.prepareDurably(record, vote);
      }),
    );
  }

  /**
   * R4: the prepared record is synced before the vote is YES; not durable, not
   * prepared, and the vote is NO. A resource whose own prepare is durable and
   * found again by T's id after a crash (Resource.durableAtPrepare) already
   * kept R4: the record is then journaled without waiting for its sync.
   */
  protected prepareDurably(record: PreparedRecord, vote: (yes: boolean, reason?: string) => void): void {
    const { txnId, atMs: preparedAtMs } = record;
    if (this.o.resource.durableAtPrepare?.(txnId) === true) {
      this.preparing -= 1;
      this.prepared.set(txnId, { preparedAtMs, askAtMs: preparedAtMs + this.o.inDoubtAfterMs });
      vote(true);
      this.o.journal.append(
        record,
        once('journal.append', (jerr) => {
          // Recovery finds T in the resource, so a lost record costs nothing but this line.
          if (jerr !== null)
            this.log.warn(
              { txnId, err: jerr.message },
              'could not journal the prepared record; the resource holds the prepared state',
            );
        }),
      );
      return;
    }
    this.o.journal.append(
      record,
      once('journal.append', (jerr) => {
        this.preparing -= 1;
        if (jerr !== null) {
          // Not durable, so not prepared: release what the resource holds and vote NO.
          this.log.error({ txnId, err: jerr.message }, 'vote NO: the prepared record could not be made durable');
          this.o.resource.abort(
            txnId,
            once('resource.abort', () => {}),
          );
          return vote(false, `journal write failed: ${jerr.message}`);
        }
        // R4: the prepared record is synced; only now may the vote be YES.
        this.prepared.set(txnId, { preparedAtMs, askAtMs: preparedAtMs + this.o.inDoubtAfterMs });
        vote(true);
      }),
    );
  }

  // ---- DECISION → ACK ----

  /** Applies a final outcome learned from the coordinator or from the cluster. Runs inside exclusive(txnId). */
  private applyDecision(
    txnId: TxnId,
    outcome: Outcome,
    source: 'coordinator' | 'cluster',
    cb: (err: ParticipantError | null) => void,
  ): void {
    const known = this.decided.get(txnId);
    if (known !== undefined) {
      if (known.outcome === outcome) return cb(null); // a redelivered decision: ACK again (R7)
      return cb(this.violation(txnId, outcome, `it is already ${known.outcome} here`));
    }
    if (!this.prepared.has(txnId)) {
      if (outcome === 'COMMITTED' && this.o.resource.durableAtPrepare?.(txnId) === true)
        return this.commitUnknown(txnId, source, cb);
      if (outcome === 'COMMITTED') return cb(this.violation(txnId, outcome, 'this participant never prepared it'));
      // Presumed abort: nothing prepared, so nothing to journal. Remembering the
      // id makes a PREPARE that arrives late get NO; work the resource holds
      // for T before PREPARE (an open transaction) is released now.
      this.rememberDecided(txnId, 'ABORTED');
      // The ACK does not wait for it: work still running in T finishes first, and nothing was promised for T.
      this.o.resource.abortUnprepared?.(
        txnId,
        once('resource.abortUnprepared', (err) => {
          if (err !== null)
            this.log.warn(
              { txnId, err: err.message },
              'could not release the work held for an unprepared transaction on ABORT; its own timeout will',
            );
        }),
      );
      return cb(null);
    }
    const step = decisionOfOutcome(outcome);
    this.o.resource[step](
      txnId,
      once(`resource.${step}`, (err) => {
        if (err !== null) {
          // The transaction stays prepared; the coordinator's redelivery (or our own question) retries.
          this.log.error({ txnId, source, err: err.message }, `resource failed to ${step} a prepared transaction`);
          return cb(new ParticipantError('UNAVAILABLE', `resource failed to ${step} ${txnId}: ${err.message}`));
        }
        this.journalDecided(txnId, outcome, source, cb);
      }),
    );
  }

  /**
   * COMMIT for T, which the engine does not hold prepared, at a resource whose
   * prepare needs no journal: after a crash between the resource's commit and
   * the sync of its record the journal may know nothing of T, so the resource
   * answers from what it committed. Anything else is a COMMIT for a T never
   * prepared here, refused as before.
   */
  private commitUnknown(
    txnId: TxnId,
    source: 'coordinator' | 'cluster',
    cb: (err: ParticipantError | null) => void,
  ): void {
    this.o.resource.commit(
      txnId,
      once('resource.commit', (err) => {
        if (err !== null)
          return cb(
            this.violation(
              txnId,
              'COMMITTED',
              `this participant does not hold it prepared, and the resource says: ${err.message}`,
            ),
          );
        this.log.info(
          { txnId, source },
          'COMMIT for a transaction the journal did not know: the resource committed it already; ACK',
        );
        this.journalDecided(txnId, 'COMMITTED', source, cb);
      }),
    );
  }

  /** A decision the resource applied is journaled, then remembered; cb once it is durable. */
  private journalDecided(
    txnId: TxnId,
    outcome: Outcome,
    source: 'coordinator' | 'cluster',
    cb: (err: ParticipantError | null) => void,
  ): void {
    this.o.journal.append(
      { kind: recordKindOf(outcome), txnId, atMs: this.o.clock.nowMs() },
      once('journal.append', (jerr) => {
        if (jerr !== null) {
          // The resource applied it but the journal does not say so: after a
          // restart T is in doubt again and the (idempotent) decision is re-applied.
          this.log.error({ txnId, source, err: jerr.message }, `journal failed to record ${outcome}`);
          return cb(new ParticipantError('UNAVAILABLE', `journal write failed for ${txnId}: ${jerr.message}`));
        }
        this.prepared.delete(txnId);
        this.rememberDecided(txnId, outcome);
        this.inDoubtResolver.finish(txnId);
        this.stats[recordKindOf(outcome)] += 1;
        if (source === 'cluster') this.log.info({ txnId, outcome }, 'in-doubt transaction resolved by the cluster');
        cb(null);
      }),
    );
  }

  /** A decision that contradicts what this participant knows: AC1/AC2 are at stake, so refuse and say so loudly. */
  private violation(txnId: TxnId, outcome: Outcome, why: string): ParticipantError {
    this.stats.protocolViolations += 1;
    const decision = outcome === 'COMMITTED' ? 'COMMIT' : 'ABORT';
    this.log.error(
      { txnId, decision, local: this.stateOf(txnId) ?? 'none' },
      `protocol violation: ${decision} refused`,
    );
    return new ParticipantError('FAILED_PRECONDITION', `${decision} for transaction ${txnId} refused: ${why}`);
  }

  private rememberDecided(txnId: TxnId, outcome: Outcome): void {
    this.decided.delete(txnId); // re-insert at the end: the Map's order is decision order
    if (outcome === 'ABORTED' && this.o.forgetAborts) return;
    this.decided.set(txnId, { outcome, atMs: this.o.clock.nowMs() });
    this.pruneDecided();
  }

  private pruneDecided(): void {
    const oldestMs = this.o.clock.nowMs() - this.o.decidedRetentionMs;
    this.oldestDecided.trimTo(this.o.decidedMax);
    for (let e = this.oldestDecided.peek(); e !== null && e[1].atMs < oldestMs; e = this.oldestDecided.peek())
      this.oldestDecided.shift();
  }

  // ---- In doubt: the sweep hands overdue prepared transactions to the resolver (R4, R3) ----

  private sweep(): void {
    if (this.phase !== 'running') return;
    const now = this.o.clock.nowMs();
    this.pruneDecided();
    for (const [txnId, p] of this.prepared) if (now >= p.askAtMs) this.inDoubtResolver.resolve(txnId);
    this.cancelSweep = this.o.schedule(this.o.sweepIntervalMs, () => this.sweep());
  }

  // ---- Plumbing ----

  /** R7: a participant answers only for its own cluster and its own id. */
  private refuse(clusterId: string, participantId: string, txnId: string): ParticipantError | null {
    if (this.phase !== 'running')
      return new ParticipantError(
        'UNAVAILABLE',
        `participant "${this.o.participantId}" is ${this.phase === 'new' ? 'starting' : 'shutting down'}`,
      );
    if (txnId === '') return new ParticipantError('INVALID_ARGUMENT', 'txn_id is empty');
    if (clusterId !== this.o.clusterId) {
      this.log.warn({ txnId, clusterId }, 'request for another cluster refused');
      return new ParticipantError(
        'FAILED_PRECONDITION',
        `cluster id mismatch: request for cluster "${clusterId}" reached a participant of cluster "${this.o.clusterId}"`,
      );
    }
    if (participantId !== this.o.participantId) {
      this.log.warn({ txnId, to: participantId }, 'request for another participant refused');
      return new ParticipantError(
        'FAILED_PRECONDITION',
        `participant id mismatch: request for "${participantId}" reached participant "${this.o.participantId}"`,
      );
    }
    return null;
  }

  private tooBusy(txnId: TxnId): ParticipantError {
    return new ParticipantError('RESOURCE_EXHAUSTED', `too many concurrent requests for transaction ${txnId}`);
  }

  /**
   * Runs op when no other operation on the same transaction is running, so a
   * PREPARE and a DECISION for T (or two copies of one) never interleave.
   * Returns false, without running op, when T's queue is full.
   */
  private exclusive(txnId: TxnId, op: Op): boolean {
    const waiting = this.busy.get(txnId);
    if (waiting !== undefined) {
      if (waiting.length >= this.o.txnOpsMax) return false;
      waiting.push(op);
      return true;
    }
    this.busy.set(txnId, []);
    this.run(txnId, op);
    return true;
  }

  private run(txnId: TxnId, op: Op): void {
    op(
      once('operation done', () => {
        const waiting = this.busy.get(txnId);
        assert(waiting !== undefined, `${txnId} is busy while its operation runs`);
        const next = waiting.shift();
        if (next === undefined) this.busy.delete(txnId);
        else this.run(txnId, next);
      }),
    );
  }
}
