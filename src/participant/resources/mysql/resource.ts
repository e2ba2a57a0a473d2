// The `mysql` resource: a participant whose data lives in a MySQL or MariaDB
// database, committed with XA, the servers' two-phase commit.
//
//   work(T, fn)  the application's statements for T run inside T's XA branch:
//                the first call takes a session of T's own (an idle one, or a
//                new connection) and runs XA START xid; the session stays
//                T's until the decision.
//   PREPARE      one round trip (the session takes several statements in
//                one query): XA START when T was not opened by work(), the
//                payload's SQL (the {"sql": [...]} format of the PostgreSQL
//                adapter), T's marker row, XA END and XA PREPARE. The server
//                runs them in order and stops at the first that fails, which
//                makes the vote NO. With innodb_flush_log_at_trx_commit = 1 (and
//                sync_binlog = 1 when the binlog is on; server-check.ts
//                refuses less) the server has the branch on disk before it
//                answers, so it is durable by the time the resource votes
//                YES (R4). A crash of this process ends the session, which
//                leaves the branch prepared (MySQL 5.7.7+, MariaDB 10.5.2+).
//                So for a readable xid the engine does not wait for its
//                journal's sync (durableAtPrepare), as for PostgreSQL.
//   COMMIT       XA COMMIT xid, on the session that prepared the branch when
//                it is still held (then the session is free for the next
//                branch), else on a control connection
//   ABORT        XA ROLLBACK xid likewise, or the branch's own rollback if T
//                never got as far as PREPARE.
//
// The session that prepared a branch is held for its decision only briefly
// (holdPreparedMs, 2 s by default, and for at most `concurrency` branches):
// a server answers XA COMMIT from another session with XAER_NOTA while the
// preparing session is open, so a branch whose decision is late (the
// cluster is slow or unreachable) has its session closed, which detaches it
// and lets any connection decide it: the recovery scan, a restarted
// participant, or an operator's `verdict participant resolve`. The server
// detaches the branch a moment after the socket closes; a XAER_NOTA for a
// branch this process prepared within detachWaitMs is therefore retried
// before it means "gone".
//
// A failure during the work or at PREPARE (a constraint, a deadlock, a lost
// connection between XA END and XA PREPARE) makes the vote NO with the
// server's error number, name, SQLSTATE and message; the branch is rolled
// back (by the server, for a lost session).
//
// The machinery every database resource shares (work(), the bounds and
// timeouts, decisions on a transaction already gone) is
// src/participant/db-resource.ts; this file holds MySQL's statements.
//
// Idempotent decisions and heuristics are as in the PostgreSQL adapter: the
// marker row (xid, txn id, prepared at) is inside the branch, so it exists
// after the fact exactly when T committed here. A COMMIT whose xid is no
// longer prepared is ACKed when the marker is there (a redelivery) and
// refused as a heuristic hazard when it is not (HEURRB); an ABORT whose xid
// is gone is ACKed without a marker and refused with one (HEURCOM). An act
// by hand recorded in verdict_heuristics (resolve) is acknowledged whatever
// it was, and reported to the cluster. See xid.ts for the xid.
import mysql from 'mysql2/promise';
import type { Connection, Pool } from 'mysql2/promise';
import { DB_DEFAULTS, DbResource, type DbCounts, type DbTxn } from '../../db-resource.ts';
import type { HeuristicAct } from '../../heuristic.ts';
import type { PreparedGid } from '../../prepared-recovery.ts';
import { withDefaults, SILENT_LOG, type EngineLog, type TxnId } from '../../types.ts';
import { describeMySqlError, mysqlErrno, redact, ER_XAER_NOTA } from './errors.ts';
import { assessServer, gatherFacts } from './server-check.ts';
import * as tables from './tables.ts';
import { parseXid, sqlXid, xidOf, xidScope, xidText, XA_FORMAT_ID, type Xid, type XidScope } from './xid.ts';

/** "Transaction branch was rolled back": after a failed XA PREPARE the branch is already gone. */
const ER_XA_RBROLLBACK = 1402;
/**
 * A payload statement as one of several in a query: its own trailing
 * semicolons dropped (an empty statement between two is a syntax error to
 * MySQL), then ended on a line of its own, so a -- comment on its last line
 * does not swallow the next. An empty statement adds nothing.
 */
function endOf(stmt: string): string {
  let end = stmt.length;
  while (end > 0 && (stmt[end - 1] === ';' || /\s/.test(stmt[end - 1] as string))) end -= 1;
  return end === 0 ? '' : `${stmt.slice(0, end)}\n;\n`;
}

const TABLE_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

