// The PostgreSQL TCC resource: Try / Confirm / Cancel handlers that run SQL
// in a local PostgreSQL transaction, with the barrier row of the branch
// written in the same transaction. Unlike the `postgres` resource, nothing
// stays open or prepared between PREPARE and the decision: the Try commits
// its reserve (seats held, funds frozen) and the barrier row `tried`
// together; Confirm spends it and Cancel releases it, each together with its
// barrier row. So the barrier and the effects can never disagree, and a
// service that cannot hold a transaction open can still take part.
//
// The barrier table (created when missing; rights in docs/postgres.md):
//
//   verdict_tcc_barrier (txn_id, branch, state, payload, expires_at_ms, updated_at)
//   PRIMARY KEY (txn_id, branch)    branch = the participant id
//
// Each operation: BEGIN; SELECT the row FOR UPDATE; barrierStep() says run,
// record, done or refuse; run the handler on the same connection; write the
// row; COMMIT. A handler that throws rolls everything back: a Try votes NO,
// a Confirm or Cancel fails and the cluster redelivers it (never turned into
// the other). Settled rows are deleted after the retention (24 h by default).
import pg from 'pg';
import type { PoolClient } from 'pg';
import { createdMeanwhile } from '../pg-race.ts';
import { describePgError, PostgresConfigError, setUpOrRefuse } from '../postgres-sql.ts';
import type { PgTxnClient } from '../postgres.ts';
import {
  SILENT_LOG,
  withDefaults,
  type Clock,
  type EngineLog,
  type Resource,
  type ResourceVote,
  type TxnId,
} from '../types.ts';
import {
  barrierStep,
  TccResourceBase,
  ttlProblem,
  type BarrierOp,
  type BranchState,
  type TccBranch,
  type TccTryResult,
} from './barrier.ts';

export const TCC_BARRIER_TABLE = 'verdict_tcc_barrier';

/** The handlers of a PostgreSQL TCC participant: each runs its SQL on `tx`, inside the barrier's local transaction. */
export interface TccPgHandlers {
  /** Reserves; throws (TccRefusal) to vote NO. May give a TTL. */
  try(tx: PgTxnClient, branch: TccBranch): Promise<TccTryResult | undefined>;
  /** Spends the reserve. A throw rolls back and is retried (the cluster redelivers COMMIT). */
  confirm(tx: PgTxnClient, branch: TccBranch): Promise<void>;
  /** Releases the reserve. */
  cancel(tx: PgTxnClient, branch: TccBranch): Promise<void>;
}

export interface PostgresTccOptions {
  participantId: string;
  url: string;
  handlers: TccPgHandlers;
  /** Connections at once. */
  concurrency?: number;
  acquireTimeoutMs?: number;
  /** Settled barrier rows are deleted once older than this. */
  barrierRetentionMs?: number;
  /** Held reserves loaded at start at most (more is refused: resolve them first). */
  heldMax?: number;
  clock?: Clock;
  log?: EngineLog;
}

interface Held {
  expiresAtMs: number | null;
}

export class PostgresTccResource extends TccResourceBase implements Resource {
  private readonly o: Required<Omit<PostgresTccOptions, 'log'>>;
  private readonly log: EngineLog;
  private readonly pool: pg.Pool;
  private readonly held = new Map<TxnId, Held>();
  private readonly locks = new Map<TxnId, Promise<void>>();

  private constructor(o: Required<Omit<PostgresTccOptions, 'log'>>, log: EngineLog) {
    super();
    this.o = o;
    this.log = log;
    this.pool = new pg.Pool({
      connectionString: o.url,
      max: o.concurrency,
      connectionTimeoutMillis: o.acquireTimeoutMs,
      idleTimeoutMillis: 30_000,
      application_name: `verdict-tcc-${o.participantId}`.slice(0, 63),
    });
    this.pool.on('error', (err) => this.log.warn({ err: err.message }, 'PostgreSQL connection lost while idle'));
  }

