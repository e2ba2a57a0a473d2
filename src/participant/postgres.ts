// The `postgres` resource: a participant whose data lives in a PostgreSQL
// database, committed with PostgreSQL's own two-phase commit.
//
//   work(T, fn)  the application's statements for T run inside an open
//                PostgreSQL transaction bound to T: the first call BEGINs on
//                a connection of the work pool, and the connection stays
//                checked out (and the transaction open) until PREPARE.
//   PREPARE      runs the payload's SQL (below), writes T's marker row, then
//                PREPARE TRANSACTION 'gid' and returns the connection: a
//                prepared transaction survives its session, so no connection
//                is held across the prepared state. PostgreSQL flushes the
//                PREPARE record to its WAL before it answers, so by the time
//                the resource votes YES the prepared state is durable (R4).
//   COMMIT       COMMIT PREPARED 'gid'
//   ABORT        ROLLBACK PREPARED 'gid', or a plain ROLLBACK if T never got
//                as far as PREPARE.
//
// A failure during the work or at PREPARE (a constraint, a serialization
// failure, a lost connection) makes the vote NO, with PostgreSQL's SQLSTATE and
// message as the reason; whatever T had done is rolled back.
//
// An ABORT that reaches the participant before T's PREPARE is answered by the
// engine alone (presumed abort), which tells the resource through
// abortUnprepared(T): T's open transaction is rolled back at once (after the
// work running in it, if any, returns), and a later work() or PREPARE for T
// is refused. The open-transaction timeout (openTxnTimeoutMs, 60 s by
// default) is only the backstop for a transaction nobody decides.
//
// Heuristic acts (heuristic.ts): an operator may have committed or rolled
// back T's gid by hand while the cluster was unreachable. A decision that
// then finds the gid gone is acknowledged whatever the marker says: the act
// is recorded in verdict_heuristics and reported to the cluster, which
// records HEURMIX if it disagrees.
//
// Idempotent decisions: the marker row (gid, txn id, prepared at) is written
// inside T, so it exists after the fact exactly when T committed. A COMMIT
// whose gid is no longer prepared is ACKed when the marker is there (a
// redelivery) and refused as a heuristic hazard when it is not (T was rolled
// back here: HEURRB). An ABORT whose gid is gone is ACKed when there is no
// marker and refused when there is (T committed here: HEURCOM). Markers are
// deleted once older than the retention (24 h by default), far beyond the
// time the cluster keeps redelivering a decision. See postgres-gid.ts for the
// gid.
//
// Payload (the bytes the application enlists this participant with):
//
//   empty                   T's work was done in-process through work(T, ...).
//                           With no open transaction for T here (the work
//                           failed, expired, or this process restarted since)
//                           the vote is NO: preparing an empty transaction
//                           would commit T without its work.
//   {"sql": ["INSERT ...", ...]}
//                           UTF-8 JSON: statements run in order inside T's
//                           transaction at PREPARE time (after any work done
//                           through work()), for demos and tools with no
//                           application in-process. {"sql": []} prepares an
//                           intentionally empty transaction.
//
// Two pools: the work pool (size `concurrency`) holds open transactions; the
// control pool (a couple of connections) runs decisions, scans and marker
// upkeep, so a COMMIT PREPARED never waits behind open transactions that may
// themselves be waiting for the locks it would release.
import pg from 'pg';
import type { PoolClient, QueryResult } from 'pg';
import { gidOf, gidPrefix, parseGid, type ParsedGid } from './postgres-gid.ts';
import { PostgresConfigError, checkServer, deleteOldMarkers, describePgError, ensureMarkerTable, markerExists, redact, selectPrepared, sqlGid } from './postgres-sql.ts';
import { SILENT_LOG, withDefaults, type EngineLog, type ResourceVote, type TxnId } from './types.ts';
import { ensureHeuristicTable, heuristicActOf, markReported, unreportedActs, type HeuristicAct } from './heuristic.ts';
import type { PreparedGid, PreparedResource, PreparedStats } from './prepared-recovery.ts';

export { PostgresConfigError, describePgError, redact } from './postgres-sql.ts';

