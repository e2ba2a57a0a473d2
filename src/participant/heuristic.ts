// Heuristic resolution at a participant (R4): the day the cluster is
// unreachable and a prepared transaction holds locks nobody can wait for any
// longer, an operator commits or rolls it back by hand with
// `verdict participant resolve`. The act is recorded durably where the data
// lives, with who, when and why, and reported to the cluster once it is
// reachable (Coordinator.ReportHeuristic), which compares it with its
// decision and records HEURCOM / HEURRB / HEURMIX / HEURHAZ against the
// transaction for `verdict txn list --heuristic`.
//
// The act's record lives in the database itself (one home per resource kind:
// PostgreSQL below, MySQL in resources/mysql/heuristic.ts); the order and the
// rules are shared (resolveByHand).
//
// PostgreSQL: a row in the adapter's own table (`verdict_heuristics`), keyed
// by gid. The row is written (and committed) *before* COMMIT PREPARED /
// ROLLBACK PREPARED: PostgreSQL cannot run either inside a transaction
// block, so the two cannot be one transaction, and this order means a crash
// in between leaves a recorded act whose gid is still prepared. Running the
// command again finishes it; the act is never done unrecorded.
//
// After the act the gid is gone. When the cluster's decision reaches the
// participant later, the adapter finds the row and acknowledges the
// decision whatever it is: the conflict, if any, is the cluster's to record
// (the report), and refusing the DECISION forever would change nothing.
import type pg from 'pg';
import { redact } from './db-url.ts';
import { gidOf, gidPrefix, parseGid } from './postgres-gid.ts';
import { createdMeanwhile } from './pg-race.ts';
import { outcomeOfRecord, recordKindOf, type DecidedKind, type EngineLog, type Outcome, type TxnId } from './types.ts';
import { OPERATOR_CHARS_MAX, REASON_CHARS_MAX } from '../domain/text-bounds.ts';

export const HEURISTIC_TABLE = 'verdict_heuristics';

/** A pool or one connection: each statement here stands alone. */
type Db = pg.Pool | pg.Client | pg.PoolClient;

/** One operator's act at this participant. */
export interface HeuristicAct {
  txnId: TxnId;
  gid: string;
  outcome: Outcome;
  operator: string;
  reason: string;
  atMs: number;
  /** When the cluster acknowledged the report; null until then. */
  reportedAtMs: number | null;
}

/** A refusal of the resolve command, with the reason and what to do; printed as one line. */
export class HeuristicError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HeuristicError';
  }
}

/** Creates the table of heuristic acts when missing. */
export async function ensureHeuristicTable(db: Db, table = HEURISTIC_TABLE): Promise<void> {
  const exists = await db.query<{ t: boolean }>('SELECT to_regclass($1) IS NOT NULL AS t', [table]);
  if (exists.rows[0]?.t === true) return;
  try {
    await db.query(
      `CREATE TABLE IF NOT EXISTS ${table} (gid text PRIMARY KEY, txn_id text NOT NULL, outcome text NOT NULL CHECK (outcome IN ('committed', 'aborted')), ` +
        `operator text NOT NULL, reason text NOT NULL, at timestamptz NOT NULL, reported_at timestamptz)`,
    );
  } catch (err) {
    if (!createdMeanwhile(err)) throw err;
  }
}

interface Row {
  gid: string;
  txn_id: string;
  /** The on-disk spelling ('committed', 'aborted'), as the table's CHECK has it. */
  outcome: DecidedKind;
  operator: string;
  reason: string;
  at: Date;
  reported_at: Date | null;
}

const toAct = (r: Row): HeuristicAct => ({
  txnId: r.txn_id,
  gid: r.gid,
  outcome: outcomeOfRecord(r.outcome),
  operator: r.operator,
  reason: r.reason,
  atMs: r.at.getTime(),
  reportedAtMs: r.reported_at?.getTime() ?? null,
});

export async function heuristicActOf(db: Db, gid: string, table = HEURISTIC_TABLE): Promise<HeuristicAct | null> {
  const r = await db.query<Row>(`SELECT * FROM ${table} WHERE gid = $1`, [gid]);
  return r.rows[0] ? toAct(r.rows[0]) : null;
}

/** Acts of this participant (gid prefix) the cluster has not acknowledged, oldest first, at most rowsMax. */
export async function unreportedActs(
  db: Db,
  prefix: string,
  rowsMax: number,
  table = HEURISTIC_TABLE,
): Promise<HeuristicAct[]> {
  const r = await db.query<Row>(
    `SELECT * FROM ${table} WHERE starts_with(gid, $1) AND reported_at IS NULL ORDER BY at LIMIT $2`,
    [prefix, rowsMax],
  );
  return r.rows.map(toAct);
}

