// What every database resource does the same way, whatever its two-phase
// commit is called (PostgreSQL's PREPARE TRANSACTION, MySQL's XA PREPARE):
// one transaction per txn id bound to a connection of its own while open,
// work() inside it, PREPARE, a decision that finds the transaction gone
// answered through the heuristic record and the commit marker, the bounds,
// the open-transaction timeout, the per-transaction mutex, and close(). A
// subclass (postgres.ts, resources/mysql/resource.ts) supplies the
// statements: how to begin, prepare, roll back and decide on its server.
//
// Decisions on a transaction no longer prepared (redeliveries, R7, and acts
// by hand, R4):
//
//   an act by hand recorded for its gid      ACK whatever it was; a conflict is
//                                            the cluster's to record (HEURMIX)
//   COMMIT, commit marker there              ACK (a redelivery)
//   COMMIT, no marker                        HEURRB hazard: never ACKed
//   ABORT, marker there                      HEURCOM hazard: never ACKed
//   ABORT, no marker                         ACK (a redelivery)
import type { HeuristicAct } from './heuristic.ts';
import type { PreparedGid, PreparedResource, PreparedStats } from './prepared-recovery.ts';
import { parsePgPayload } from './payload.ts';
import type { EngineLog, ResourceVote, TxnId } from './types.ts';
import { decisionOfOutcome } from '../domain/protocol.ts';
import { OldestFirst } from '../util/oldest-first.ts';

/** A decision that contradicts what the database holds for T: never ACKed, always reported (R4). */
export class HeuristicHazardError extends Error {
  readonly kind: 'HEURRB' | 'HEURCOM';
  readonly txnId: TxnId;
  readonly gid: string;
  constructor(kind: 'HEURRB' | 'HEURCOM', txnId: TxnId, gid: string, message: string) {
    super(`${kind} hazard for transaction ${txnId} (gid ${gid}): ${message}`);
    this.name = 'HeuristicHazardError';
    this.kind = kind;
    this.txnId = txnId;
    this.gid = gid;
  }
}

export interface DbTxn<C> {
  phase: 'open' | 'preparing' | 'prepared';
  /** T's connection while open or preparing; null once prepared. */
  conn: C | null;
  /** The first thing that went wrong on T's connection (a lost connection); T can then only vote NO. */
  failure: string | null;
  /** Set only while work()'s function runs, so a client kept past it cannot slip statements into T. */
  active: boolean;
  openTimer: NodeJS.Timeout | null;
  /** Undoes what openConn attached to the connection (an error listener). */
  detach: (() => void) | null;
  preparedAtMs: number;
}

/** Defaults every database resource shares; each adds its own. */
export const DB_DEFAULTS = {
  /** Transactions open at once (connections of the work pool, or branches with a session each). */
  concurrency: 8,
  controlConnections: 2,
  openTxnTimeoutMs: 60_000,
  markerRetentionMs: 24 * 3_600_000,
  endedMax: 10_000,
  scanRowsMax: 10_000,
  stuckAfterMs: 300_000,
};

export interface DbLimits {
  openTxnTimeoutMs: number;
  /** Transactions open or connecting at once; beyond it work() fails at once (back-pressure). */
  openTxnsMax: number;
  endedMax: number;
  markerRetentionMs: number;
  stuckAfterMs: number;
  /** How long close() lets work in flight finish before it cuts the connections. */
  closeGraceMs: number;
}

export interface DbCounts {
  open: number;
  connecting: number;
  preparedHere: number;
  votesYes: number;
  votesNo: number;
  committed: number;
  aborted: number;
  redeliveriesAcked: number;
  hazards: number;
}

export abstract class DbResource<C, Q> implements PreparedResource {
  abstract readonly kind: string;
  abstract readonly byHand: string;
  /**
   * Transactions this process has open, preparing or prepared. Bounded: open ones by openTxnsMax, prepared ones by the
   * server.
   */
  protected readonly txns = new Map<TxnId, DbTxn<C>>();
  /** Why a transaction ended before PREPARE (insertion order = age; bounded by endedMax). */
  private readonly ended = new Map<TxnId, string>();
  private readonly oldestEnded = new OldestFirst(this.ended);
  /** Per-transaction mutex: work, PREPARE and decisions on T run one at a time. */
  private readonly locks = new Map<TxnId, Promise<void>>();
  private connecting = 0;
  protected closed = false;
  protected lastScan: PreparedStats = { count: 0, oldestAgeMs: 0, stuck: 0, scannedAtMs: 0 };
  protected readonly stats = { votesYes: 0, votesNo: 0, committed: 0, aborted: 0, redeliveriesAcked: 0, hazards: 0 };

