// The adapter's own tables in the participant's MySQL database, and the
// statements on them: the commit markers (one row per prepared branch,
// written inside it, so it exists after the fact exactly when the branch
// committed) and the heuristic acts (`verdict participant resolve`). Both
// InnoDB whatever the server's default, keyed by the xid's text form.
import type { Pool, PoolConnection, Connection } from 'mysql2/promise';
import type { HeuristicAct } from '../../heuristic.ts';
import { actRow, HEURISTIC_TABLE } from '../../heuristic.ts';
import { outcomeOfRecord, type DecidedKind } from '../../types.ts';
import type { XidScope } from './xid.ts';

export const MARKER_TABLE = 'verdict_xa_markers';
export { HEURISTIC_TABLE };

type Db = Pool | PoolConnection | Connection;

const rowsOf = async <R>(db: Db, sql: string, values: unknown[] = []): Promise<R[]> =>
  (await db.query(sql, values))[0] as unknown as R[];
const affected = async (db: Db, sql: string, values: unknown[] = []): Promise<number> =>
  Number(((await db.query(sql, values))[0] as unknown as { affectedRows?: number }).affectedRows ?? 0);

/** CREATE TABLE IF NOT EXISTS needs no lock a prepared branch holds (unlike an ALTER), so it is safe after a crash. */
export async function ensureTables(db: Db, markerTable: string): Promise<void> {
  await db.query(
    `CREATE TABLE IF NOT EXISTS ${markerTable} (xid VARCHAR(160) CHARACTER SET ascii NOT NULL PRIMARY KEY, txn_id TEXT NOT NULL, ` +
      `prepared_at DATETIME(3) NOT NULL, committed_at DATETIME(3) NULL, KEY ${markerTable}_age (prepared_at)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  );
  await ensureHeuristicTable(db);
}

export async function ensureHeuristicTable(db: Db): Promise<void> {
  await db.query(
    `CREATE TABLE IF NOT EXISTS ${HEURISTIC_TABLE} (gid VARCHAR(160) CHARACTER SET ascii NOT NULL PRIMARY KEY, txn_id TEXT NOT NULL, ` +
      `outcome VARCHAR(16) NOT NULL CHECK (outcome IN ('committed', 'aborted')), operator VARCHAR(128) NOT NULL, reason TEXT NOT NULL, ` +
      `at_ms BIGINT NOT NULL, reported_at_ms BIGINT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  );
}

/** The marker INSERT that goes inside T's branch, before XA END. */
export function markerInsert(markerTable: string): string {
  return `INSERT INTO ${markerTable} (xid, txn_id, prepared_at) VALUES (?, ?, UTC_TIMESTAMP(3))`;
}

export async function markerExists(db: Db, markerTable: string, xid: string): Promise<boolean> {
  return (await rowsOf(db, `SELECT 1 AS one FROM ${markerTable} WHERE xid = ?`, [xid])).length > 0;
}

export async function noteCommitted(db: Db, markerTable: string, xid: string): Promise<void> {
  await db.query(`UPDATE ${markerTable} SET committed_at = UTC_TIMESTAMP(3) WHERE xid = ? AND committed_at IS NULL`, [
    xid,
  ]);
}

/**
 * Prepare times of still-prepared branches, read from their markers with a
 * dirty read: the marker is inside the branch, invisible to a committed read
 * until it commits. XA RECOVER itself gives no time. One connection, since
 * SET TRANSACTION applies to the session's next transaction only.
 */
export async function preparedTimes(pool: Pool, markerTable: string, xids: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (xids.length === 0) return out;
  const c = await pool.getConnection();
  try {
    await c.query('SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED');
    const rows = await rowsOf<{ xid: string; age_us: number | string }>(
      c,
      `SELECT xid, TIMESTAMPDIFF(MICROSECOND, prepared_at, UTC_TIMESTAMP(6)) AS age_us FROM ${markerTable} WHERE xid IN (?)`,
      [xids],
    );
    const now = Date.now();
    for (const r of rows) out.set(r.xid, now - Math.max(0, Number(r.age_us)) / 1_000);
  } finally {
    c.release();
  }
  return out;
}

/**
 * Deletes this participant's markers older than the retention (by commit time when known), batch rows per statement, at
 * most 100 batches.
 *
 * The old markers are found with a plain (consistent, non-locking) read and
 * deleted by primary key. A DELETE that scanned the table itself would lock
 * every row it passes, and the gaps between them: it would wait on the marker
 * row of a branch still prepared (whose lock lasts until the cluster decides
 * it), and while it waits, its gap locks would hold up every new branch's
 * marker INSERT and every decision's marker UPDATE, so a participant restarted
 * with one branch in doubt would prepare nothing else until that branch was
 * decided. A prepared branch's own marker is uncommitted, so the read never
 * sees it.
 */
export async function deleteOldMarkers(
  db: Db,
  o: { table: string; scope: XidScope; retentionMs: number; batch: number },
): Promise<number> {
  let total = 0;
  const suffix = `,${o.scope.bqual}`;
  const older = 'COALESCE(committed_at, prepared_at) < UTC_TIMESTAMP(3) - INTERVAL ? MICROSECOND';
  const retentionUs = Math.floor(o.retentionMs * 1_000);
  for (let i = 0; i < 100; i++) {
    const old = await rowsOf<{ xid: string }>(
      db,
      `SELECT xid FROM ${o.table} WHERE LEFT(xid, ?) = ? AND RIGHT(xid, ?) = ? AND ${older} LIMIT ?`,
      [o.scope.gtridPrefix.length, o.scope.gtridPrefix, suffix.length, suffix, retentionUs, o.batch],
    );
    if (old.length === 0) break;
    total += await affected(db, `DELETE FROM ${o.table} WHERE xid IN (?) AND ${older}`, [
      old.map((r) => r.xid),
      retentionUs,
    ]);
    if (old.length < o.batch) break;
  }
  return total;
}

// ---- Heuristic acts ----

interface ActRow {
  gid: string;
  txn_id: string;
  /** The on-disk spelling ('committed', 'aborted'), as the table's CHECK has it. */
  outcome: DecidedKind;
  operator: string;
  reason: string;
  at_ms: number | string;
  reported_at_ms: number | string | null;
}

const ACT_COLUMNS = 'gid, txn_id, outcome, operator, reason, at_ms, reported_at_ms';

const toAct = (r: ActRow): HeuristicAct => ({
  txnId: r.txn_id,
  gid: r.gid,
  outcome: outcomeOfRecord(r.outcome),
  operator: r.operator,
  reason: r.reason,
  atMs: Number(r.at_ms),
  reportedAtMs: r.reported_at_ms === null ? null : Number(r.reported_at_ms),
});

export async function actOf(db: Db, gid: string): Promise<HeuristicAct | null> {
  const rows = await rowsOf<ActRow>(db, `SELECT ${ACT_COLUMNS} FROM ${HEURISTIC_TABLE} WHERE gid = ?`, [gid]);
  return rows[0] ? toAct(rows[0]) : null;
}

/** Acts of this participant the cluster has not acknowledged, oldest first, at most rowsMax. */
export async function unreportedActs(db: Db, scope: XidScope, rowsMax: number): Promise<HeuristicAct[]> {
  const suffix = `,${scope.bqual}`;
  const rows = await rowsOf<ActRow>(
    db,
    `SELECT ${ACT_COLUMNS} FROM ${HEURISTIC_TABLE} WHERE LEFT(gid, ?) = ? AND RIGHT(gid, ?) = ? AND reported_at_ms IS NULL ORDER BY at_ms LIMIT ?`,
    [scope.gtridPrefix.length, scope.gtridPrefix, suffix.length, suffix, rowsMax],
  );
  return rows.map(toAct);
}

export async function markReported(db: Db, gid: string): Promise<void> {
  await db.query(`UPDATE ${HEURISTIC_TABLE} SET reported_at_ms = ? WHERE gid = ? AND reported_at_ms IS NULL`, [
    Date.now(),
    gid,
  ]);
}

/** Records an act, committed on its own (autocommit); a row already there is left as it is. */
export async function recordAct(db: Db, act: HeuristicAct): Promise<void> {
  await db.query(
    `INSERT IGNORE INTO ${HEURISTIC_TABLE} (gid, txn_id, outcome, operator, reason, at_ms) VALUES (?, ?, ?, ?, ?, ?)`,
    actRow(act),
  );
}