export async function markReported(db: Db, gid: string, table = HEURISTIC_TABLE): Promise<void> {
  await db.query(`UPDATE ${table} SET reported_at = statement_timestamp() WHERE gid = $1 AND reported_at IS NULL`, [
    gid,
  ]);
}

/** `verdict participant resolve`'s request, whatever the database. */
export interface ResolveOptions {
  url: string;
  clusterId: string;
  participantId: string;
  /** A txn id, or this participant's name of it in the database (a gid, an xid). */
  target: string;
  outcome: Outcome;
  operator: string;
  reason: string;
}

export interface PgResolveOptions extends ResolveOptions {
  table?: string;
}

/**
 * The columns of an act as every database stores them: gid, txn id, outcome (on-disk spelling), operator, reason, time
 * (ms).
 */
export function actRow(act: HeuristicAct): [string, string, DecidedKind, string, string, number] {
  return [act.gid, act.txnId, recordKindOf(act.outcome), act.operator, act.reason, act.atMs];
}

export interface ResolveResult {
  act: HeuristicAct;
  /** False when an earlier run had already done it (the command is idempotent). */
  performed: boolean;
}

export type PgResolveResult = ResolveResult;

/**
 * What the resolve command needs of one database, whatever its kind: each
 * call is one short statement on a connection of its own session.
 */
export interface HeuristicStore {
  /** 'pg_prepared_xacts', 'XA RECOVER': where "prepared" is looked up, for messages. */
  readonly preparedList: string;
  /** The command that finishes the transaction, for messages: 'COMMIT PREPARED', 'XA ROLLBACK'. */
  command(outcome: Outcome): string;
  isPrepared(gid: string): Promise<boolean>;
  actOf(gid: string): Promise<HeuristicAct | null>;
  /** Records the act (committed on its own); a row already there for gid is left as it is. */
  record(act: HeuristicAct): Promise<void>;
  /** COMMIT or ROLLBACK of the prepared transaction gid. */
  finish(gid: string, outcome: Outcome): Promise<void>;
  describeError(err: unknown): string;
}

/**
 * The operator's act on one prepared transaction, the same for every
 * database: refuse to reverse an earlier act, answer a repeated one with the
 * first record, refuse when nothing is prepared, else record, then act (see
 * the file comment for why this order).
 */
export async function resolveByHand(
  store: HeuristicStore,
  o: { txnId: TxnId; gid: string; outcome: Outcome; operator: string; reason: string },
): Promise<ResolveResult> {
  checkText(o.operator, o.reason);
  const { txnId, gid } = o;
  const prepared = await store.isPrepared(gid);
  const earlier = await store.actOf(gid);
  if (earlier !== null && earlier.outcome !== o.outcome) {
    throw new HeuristicError(
      `transaction ${txnId} (gid ${gid}) was already resolved by hand as ${earlier.outcome} by ${earlier.operator} at ${new Date(earlier.atMs).toISOString()}; an act is not reversed`,
    );
  }
  if (!prepared) {
    if (earlier !== null) return { act: earlier, performed: false };
    throw new HeuristicError(
      `transaction ${txnId} is not prepared in this database (no ${gid} in ${store.preparedList}): it was already committed or rolled back (by its decision, or by hand without Verdict), or never prepared here; nothing was done`,
    );
  }
  const act: HeuristicAct = earlier ?? {
    txnId,
    gid,
    outcome: o.outcome,
    operator: o.operator,
    reason: o.reason,
    atMs: Date.now(),
    reportedAtMs: null,
  };
  if (earlier === null) await store.record(act);
  try {
    await store.finish(gid, o.outcome);
  } catch (err) {
    throw new HeuristicError(
      `the act is recorded but ${store.command(o.outcome)} ${gid} failed: ${store.describeError(err)}; run the command again`,
    );
  }
  return { act, performed: true };
}

/**
 * `verdict participant resolve` on a PostgreSQL participant: records the act,
 * then COMMIT PREPARED / ROLLBACK PREPARED. Works with the cluster down; the
 * participant process (if running) reports it when the cluster is back.
 */