  protected constructor(
    protected readonly limits: DbLimits,
    protected readonly log: EngineLog,
  ) {}

  // ---- What each database supplies ----

  /**
   * A connection with T's transaction begun, error listeners attached (e.detach
   * undoes them); throws with the reason. forPrepare: T is opened by its
   * PREPARE (the payload's SQL, no work()), so the resource may send its
   * BEGIN with prepareConn's first statement instead of on its own.
   */
  protected abstract openConn(txnId: TxnId, e: DbTxn<C>, forPrepare: boolean): Promise<C>;
  /** Runs the payload's statements, writes the marker and prepares; throws why not. */
  protected abstract prepareConn(txnId: TxnId, conn: C, sql: readonly string[]): Promise<void>;
  /** Rolls back T's unprepared transaction on conn, best effort; returns the error that makes conn unusable, if any. */
  protected abstract rollbackConn(txnId: TxnId, conn: C): Promise<Error | null>;
  /** Gives conn back or closes it; `broken` when it must not be reused. A prepared transaction stays in the server. */
  protected abstract releaseConn(conn: C, broken: Error | null, prepared: boolean): Promise<void>;
  /**
   * COMMIT or ROLLBACK of T's prepared transaction: true when done, false when it is not prepared; throws on anything
   * else.
   */
  protected abstract decidePrepared(txnId: TxnId, step: 'commit' | 'abort', e: DbTxn<C> | undefined): Promise<boolean>;
  /** The client work() hands out: queries on conn, refused once guard() throws. */
  protected abstract clientOf(conn: C, guard: () => void): Q;
  protected abstract heuristicActOf(gid: string): Promise<HeuristicAct | null>;
  protected abstract markCommitTime(gid: string): Promise<void>;
  protected abstract endConnections(): Promise<void>;
  /** How the command deciding a prepared transaction reads: 'COMMIT PREPARED', 'XA ROLLBACK'. */
  protected abstract decisionVerb(step: 'commit' | 'abort'): string;
  /**
   * How long T's connection stays T's after PREPARE, so the decision can use
   * it (0: released at once). Past it the connection is released as prepared.
   */
  protected holdPreparedMs(): number {
    return 0;
  }
  /** "open PostgreSQL transaction", "open XA branch": what T's unprepared work is called. */
  protected abstract readonly openTxnNoun: string;
  /** The refusal when openTxnsMax transactions are open. */
  protected abstract tooManyOpen(): string;
  abstract hasMarker(gid: string): Promise<boolean>;
  abstract gid(txnId: TxnId): string;
  abstract describeError(err: unknown): string;
  abstract listPrepared(): Promise<PreparedGid[]>;
  abstract cleanupMarkers(): Promise<number>;
  abstract unreportedHeuristics(rowsMax?: number): Promise<HeuristicAct[]>;
  abstract markHeuristicReported(gid: string): Promise<void>;

  /**
   * The txn id of a gid of a transaction this process holds (needed for hashed gids, which do not name it readably).
   */
  txnIdOfGid(gid: string): TxnId | undefined {
    for (const txnId of this.txns.keys()) if (this.gid(txnId) === gid) return txnId;
    return undefined;
  }

  get stuckAfterMs(): number {
    return this.limits.stuckAfterMs;
  }

  preparedStats(): PreparedStats {
    return { ...this.lastScan };
  }

  counts(): DbCounts {
    let open = 0;
    let preparedHere = 0;
    for (const e of this.txns.values()) {
      if (e.phase === 'prepared') preparedHere += 1;
      else open += 1;
    }
    return { open, connecting: this.connecting, preparedHere, ...this.stats };
  }

  // ---- The application's work ----

  /**
   * Runs fn inside T's transaction, beginning it on first use. The connection
   * stays T's until PREPARE (or an ABORT, or the open timeout). If fn throws,
   * T's transaction is rolled back and T can only vote NO; the error is rethrown.
   */
  work<T>(txnId: TxnId, fn: (client: Q) => Promise<T>): Promise<T> {
    return this.exclusive(txnId, async () => {
      if (this.closed) throw new Error(`the ${this.kind} resource is closed`);
      const why = this.ended.get(txnId);
      if (why !== undefined) throw new Error(`transaction ${txnId} has ended here: ${why}`);
      const e = this.txns.get(txnId) ?? (await this.begin(txnId));
      if (e.phase !== 'open' || e.conn === null)
        throw new Error(`transaction ${txnId} is ${e.phase} here; its work is over`);
      if (e.failure !== null) throw new Error(`transaction ${txnId} failed: ${e.failure}`);
      const client = this.clientOf(e.conn, () => {
        if (!e.active) throw new Error(`transaction ${txnId}: a client handed to work() is used after work() returned`);
      });
      e.active = true;
      try {
        return await fn(client);
      } catch (err) {
        e.active = false;
        const reason = this.describeError(err);
        this.log.info({ txnId, reason }, 'work failed; rolling back, the vote will be NO');
        await this.endOpen(txnId, e, `work failed: ${reason}`);
        throw err;
      } finally {
        e.active = false;
      }
    });
  }