export interface MySqlResourceOptions {
  clusterId: string;
  participantId: string;
  /** mysql://user:password@host:port/database */
  url: string;
  /** Branches open (before PREPARE) at once, each on a connection of its own; beyond it work() fails at once. */
  concurrency?: number;
  /** Connections for decisions, scans and markers. */
  controlConnections?: number;
  connectTimeoutMs?: number;
  /** A branch not PREPAREd within this long is rolled back (its PREPARE then votes NO). */
  openTxnTimeoutMs?: number;
  markerTable?: string;
  /** A marker is deleted once its branch committed (or, not known, prepared) longer ago than this. */
  markerRetentionMs?: number;
  markerCleanupBatch?: number;
  /** Txn ids whose end is remembered to answer a late work() or PREPARE with the reason. */
  endedMax?: number;
  /** Branches one XA RECOVER scan considers at most. */
  scanRowsMax?: number;
  /** A branch prepared longer ago than this counts as stuck (alerts, metrics). */
  stuckAfterMs?: number;
  /** How long after this process's XA PREPARE a XAER_NOTA is taken for a branch not yet detached, and retried. */
  detachWaitMs?: number;
  /**
   * How long the session that prepared a branch is kept for its decision (XA
   * COMMIT on the same session, then the connection is reused); past it the
   * session is closed, which detaches the branch. 0: closed at once.
   */
  holdPreparedMs?: number;
  /** Fault injection for tests: runs between XA END and XA PREPARE with the session's connection id. */
  afterXaEnd?: (txnId: TxnId, connectionId: number) => Promise<void>;
  log?: EngineLog;
}

export class MySqlConfigError extends Error {
  readonly code = 'FAILED_PRECONDITION';
  constructor(message: string) {
    super(`FAILED_PRECONDITION: ${message}`);
    this.name = 'MySqlConfigError';
  }
}

/** What the application's work gets: queries on T's connection, inside T's branch. */
export type MySqlTxnClient = Pick<Connection, 'query'>;

export type MySqlCounts = DbCounts;

type Options = Required<Omit<MySqlResourceOptions, 'log' | 'afterXaEnd'>> & Pick<MySqlResourceOptions, 'afterXaEnd'>;

export class MySqlResource extends DbResource<Connection, MySqlTxnClient> {
  readonly kind = 'MySQL';
  readonly byHand = 'verdict participant resolve --resource mysql, or XA COMMIT / XA ROLLBACK';
  protected readonly openTxnNoun = 'open XA branch';
  readonly scope: XidScope;
  private readonly o: Options;
  private readonly control: Pool;
  private readonly table: string;
  /** Sessions free for the next branch (after a decision on the session that prepared); bounded by concurrency. */
  private readonly idle: Connection[] = [];
  /** Sessions the server or the network closed: never reused. */
  private readonly dead = new WeakSet<Connection>();
  /** Sessions checked out for a PREPARE whose XA START has not been sent yet (prepareConn sends it). */
  private readonly unstarted = new WeakSet<Connection>();
  /** Sessions whose PREPARE failed in a query that began with XA START: rolled back by closing them (prepareConn). */
  private readonly closeOnRollback = new WeakSet<Connection>();
  /** When a scan first saw a branch whose marker it could not read; bounded by what one scan returns. */
  private readonly firstSeenAtMs = new Map<string, number>();

  private constructor(o: Options, log: EngineLog, control: Pool) {
    super(
      {
        openTxnTimeoutMs: o.openTxnTimeoutMs,
        openTxnsMax: o.concurrency,
        endedMax: o.endedMax,
        markerRetentionMs: o.markerRetentionMs,
        stuckAfterMs: o.stuckAfterMs,
        closeGraceMs: o.connectTimeoutMs,
      },
      log,
    );
    this.o = o;
    this.control = control;
    this.table = o.markerTable;
    this.scope = xidScope(o.clusterId, o.participantId);
  }

