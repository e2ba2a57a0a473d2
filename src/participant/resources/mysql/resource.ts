// The `mysql` resource: a participant whose data lives in a MySQL or MariaDB
// database, committed with XA, the servers' two-phase commit.
//
//   work(T, fn)  the application's statements for T run inside T's XA branch:
//                the first call opens a connection of T's own and runs
//                XA START xid; the connection stays T's until PREPARE.
//   PREPARE      runs the payload's SQL (the {"sql": [...]} format of the
//                PostgreSQL adapter), writes T's marker row, then XA END and
//                XA PREPARE, and closes T's connection: the branch then
//                belongs to no session (MySQL 5.7.7+, MariaDB 10.5.2+), so
//                the decision can come from any connection, and a crash of
//                this process leaves it prepared. With
//                innodb_flush_log_at_trx_commit = 1 (and sync_binlog = 1
//                when the binlog is on; server-check.ts refuses less) the
//                server has the branch on disk before it answers, so it is
//                durable by the time the resource votes YES (R4).
//   COMMIT       XA COMMIT xid, on a control connection
//   ABORT        XA ROLLBACK xid, or the branch's own rollback if T never got
//                as far as PREPARE.
//
// Why T's connection is closed rather than pooled: a server answers XA
// COMMIT from another session with XAER_NOTA while the session that prepared
// the branch is still open, and that session cannot start another branch
// anyway. The server detaches the branch as it handles the disconnect, a
// moment after the socket closes; a XAER_NOTA for a branch this process
// prepared within detachWaitMs is therefore retried before it means "gone".
//
// A failure during the work or at PREPARE (a constraint, a deadlock, a lost
// connection between XA END and XA PREPARE) makes the vote NO with the
// server's error number, name, SQLSTATE and message; the branch is rolled
// back (by the server, for a lost session).
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
import { withDefaults, SILENT_LOG, type EngineLog, type ResourceVote, type TxnId } from '../../types.ts';
import type { HeuristicAct } from '../../heuristic.ts';
import { parsePgPayload, HeuristicHazardError } from '../../postgres.ts';
import type { PreparedGid, PreparedResource, PreparedStats } from '../../prepared-recovery.ts';
import { describeMySqlError, mysqlErrno, redact, ER_XAER_NOTA } from './errors.ts';
import { assessServer, gatherFacts } from './server-check.ts';
import * as tables from './tables.ts';
import { parseXid, sqlXid, xidOf, xidScope, xidText, XA_FORMAT_ID, type Xid, type XidScope } from './xid.ts';

/** XAER_RMFAIL / "branch was rolled back": after a failed XA PREPARE the branch is already gone. */
const ER_XA_RBROLLBACK = 1402;
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
  /** Fault injection for tests: runs between XA END and XA PREPARE with the session's connection id. */
  afterXaEnd?: (txnId: TxnId, connectionId: number) => Promise<void>;
  log?: EngineLog;
}

/** A refusal to start, with the reason and the fix (FAILED_PRECONDITION); the CLI prints it as one line. */
export class MySqlConfigError extends Error {
  readonly code = 'FAILED_PRECONDITION';
  constructor(message: string) {
    super(`FAILED_PRECONDITION: ${message}`);
    this.name = 'MySqlConfigError';
  }
}

/** What the application's work gets: queries on T's connection, inside T's branch. */
export type MySqlTxnClient = Pick<Connection, 'query'>;

export interface MySqlCounts {
  open: number;
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
  conn: Connection | null;
  failure: string | null;
  active: boolean;
  openTimer: NodeJS.Timeout | null;
  /** When this process's XA PREPARE answered (the branch detaches a moment later). */
  preparedAtMs: number;
}

type Options = Required<Omit<MySqlResourceOptions, 'log' | 'afterXaEnd'>> & Pick<MySqlResourceOptions, 'afterXaEnd'>;

export class MySqlResource implements PreparedResource {
  readonly kind = 'MySQL';
  readonly byHand = 'verdict participant resolve --resource mysql, or XA COMMIT / XA ROLLBACK';
  readonly scope: XidScope;
  private readonly o: Options;
  private readonly log: EngineLog;
  private readonly control: Pool;
  private readonly table: string;
  private readonly txns = new Map<TxnId, TxnEntry>();
  private readonly ended = new Map<TxnId, string>();
  private readonly locks = new Map<TxnId, Promise<void>>();
  /** When a scan first saw a branch whose marker it could not read; bounded by what one scan returns. */
  private readonly firstSeenAtMs = new Map<string, number>();
  private lastScan: PreparedStats = { count: 0, oldestAgeMs: 0, stuck: 0, scannedAtMs: 0 };
  private closed = false;
  private readonly stats = { votesYes: 0, votesNo: 0, committed: 0, aborted: 0, redeliveriesAcked: 0, hazards: 0 };

