// The `postgres` resource: a participant whose data lives in a PostgreSQL
// database, committed with PostgreSQL's own two-phase commit.
//
//   work(T, fn)  the application's statements for T run inside an open
//                PostgreSQL transaction bound to T: the first call BEGINs on
//                a connection of the work pool, and the connection stays
//                checked out (and the transaction open) until PREPARE.
//   PREPARE      one round trip (one simple query of several statements):
//                T's BEGIN when T was not opened by work(), the payload's
//                SQL (below), T's marker row and PREPARE TRANSACTION 'gid';
//                then the connection goes back to the pool: a
//                prepared transaction survives its session, so no connection
//                is held across the prepared state. PostgreSQL flushes the
//                PREPARE record to its WAL before it answers, so by the time
//                the resource votes YES the prepared state is durable (R4),
//                and for a readable gid the engine does not wait for its
//                journal's sync (durableAtPrepare; docs/postgres.md, "What is
//                durable where").
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
// The machinery every database resource shares (the per-transaction state,
// work(), the bounds and timeouts, decisions on a transaction already gone)
// is db-resource.ts; this file holds PostgreSQL's statements.
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
// Three pools: the work pool (size `concurrency`) holds open transactions;
// the decision pool (as large by default) runs COMMIT / ROLLBACK PREPARED, so
// a COMMIT PREPARED never waits behind open transactions that may themselves
// be waiting for the locks it would release, and decisions arriving together
// run together (PostgreSQL flushes their commit records with one WAL flush)
// instead of queueing for a couple of connections; the control pool (a couple
// of connections) runs scans, markers and upkeep.
import pg from 'pg';
import type { PoolClient, QueryResult } from 'pg';
import { gidOf, gidPrefix, parseGid } from './postgres-gid.ts';
import {
  PostgresConfigError,
  checkServer,
  deleteOldMarkers,
  describePgError,
  ensureMarkerTable,
  markerExists,
  selectPrepared,
  setUpOrRefuse,
  sqlGid,
} from './postgres-sql.ts';
import { SILENT_LOG, withDefaults, type EngineLog, type TxnId } from './types.ts';
import {
  HEURISTIC_TABLE,
  ensureHeuristicTable,
  heuristicActOf,
  markReported,
  unreportedActs,
  type HeuristicAct,
} from './heuristic.ts';
import { DB_DEFAULTS, DbResource, type DbCounts, type DbTxn } from './db-resource.ts';
import type { PreparedGid } from './prepared-recovery.ts';

export { PostgresConfigError, describePgError, redact } from './postgres-sql.ts';
export { HeuristicHazardError } from './db-resource.ts';
export { parsePgPayload, pgPayload, PG_PAYLOAD_STATEMENTS_MAX, type ParsedPgPayload } from './payload.ts';
export type { PreparedGid, PreparedStats } from './prepared-recovery.ts';

/**
 * The setting that names T's transaction from its BEGIN: set for the
 * transaction only (SET LOCAL, which answers no row), so it is gone once that
 * transaction ends. The marker row takes its gid from it, so work that ended
 * T (COMMIT, COMMIT AND CHAIN, ROLLBACK, COMMIT; BEGIN) leaves the marker
 * without a gid, which fails it and everything after it in the same query:
 * PREPARE TRANSACTION never covers only what came after.
 */
const OWN_TXN_SETTING = 'verdict.gid';

/** SQLSTATE of a NOT NULL violation: the marker's gid when OWN_TXN_SETTING is gone. */
const NOT_NULL_VIOLATION = '23502';
const ENDED_BY_WORK = 'transaction was ended by its own work (COMMIT or ROLLBACK); nothing of it is prepared';

/** SQLSTATE of "prepared transaction with identifier ... does not exist". */
const UNDEFINED_OBJECT = '42704';
const MARKER_TABLE_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