  /**
   * The decision for T is ABORT and T never got as far as PREPARE here: roll
   * back its open transaction now, and refuse work or PREPARE for T from now
   * on. Work running inside T finishes first (it holds T's lock).
   */
  abortUnprepared(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.remember(txnId, 'aborted by the decision before PREPARE');
    this.rollback(txnId, 'aborted by the decision before PREPARE').then(
      () => cb(null),
      (err: Error) => cb(err),
    );
  }

  /**
   * Rolls back T's open transaction, if it has one (the application gave up on T). Prepared transactions wait for the
   * decision.
   */
  rollback(txnId: TxnId, why = 'rolled back by the application'): Promise<void> {
    return this.exclusive(txnId, async () => {
      const e = this.txns.get(txnId);
      if (e !== undefined && e.phase === 'open') await this.endOpen(txnId, e, why);
    });
  }

  // ---- Resource: PREPARE / COMMIT / ABORT ----

  prepare(txnId: TxnId, payload: Uint8Array, cb: (err: Error | null, vote: ResourceVote) => void): void {
    this.exclusive(txnId, () => this.doPrepare(txnId, payload)).then(
      (reason) => {
        if (reason === null) this.stats.votesYes += 1;
        else this.stats.votesNo += 1;
        cb(null, { yes: reason === null, reason: reason ?? '' });
      },
      (err: Error) => {
        this.stats.votesNo += 1;
        cb(null, { yes: false, reason: this.describeError(err) });
      },
    );
  }

  commit(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.exclusive(txnId, () => this.finish(txnId, 'commit')).then(
      () => cb(null),
      (err: Error) => cb(err),
    );
  }

  abort(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.exclusive(txnId, () => this.finish(txnId, 'abort')).then(
      () => cb(null),
      (err: Error) => cb(err),
    );
  }

  /** Promise forms, for the recovery scan and for tests. */
  commitAsync(txnId: TxnId): Promise<void> {
    return new Promise((resolve, reject) => this.commit(txnId, (err) => (err === null ? resolve() : reject(err))));
  }

  abortAsync(txnId: TxnId): Promise<void> {
    return new Promise((resolve, reject) => this.abort(txnId, (err) => (err === null ? resolve() : reject(err))));
  }

  prepareAsync(txnId: TxnId, payload: Uint8Array): Promise<ResourceVote> {
    return new Promise((resolve) => this.prepare(txnId, payload, (_err, vote) => resolve(vote)));
  }

  /** Returns null for YES, or the reason for NO. */
  private async doPrepare(txnId: TxnId, payload: Uint8Array): Promise<string | null> {
    const parsed = parsePgPayload(payload);
    let e = this.txns.get(txnId);
    if (e?.phase === 'prepared') return null; // a repeated PREPARE: the server holds it already
    const why = this.ended.get(txnId);
    if (why !== undefined) return why;
    if (!parsed.ok) {
      if (e !== undefined) await this.endOpen(txnId, e, parsed.reason);
      return parsed.reason;
    }
    if (this.closed) return 'participant is shutting down';
    if (e === undefined) {
      if (parsed.sql === null) {
        return `no work for transaction ${txnId} here: no ${this.openTxnNoun} is bound to it (its work failed or expired, or this participant restarted) and the payload has no SQL`;
      }
      try {
        e = await this.begin(txnId, true);
      } catch (err) {
        return this.describeError(err);
      }
    }
    const conn = e.conn;
    if (conn === null) return `transaction ${txnId} has no connection`;
    e.phase = 'preparing';
    this.clearOpenTimer(e);
    try {
      if (e.failure !== null) throw new Error(e.failure);
      await this.prepareConn(txnId, conn, parsed.sql ?? []);
    } catch (err) {
      const reason = e.failure ?? this.describeError(err);
      this.log.info({ txnId, gid: this.gid(txnId), reason }, 'PREPARE failed; vote NO');
      await this.endOpen(txnId, e, reason);
      return reason;
    }
    e.phase = 'prepared';
    e.preparedAtMs = Date.now();
    const holdMs = this.holdPreparedMs();
    if (holdMs <= 0) {
      // The prepared transaction no longer belongs to the session, so the connection is released.
      await this.release(e, null, true);
      return null;
    }
    // Kept for the decision, which usually comes within milliseconds; released (for MySQL: the
    // branch detached from its session) if it does not come within holdMs.
    e.openTimer = setTimeout(() => {
      e.openTimer = null;
      void this.exclusive(txnId, async () => {
        if (this.txns.get(txnId) === e && e.phase === 'prepared')
          await this.release(e, e.failure !== null ? new Error(e.failure) : null, true);
      });
    }, holdMs);
    e.openTimer.unref();
    return null;
  }