  private constructor(o: Options, log: EngineLog, control: Pool) {
    this.o = o;
    this.log = log;
    this.control = control;
    this.table = o.markerTable;
    this.scope = xidScope(o.clusterId, o.participantId);
  }

  /** Connects, checks the server (refusing an unsafe one with the reason), and creates the adapter's tables. */
  static async open(opts: MySqlResourceOptions): Promise<MySqlResource> {
    const o: Options = withDefaults(
      {
        concurrency: 8,
        controlConnections: 2,
        connectTimeoutMs: 10_000,
        openTxnTimeoutMs: 60_000,
        markerTable: tables.MARKER_TABLE,
        markerRetentionMs: 24 * 3_600_000,
        markerCleanupBatch: 1_000,
        endedMax: 10_000,
        scanRowsMax: 10_000,
        stuckAfterMs: 300_000,
        detachWaitMs: 3_000,
      },
      { ...opts, log: undefined },
    ) as Options;
    o.afterXaEnd = opts.afterXaEnd;
    if (!TABLE_PATTERN.test(o.markerTable)) throw new MySqlConfigError(`marker table name "${o.markerTable}" must match ${TABLE_PATTERN}`);
    const log = opts.log ?? SILENT_LOG;
    const control = mysql.createPool({ uri: o.url, connectionLimit: o.controlConnections, connectTimeout: o.connectTimeoutMs, supportBigNumbers: true });
    // A broken control connection is dropped by the pool; the error must not crash the process.
    control.on('connection', (c) => c.on('error', (err: Error) => log.warn({ err: describeMySqlError(err) }, 'MySQL control connection lost')));
    try {
      let facts;
      try {
        facts = await gatherFacts(control);
      } catch (err) {
        throw new MySqlConfigError(`cannot check the MySQL server at ${redact(o.url)}: ${describeMySqlError(err)}`);
      }
      const a = assessServer(facts);
      for (const w of a.warnings) log.warn({ version: facts.version }, w);
      if (a.refusals.length > 0) throw new MySqlConfigError(`${facts.version} at ${redact(o.url)} cannot hold prepared XA branches safely: ${a.refusals.join('; ')}`);
      try {
        await tables.ensureTables(control, o.markerTable);
      } catch (err) {
        throw new MySqlConfigError(`cannot create the adapter's tables (${o.markerTable}, ${tables.HEURISTIC_TABLE}) at ${redact(o.url)}: ${describeMySqlError(err)}`);
      }
      log.info({ version: facts.version, flushLogAtTrxCommit: facts.variables.innodb_flush_log_at_trx_commit, logBin: facts.variables.log_bin }, 'MySQL server checked: XA branches survive a crash');
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

  txnIdOfGid(gid: string): TxnId | undefined {
    for (const txnId of this.txns.keys()) if (this.gid(txnId) === gid) return txnId;
    return undefined;
  }

  get stuckAfterMs(): number {
    return this.o.stuckAfterMs;
  }

  describeError(err: unknown): string {
    return describeMySqlError(err);
  }

  // ---- The application's work ----

  /** Runs fn inside T's XA branch, starting it on first use. If fn throws, the branch is rolled back and T can only vote NO. */
  work<T>(txnId: TxnId, fn: (client: MySqlTxnClient) => Promise<T>): Promise<T> {
    return this.exclusive(txnId, async () => {
      if (this.closed) throw new Error('the MySQL resource is closed');
      const why = this.ended.get(txnId);
      if (why !== undefined) throw new Error(`transaction ${txnId} has ended here: ${why}`);
      const e = this.txns.get(txnId) ?? (await this.begin(txnId));
      if (e.phase !== 'open' || e.conn === null) throw new Error(`transaction ${txnId} is ${e.phase} here; its work is over`);
      if (e.failure !== null) throw new Error(`transaction ${txnId} failed: ${e.failure}`);
      const conn = e.conn;
      const query = ((...args: unknown[]) => {
        if (!e.active) throw new Error(`transaction ${txnId}: a client handed to work() is used after work() returned`);
        return (conn.query as (...a: unknown[]) => unknown)(...args);
      }) as Connection['query'];
      e.active = true;
      try {
        return await fn({ query });
      } catch (err) {
        e.active = false;
        const reason = describeMySqlError(err);
        this.log.info({ txnId, reason }, 'work failed; rolling back, the vote will be NO');
        await this.endOpen(txnId, e, `work failed: ${reason}`);
        throw err;
      } finally {
        e.active = false;
      }
    });
  }

  abortUnprepared(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.remember(txnId, 'aborted by the decision before PREPARE');
    this.rollback(txnId, 'aborted by the decision before PREPARE').then(() => cb(null), (err: Error) => cb(err));
  }

  /** Rolls back T's open branch, if it has one. Prepared branches wait for the decision. */
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
        cb(null, { yes: false, reason: describeMySqlError(err) });
      },
    );
  }

  commit(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.exclusive(txnId, () => this.finish(txnId, 'commit')).then(() => cb(null), (err: Error) => cb(err));
  }

  abort(txnId: TxnId, cb: (err: Error | null) => void): void {
    this.exclusive(txnId, () => this.finish(txnId, 'abort')).then(() => cb(null), (err: Error) => cb(err));
  }

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
    if (e?.phase === 'prepared') return null; // a repeated PREPARE: the server holds the branch already
    const why = this.ended.get(txnId);
    if (why !== undefined) return why;
    if (!parsed.ok) {
      if (e !== undefined) await this.endOpen(txnId, e, parsed.reason);
      return parsed.reason;
    }
    if (this.closed) return 'participant is shutting down';
    if (e === undefined) {
      if (parsed.sql === null) {
        return `no work for transaction ${txnId} here: no open XA branch is bound to it (its work failed or expired, or this participant restarted) and the payload has no SQL`;
      }
      try {
        e = await this.begin(txnId);
      } catch (err) {
        return describeMySqlError(err);
      }
    }
    const conn = e.conn;
    if (conn === null) return `transaction ${txnId} has no connection`;
    e.phase = 'preparing';
    this.clearOpenTimer(e);
    const xid = this.xid(txnId);
    try {
      if (e.failure !== null) throw new Error(e.failure);
      for (const stmt of parsed.sql ?? []) await conn.query(stmt);
      await conn.query(tables.markerInsert(this.table), [xidText(xid), txnId]);
      await conn.query(`XA END ${sqlXid(xid)}`);
      await this.o.afterXaEnd?.(txnId, conn.threadId);
      await conn.query(`XA PREPARE ${sqlXid(xid)}`);
    } catch (err) {
      const reason = e.failure ?? describeMySqlError(err);
      this.log.info({ txnId, xid: xidText(xid), reason }, 'XA PREPARE failed; vote NO');
      await this.endOpen(txnId, e, reason);
      return reason;
    }
    // Prepared: closing the session detaches the branch, so any connection can decide it.
    e.phase = 'prepared';
    e.preparedAtMs = Date.now();
    await this.closeConn(e);
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
    const xid = this.xid(txnId);
    const gid = xidText(xid);
    const verb = step === 'commit' ? 'XA COMMIT' : 'XA ROLLBACK';
    for (;;) {
      try {
        await this.control.query(`${verb} ${sqlXid(xid)}`);
        break;
      } catch (err) {
        const errno = mysqlErrno(err);
        if (step === 'abort' && errno === ER_XA_RBROLLBACK) break; // rolled back by the server already
        if (errno !== ER_XAER_NOTA) throw new Error(`${verb} ${gid} failed: ${describeMySqlError(err)}`);
        // Just prepared by this process: its session may not be detached yet.
        if (e !== undefined && e.phase === 'prepared' && Date.now() - e.preparedAtMs < this.o.detachWaitMs) {
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        await this.settleGone(txnId, gid, step, e);
        return;
      }
    }
    if (step === 'commit') await this.noteCommitted(txnId, gid, e);
    this.settled(txnId, step, e);
  }

  /** The xid is no longer prepared: an act by hand, or the marker, tells which way it went. */
  private async settleGone(txnId: TxnId, gid: string, step: 'commit' | 'abort', e: TxnEntry | undefined): Promise<void> {
    const act = await tables.actOf(this.control, gid);
    if (act !== null) {
      const agrees = (act.outcome === 'committed') === (step === 'commit');
      (agrees ? this.log.info : this.log.error).call(
        this.log,
        { txnId, xid: gid, decision: step, heuristic: act.outcome, operator: act.operator, reported: act.reportedAtMs !== null },
        agrees ? 'decision already applied by hand (heuristic act, consistent); ACK' : 'decision contradicts the heuristic act done by hand; ACK, the conflict is reported to the cluster as HEURMIX',
      );
      this.stats.redeliveriesAcked += 1;
      this.settled(txnId, step, e, false);
      return;
    }
    const committed = await this.hasMarker(gid);
    if (step === 'commit' && !committed) {
      this.stats.hazards += 1;
      throw new HeuristicHazardError('HEURRB', txnId, gid, 'COMMIT refused: it is not prepared in MySQL (XA RECOVER) and has no commit marker, so it was rolled back here (or never prepared)');
    }
    if (step === 'abort' && committed) {
      this.stats.hazards += 1;
      throw new HeuristicHazardError('HEURCOM', txnId, gid, 'ABORT refused: it is not prepared in MySQL (XA RECOVER) and its commit marker is there, so it committed here');
    }
    this.stats.redeliveriesAcked += 1;
    this.log.info({ txnId, xid: gid, decision: step }, 'decision already applied in MySQL (per the marker); ACK');
    this.settled(txnId, step, e);
  }

  private settled(txnId: TxnId, step: 'commit' | 'abort', e: TxnEntry | undefined, count = true): void {
    if (e !== undefined) this.txns.delete(txnId);
    if (step === 'abort') this.remember(txnId, 'aborted by the decision');
    if (count) this.stats[step === 'commit' ? 'committed' : 'aborted'] += 1;
  }

  /** Markers are cleaned up by their prepare time unless one stayed prepared for long: then its commit time is recorded. */
  private async noteCommitted(txnId: TxnId, gid: string, e: TxnEntry | undefined): Promise<void> {
    if (e !== undefined && Date.now() - e.preparedAtMs < this.o.markerRetentionMs / 2) return;
    try {
      await tables.noteCommitted(this.control, this.table, gid);
    } catch (err) {
      this.log.warn({ txnId, xid: gid, err: describeMySqlError(err) }, 'could not record the commit time on the marker; it is cleaned up by its prepare time');
    }
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
    const [rows] = (await this.control.query('XA RECOVER')) as unknown as [{ formatID: number | string; gtrid_length: number | string; bqual_length: number | string; data: Buffer | string }[]];
    const ours: { gid: string; parsed: PreparedGid['parsed'] }[] = [];
    for (const r of rows.slice(0, this.o.scanRowsMax)) {
      const data = Buffer.isBuffer(r.data) ? r.data : Buffer.from(String(r.data), 'latin1');
      const gl = Number(r.gtrid_length);
      const bl = Number(r.bqual_length);
      // Bytes from the server: lengths are checked before they cut the data.
      if (!Number.isInteger(gl) || !Number.isInteger(bl) || gl < 0 || bl < 0 || gl + bl > data.length) continue;
      const xid: Xid = { formatId: Number(r.formatID), gtrid: data.subarray(0, gl).toString('latin1'), bqual: data.subarray(gl, gl + bl).toString('latin1') };
      if (xid.formatId !== XA_FORMAT_ID) continue;
      const parsed = parseXid(this.scope, xid);
      if (parsed.kind === 'foreign') continue; // not a branch of this participant: not ours to touch
      ours.push({ gid: xidText(xid), parsed });
    }
    const times = await tables.preparedTimes(this.control, this.table, ours.map((p) => p.gid));
    const now = Date.now();
    const seen = new Set<string>();
    const out: PreparedGid[] = ours.map((p) => {
      seen.add(p.gid);
      const known = times.get(p.gid) ?? this.txns.get(this.txnIdOfGid(p.gid) ?? '')?.preparedAtMs;
      let atMs = known;
      if (atMs === undefined) {
        atMs = this.firstSeenAtMs.get(p.gid) ?? now;
        this.firstSeenAtMs.set(p.gid, atMs);
      }
      return { ...p, preparedAtMs: atMs, ageMs: Math.max(0, now - atMs) };
    });
    for (const gid of this.firstSeenAtMs.keys()) if (!seen.has(gid)) this.firstSeenAtMs.delete(gid);
    out.sort((a, b) => a.preparedAtMs - b.preparedAtMs);
    this.lastScan = { count: out.length, oldestAgeMs: out[0]?.ageMs ?? 0, stuck: out.filter((p) => p.ageMs >= this.o.stuckAfterMs).length, scannedAtMs: now };
    return out;
  }

  cleanupMarkers(): Promise<number> {
    return tables.deleteOldMarkers(this.control, { table: this.table, scope: this.scope, retentionMs: this.o.markerRetentionMs, batch: this.o.markerCleanupBatch });
  }

  preparedStats(): PreparedStats {
    return { ...this.lastScan };
  }

  counts(): MySqlCounts {
    let open = 0;
    let preparedHere = 0;
    for (const e of this.txns.values()) {
      if (e.phase === 'prepared') preparedHere += 1;
      else open += 1;
    }
    return { open, preparedHere, ...this.stats };
  }

  /** Rolls back open branches (nothing was promised for them) and closes the connections. Prepared branches stay in the server. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const rollbacks = [...this.txns].filter(([, e]) => e.phase === 'open').map(([txnId, e]) => this.exclusive(txnId, () => this.endOpen(txnId, e, 'participant is shutting down')));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(rollbacks), new Promise((resolve) => (timer = setTimeout(resolve, this.o.connectTimeoutMs)))]);
    clearTimeout(timer);
    for (const e of this.txns.values()) {
      this.clearOpenTimer(e);
      if (e.conn !== null) e.conn.destroy();
      e.conn = null;
    }
    await this.control.end().catch(() => {});
  }

  // ---- Plumbing ----

  /** Opens T's own connection and XA STARTs its branch. Bounded: at most `concurrency` branches open or connecting. */
  private async begin(txnId: TxnId): Promise<TxnEntry> {
    if (this.closed) throw new Error('the MySQL resource is closed');
    let open = 0;
    for (const e of this.txns.values()) if (e.phase !== 'prepared') open += 1;
    if (open >= this.o.concurrency) throw new Error(`too many open XA branches (${this.o.concurrency}, --mysql-concurrency); try again later`);
    const e: TxnEntry = { phase: 'open', conn: null, failure: null, active: false, openTimer: null, preparedAtMs: 0 };
    // Reserved before the connect, so the bound holds while connections are being made.
    this.txns.set(txnId, e);
    let conn: Connection;
    try {
      conn = await mysql.createConnection({ uri: this.o.url, connectTimeout: this.o.connectTimeoutMs });
    } catch (err) {
      this.txns.delete(txnId);
      throw new Error(`no MySQL connection for transaction ${txnId}: ${describeMySqlError(err)}`);
    }
    e.conn = conn;
    // A session lost while T holds it takes T's branch with it: remember why, so T votes NO with it.
    conn.on('error', (err: Error) => {
      e.failure ??= describeMySqlError(err);
      if (e.phase !== 'prepared') this.log.warn({ txnId, err: e.failure }, 'MySQL connection of an open XA branch lost');
    });
    try {
      await conn.query(`XA START ${sqlXid(this.xid(txnId))}`);
    } catch (err) {
      this.txns.delete(txnId);
      conn.destroy();
      throw new Error(`XA START for transaction ${txnId} failed: ${describeMySqlError(err)}`);
    }
    e.openTimer = setTimeout(() => {
      e.openTimer = null;
      void this.exclusive(txnId, async () => {
        if (this.txns.get(txnId) !== e || e.phase !== 'open') return;
        this.log.warn({ txnId, openTxnTimeoutMs: this.o.openTxnTimeoutMs }, 'open XA branch not prepared in time; rolled back');
        await this.endOpen(txnId, e, `transaction was open for more than ${this.o.openTxnTimeoutMs} ms without PREPARE and was rolled back`);
      });
    }, this.o.openTxnTimeoutMs);
    e.openTimer.unref();
    return e;
  }

  /** Rolls back T's unprepared branch, closes its session, and remembers why T ended. */
  private async endOpen(txnId: TxnId, e: TxnEntry, why: string): Promise<void> {
    this.clearOpenTimer(e);
    const conn = e.conn;
    if (conn !== null && e.failure === null) {
      const x = sqlXid(this.xid(txnId));
      // Best effort: the branch may be ACTIVE, IDLE or gone; the disconnect below rolls back whatever is left.
      await conn.query(`XA END ${x}`).catch(() => {});
      await conn.query(`XA ROLLBACK ${x}`).catch(() => {});
    }
    await this.closeConn(e);
    if (this.txns.get(txnId) === e) this.txns.delete(txnId);
    this.remember(txnId, why);
  }

  /** Ends T's session (COM_QUIT, answered by the server closing the socket); a broken one is destroyed. */
  private async closeConn(e: TxnEntry): Promise<void> {
    const conn = e.conn;
    e.conn = null;
    if (conn === null) return;
    await conn.end().catch(() => conn.destroy());
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