  /** Connects, checks the server (refusing an unsafe one with the reason), and creates the adapter's tables. */
  static async open(opts: MySqlResourceOptions): Promise<MySqlResource> {
    const o: Options = withDefaults(
      {
        ...DB_DEFAULTS,
        connectTimeoutMs: 10_000,
        markerTable: tables.MARKER_TABLE,
        markerCleanupBatch: 1_000,
        detachWaitMs: 3_000,
        holdPreparedMs: 2_000,
      },
      { ...opts, log: undefined },
    ) as Options;
    o.afterXaEnd = opts.afterXaEnd;
    if (!TABLE_PATTERN.test(o.markerTable))
      throw new MySqlConfigError(`marker table name "${o.markerTable}" must match ${TABLE_PATTERN}`);
    if (!(Number.isInteger(o.concurrency) && o.concurrency >= 1))
      throw new MySqlConfigError(`MySQL concurrency must be a positive integer, not ${o.concurrency}`);
    const log = opts.log ?? SILENT_LOG;
    const control = mysql.createPool({
      uri: o.url,
      connectionLimit: o.controlConnections,
      connectTimeout: o.connectTimeoutMs,
      supportBigNumbers: true,
    });
    // A broken control connection is dropped by the pool; the error must not crash the process.
    control.on('connection', (c) =>
      c.on('error', (err: Error) => log.warn({ err: describeMySqlError(err) }, 'MySQL control connection lost')),
    );
    try {
      let facts: Awaited<ReturnType<typeof gatherFacts>>;
      try {
        facts = await gatherFacts(control);
      } catch (err) {
        throw new MySqlConfigError(`cannot check the MySQL server at ${redact(o.url)}: ${describeMySqlError(err)}`);
      }
      const a = assessServer(facts);
      for (const w of a.warnings) log.warn({ version: facts.version }, w);
      if (a.refusals.length > 0)
        throw new MySqlConfigError(
          `${facts.version} at ${redact(o.url)} cannot hold prepared XA branches safely: ${a.refusals.join('; ')}`,
        );
      try {
        await tables.ensureTables(control, o.markerTable);
      } catch (err) {
        throw new MySqlConfigError(
          `cannot create the adapter's tables (${o.markerTable}, ${tables.HEURISTIC_TABLE}) at ${redact(o.url)}: ${describeMySqlError(err)}`,
        );
      }
      log.info(
        {
          version: facts.version,
          flushLogAtTrxCommit: facts.variables.innodb_flush_log_at_trx_commit,
          logBin: facts.variables.log_bin,
        },
        'MySQL server checked: XA branches survive a crash',
      );
    } catch (err) {
      await control.end().catch(() => {});
      throw err;
    }
    return new MySqlResource(o, log, control);
  }

  xid(txnId: TxnId): Xid {
    return xidOf(this.scope, txnId);
  }

  /** The xid's text form, "gtrid,bqual": the name recovery, markers and heuristics use. */
  gid(txnId: TxnId): string {
    return xidText(this.xid(txnId));
  }

  /**
   * Whether T's XA PREPARE alone is its durable prepared state: true when T's
   * xid spells T's id, so recovery finds T in XA RECOVER without the journal
   * (the server check refuses a server on which an answered XA PREPARE is not
   * on disk, or on which a branch does not outlive its session). The engine
   * then votes YES without waiting for its journal's sync. A hashed xid (a
   * long txn id) names T only through the journal, whose prepared record is
   * then synced before the vote.
   */
  durableAtPrepare(txnId: TxnId): boolean {
    const parsed = parseXid(this.scope, this.xid(txnId));
    return parsed.kind === 'readable' && parsed.txnId === txnId;
  }

  describeError(err: unknown): string {
    return describeMySqlError(err);
  }

  // ---- MySQL's statements (the DbResource hooks) ----

  /**
   * A session of T's own (an idle one, or a new one; see the file comment for
   * why not a shared pool), and XA START; for a PREPARE that opens T
   * (forPrepare), XA START goes with prepareConn's statements instead.
   */
  protected async openConn(txnId: TxnId, e: DbTxn<Connection>, forPrepare: boolean): Promise<Connection> {
    let conn: Connection | undefined;
    while (conn === undefined && this.idle.length > 0) {
      const c = this.idle.pop() as Connection;
      if (!this.dead.has(c)) conn = c;
    }
    if (conn === undefined) {
      try {
        // Several statements in one query: PREPARE sends its own in one round trip (prepareConn).
        conn = await mysql.createConnection({
          uri: this.o.url,
          connectTimeout: this.o.connectTimeoutMs,
          multipleStatements: true,
        });
      } catch (err) {
        throw new Error(`no MySQL connection for transaction ${txnId}: ${describeMySqlError(err)}`);
      }
      const c = conn;
      // Always listening, so an idle session's end never goes unhandled; it is not reused then.
      c.on('error', () => this.dead.add(c));
    }
    // A session lost while T holds it takes T's branch with it: remember why, so T votes NO with it.
    const onError = (err: Error): void => {
      e.failure ??= describeMySqlError(err);
      this.log.warn({ txnId, err: e.failure }, 'MySQL connection of an open XA branch lost');
    };
    conn.on('error', onError);
    e.detach = () => conn.removeListener('error', onError);
    if (forPrepare) {
      this.unstarted.add(conn);
      return conn;
    }
    try {
      await conn.query(`XA START ${sqlXid(this.xid(txnId))}`);
    } catch (err) {
      conn.destroy();
      throw new Error(`XA START for transaction ${txnId} failed: ${describeMySqlError(err)}`);
    }
    return conn;
  }