export async function resolvePostgresByHand(o: PgResolveOptions): Promise<PgResolveResult> {
  checkText(o.operator, o.reason);
  const table = o.table ?? HEURISTIC_TABLE;
  const prefix = gidPrefix(o.clusterId, o.participantId);
  let gid: string;
  let txnId: TxnId;
  if (o.target.startsWith('verdict:')) {
    const parsed = parseGid(prefix, o.target);
    if (parsed.kind === 'foreign')
      throw new HeuristicError(
        `gid ${o.target} is not a gid of participant "${o.participantId}" of cluster "${o.clusterId}" (its gids start with ${prefix}); check --id and --cluster-id`,
      );
    if (parsed.kind === 'hashed')
      throw new HeuristicError(
        `gid ${o.target} is hashed and does not name its transaction; give the transaction id instead`,
      );
    gid = o.target;
    txnId = parsed.txnId;
  } else {
    txnId = o.target;
    gid = gidOf(prefix, txnId);
  }
  // Loaded here: the MySQL path shares this file and needs no `pg`.
  const [{ default: driver }, { describePgError, sqlGid }] = await Promise.all([
    import('pg'),
    import('./postgres-sql.ts'),
  ]);
  const client = new driver.Client({
    connectionString: o.url,
    application_name: `verdict-resolve-${o.participantId}`.slice(0, 63),
  });
  try {
    await client.connect();
  } catch (err) {
    throw new HeuristicError(`cannot connect to PostgreSQL at ${redact(o.url)}: ${describePgError(err)}`);
  }
  try {
    await ensureHeuristicTable(client, table);
    const store: HeuristicStore = {
      preparedList: 'pg_prepared_xacts',
      command: (outcome) => (outcome === 'COMMITTED' ? 'COMMIT PREPARED' : 'ROLLBACK PREPARED'),
      isPrepared: async (g) =>
        (await client.query('SELECT 1 FROM pg_prepared_xacts WHERE gid = $1 AND database = current_database()', [g]))
          .rowCount !== 0,
      actOf: (g) => heuristicActOf(client, g, table),
      record: async (act) => {
        await client.query(
          `INSERT INTO ${table} (gid, txn_id, outcome, operator, reason, at) VALUES ($1, $2, $3, $4, $5, to_timestamp($6 / 1000.0)) ON CONFLICT (gid) DO NOTHING`,
          actRow(act),
        );
      },
      finish: async (g, outcome) => {
        await client.query(`${outcome === 'COMMITTED' ? 'COMMIT' : 'ROLLBACK'} PREPARED ${sqlGid(g)}`);
      },
      describeError: describePgError,
    };
    return await resolveByHand(store, { txnId, gid, outcome: o.outcome, operator: o.operator, reason: o.reason });
  } finally {
    await client.end().catch(() => {});
  }
}

export function checkText(operator: string, reason: string): void {
  if (operator.trim() === '' || operator.length > OPERATOR_CHARS_MAX)
    throw new HeuristicError(`the operator must be 1–${OPERATOR_CHARS_MAX} characters`);
  if (reason.trim() === '' || reason.length > REASON_CHARS_MAX)
    throw new HeuristicError(
      `the reason must be 1–${REASON_CHARS_MAX} characters: it is recorded with the act and reported to the cluster`,
    );
}

function describeAny(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Reports unreported acts to the cluster until each is acknowledged, then
 * marks it reported; a report repeated after a lost answer is answered with
 * the first record (R7). Runs on start and every intervalMs.
 */
export class HeuristicReporter {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  reported = 0;

  constructor(
    private readonly o: {
      unreported: () => Promise<HeuristicAct[]>;
      markReported: (act: HeuristicAct) => Promise<void>;
      report: (act: HeuristicAct) => Promise<string>;
      log: EngineLog;
      intervalMs?: number;
      /** A failed read of the acts in words, as the resource's driver describes its errors. */
      describeError?: (err: unknown) => string;
    },
  ) {}

  start(): void {
    const tick = (): void => {
      if (this.stopped) return;
      this.running = this.running
        .then(() => this.pass())
        .catch((err: unknown) =>
          this.o.log.warn(
            { err: (this.o.describeError ?? describeAny)(err) },
            'could not read the heuristic acts to report; trying again later',
          ),
        );
      void this.running.then(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.o.intervalMs ?? 5_000).unref();
      });
    };
    tick();
  }

  /** One pass: reports each unreported act; one the cluster does not take stays for the next pass. */
  async pass(): Promise<void> {
    for (const act of await this.o.unreported()) {
      if (this.stopped) return;
      let kind: string;
      try {
        kind = await this.o.report(act);
      } catch (err) {
        this.o.log.warn(
          { txnId: act.txnId, gid: act.gid, err: (err as Error).message },
          'heuristic act not reported yet (cluster unreachable?); trying again later',
        );
        continue;
      }
      await this.o.markReported(act);
      this.reported += 1;
      const log =
        kind === 'HEURMIX' || kind === 'HEURHAZ' ? this.o.log.error.bind(this.o.log) : this.o.log.warn.bind(this.o.log);
      log(
        { txnId: act.txnId, gid: act.gid, outcome: act.outcome, operator: act.operator, kind },
        `heuristic act reported to the cluster: ${kind}`,
      );
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.running.catch(() => {});
  }
}
