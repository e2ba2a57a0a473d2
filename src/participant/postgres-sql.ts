// What the PostgreSQL adapter says to the server apart from a transaction's
// own statements: the start-up checks, the marker table, the scan of
// pg_prepared_xacts and the marker clean-up, plus how PostgreSQL's errors and
// URLs read in votes and messages. Each function takes the control pool
// (postgres.ts) and runs one short statement or a bounded few.
import pg from 'pg';
import { redact } from './db-url.ts';
import { GID_PATTERN } from './postgres-gid.ts';
import type { EngineLog } from './types.ts';
import { createdMeanwhile } from './pg-race.ts';

/** A refusal to start, with the reason and the fix (FAILED_PRECONDITION); the CLI prints it as one line. */
export class PostgresConfigError extends Error {
  readonly code = 'FAILED_PRECONDITION';
  constructor(message: string) {
    super(`FAILED_PRECONDITION: ${message}`);
    this.name = 'PostgresConfigError';
  }
}

/**
 * Refuses a server that cannot prepare transactions (max_prepared_transactions
 * = 0), and warns about one that can prepare fewer at once than the adapter
 * may, or runs without fsync. synchronous_commit does not matter: PostgreSQL
 * flushes a PREPARE TRANSACTION's WAL record before it answers, whatever it says.
 */
export async function checkServer(
  pool: pg.Pool,
  o: { url: string; concurrency: number; log: EngineLog },
): Promise<void> {
  const r = await pool.query<{ mpt: string; fsync: string }>(
    "SELECT current_setting('max_prepared_transactions') AS mpt, current_setting('fsync') AS fsync",
  );
  const row = r.rows[0];
  const mpt = Number(row?.mpt);
  if (mpt === 0) {
    throw new PostgresConfigError(
      `PostgreSQL at ${redact(o.url)} has max_prepared_transactions = 0, so every PREPARE TRANSACTION fails with "prepared transactions are disabled" (SQLSTATE 55000); ` +
        `set max_prepared_transactions to at least ${o.concurrency} (the adapter's concurrency, --pg-concurrency) in postgresql.conf or with ALTER SYSTEM, and restart PostgreSQL`,
    );
  }
  if (mpt < o.concurrency) {
    o.log.warn(
      { maxPreparedTransactions: mpt, concurrency: o.concurrency },
      `PostgreSQL max_prepared_transactions (${mpt}) is below the adapter's concurrency (${o.concurrency}): PREPAREs beyond ${mpt} at once will vote NO; raise it and restart PostgreSQL`,
    );
  }
  if (row?.fsync !== 'on')
    o.log.warn(
      { fsync: row?.fsync },
      'PostgreSQL runs with fsync off: a prepared transaction may not survive a crash of its machine (R4 does not hold)',
    );
}

/**
 * Creates the marker table and its index when missing. Existence is checked
 * first: CREATE INDEX (even IF NOT EXISTS) takes a lock that waits for every
 * prepared transaction holding a marker row, i.e. forever after a crash.
 */
export async function ensureMarkerTable(pool: pg.Pool, table: string): Promise<void> {
  const exists = await pool.query<{ t: boolean; i: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AS t, to_regclass($2) IS NOT NULL AS i',
    [table, `${table}_age`],
  );
  if (exists.rows[0]?.t === true && exists.rows[0]?.i === true) return;
  const ddl = [
    `CREATE TABLE IF NOT EXISTS ${table} (gid text PRIMARY KEY, txn_id text NOT NULL, prepared_at timestamptz NOT NULL, committed_at timestamptz)`,
    `CREATE INDEX IF NOT EXISTS ${table}_age ON ${table} ((coalesce(committed_at, prepared_at)))`,
  ];
  for (let attempt = 1; ; attempt++) {
    try {
      for (const stmt of ddl) await pool.query(stmt);
      return;
    } catch (err) {
      if (attempt >= 2 || !createdMeanwhile(err)) throw err;
    }
  }
}

/** Whether the marker of gid exists, i.e. whether its transaction committed. */
export async function markerExists(pool: pg.Pool, table: string, gid: string): Promise<boolean> {
  const r = await pool.query(`SELECT 1 FROM ${table} WHERE gid = $1`, [gid]);
  return (r.rowCount ?? 0) > 0;
}

/** Prepared transactions of this database whose gid starts with prefix, oldest first, at most rowsMax. */
export async function selectPrepared(
  pool: pg.Pool,
  prefix: string,
  rowsMax: number,
): Promise<{ gid: string; preparedAtMs: number; ageMs: number }[]> {
  const r = await pool.query<{ gid: string; prepared: Date; age_ms: string }>(
    `SELECT gid, prepared, (extract(epoch FROM (clock_timestamp() - prepared)) * 1000)::bigint AS age_ms
       FROM pg_prepared_xacts
      WHERE database = current_database() AND starts_with(gid, $1)
      ORDER BY prepared LIMIT $2`,
    [prefix, rowsMax],
  );
  return r.rows.map((row) => ({
    gid: row.gid,
    preparedAtMs: row.prepared.getTime(),
    ageMs: Math.max(0, Number(row.age_ms)),
  }));
}