export const PG_PAYLOAD_STATEMENTS_MAX = 1_000;
/** SQLSTATE of "prepared transaction with identifier ... does not exist". */
const UNDEFINED_OBJECT = '42704';
const MARKER_TABLE_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

export interface PostgresResourceOptions {
  clusterId: string;
  participantId: string;
  /** postgres://user:password@host:port/database */
  url: string;
  /** Transactions open at once: the work pool's size. PostgreSQL's max_prepared_transactions should be at least this. */
  concurrency?: number;
  /** Connections for decisions, scans and markers, apart from the work pool. */
  controlConnections?: number;
  /** Waiting longer than this for a free connection fails the work (or votes NO). */
  acquireTimeoutMs?: number;
  /** An open transaction not PREPAREd within this long is rolled back (its PREPARE then votes NO). */
  openTxnTimeoutMs?: number;
  /** Transactions open or waiting for a connection at once; beyond it work() fails at once (back-pressure). */
  openTxnsMax?: number;
  /** `BEGIN ISOLATION LEVEL ...` for every transaction. */
  isolation?: 'read committed' | 'repeatable read' | 'serializable';
  /** Table of commit markers, created if missing. */
  markerTable?: string;
  /** A marker is deleted once its transaction committed (or, not known, prepared) longer ago than this. */
  markerRetentionMs?: number;
  /** Markers deleted per cleanup statement, so one cleanup never holds a long lock. */
  markerCleanupBatch?: number;
  /** Txn ids whose end (failure, expiry, abort) is remembered to answer a late work() or PREPARE with the reason. */
  endedMax?: number;
  /** Rows a scan of pg_prepared_xacts returns at most. */
  scanRowsMax?: number;
  /** Time to wait for a marker row lock at PREPARE (a clash with another prepared transaction of the same gid). */
  markerLockTimeoutMs?: number;
  /** A prepared transaction older than this counts as stuck (alerts, metrics). */
  stuckAfterMs?: number;
  /** lock_timeout of the control connections (decisions, scans, marker upkeep and the start-up DDL). */
  controlLockTimeoutMs?: number;
  log?: EngineLog;
}

/** A decision that contradicts what PostgreSQL holds for T: never ACKed, always reported (R4). */
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

/** What the application's work gets: queries on T's connection, inside T's transaction. */
export type PgTxnClient = Pick<PoolClient, 'query'>;

export type { PreparedGid, PreparedStats } from './prepared-recovery.ts';

export interface PostgresCounts {
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

interface TxnEntry {
  phase: 'open' | 'preparing' | 'prepared';
  /** T's connection while open or preparing; null once prepared. */
  client: PoolClient | null;
  /** The first thing that went wrong on T's connection (a lost connection); T can then only vote NO. */
  failure: string | null;
  /** Set only while work()'s function runs, so a client kept past it cannot slip statements into T. */
  active: boolean;
  openTimer: NodeJS.Timeout | null;
  onClientError: ((err: Error) => void) | null;
  preparedAtMs: number;
}

type Options = Required<Omit<PostgresResourceOptions, 'log'>>;

export class PostgresResource implements PreparedResource {
  readonly kind = 'PostgreSQL';
  readonly byHand = 'verdict participant resolve, or COMMIT PREPARED / ROLLBACK PREPARED';
  readonly prefix: string;
  private readonly o: Options;
  private readonly log: EngineLog;
  private readonly work_: pg.Pool;
  private readonly control: pg.Pool;
  private readonly table: string;
  /** Transactions this process has open, preparing or prepared. Bounded: open ones by openTxnsMax, prepared ones by PostgreSQL's max_prepared_transactions. */
  private readonly txns = new Map<TxnId, TxnEntry>();
  /** Why a transaction ended before PREPARE (insertion order = age; bounded by endedMax). */
  private readonly ended = new Map<TxnId, string>();
  /** Per-transaction mutex: work, PREPARE and decisions on T run one at a time. */
  private readonly locks = new Map<TxnId, Promise<void>>();
  private connecting = 0;
  private closed = false;
  private lastScan: PreparedStats = { count: 0, oldestAgeMs: 0, stuck: 0, scannedAtMs: 0 };
  private readonly stats = { votesYes: 0, votesNo: 0, committed: 0, aborted: 0, redeliveriesAcked: 0, hazards: 0 };