export interface PostgresResourceOptions {
  clusterId: string;
  participantId: string;
  /** postgres://user:password@host:port/database */
  url: string;
  /**
   * Transactions open at once: the work pool's size. PostgreSQL's max_prepared_transactions should be at least this.
   */
  concurrency?: number;
  /** Connections for COMMIT / ROLLBACK PREPARED, apart from the work pool; 0 (the default): as many as concurrency. */
  decisionConnections?: number;
  /** Connections for scans, markers and upkeep, apart from the work and decision pools. */
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
  /** lock_timeout of the decision and control connections (decisions, scans, marker upkeep and the start-up DDL). */
  controlLockTimeoutMs?: number;
  log?: EngineLog;
}

/** What the application's work gets: queries on T's connection, inside T's transaction. */
export type PgTxnClient = Pick<PoolClient, 'query'>;

export type PostgresCounts = DbCounts;

type Options = Required<Omit<PostgresResourceOptions, 'log'>>;

export class PostgresResource extends DbResource<PoolClient, PgTxnClient> {
  readonly kind = 'PostgreSQL';
  readonly byHand = 'verdict participant resolve, or COMMIT PREPARED / ROLLBACK PREPARED';
  protected readonly openTxnNoun = 'open PostgreSQL transaction';
  readonly prefix: string;
  private readonly o: Options;
  private readonly work_: pg.Pool;
  private readonly decide: pg.Pool;
  private readonly control: pg.Pool;
  /** Work-pool connections checked out for a PREPARE whose BEGIN has not been sent yet (prepareConn sends it). */
  private readonly unbegun = new WeakSet<PoolClient>();
  private readonly table: string;

  private constructor(o: Options, log: EngineLog) {
    super(
      {
        openTxnTimeoutMs: o.openTxnTimeoutMs,
        openTxnsMax: o.openTxnsMax,
        endedMax: o.endedMax,
        markerRetentionMs: o.markerRetentionMs,
        stuckAfterMs: o.stuckAfterMs,
        closeGraceMs: o.acquireTimeoutMs,
      },
      log,
    );
    this.o = o;
    this.prefix = gidPrefix(o.clusterId, o.participantId);
    this.table = this.o.markerTable;
    const base = {
      connectionString: o.url,
      connectionTimeoutMillis: this.o.acquireTimeoutMs,
      application_name: `verdict-${o.participantId}`.slice(0, 63),
    };
    this.work_ = new pg.Pool({ ...base, max: this.o.concurrency, idleTimeoutMillis: 30_000 });
    // Decisions, scans and upkeep never wait long for a lock: they are retried instead.
    this.decide = new pg.Pool({
      ...base,
      max: this.o.decisionConnections,
      idleTimeoutMillis: 30_000,
      lock_timeout: this.o.controlLockTimeoutMs,
    });
    this.control = new pg.Pool({
      ...base,
      max: this.o.controlConnections,
      idleTimeoutMillis: 30_000,
      lock_timeout: this.o.controlLockTimeoutMs,
    });
    // An idle connection that dies (server restart) is reported here; without a listener it would crash the process.
    for (const pool of [this.work_, this.decide, this.control])
      pool.on('error', (err) => this.log.warn({ err: err.message }, 'PostgreSQL connection lost while idle'));
  }

  /**
   * Connects, checks that PostgreSQL can prepare transactions and creates the
   * marker table. Refuses (PostgresConfigError) with the reason and the fix.
   */
  static async open(opts: PostgresResourceOptions): Promise<PostgresResource> {
    const o: Options = withDefaults(
      {
        ...DB_DEFAULTS,
        acquireTimeoutMs: 5_000,
        openTxnsMax: 0,
        decisionConnections: 0,
        isolation: 'read committed' as const,
        markerTable: 'verdict_markers',
        markerCleanupBatch: 10_000,
        markerLockTimeoutMs: 5_000,
        controlLockTimeoutMs: 10_000,
      },
      { ...opts, log: undefined },
    ) as Options;
    if (o.openTxnsMax === 0) o.openTxnsMax = o.concurrency * 16;
    if (o.decisionConnections === 0) o.decisionConnections = o.concurrency;
    const r = new PostgresResource(o, opts.log ?? SILENT_LOG);
    await setUpOrRefuse(
      { url: o.url, tables: [r.table, HEURISTIC_TABLE], close: () => r.endConnections() },
      async () => {
        if (!(r.o.concurrency >= 1 && r.o.controlConnections >= 1 && Number.isInteger(r.o.concurrency))) {
          throw new PostgresConfigError(`PostgreSQL concurrency must be a positive integer, not ${r.o.concurrency}`);
        }
        if (!(Number.isInteger(r.o.decisionConnections) && r.o.decisionConnections >= 1)) {
          throw new PostgresConfigError(
            `PostgreSQL decision connections must be a positive integer, not ${r.o.decisionConnections}`,
          );
        }
        if (!MARKER_TABLE_PATTERN.test(r.table))
          throw new PostgresConfigError(`marker table name "${r.table}" must be a lower-case SQL identifier`);
        await checkServer(r.control, { url: o.url, concurrency: r.o.concurrency, log: r.log });
        await ensureMarkerTable(r.control, r.table);
        await ensureHeuristicTable(r.control);
      },
    );
    return r;
  }

