// The inbox: at-least-once delivery with an exactly-once effect. handle()
// runs the effect and records the message id in one local transaction; a
// repeat of the id is acknowledged without running the effect. A message
// from an older lease epoch arriving after a newer one for the same
// aggregate comes from a relay that lost its lease, and is dropped (the
// relay that took over republished whatever the old one had not marked).
//
// Retention: a message id must be remembered for as long as it can be
// delivered again, which is the relay's retry horizon (how long after the
// first attempt an event may still be republished) plus the broker's own
// redelivery. handlePrune() forgets ids older than `retentionMs`; the
// constructor refuses a window that does not exceed the horizon.
import type { OutboxMessage } from './message.ts';
import { explainMissingTable, type Queryable } from './schema.ts';

/** The relay's default retry horizon: docs/outbox.md explains the rule. */
export const RELAY_RETRY_HORIZON_MS = 24 * 60 * 60 * 1000;

export type InboxResult = 'applied' | 'duplicate' | 'stale-epoch';

export interface InboxOptions {
  /** How long a message id is remembered. Must exceed retryHorizonMs. */
  retentionMs: number;
  /** The relay's retry horizon (default RELAY_RETRY_HORIZON_MS). */
  retryHorizonMs?: number;
}

export class InboxConfigError extends Error {
  override name = 'InboxConfigError';
}

export class Inbox {
  readonly retentionMs: number;

  constructor(o: InboxOptions) {
    const horizon = o.retryHorizonMs ?? RELAY_RETRY_HORIZON_MS;
    if (!(Number.isFinite(o.retentionMs) && o.retentionMs > horizon))
      throw new InboxConfigError(
        `inbox retention of ${o.retentionMs} ms does not exceed the relay's retry horizon of ${horizon} ms: a message republished after its id was forgotten would take effect twice`,
      );
    this.retentionMs = o.retentionMs;
  }

  /**
   * Runs `effect` with `client` inside one transaction that also records the
   * message id, unless the id was handled before (or the message is stale).
   * `client` must be a dedicated connection (a pg.Client or a pool client), not in a transaction.
   */
  async handle(client: Queryable, m: OutboxMessage, effect: (tx: Queryable) => Promise<void>): Promise<InboxResult> {
    try {
      await client.query('BEGIN');
    } catch (err) {
      throw explainMissingTable(err, 'inbox');
    }
    try {
      const seen = await client.query('INSERT INTO verdict_inbox (message_id, aggregate, seq, epoch) VALUES ($1, $2, $3, $4) ON CONFLICT (message_id) DO NOTHING', [m.id, m.aggregate, m.seq, m.epoch]);
      if (seen.rowCount === 0) {
        await client.query('ROLLBACK');
        return 'duplicate';
      }
      // The aggregate's row lock orders concurrent handlers of one aggregate.
      const a = await client.query<{ epoch: string }>(
        `INSERT INTO verdict_inbox_aggregate (aggregate, epoch, seq) VALUES ($1, $2, $3)
         ON CONFLICT (aggregate) DO UPDATE SET aggregate = EXCLUDED.aggregate RETURNING epoch`,
        [m.aggregate, m.epoch, m.seq],
      );
      if (Number(a.rows[0].epoch) > m.epoch) {
        await client.query('ROLLBACK');
        return 'stale-epoch';
      }
      await client.query('UPDATE verdict_inbox_aggregate SET epoch = $2, seq = GREATEST(seq, $3) WHERE aggregate = $1', [m.aggregate, m.epoch, m.seq]);
      await effect(client);
      await client.query('COMMIT');
      return 'applied';
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw explainMissingTable(err, 'inbox');
    }
  }

  /** Forgets message ids older than the retention window; returns how many. */
  async prune(client: Queryable): Promise<number> {
    const r = await client.query(`DELETE FROM verdict_inbox WHERE received_at < clock_timestamp() - make_interval(secs => $1::float8 / 1000)`, [this.retentionMs]);
    return r.rowCount ?? 0;
  }
}