  private constructor(o: PostgresResourceOptions) {
    this.o = withDefaults(
      {
        concurrency: 8,
        controlConnections: 2,
        acquireTimeoutMs: 5_000,
        openTxnTimeoutMs: 60_000,
        openTxnsMax: 0,
        isolation: 'read committed' as const,
        markerTable: 'verdict_markers',
        markerRetentionMs: 24 * 3_600_000,
        markerCleanupBatch: 10_000,
        endedMax: 10_000,
        scanRowsMax: 10_000,
        markerLockTimeoutMs: 5_000,
        stuckAfterMs: 300_000,
        controlLockTimeoutMs: 10_000,
      },
      o,
    );
    if (this.o.openTxnsMax === 0) this.o.openTxnsMax = this.o.concurrency * 16;
    this.log = o.log ?? SILENT_LOG;
    this.prefix = gidPrefix(o.clusterId, o.participantId);
    this.table = this.o.markerTable;
    const base = { connectionString: o.url, connectionTimeoutMillis: this.o.acquireTimeoutMs, application_name: `verdict-${o.participantId}`.slice(0, 63) };
    this.work_ = new pg.Pool({ ...base, max: this.o.concurrency, idleTimeoutMillis: 30_000 });
    // Decisions, scans and upkeep never wait long for a lock: they are retried instead.
    this.control = new pg.Pool({ ...base, max: this.o.controlConnections, idleTimeoutMillis: 30_000, lock_timeout: this.o.controlLockTimeoutMs });
    // An idle connection that dies (server restart) is reported here; without a listener it would crash the process.
    for (const pool of [this.work_, this.control]) pool.on('error', (err) => this.log.warn({ err: err.message }, 'PostgreSQL connection lost while idle'));
  }

  /**
   * Connects, checks that PostgreSQL can prepare transactions and creates the
   * marker table. Refuses (PostgresConfigError) with the reason and the fix.
   */
  static async open(o: PostgresResourceOptions): Promise<PostgresResource> {
    const r = new PostgresResource(o);
    if (!(r.o.concurrency >= 1 && r.o.controlConnections >= 1 && Number.isInteger(r.o.concurrency))) {
      await r.endPools();
      throw new PostgresConfigError(`PostgreSQL concurrency must be a positive integer, not ${r.o.concurrency}`);
    }
    if (!MARKER_TABLE_PATTERN.test(r.table)) {
      await r.endPools();
      throw new PostgresConfigError(`marker table name "${r.table}" must be a lower-case SQL identifier`);
    }
    try {
      await checkServer(r.control, { url: o.url, concurrency: r.o.concurrency, log: r.log });
      await ensureMarkerTable(r.control, r.table);
      await ensureHeuristicTable(r.control);
    } catch (err) {
      await r.endPools();
      if (err instanceof PostgresConfigError) throw err;
      throw new PostgresConfigError(`cannot use PostgreSQL at ${redact(o.url)}: ${describePgError(err)}`);
    }
    return r;
  }

  /** The gid of txnId at this participant. */
  gid(txnId: TxnId): string {
    return gidOf(this.prefix, txnId);
  }

  /** The txn id of a gid of a transaction this process holds (needed for hashed gids, which do not name it readably). */
  txnIdOfGid(gid: string): TxnId | undefined {
    for (const txnId of this.txns.keys()) if (this.gid(txnId) === gid) return txnId;
    return undefined;
  }

  describeError(err: unknown): string {
    return describePgError(err);
  }

  get stuckAfterMs(): number {
    return this.o.stuckAfterMs;
  }

  // ---- The application's work ----