  /** The gid of txnId at this participant. */
  gid(txnId: TxnId): string {
    return gidOf(this.prefix, txnId);
  }

  /**
   * Whether T's PREPARE TRANSACTION alone is its durable prepared state: true
   * when T's gid spells T's id, so recovery finds T in pg_prepared_xacts
   * without the journal. A hashed gid (a long txn id) names T only through
   * the journal, whose prepared record is then synced before the vote.
   */
  durableAtPrepare(txnId: TxnId): boolean {
    const parsed = parseGid(this.prefix, this.gid(txnId));
    return parsed.kind === 'readable' && parsed.txnId === txnId;
  }

  describeError(err: unknown): string {
    return describePgError(err);
  }

  // ---- PostgreSQL's statements (the DbResource hooks) ----

  /** Checks out a connection of the work pool and BEGINs T (for a PREPARE, with its first statement: prepareConn). */
  protected async openConn(txnId: TxnId, e: DbTxn<PoolClient>, forPrepare: boolean): Promise<PoolClient> {
    let client: PoolClient;
    try {
      client = await this.work_.connect();
    } catch (err) {
      throw new Error(`no PostgreSQL connection for transaction ${txnId}: ${describePgError(err)}`);
    }
    // A connection lost while T holds it: remember why, so T votes NO with it.
    const onError = (err: Error): void => {
      e.failure ??= `lost connection to PostgreSQL: ${describePgError(err)}`;
      this.log.warn({ txnId, err: err.message }, 'PostgreSQL connection of an open transaction lost');
    };
    client.on('error', onError);
    e.detach = () => client.removeListener('error', onError);
    if (forPrepare) {
      // One round trip fewer: prepareConn sends BEGIN in front of the payload's statements.
      this.unbegun.add(client);
      return client;
    }
    try {
      await client.query(this.beginSql(txnId));
    } catch (err) {
      client.removeListener('error', onError);
      client.release(err as Error);
      throw err;
    }
    return client;
  }

  /** BEGIN, and the setting that names T's transaction for as long as it lasts (OWN_TXN_SETTING). */
  private beginSql(txnId: TxnId): string {
    const begin =
      this.o.isolation === 'read committed' ? 'BEGIN' : `BEGIN ISOLATION LEVEL ${this.o.isolation.toUpperCase()}`;
    return `${begin};\nSET LOCAL ${OWN_TXN_SETTING} = ${sqlGid(this.gid(txnId))}`;
  }