/**
 * Deletes markers under prefix older than the retention (by commit time when known), batch rows per statement, at most
 * 100 batches.
 */
export async function deleteOldMarkers(
  pool: pg.Pool,
  o: { table: string; prefix: string; retentionMs: number; batch: number },
): Promise<number> {
  let total = 0;
  for (let i = 0; i < 100; i++) {
    const r = await pool.query(
      `DELETE FROM ${o.table} WHERE gid IN (
         SELECT gid FROM ${o.table}
          WHERE starts_with(gid, $1) AND coalesce(committed_at, prepared_at) < statement_timestamp() - make_interval(secs => $2)
          LIMIT $3)`,
      [o.prefix, o.retentionMs / 1000, o.batch],
    );
    total += r.rowCount ?? 0;
    if ((r.rowCount ?? 0) < o.batch) break;
  }
  return total;
}

/** SQLSTATE insufficient_privilege. */
const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * Why the adapter could not set itself up in PostgreSQL, in a person's
 * words. PostgreSQL 15 stopped granting CREATE on schema public to every
 * role, so a role made by the book meets "permission denied for schema
 * public" at the adapter's first CREATE TABLE: the message names the grant
 * that fixes it (or the tables to create in advance).
 */
/**
 * Runs a PostgreSQL adapter's set-up (checks, tables, first reads): on
 * failure it closes what the adapter opened and refuses with a
 * PostgresConfigError, the adapter's own refusal as it is and anything else
 * with the fix (describeSetupError). One path for every adapter.
 */
export async function setUpOrRefuse(
  o: { url: string; tables: readonly string[]; close: () => Promise<void> },
  setUp: () => Promise<void>,
): Promise<void> {
  try {
    await setUp();
  } catch (err) {
    await o.close();
    if (err instanceof PostgresConfigError) throw err;
    throw new PostgresConfigError(describeSetupError(err, o.url, o.tables));
  }
}

export function describeSetupError(err: unknown, url: string, tables: readonly string[]): string {
  const e = err as { code?: string; message?: string };
  if (err instanceof pg.DatabaseError && e.code === INSUFFICIENT_PRIVILEGE) {
    let user = "the participant's role";
    let db = 'the database';
    try {
      const u = new URL(url);
      if (u.username !== '') user = decodeURIComponent(u.username);
      if (u.pathname.length > 1) db = decodeURIComponent(u.pathname.slice(1));
    } catch {
      // The URL was checked when the pool was made; keep the generic words.
    }
    const schema = /schema "?([A-Za-z0-9_]+)"?/.exec(e.message ?? '')?.[1] ?? 'public';
    const onSchema = /for schema/.test(e.message ?? '');
    const grant = onSchema
      ? `GRANT CREATE ON SCHEMA ${schema} TO ${user}; (run it in database ${db} as its owner or a superuser; PostgreSQL 15 no longer grants CREATE on schema public to every role)`
      : `GRANT SELECT, INSERT, UPDATE, DELETE ON ${tables.join(', ')} TO ${user}; (run it in database ${db} as the tables' owner)`;
    return `PostgreSQL at ${redact(url)} refused the adapter's set-up: ${e.message} (SQLSTATE ${INSUFFICIENT_PRIVILEGE}). The adapter keeps its own tables ${tables.join(' and ')} in the database and needs ${onSchema ? `the right to create them once: ${grant}` : `to read and write them: ${grant}`}; or create them in advance (see docs/postgres.md)`;
  }
  return `cannot use PostgreSQL at ${redact(url)}: ${describePgError(err)}`;
}

/**
 * A PostgreSQL error as a vote reason: SQLSTATE and message (and detail); other errors as a lost connection or their
 * message.
 */
export function describePgError(err: unknown): string {
  if (err instanceof pg.DatabaseError) {
    return `SQLSTATE ${err.code ?? '?????'}: ${err.message}${err.detail !== undefined && err.detail !== '' ? ` (${err.detail})` : ''}`;
  }
  const e = err as { message?: string; code?: string };
  const message = e?.message ?? String(err);
  if (
    (typeof e?.code === 'string' && /^E[A-Z]+$/.test(e.code)) ||
    /connection terminated|connection.*(closed|ended)|timeout exceeded when trying to connect/i.test(message)
  ) {
    return `lost connection to PostgreSQL: ${message}`;
  }
  return message;
}

/** A gid as an SQL literal. Asserted, not escaped: gidOf only makes gids of a quote-free alphabet. */
export function sqlGid(gid: string): string {
  if (!GID_PATTERN.test(gid)) throw new Error(`invalid gid ${gid}`);
  return `'${gid}'`;
}

/** One URL redaction for every database (db-url.ts), here for the PostgreSQL modules that import it from this file. */
export { redact };