  /**
   * Runs fn inside T's PostgreSQL transaction, BEGINning it on first use. The
   * connection stays checked out until PREPARE (or an ABORT, or the open
   * timeout). If fn throws, T's transaction is rolled back and T can only
   * vote NO; the error is rethrown.
   */
  work<T>(txnId: TxnId, fn: (client: PgTxnClient) => Promise<T>): Promise<T> {
    return this.exclusive(txnId, async () => {
      if (this.closed) throw new Error('the PostgreSQL resource is closed');
      const why = this.ended.get(txnId);
      if (why !== undefined) throw new Error(`transaction ${txnId} has ended here: ${why}`);
      const e = this.txns.get(txnId) ?? (await this.begin(txnId));
      if (e.phase !== 'open' || e.client === null) throw new Error(`transaction ${txnId} is ${e.phase} here; its work is over`);
      if (e.failure !== null) throw new Error(`transaction ${txnId} failed: ${e.failure}`);
      const client = e.client;
      const query = ((...args: Parameters<PoolClient['query']>) => {
        if (!e.active) throw new Error(`transaction ${txnId}: a client handed to work() is used after work() returned`);
        return (client.query as (...a: unknown[]) => unknown)(...args);
      }) as PoolClient['query'];
      e.active = true;
      try {
        return await fn({ query });
      } catch (err) {
        e.active = false;
        const reason = describePgError(err);
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
    this.rollback(txnId).then(() => cb(null), (err: Error) => cb(err));
  }

  /** Rolls back T's open transaction, if it has one (the application gave up on T). Prepared transactions wait for the decision. */
  rollback(txnId: TxnId): Promise<void> {
    return this.exclusive(txnId, async () => {
      const e = this.txns.get(txnId);
      if (e !== undefined && e.phase === 'open') await this.endOpen(txnId, e, 'rolled back by the application');
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
        cb(null, { yes: false, reason: describePgError(err) });
      },
    );
  }

  commit(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.exclusive(txnId, () => this.finish(txnId, 'commit')).then(() => cb(null), (err: Error) => cb(err));
  }

  abort(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.exclusive(txnId, () => this.finish(txnId, 'abort')).then(() => cb(null), (err: Error) => cb(err));
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
    if (e?.phase === 'prepared') return null; // a repeated PREPARE: PostgreSQL holds it already
    const why = this.ended.get(txnId);
    if (why !== undefined) return why;
    if (!parsed.ok) {
      if (e !== undefined) await this.endOpen(txnId, e, parsed.reason);
      return parsed.reason;
    }
    if (this.closed) return 'participant is shutting down';
    if (e === undefined) {
      if (parsed.sql === null) {
        return `no work for transaction ${txnId} here: no open PostgreSQL transaction is bound to it (its work failed or expired, or this participant restarted) and the payload has no SQL`;
      }
      try {
        e = await this.begin(txnId);
      } catch (err) {
        return describePgError(err);
      }
    }
    const client = e.client;
    if (client === null) return `transaction ${txnId} has no connection`;
    e.phase = 'preparing';
    this.clearOpenTimer(e);
    const gid = this.gid(txnId);
    try {
      if (e.failure !== null) throw new Error(e.failure);
      for (const stmt of parsed.sql ?? []) await client.query(stmt);
      // The application may have ended T itself (COMMIT inside work): preparing then would prepare nothing.
      const status = client.getTransactionStatus();
      if (status === 'I') throw new Error(`transaction ${txnId}'s PostgreSQL transaction was ended by its own work (COMMIT or ROLLBACK)`);
      // One round trip: the marker row and PREPARE TRANSACTION. lock_timeout bounds a clash with another
      // prepared transaction holding the same gid's marker (two processes with one participant id).
      const r = (await client.query(
        `SET LOCAL lock_timeout = ${Math.max(1, Math.floor(this.o.markerLockTimeoutMs))}; ` +
          `INSERT INTO ${this.table} (gid, txn_id, prepared_at) VALUES (${sqlGid(gid)}, ${pg.escapeLiteral(txnId)}, statement_timestamp()); ` +
          `PREPARE TRANSACTION ${sqlGid(gid)}`,
      )) as unknown as QueryResult | QueryResult[];
      const results = Array.isArray(r) ? r : [r];
      // PREPARE TRANSACTION on a failed transaction answers ROLLBACK, not an error: assert what we got.
      const last = results[results.length - 1];
      if (last?.command !== 'PREPARE') throw new Error(`PREPARE TRANSACTION answered ${last?.command ?? 'nothing'}; the transaction had failed and was rolled back`);
    } catch (err) {
      const reason = describePgError(err);
      this.log.info({ txnId, gid, reason }, 'PREPARE failed; vote NO');
      await this.endOpen(txnId, e, reason);
      return reason;
    }
    // Prepared: the transaction no longer belongs to the session, so the connection goes back to the pool.
    this.releaseClient(e, null);
    e.phase = 'prepared';
    e.preparedAtMs = Date.now();
    return null;
  }

  private async finish(txnId: TxnId, step: 'commit' | 'abort'): Promise<void> {
    const e = this.txns.get(txnId);
    if (e !== undefined && e.phase === 'open') {
      if (step === 'commit') throw new Error(`COMMIT for transaction ${txnId}, which is open here and was never prepared`);
      await this.endOpen(txnId, e, 'aborted by the decision');
      this.stats.aborted += 1;
      return;
    }
    const gid = this.gid(txnId);
    try {
      await this.control.query(`${step === 'commit' ? 'COMMIT' : 'ROLLBACK'} PREPARED ${sqlGid(gid)}`);
    } catch (err) {
      if ((err as { code?: string }).code !== UNDEFINED_OBJECT) throw new Error(`${step === 'commit' ? 'COMMIT' : 'ROLLBACK'} PREPARED ${gid} failed: ${describePgError(err)}`);
      // The gid is no longer prepared. An operator's act by hand first: then the
      // decision is acknowledged, and the conflict (if any) is reported as a heuristic outcome.
      const act = await heuristicActOf(this.control, gid);
      if (act !== null) {
        const agrees = (act.outcome === 'committed') === (step === 'commit');
        (agrees ? this.log.info : this.log.error).call(
          this.log,
          { txnId, gid, decision: step, heuristic: act.outcome, operator: act.operator, reported: act.reportedAtMs !== null },
          agrees ? 'decision already applied by hand (heuristic act, consistent); ACK' : 'decision contradicts the heuristic act done by hand; ACK, the conflict is reported to the cluster as HEURMIX',
        );
        if (e !== undefined) this.txns.delete(txnId);
        if (step === 'abort') this.remember(txnId, 'aborted by the decision');
        this.stats.redeliveriesAcked += 1;
        return;
      }
      // The marker says which way it went.
      const committed = await this.hasMarker(gid);
      if (step === 'commit' && !committed) {
        this.stats.hazards += 1;
        throw new HeuristicHazardError('HEURRB', txnId, gid, 'COMMIT refused: it is not prepared in PostgreSQL and has no commit marker, so it was rolled back here (or never prepared)');
      }
      if (step === 'abort' && committed) {
        this.stats.hazards += 1;
        throw new HeuristicHazardError('HEURCOM', txnId, gid, 'ABORT refused: it is not prepared in PostgreSQL and its commit marker is there, so it committed here');
      }
      this.stats.redeliveriesAcked += 1;
      this.log.info({ txnId, gid, decision: step }, 'decision already applied in PostgreSQL (per the marker); ACK');
    }
    if (step === 'commit') await this.noteCommitted(txnId, gid, e);
    if (e !== undefined) this.txns.delete(txnId);
    if (step === 'abort') this.remember(txnId, 'aborted by the decision');
    this.stats[step === 'commit' ? 'committed' : 'aborted'] += 1;
  }

  /**
   * Markers are cleaned up by the time T committed, so one that stayed prepared
   * longer than half the retention gets its committed_at set. When the prepare
   * time is known and recent, the prepared_at already leaves more than half the
   * retention after the commit, and the update (a round trip) is skipped.
   */
  private async noteCommitted(txnId: TxnId, gid: string, e: TxnEntry | undefined): Promise<void> {
    if (e !== undefined && Date.now() - e.preparedAtMs < this.o.markerRetentionMs / 2) return;
    try {
      await this.control.query(`UPDATE ${this.table} SET committed_at = statement_timestamp() WHERE gid = $1 AND committed_at IS NULL`, [gid]);
    } catch (err) {
      this.log.warn({ txnId, gid, err: describePgError(err) }, 'could not record the commit time on the marker; it is cleaned up by its prepare time');
    }
  }

  /** Heuristic acts of this participant not yet acknowledged by the cluster (for the reporter). */
  unreportedHeuristics(rowsMax = 1_000): Promise<HeuristicAct[]> {
    return unreportedActs(this.control, this.prefix, rowsMax);
  }

  markHeuristicReported(gid: string): Promise<void> {
    return markReported(this.control, gid);
  }

  /** Whether T committed here, as far as the marker tells. */
  hasMarker(gid: string): Promise<boolean> {
    return markerExists(this.control, this.table, gid);
  }

  // ---- Scans and upkeep (used by the recovery monitor) ----

  /** This participant's prepared transactions in this database, oldest first; also updates preparedStats(). */
  async listPrepared(): Promise<PreparedGid[]> {
    const out: PreparedGid[] = [];
    for (const row of await selectPrepared(this.control, this.prefix, this.o.scanRowsMax)) {
      const parsed = parseGid(this.prefix, row.gid);
      if (parsed.kind === 'foreign') continue; // starts with our prefix but is no gid we would make: not ours to touch
      out.push({ ...row, parsed });
    }
    // Oldest first, so the first row has the greatest age.
    this.lastScan = { count: out.length, oldestAgeMs: out[0]?.ageMs ?? 0, stuck: out.filter((p) => p.ageMs >= this.o.stuckAfterMs).length, scannedAtMs: Date.now() };
    return out;
  }

  /** Deletes this participant's markers older than the retention, in bounded batches. Returns how many went. */
  cleanupMarkers(): Promise<number> {
    return deleteOldMarkers(this.control, { table: this.table, prefix: this.prefix, retentionMs: this.o.markerRetentionMs, batch: this.o.markerCleanupBatch });
  }

  /** Values for metrics, as of the last listPrepared(). */
  preparedStats(): PreparedStats {
    return { ...this.lastScan };
  }

  counts(): PostgresCounts {
    let open = 0;
    let preparedHere = 0;
    for (const e of this.txns.values()) {
      if (e.phase === 'prepared') preparedHere += 1;
      else open += 1;
    }
    return { open, connecting: this.connecting, preparedHere, ...this.stats };
  }

  /** Rolls back open transactions (nothing was promised for them) and closes the pools. Prepared ones stay in PostgreSQL. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const rollbacks = [...this.txns]
      .filter(([, e]) => e.phase === 'open')
      .map(([txnId, e]) => this.exclusive(txnId, () => this.endOpen(txnId, e, 'participant is shutting down')));
    // Work still running (a statement waiting on a lock, say) gets a grace period, then its connection is cut.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(rollbacks), new Promise((resolve) => (timer = setTimeout(resolve, this.o.acquireTimeoutMs)))]);
    clearTimeout(timer);
    for (const e of this.txns.values()) {
      this.clearOpenTimer(e);
      this.releaseClient(e, new Error('participant is shutting down'));
    }
    await this.endPools();
  }

  // ---- Plumbing ----

  /** Checks out a connection and BEGINs T. Bounded: at most openTxnsMax transactions open or waiting. */
  private async begin(txnId: TxnId): Promise<TxnEntry> {
    if (this.closed) throw new Error('the PostgreSQL resource is closed');
    if (this.txns.size - this.countPrepared() + this.connecting >= this.o.openTxnsMax) {
      throw new Error(`too many open PostgreSQL transactions (${this.o.openTxnsMax}); try again later`);
    }
    this.connecting += 1;
    let client: PoolClient;
    try {
      client = await this.work_.connect();
    } catch (err) {
      throw new Error(`no PostgreSQL connection for transaction ${txnId}: ${describePgError(err)}`);
    } finally {
      this.connecting -= 1;
    }
    const e: TxnEntry = { phase: 'open', client, failure: null, active: false, openTimer: null, onClientError: null, preparedAtMs: 0 };
    // A connection lost while T holds it: remember why, so T votes NO with it.
    e.onClientError = (err: Error) => {
      e.failure ??= `lost connection to PostgreSQL: ${describePgError(err)}`;
      this.log.warn({ txnId, err: err.message }, 'PostgreSQL connection of an open transaction lost');
    };
    client.on('error', e.onClientError);
    try {
      await client.query(this.o.isolation === 'read committed' ? 'BEGIN' : `BEGIN ISOLATION LEVEL ${this.o.isolation.toUpperCase()}`);
    } catch (err) {
      this.releaseClient(e, err as Error);
      throw err;
    }
    this.txns.set(txnId, e);
    e.openTimer = setTimeout(() => {
      e.openTimer = null;
      void this.exclusive(txnId, async () => {
        if (this.txns.get(txnId) !== e || e.phase !== 'open') return;
        this.log.warn({ txnId, openTxnTimeoutMs: this.o.openTxnTimeoutMs }, 'open transaction not prepared in time; rolled back');
        await this.endOpen(txnId, e, `transaction was open for more than ${this.o.openTxnTimeoutMs} ms without PREPARE and was rolled back`);
      });
    }, this.o.openTxnTimeoutMs);
    e.openTimer.unref();
    return e;
  }

  /** Rolls back T's open (or failed preparing) transaction, returns its connection, and remembers why T ended. */
  private async endOpen(txnId: TxnId, e: TxnEntry, why: string): Promise<void> {
    this.clearOpenTimer(e);
    const client = e.client;
    let broken: Error | null = null;
    if (client !== null) {
      try {
        await client.query('ROLLBACK');
      } catch (err) {
        broken = err as Error; // the connection is not reusable: the pool drops it
      }
    }
    this.releaseClient(e, broken);
    if (this.txns.get(txnId) === e) this.txns.delete(txnId);
    this.remember(txnId, why);
  }

  private releaseClient(e: TxnEntry, err: Error | null): void {
    const client = e.client;
    if (client === null) return;
    e.client = null;
    if (e.onClientError !== null) client.removeListener('error', e.onClientError);
    client.release(err ?? undefined);
  }

  private clearOpenTimer(e: TxnEntry): void {
    if (e.openTimer !== null) clearTimeout(e.openTimer);
    e.openTimer = null;
  }

  private remember(txnId: TxnId, why: string): void {
    this.ended.delete(txnId);
    this.ended.set(txnId, why);
    for (const id of this.ended.keys()) {
      if (this.ended.size <= this.o.endedMax) break;
      this.ended.delete(id);
    }
  }

  private countPrepared(): number {
    let n = 0;
    for (const e of this.txns.values()) if (e.phase === 'prepared') n += 1;
    return n;
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

  private async endPools(): Promise<void> {
    await Promise.all([this.work_.end(), this.control.end()]);
  }
}

// ---- Payload ----

export type ParsedPgPayload = { ok: true; sql: string[] | null } | { ok: false; reason: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Empty → null (work done in-process); {"sql": [...]} → the statements; anything else → a reason for NO. */
export function parsePgPayload(payload: Uint8Array): ParsedPgPayload {
  if (payload.byteLength === 0) return { ok: true, sql: null };
  let v: unknown;
  try {
    v = JSON.parse(utf8.decode(payload));
  } catch (err) {
    return { ok: false, reason: `payload is not UTF-8 JSON (${(err as Error).message}); expected {"sql": ["INSERT ...", ...]} or an empty payload` };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { ok: false, reason: 'payload must be a JSON object like {"sql": ["INSERT ..."]}' };
  const obj = v as Record<string, unknown>;
  for (const k of Object.keys(obj)) if (k !== 'sql') return { ok: false, reason: `payload has an unknown field "${k}"; allowed: sql` };
  const sql = obj.sql;
  if (!Array.isArray(sql) || !sql.every((s) => typeof s === 'string' && s.trim() !== '')) return { ok: false, reason: 'payload "sql" must be an array of non-empty SQL strings' };
  if (sql.length > PG_PAYLOAD_STATEMENTS_MAX) return { ok: false, reason: `payload has ${sql.length} statements; at most ${PG_PAYLOAD_STATEMENTS_MAX}` };
  return { ok: true, sql: sql as string[] };
}

/** Encodes a payload of SQL statements, for applications, demos and tests. */
export function pgPayload(sql: string[]): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ sql }));
}