  /**
   * Connects, creates the barrier table when missing, and loads the reserves held. Refuses (PostgresConfigError) with
   * the reason and the fix.
   */
  static async open(opts: PostgresTccOptions): Promise<PostgresTccResource> {
    const o = withDefaults(
      {
        concurrency: 4,
        acquireTimeoutMs: 5_000,
        barrierRetentionMs: 24 * 3_600_000,
        heldMax: 100_000,
        clock: { nowMs: () => Date.now() },
      },
      { ...opts, log: undefined },
    ) as Required<Omit<PostgresTccOptions, 'log'>>;
    const r = new PostgresTccResource(o, opts.log ?? SILENT_LOG);
    await setUpOrRefuse({ url: o.url, tables: [TCC_BARRIER_TABLE], close: () => r.pool.end() }, async () => {
      if (!(Number.isInteger(o.concurrency) && o.concurrency >= 1))
        throw new PostgresConfigError(`TCC concurrency must be a positive integer, not ${o.concurrency}`);
      await ensureBarrierTable(r.pool);
      const rows = await r.pool.query<{ txn_id: string; expires_at_ms: string | null }>(
        `SELECT txn_id, expires_at_ms FROM ${TCC_BARRIER_TABLE} WHERE branch = $1 AND state = 'tried' LIMIT $2`,
        [o.participantId, o.heldMax + 1],
      );
      if (rows.rows.length > o.heldMax)
        throw new PostgresConfigError(
          `more than ${o.heldMax} TCC reserves are held in ${TCC_BARRIER_TABLE} for ${o.participantId}; raise heldMax`,
        );
      for (const row of rows.rows)
        r.held.set(row.txn_id, { expiresAtMs: row.expires_at_ms === null ? null : Number(row.expires_at_ms) });
    });
    return r;
  }

  prepare(txnId: TxnId, payload: Uint8Array, cb: (err: Error | null, vote: ResourceVote) => void): void {
    this.step(txnId, 'try', payload).then(
      (refusal) => cb(null, { yes: refusal === null, reason: refusal ?? '' }),
      (err: unknown) => cb(null, { yes: false, reason: describePgError(err) }),
    );
  }

  protected nowMs(): number {
    return this.o.clock.nowMs();
  }

  protected heldBranches(): ReadonlyMap<TxnId, { expiresAtMs: number | null }> {
    return this.held;
  }

  /** The barrier state of a branch of this participant (for tests and tools). */
  async branchState(txnId: TxnId): Promise<BranchState | undefined> {
    const r = await this.pool.query<{ state: BranchState }>(
      `SELECT state FROM ${TCC_BARRIER_TABLE} WHERE txn_id = $1 AND branch = $2`,
      [txnId, this.o.participantId],
    );
    return r.rows[0]?.state;
  }

