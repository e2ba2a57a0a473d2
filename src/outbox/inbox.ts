// The inbox: at-least-once delivery with an exactly-once effect. handle()
// runs the effect and records the message id in one local transaction; a
// repeat of the id is acknowledged without running the effect. A message
// from an older lease epoch arriving after a newer one for the same
// aggregate comes from a relay that lost its lease, and is dropped (the
// relay that took over republished whatever the old one had not marked).
//
// handleBatch() applies many messages in one transaction: the inbox records
// and the effects commit together or not at all (the batch rule is written
// at handleBatch).
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

/**
 * What handleBatch did with one message: an InboxResult once the batch's
 * transaction committed; `failed` when its effect threw (nothing of it was
 * committed); `held` when an earlier message of its aggregate failed, so it
 * was left out to keep the aggregate's order (nothing of it was committed).
 */
export type BatchOutcome = InboxResult | 'failed' | 'held';

export interface BatchResult {
  /** One outcome per message, in the order given. */
  outcomes: BatchOutcome[];
  /** What each failed effect threw, in the order met. */
  errors: unknown[];
}

/** Messages in one batch at most: every array is sent as one statement parameter. */
export const INBOX_BATCH_MAX = 1_000;

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
      const seen = await client.query(
        'INSERT INTO verdict_inbox (message_id, aggregate, seq, epoch) VALUES ($1, $2, $3, $4) ON CONFLICT (message_id) DO NOTHING',
        [m.id, m.aggregate, m.seq, m.epoch],
      );
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
      await client.query(
        'UPDATE verdict_inbox_aggregate SET epoch = $2, seq = GREATEST(seq, $3) WHERE aggregate = $1',
        [m.aggregate, m.epoch, m.seq],
      );
      await effect(client);
      await client.query('COMMIT');
      return 'applied';
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw explainMissingTable(err, 'inbox');
    }
  }

  /**
   * Applies `ms` (in the order given, which per aggregate must be its order)
   * in ONE transaction on `client`: each message's id is recorded and its
   * effect run unless the id was handled before (duplicate) or an aggregate
   * saw a newer epoch (stale-epoch), the same rules as handle().
   *
   * The batch rule: the transaction commits whole or not at all. When an
   * effect throws, the transaction rolls back, and the batch is run again
   * without that message (`failed`) and without the messages behind it in
   * its aggregate (`held`); every other message, of its aggregate before it
   * and of the other aggregates, commits in that second run. So a failing
   * effect loses nothing (the caller retries the failed and held messages,
   * in order) and doubles nothing (no effect of a rolled-back run is kept).
   * An effect may run more than once in this process (a run rolled back);
   * only its effect on `tx` counts, which is why it must write through `tx`
   * and let a database error propagate.
   *
   * Any other error (the database is down, the commit's answer was lost)
   * throws: the caller retries the whole batch, and the ids recorded by a
   * commit that did happen answer `duplicate`. Two consumers applying the
   * same message at once: the second one's id record waits for the first's
   * commit and finds it, and that run is rolled back and retried.
   * `client` must be a dedicated connection, not in a transaction.
   */
  async handleBatch(
    client: Queryable,
    ms: readonly OutboxMessage[],
    effect: (tx: Queryable, m: OutboxMessage) => Promise<void>,
  ): Promise<BatchResult> {
    if (ms.length > INBOX_BATCH_MAX)
      throw new RangeError(`an inbox batch holds at most ${INBOX_BATCH_MAX} messages, not ${ms.length}`);
    const outcomes: BatchOutcome[] = new Array(ms.length);
    const errors: unknown[] = [];
    const left = new Set<number>();
    // Each failed run leaves at least one message out; a run that met a concurrent consumer is retried a bounded number
    // of times.
    for (let races = 0; ; ) {
      const take = ms.map((_, i) => i).filter((i) => !left.has(i));
      if (take.length === 0) return { outcomes, errors };
      const r = await this.runBatch(client, ms, take, effect);
      if (r.kind === 'committed') {
        for (const [i, o] of r.outcomes) outcomes[i] = o;
        return { outcomes, errors };
      }
      if (r.kind === 'raced') {
        if (++races > 3) throw new Error('inbox batch: another consumer kept recording the same messages; retry later');
        continue;
      }
      errors.push(r.error);
      outcomes[r.index] = 'failed';
      left.add(r.index);
      const aggregate = ms[r.index].aggregate;
      for (let j = r.index + 1; j < ms.length; j++)
        if (ms[j].aggregate === aggregate && !left.has(j)) {
          outcomes[j] = 'held';
          left.add(j);
        }
    }
  }

  /** One run of a batch over the messages at `take`: committed, or rolled back with why. */
  private async runBatch(
    client: Queryable,
    ms: readonly OutboxMessage[],
    take: number[],
    effect: (tx: Queryable, m: OutboxMessage) => Promise<void>,
  ): Promise<
    | { kind: 'committed'; outcomes: [number, InboxResult][] }
    | { kind: 'effect'; index: number; error: unknown }
    | { kind: 'raced' }
  > {
    try {
      await client.query('BEGIN');
    } catch (err) {
      throw explainMissingTable(err, 'inbox');
    }
    try {
      const aggregates = [...new Set(take.map((i) => ms[i].aggregate))].sort();
      // The aggregates' rows locked in one order (so two consumers never deadlock on them), with their epochs, and the
      // ids handled before.
      const prep = await client.query<{ kind: string; key: string; epoch: string | null }>(
        `WITH a AS (
           INSERT INTO verdict_inbox_aggregate (aggregate, epoch, seq) SELECT x, 0, 0 FROM unnest($1::text[]) AS x ORDER BY x
           ON CONFLICT (aggregate) DO UPDATE SET aggregate = EXCLUDED.aggregate RETURNING aggregate, epoch)
         SELECT 'a' AS kind, aggregate AS key, epoch::text AS epoch FROM a
         UNION ALL SELECT 'm', message_id, NULL FROM verdict_inbox WHERE message_id = ANY($2::text[])`,
        [aggregates, take.map((i) => ms[i].id)],
      );
      const epochOf = new Map<string, number>();
      const seen = new Set<string>();
      for (const row of prep.rows) {
        if (row.kind === 'a') epochOf.set(row.key, Number(row.epoch));
        else seen.add(row.key);
      }
      const outcomes: [number, InboxResult][] = [];
      const applied: OutboxMessage[] = [];
      const seqOf = new Map<string, number>();
      for (const i of take) {
        const m = ms[i];
        if (seen.has(m.id)) {
          outcomes.push([i, 'duplicate']);
          continue;
        }
        if (m.epoch < (epochOf.get(m.aggregate) ?? 0)) {
          outcomes.push([i, 'stale-epoch']);
          continue;
        }
        try {
          await effect(client, m);
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          return { kind: 'effect', index: i, error };
        }
        seen.add(m.id);
        epochOf.set(m.aggregate, m.epoch);
        seqOf.set(m.aggregate, Math.max(seqOf.get(m.aggregate) ?? 0, m.seq));
        applied.push(m);
        outcomes.push([i, 'applied']);
      }
      if (applied.length > 0) {
        const moved = [...seqOf.keys()];
        const done = await client.query<{ recorded: number }>(
          `WITH r AS (
             INSERT INTO verdict_inbox (message_id, aggregate, seq, epoch) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
             ON CONFLICT (message_id) DO NOTHING RETURNING 1),
           u AS (
             UPDATE verdict_inbox_aggregate g SET epoch = x.epoch, seq = GREATEST(g.seq, x.seq)
             FROM unnest($5::text[], $6::bigint[], $7::bigint[]) AS x(aggregate, epoch, seq) WHERE g.aggregate = x.aggregate RETURNING 1)
           SELECT (SELECT count(*) FROM r)::int AS recorded`,
          [
            applied.map((m) => m.id),
            applied.map((m) => m.aggregate),
            applied.map((m) => m.seq),
            applied.map((m) => m.epoch),
            moved,
            moved.map((a) => epochOf.get(a)),
            moved.map((a) => seqOf.get(a)),
          ],
        );
        // Fewer recorded than applied: another consumer committed one of these ids meanwhile; this run's effects must
        // not stand.
        if (done.rows[0].recorded !== applied.length) {
          await client.query('ROLLBACK');
          return { kind: 'raced' };
        }
      }
      await client.query('COMMIT');
      return { kind: 'committed', outcomes };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw explainMissingTable(err, 'inbox');
    }
  }

  /** Forgets message ids older than the retention window; returns how many. */
  async prune(client: Queryable): Promise<number> {
    const r = await client.query(
      `DELETE FROM verdict_inbox WHERE received_at < clock_timestamp() - make_interval(secs => $1::float8 / 1000)`,
      [this.retentionMs],
    );
    return r.rowCount ?? 0;
  }
}