  /**
   * One round trip (one query of several statements, run in order; the first
   * that fails stops the rest): XA START when openConn left it here, the
   * payload's statements (endOf), the marker row, XA END and XA PREPARE.
   * With the test hook afterXaEnd, XA PREPARE goes alone after it.
   */
  protected async prepareConn(txnId: TxnId, conn: Connection, sql: readonly string[]): Promise<void> {
    const xid = this.xid(txnId);
    const started = !this.unstarted.delete(conn);
    const hook = this.o.afterXaEnd;
    const text =
      (started ? '' : `XA START ${sqlXid(xid)};\n`) +
      sql.map(endOf).join('') +
      `${mysql.format(tables.markerInsert(this.table), [xidText(xid), txnId])};\n` +
      `XA END ${sqlXid(xid)}` +
      (hook === undefined ? `;\nXA PREPARE ${sqlXid(xid)}` : '');
    try {
      await conn.query(text);
    } catch (err) {
      // Whether XA START itself failed is unknown (XAER_DUPID: a branch of that xid is prepared already), so the
      // branch is not rolled back by its xid, which could reach that prepared branch: the session is closed
      // instead, which rolls back whatever this session began.
      if (!started) this.closeOnRollback.add(conn);
      throw err;
    }
    if (hook === undefined) return;
    await hook(txnId, conn.threadId);
    await conn.query(`XA PREPARE ${sqlXid(xid)}`);
  }

  /** Best effort: the branch may be ACTIVE, IDLE or gone; closing the session rolls back whatever is left. */
  protected async rollbackConn(txnId: TxnId, conn: Connection): Promise<Error | null> {
    if (this.closeOnRollback.delete(conn)) return new Error('the branch is rolled back by closing its session');
    const x = sqlXid(this.xid(txnId));
    await conn.query(`XA END ${x}`).catch(() => {});
    await conn.query(`XA ROLLBACK ${x}`).catch(() => {});
    return null;
  }

  /**
   * After a decision the session is free and kept for the next branch (up to
   * 2 × `concurrency` idle, as many as can be held for decisions: fewer
   * closed sessions that the next burst of branches opened again). A
   * session still holding a prepared branch is ended (COM_QUIT, answered by
   * the server closing the socket), which detaches the branch; a broken one
   * is destroyed.
   */
  protected async releaseConn(conn: Connection, broken: Error | null, prepared: boolean): Promise<void> {
    this.unstarted.delete(conn);
    if (broken !== null || this.dead.has(conn)) return void conn.destroy();
    if (!prepared && !this.closed && this.idle.length < 2 * this.o.concurrency) return void this.idle.push(conn);
    await conn.end().catch(() => conn.destroy());
  }

  /**
   * The session is kept for the decision while at most 2 × `concurrency` are
   * kept so, this one included (its phase is already prepared). Decisions
   * come after the client's answer, so at full concurrency a client's next
   * branch is often prepared before its last one is decided: with room for
   * `concurrency` only, about one transaction in six lost its session, and
   * paid a new one (connect, handshake) and its decision on a control
   * connection.
   */
  protected override holdPreparedMs(): number {
    let held = 0;
    for (const e of this.txns.values()) if (e.phase === 'prepared' && e.conn !== null) held += 1;
    return held <= 2 * this.o.concurrency ? this.o.holdPreparedMs : 0;
  }