  /**
   * One round trip: T's BEGIN (when openConn left it here), the payload's
   * statements, the marker row and PREPARE TRANSACTION, as one simple query.
   * PostgreSQL runs them in order and stops at the first that fails, so
   * nothing after a failed statement runs and T votes NO with its error.
   */
  protected async prepareConn(txnId: TxnId, client: PoolClient, sql: readonly string[]): Promise<void> {
    const gid = this.gid(txnId);
    const begin = this.unbegun.delete(client) ? `${this.beginSql(txnId)};\n` : '';
    // The work (not a payload) committed or rolled back T and began nothing: the session is idle.
    if (begin === '' && client.getTransactionStatus() === 'I')
      throw new Error(`transaction ${txnId}'s PostgreSQL ${ENDED_BY_WORK}`);
    // "\n;\n" ends a payload statement even after a -- comment. lock_timeout bounds a clash with another
    // prepared transaction holding the same gid's marker (two processes with one participant id). The
    // marker's gid is NULL, and fails the rest, unless T's own transaction is the one still open.
    const text =
      begin +
      (sql.length > 0 ? `${sql.join('\n;\n')}\n;\n` : '') +
      `SET LOCAL lock_timeout = ${Math.max(1, Math.floor(this.o.markerLockTimeoutMs))};\n` +
      `INSERT INTO ${this.table} (gid, txn_id, prepared_at) VALUES (CASE WHEN current_setting('${OWN_TXN_SETTING}', true) = ${sqlGid(gid)} THEN ${sqlGid(gid)} END, ${pg.escapeLiteral(txnId)}, statement_timestamp());\n` +
      `PREPARE TRANSACTION ${sqlGid(gid)}`;
    let r: QueryResult | QueryResult[];
    try {
      r = (await client.query(text)) as unknown as QueryResult | QueryResult[];
    } catch (err) {
      const e = err as { code?: string; table?: string; column?: string };
      if (e.code === NOT_NULL_VIOLATION && e.table === this.table && e.column === 'gid')
        throw new Error(`transaction ${txnId}'s PostgreSQL ${ENDED_BY_WORK}`);
      throw err;
    }
    const results = Array.isArray(r) ? r : [r];
    // PREPARE TRANSACTION on a failed transaction answers ROLLBACK, not an error: assert what we got.
    const last = results[results.length - 1];
    if (last?.command !== 'PREPARE')
      throw new Error(
        `PREPARE TRANSACTION answered ${last?.command ?? 'nothing'}; the transaction had failed and was rolled back`,
      );
  }

  protected async rollbackConn(_txnId: TxnId, client: PoolClient): Promise<Error | null> {
    try {
      await client.query('ROLLBACK');
      return null;
    } catch (err) {
      return err as Error; // the connection is not reusable: the pool drops it
    }
  }

  /** A prepared transaction survives its session, so the connection goes back to the pool. */
  protected async releaseConn(client: PoolClient, broken: Error | null): Promise<void> {
    this.unbegun.delete(client);
    client.release(broken ?? undefined);
  }

  protected async decidePrepared(txnId: TxnId, step: 'commit' | 'abort'): Promise<boolean> {
    try {
      await this.decide.query(`${this.decisionVerb(step)} ${sqlGid(this.gid(txnId))}`);
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === UNDEFINED_OBJECT) return false;
      throw err;
    }
  }

  protected decisionVerb(step: 'commit' | 'abort'): string {
    return step === 'commit' ? 'COMMIT PREPARED' : 'ROLLBACK PREPARED';
  }

  protected clientOf(client: PoolClient, guard: () => void): PgTxnClient {
    const query = ((...args: Parameters<PoolClient['query']>) => {
      guard();
      return (client.query as (...a: unknown[]) => unknown)(...args);
    }) as PoolClient['query'];
    return { query };
  }

  protected tooManyOpen(): string {
    return `too many open PostgreSQL transactions (${this.o.openTxnsMax}); try again later`;
  }

  protected heuristicActOf(gid: string): Promise<HeuristicAct | null> {
    return heuristicActOf(this.control, gid);
  }

  protected async markCommitTime(gid: string): Promise<void> {
    await this.control.query(
      `UPDATE ${this.table} SET committed_at = statement_timestamp() WHERE gid = $1 AND committed_at IS NULL`,
      [gid],
    );
  }

  protected async endConnections(): Promise<void> {
    await Promise.all([this.work_.end(), this.decide.end(), this.control.end()]);
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
    this.lastScan = {
      count: out.length,
      oldestAgeMs: out[0]?.ageMs ?? 0,
      stuck: out.filter((p) => p.ageMs >= this.o.stuckAfterMs).length,
      scannedAtMs: Date.now(),
    };
    return out;
  }

  /** Deletes this participant's markers older than the retention, in bounded batches. Returns how many went. */
  cleanupMarkers(): Promise<number> {
    return deleteOldMarkers(this.control, {
      table: this.table,
      prefix: this.prefix,
      retentionMs: this.o.markerRetentionMs,
      batch: this.o.markerCleanupBatch,
    });
  }
}
