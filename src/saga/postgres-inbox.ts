// The step service's inbox in PostgreSQL: the same rules as src/saga/inbox.ts,
// with the record a row of `verdict_saga_inbox` inserted in the same local
// transaction as the step's effect. Both commit, or neither: a repeated key
// finds the row and gets the stored answer; the effect never runs twice.
//
// The action and the compensation of one step take the same transaction-level
// advisory lock, so an action and its compensation arriving together are
// ordered: the later one sees the earlier one's row (an empty compensation,
// or a refused action). A saga's rows are deleted when the orchestrator says
// it ended, in the transaction that records the end in `verdict_saga_ended`
// (which then refuses a late duplicate of one of its calls).

import pg from 'pg';
import type { StepAnswer, StepRequest } from './engine.ts';
import { answerOf, type InboxStatus } from './inbox.ts';

export const PG_INBOX_SCHEMA = `
CREATE TABLE IF NOT EXISTS verdict_saga_inbox (
  key text PRIMARY KEY,
  saga_id text NOT NULL,
  step integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('action', 'compensate')),
  status text NOT NULL CHECK (status IN ('done', 'failed', 'empty', 'refused')),
  output text NOT NULL DEFAULT '',
  reason text NOT NULL DEFAULT '',
  recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS verdict_saga_inbox_saga ON verdict_saga_inbox (saga_id);
CREATE TABLE IF NOT EXISTS verdict_saga_ended (
  saga_id text PRIMARY KEY,
  ended_at timestamptz NOT NULL DEFAULT now()
);`;

/**
 * A step's work inside the inbox's transaction: apply the effect with `tx`
 * and answer DONE, or answer FAILED having applied nothing (the inbox rolls
 * back to before the handler either way on FAILED). Throwing is transient.
 */
export type PgStepHandler = (
  tx: pg.PoolClient,
  req: StepRequest,
) => Promise<{ status: 'done'; output: string } | { status: 'failed'; reason: string }>;

export class PgSagaInbox {
  constructor(private readonly pool: pg.Pool) {}

  static async open(pool: pg.Pool): Promise<PgSagaInbox> {
    await pool.query(PG_INBOX_SCHEMA);
    return new PgSagaInbox(pool);
  }

  async handle(req: StepRequest, handler: PgStepHandler): Promise<StepAnswer> {
    const tx = await this.pool.connect();
    try {
      await tx.query('BEGIN');
      // One lock per step: its action and its compensation never run side by side.
      await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${req.sagaId}/${req.step}`]);
      const rows = (
        await tx.query<{ key: string; kind: string; status: string; output: string; reason: string }>(
          'SELECT key, kind, status, output, reason FROM verdict_saga_inbox WHERE saga_id = $1 AND step = $2',
          [req.sagaId, req.step],
        )
      ).rows;
      const seen = rows.find((r) => r.key === req.key);
      if (seen) {
        await tx.query('COMMIT');
        return answerOf(seen as { status: InboxStatus; output: string; reason: string });
      }
      if ((await tx.query('SELECT 1 FROM verdict_saga_ended WHERE saga_id = $1', [req.sagaId])).rowCount)
        throw new Error(`saga ${req.sagaId} has ended; its step ${req.step} ${req.kind} is not run again`);
      const other = rows.find((r) => r.kind !== req.kind);
      let status: InboxStatus;
      let output = '';
      let reason = '';
      if (req.kind === 'action' && other) {
        status = 'refused';
        reason = `step ${req.step} of saga ${req.sagaId} was compensated before its action arrived; the action is refused`;
      } else if (req.kind === 'compensate' && (!other || other.status !== 'done')) {
        status = 'empty';
        reason = other
          ? `the action answered ${other.status.toUpperCase()}: nothing to compensate`
          : 'the action never ran here: an empty compensation is recorded';
      } else {
        await tx.query('SAVEPOINT step');
        const d = await handler(tx, req);
        if (d.status === 'done') {
          status = 'done';
          output = d.output;
        } else {
          await tx.query('ROLLBACK TO SAVEPOINT step');
          status = 'failed';
          reason = d.reason;
        }
      }
      await tx.query(
        'INSERT INTO verdict_saga_inbox (key, saga_id, step, kind, status, output, reason) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [req.key, req.sagaId, req.step, req.kind, status, output, reason],
      );
      await tx.query('COMMIT');
      return answerOf({ status, output, reason });
    } catch (err) {
      await tx.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      tx.release();
    }
  }

  /** The saga ended and the orchestrator logged it: its rows go, and the end is remembered. */
  async end(sagaId: string): Promise<void> {
    await this.endMany([sagaId]);
  }

  /** end() for many sagas in one local transaction: one commit (one WAL flush) for the batch. */
  async endMany(sagaIds: readonly string[]): Promise<void> {
    if (sagaIds.length === 0) return;
    const tx = await this.pool.connect();
    try {
      await tx.query('BEGIN');
      await tx.query('DELETE FROM verdict_saga_inbox WHERE saga_id = ANY($1::text[])', [sagaIds]);
      await tx.query('INSERT INTO verdict_saga_ended (saga_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING', [
        sagaIds,
      ]);
      await tx.query('COMMIT');
    } catch (err) {
      await tx.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      tx.release();
    }
  }
}