  private async finish(txnId: TxnId, step: 'commit' | 'abort'): Promise<void> {
    const e = this.txns.get(txnId);
    if (e !== undefined && e.phase === 'open') {
      if (step === 'commit')
        throw new Error(`COMMIT for transaction ${txnId}, which is open here and was never prepared`);
      await this.endOpen(txnId, e, 'aborted by the decision');
      this.stats.aborted += 1;
      return;
    }
    const gid = this.gid(txnId);
    let done: boolean;
    if (e !== undefined) this.clearOpenTimer(e);
    try {
      done = await this.decidePrepared(txnId, step, e);
    } catch (err) {
      // A connection kept after PREPARE that failed here is not reused.
      if (e !== undefined) await this.release(e, err as Error, true);
      throw new Error(`${this.decisionVerb(step)} ${gid} failed: ${this.describeError(err)}`);
    }
    // A connection kept after PREPARE is free again once the decision is applied.
    if (e !== undefined) await this.release(e, e.failure !== null ? new Error(e.failure) : null, false);
    if (!done && (await this.settleGone(txnId, gid, step))) {
      this.settled(txnId, step, e, false);
      return;
    }
    if (step === 'commit') await this.noteCommitted(txnId, gid, e);
    this.settled(txnId, step, e, true);
  }

  /**
   * T is no longer prepared here. An operator's act by hand first: then the
   * decision is acknowledged (returns true), and the conflict, if any, is
   * reported as a heuristic outcome. Otherwise the marker says which way it
   * went: agreeing, the decision is a redelivery (returns false); contradicting,
   * it is a hazard (throws).
   */
  private async settleGone(txnId: TxnId, gid: string, step: 'commit' | 'abort'): Promise<boolean> {
    const act = await this.heuristicActOf(gid);
    if (act !== null) {
      const agrees = decisionOfOutcome(act.outcome) === step;
      (agrees ? this.log.info : this.log.error).call(
        this.log,
        {
          txnId,
          gid,
          decision: step,
          heuristic: act.outcome,
          operator: act.operator,
          reported: act.reportedAtMs !== null,
        },
        agrees
          ? 'decision already applied by hand (heuristic act, consistent); ACK'
          : 'decision contradicts the heuristic act done by hand; ACK, the conflict is reported to the cluster as HEURMIX',
      );
      this.stats.redeliveriesAcked += 1;
      return true;
    }
    const committed = await this.hasMarker(gid);
    if (step === 'commit' && !committed) {
      this.stats.hazards += 1;
      throw new HeuristicHazardError(
        'HEURRB',
        txnId,
        gid,
        `COMMIT refused: it is not prepared in ${this.kind} and has no commit marker, so it was rolled back here (or never prepared)`,
      );
    }
    if (step === 'abort' && committed) {
      this.stats.hazards += 1;
      throw new HeuristicHazardError(
        'HEURCOM',
        txnId,
        gid,
        `ABORT refused: it is not prepared in ${this.kind} and its commit marker is there, so it committed here`,
      );
    }
    this.stats.redeliveriesAcked += 1;
    this.log.info({ txnId, gid, decision: step }, `decision already applied in ${this.kind} (per the marker); ACK`);
    return false;
  }

  private settled(txnId: TxnId, step: 'commit' | 'abort', e: DbTxn<C> | undefined, count: boolean): void {
    if (e !== undefined) this.txns.delete(txnId);
    if (step === 'abort') this.remember(txnId, 'aborted by the decision');
    if (count && step === 'commit') this.stats.committed += 1;
    if (count && step === 'abort') this.stats.aborted += 1;
  }