  /** Deletes settled barrier rows older than the retention, in bounded batches; returns how many went. */
  async cleanup(batch = 10_000): Promise<number> {
    let total = 0;
    for (let i = 0; i < 100; i++) {
      const r = await this.pool.query(
        `DELETE FROM ${TCC_BARRIER_TABLE} WHERE (txn_id, branch) IN (SELECT txn_id, branch FROM ${TCC_BARRIER_TABLE} WHERE branch = $1 AND state <> 'tried' AND updated_at < statement_timestamp() - make_interval(secs => $2) LIMIT $3)`,
        [this.o.participantId, this.o.barrierRetentionMs / 1000, batch],
      );
      total += r.rowCount ?? 0;
      if ((r.rowCount ?? 0) < batch) break;
    }
    return total;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  protected settle(txnId: TxnId, op: 'confirm' | 'cancel', cb: (err: Error | null) => void): void {
    this.step(txnId, op, null).then(
      (refusal) => cb(refusal === null ? null : new Error(refusal)),
      (err: unknown) => cb(err instanceof Error ? err : new Error(String(err))),
    );
  }

  /**
   * One barrier-guarded operation in one local transaction. Resolves null when done, or the refusal; rejects on
   * failure.
   */
  private step(txnId: TxnId, op: BarrierOp, tryPayload: Uint8Array | null): Promise<string | null> {
    return this.exclusive(txnId, async () => {
      let client: PoolClient;
      try {
        client = await this.pool.connect();
      } catch (err) {
        throw new Error(`no PostgreSQL connection for TCC ${op} of ${txnId}: ${describePgError(err)}`);
      }
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const row = await client.query<{ state: BranchState; payload: Buffer | null }>(
          `SELECT state, payload FROM ${TCC_BARRIER_TABLE} WHERE txn_id = $1 AND branch = $2 FOR UPDATE`,
          [txnId, this.o.participantId],
        );
        const current = row.rows[0];
        const v = barrierStep(txnId, current?.state, op);
        if (v.kind === 'done' || v.kind === 'refuse') {
          await client.query('ROLLBACK');
          if (v.kind === 'done') return null;
          if (v.hanging) this.counts.hangingRefused += 1;
          this.log[v.hanging ? 'warn' : 'error']({ txnId, op }, `TCC: ${v.reason}`);
          return v.reason;
        }
        const payload = tryPayload ?? new Uint8Array(current?.payload ?? Buffer.alloc(0));
        const branch: TccBranch = { txnId, participantId: this.o.participantId, payload };
        let expiresAtMs: number | null = null;
        if (v.kind === 'run') {
          const tx = guardedClient(client);
          let result: TccTryResult | undefined;
          try {
            if (op === 'try') result = await this.o.handlers.try(tx.client, branch);
            else await this.o.handlers[op](tx.client, branch);
          } catch (err) {
            tx.end();
            this.counts.handlerFailures += 1;
            await client.query('ROLLBACK');
            const why = describePgError(err);
            if (op === 'try') return `Try failed: ${why}`;
            this.log.error(
              { txnId, err: why },
              `TCC: ${op === 'confirm' ? 'Confirm' : 'Cancel'} handler failed; the decision stays unacknowledged and is retried`,
            );
            throw new HandlerFailure(`${op === 'confirm' ? 'Confirm' : 'Cancel'} handler failed for ${txnId}: ${why}`);
          }
          tx.end();
          if (op === 'try') {
            const problem = ttlProblem(result?.ttlMs);
            if (problem !== null) {
              this.counts.handlerFailures += 1;
              await client.query('ROLLBACK');
              this.log.error({ txnId, ttlMs: result?.ttlMs }, `TCC: ${problem}`);
              return problem;
            }
            if (result?.ttlMs !== undefined) expiresAtMs = this.o.clock.nowMs() + result.ttlMs;
          }
        }
        if (current === undefined) {
          await client.query(
            `INSERT INTO ${TCC_BARRIER_TABLE} (txn_id, branch, state, payload, expires_at_ms, updated_at) VALUES ($1, $2, $3, $4, $5, statement_timestamp())`,
            [txnId, this.o.participantId, v.next, op === 'try' ? Buffer.from(payload) : null, expiresAtMs],
          );
        } else {
          await client.query(
            `UPDATE ${TCC_BARRIER_TABLE} SET state = $3, updated_at = statement_timestamp() WHERE txn_id = $1 AND branch = $2`,
            [txnId, this.o.participantId, v.next],
          );
        }
        await client.query('COMMIT');
        this.noted(txnId, v.next, expiresAtMs);
        return null;
      } catch (err) {
        // A handler's failure was rolled back and leaves the connection sound; anything else may not have.
        if (!(err instanceof HandlerFailure)) {
          broken = err as Error;
          await client.query('ROLLBACK').catch(() => {});
        }
        throw err;
      } finally {
        client.release(broken);
      }
    });
  }

  private noted(txnId: TxnId, state: BranchState, expiresAtMs: number | null): void {
    if (state === 'tried') {
      this.held.set(txnId, { expiresAtMs });
      this.counts.tried += 1;
      return;
    }
    this.held.delete(txnId);
    if (state === 'confirmed') this.counts.confirmed += 1;
    else if (state === 'cancelled') this.counts.cancelled += 1;
    else {
      this.counts.emptyRollbacks += 1;
      this.log.info({ txnId }, 'TCC: Cancel with no Try on record (empty rollback) recorded');
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

/** A Confirm or Cancel handler threw; its local transaction is rolled back already. */
class HandlerFailure extends Error {}

/** The client a handler gets: queries on the barrier's connection, refused once the handler has returned. */
function guardedClient(client: PoolClient): { client: PgTxnClient; end: () => void } {
  let open = true;
  const query = ((...args: Parameters<PoolClient['query']>) => {
    if (!open) throw new Error('a client handed to a TCC handler is used after the handler returned');
    return (client.query as (...a: unknown[]) => unknown)(...args);
  }) as PoolClient['query'];
  return { client: { query }, end: () => (open = false) };
}

/**
 * Creates the barrier table when missing (CREATE on the schema, once; or create it in advance with this definition).
 */
export async function ensureBarrierTable(pool: pg.Pool): Promise<void> {
  const exists = await pool.query<{ t: boolean }>('SELECT to_regclass($1) IS NOT NULL AS t', [TCC_BARRIER_TABLE]);
  if (exists.rows[0]?.t === true) return;
  try {
    await pool.query(
      `CREATE TABLE IF NOT EXISTS ${TCC_BARRIER_TABLE} (txn_id text NOT NULL, branch text NOT NULL, ` +
        `state text NOT NULL CHECK (state IN ('tried', 'confirmed', 'cancelled', 'empty-cancelled')), payload bytea, expires_at_ms bigint, ` +
        `updated_at timestamptz NOT NULL, PRIMARY KEY (txn_id, branch))`,
    );
  } catch (err) {
    if (!createdMeanwhile(err)) throw err;
  }
}