  protected async decidePrepared(
    txnId: TxnId,
    step: 'commit' | 'abort',
    e: DbTxn<Connection> | undefined,
  ): Promise<boolean> {
    const verb = this.decisionVerb(step);
    // The session that prepared the branch, still held: the decision goes there.
    if (e?.conn != null && e.failure === null && !this.dead.has(e.conn)) {
      try {
        await e.conn.query(`${verb} ${sqlXid(this.xid(txnId))}`);
        return true;
      } catch (err) {
        if (step === 'abort' && mysqlErrno(err) === ER_XA_RBROLLBACK) return true;
        // Anything but a lost session is an answer; a lost session detaches the branch, decided below.
        if (mysqlErrno(err) !== undefined) throw err;
        e.failure ??= describeMySqlError(err);
      }
    }
    for (;;) {
      try {
        await this.control.query(`${verb} ${sqlXid(this.xid(txnId))}`);
        return true;
      } catch (err) {
        const errno = mysqlErrno(err);
        if (step === 'abort' && errno === ER_XA_RBROLLBACK) return true; // rolled back by the server already
        if (errno !== ER_XAER_NOTA) throw err;
        // Just prepared by this process: its session may not be detached yet.
        if (e !== undefined && e.phase === 'prepared' && Date.now() - e.preparedAtMs < this.o.detachWaitMs) {
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        return false;
      }
    }
  }

  protected decisionVerb(step: 'commit' | 'abort'): string {
    return step === 'commit' ? 'XA COMMIT' : 'XA ROLLBACK';
  }

  protected clientOf(conn: Connection, guard: () => void): MySqlTxnClient {
    const query = ((...args: unknown[]) => {
      guard();
      return (conn.query as (...a: unknown[]) => unknown)(...args);
    }) as Connection['query'];
    return { query };
  }

  protected tooManyOpen(): string {
    return `too many open XA branches (${this.o.concurrency}, --mysql-concurrency); try again later`;
  }

  protected heuristicActOf(gid: string): Promise<HeuristicAct | null> {
    return tables.actOf(this.control, gid);
  }

  protected markCommitTime(gid: string): Promise<void> {
    return tables.noteCommitted(this.control, this.table, gid);
  }

  protected async endConnections(): Promise<void> {
    for (const c of this.idle.splice(0)) c.destroy();
    await this.control.end().catch(() => {});
  }

  unreportedHeuristics(rowsMax = 1_000): Promise<HeuristicAct[]> {
    return tables.unreportedActs(this.control, this.scope, rowsMax);
  }

  markHeuristicReported(gid: string): Promise<void> {
    return tables.markReported(this.control, gid);
  }

  hasMarker(gid: string): Promise<boolean> {
    return tables.markerExists(this.control, this.table, gid);
  }

  // ---- Scans and upkeep (used by the recovery monitor) ----

  /** This participant's prepared branches (XA RECOVER is server-wide), oldest first; also updates preparedStats(). */
  async listPrepared(): Promise<PreparedGid[]> {
    const [rows] = (await this.control.query('XA RECOVER')) as unknown as [
      {
        formatID: number | string;
        gtrid_length: number | string;
        bqual_length: number | string;
        data: Buffer | string;
      }[],
    ];
    const ours: { gid: string; parsed: PreparedGid['parsed'] }[] = [];
    for (const r of rows.slice(0, this.o.scanRowsMax)) {
      const data = Buffer.isBuffer(r.data) ? r.data : Buffer.from(String(r.data), 'latin1');
      const gl = Number(r.gtrid_length);
      const bl = Number(r.bqual_length);
      // Bytes from the server: lengths are checked before they cut the data.
      if (!Number.isInteger(gl) || !Number.isInteger(bl) || gl < 0 || bl < 0 || gl + bl > data.length) continue;
      const xid: Xid = {
        formatId: Number(r.formatID),
        gtrid: data.subarray(0, gl).toString('latin1'),
        bqual: data.subarray(gl, gl + bl).toString('latin1'),
      };
      if (xid.formatId !== XA_FORMAT_ID) continue;
      const parsed = parseXid(this.scope, xid);
      if (parsed.kind === 'foreign') continue; // not a branch of this participant: not ours to touch
      ours.push({ gid: xidText(xid), parsed });
    }
    const times = await tables.preparedTimes(
      this.control,
      this.table,
      ours.map((p) => p.gid),
    );
    const now = Date.now();
    const seen = new Set<string>();
    const out: PreparedGid[] = ours.map((p) => {
      seen.add(p.gid);
      let atMs = times.get(p.gid) ?? this.txns.get(this.txnIdOfGid(p.gid) ?? '')?.preparedAtMs;
      if (atMs === undefined) {
        atMs = this.firstSeenAtMs.get(p.gid) ?? now;
        this.firstSeenAtMs.set(p.gid, atMs);
      }
      return { ...p, preparedAtMs: atMs, ageMs: Math.max(0, now - atMs) };
    });
    for (const gid of this.firstSeenAtMs.keys()) if (!seen.has(gid)) this.firstSeenAtMs.delete(gid);
    out.sort((a, b) => a.preparedAtMs - b.preparedAtMs);
    this.lastScan = {
      count: out.length,
      oldestAgeMs: out[0]?.ageMs ?? 0,
      stuck: out.filter((p) => p.ageMs >= this.o.stuckAfterMs).length,
      scannedAtMs: now,
    };
    return out;
  }

  cleanupMarkers(): Promise<number> {
    return tables.deleteOldMarkers(this.control, {
      table: this.table,
      scope: this.scope,
      retentionMs: this.o.markerRetentionMs,
      batch: this.o.markerCleanupBatch,
    });
  }
}