  /**
   * Markers are cleaned up by the time T committed, so one that stayed prepared
   * longer than half the retention gets its commit time set. When the prepare
   * time is known and recent, the prepare time already leaves more than half the
   * retention after the commit, and the update (a round trip) is skipped.
   */
  private async noteCommitted(txnId: TxnId, gid: string, e: DbTxn<C> | undefined): Promise<void> {
    if (e !== undefined && Date.now() - e.preparedAtMs < this.limits.markerRetentionMs / 2) return;
    try {
      await this.markCommitTime(gid);
    } catch (err) {
      this.log.warn(
        { txnId, gid, err: this.describeError(err) },
        'could not record the commit time on the marker; it is cleaned up by its prepare time',
      );
    }
  }

  /**
   * Rolls back open transactions (nothing was promised for them) and closes the connections. Prepared ones stay in the
   * server.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const rollbacks = [...this.txns]
      .filter(([, e]) => e.phase === 'open')
      .map(([txnId, e]) => this.exclusive(txnId, () => this.endOpen(txnId, e, 'participant is shutting down')));
    // Work still running (a statement waiting on a lock, say) gets a grace period, then its connection is cut.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(rollbacks),
      new Promise((resolve) => (timer = setTimeout(resolve, this.limits.closeGraceMs))),
    ]);
    clearTimeout(timer);
    for (const e of this.txns.values()) {
      this.clearOpenTimer(e);
      await this.release(e, new Error('participant is shutting down'), false);
    }
    await this.endConnections();
  }

  // ---- Plumbing ----

  /** Opens T's transaction on a connection of its own. Bounded: at most openTxnsMax transactions open or connecting. */
  private async begin(txnId: TxnId, forPrepare = false): Promise<DbTxn<C>> {
    if (this.closed) throw new Error(`the ${this.kind} resource is closed`);
    let open = 0;
    for (const x of this.txns.values()) if (x.phase !== 'prepared') open += 1;
    if (open + this.connecting >= this.limits.openTxnsMax) throw new Error(this.tooManyOpen());
    const e: DbTxn<C> = {
      phase: 'open',
      conn: null,
      failure: null,
      active: false,
      openTimer: null,
      detach: null,
      preparedAtMs: 0,
    };
    this.connecting += 1;
    try {
      e.conn = await this.openConn(txnId, e, forPrepare);
    } finally {
      this.connecting -= 1;
    }
    this.txns.set(txnId, e);
    e.openTimer = setTimeout(() => {
      e.openTimer = null;
      void this.exclusive(txnId, async () => {
        if (this.txns.get(txnId) !== e || e.phase !== 'open') return;
        this.log.warn(
          { txnId, openTxnTimeoutMs: this.limits.openTxnTimeoutMs },
          'open transaction not prepared in time; rolled back',
        );
        await this.endOpen(
          txnId,
          e,
          `transaction was open for more than ${this.limits.openTxnTimeoutMs} ms without PREPARE and was rolled back`,
        );
      });
    }, this.limits.openTxnTimeoutMs);
    e.openTimer.unref();
    return e;
  }

  /** Rolls back T's open (or failed preparing) transaction, releases its connection, and remembers why T ended. */
  private async endOpen(txnId: TxnId, e: DbTxn<C>, why: string): Promise<void> {
    this.clearOpenTimer(e);
    const broken = e.conn !== null ? await this.rollbackConn(txnId, e.conn) : null;
    await this.release(e, broken, false);
    if (this.txns.get(txnId) === e) this.txns.delete(txnId);
    this.remember(txnId, why);
  }

  private async release(e: DbTxn<C>, broken: Error | null, prepared: boolean): Promise<void> {
    const conn = e.conn;
    if (conn === null) return;
    e.conn = null;
    e.detach?.();
    e.detach = null;
    await this.releaseConn(conn, broken, prepared);
  }

  private clearOpenTimer(e: DbTxn<C>): void {
    if (e.openTimer !== null) clearTimeout(e.openTimer);
    e.openTimer = null;
  }

  private remember(txnId: TxnId, why: string): void {
    this.ended.delete(txnId);
    this.ended.set(txnId, why);
    this.oldestEnded.trimTo(this.limits.endedMax);
  }

  private async exclusive<T>(txnId: TxnId, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(txnId) ?? Promise.resolve();
    let release = (): void => {};
    const mine = new Promise<void>((resolve) => (release = resolve));
    const chained = prev.then(() => mine);
    this.locks.set(txnId, chained);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.locks.get(txnId) === chained) this.locks.delete(txnId);
    }
  }
}
