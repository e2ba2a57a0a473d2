// outbox.enqueue(): the event becomes a row written by the caller's own
// transaction, so the state change and the event commit or roll back
// together. One statement: the aggregate's seq is bumped (its row lock
// orders concurrent writers of one aggregate; see ./schema.ts) and the row
// inserted.
//
// Backpressure: the outbox must not grow without bound when the relay or the
// broker falls behind. The same statement reads an upper bound of the
// unpublished backlog (newest id - oldest unpublished id + 1, two index
// lookups) and writes nothing when it reaches `backlogMax`; enqueue then
// counts the backlog exactly (at most backlogMax index entries), and while it
// is full waits for the relay, up to `backlogWaitMs`, before it throws
// OutboxBacklogFull. Nothing was written then, so the caller's transaction
// is intact: it rolls back (or commits without the event) and retries later.
// Concurrent writers may each pass the check at once: the backlog stays
// below backlogMax plus the number of writers.
import { randomUUID } from 'node:crypto';
import { MessageError, payloadJson, TEXT_CHARS_MAX } from './message.ts';
import { explainMissingTable, type Queryable } from './schema.ts';

export interface OutboxEvent {
  aggregate: string;
  type: string;
  payload: unknown;
  /** The message id; a fresh UUID by default. Stable across every republish. */
  id?: string;
}

export interface EnqueueOptions {
  /** Unpublished events at which enqueue stops writing (default OUTBOX_BACKLOG_MAX). */
  backlogMax?: number;
  /**
   * How long enqueue waits for the backlog to fall below backlogMax before it throws OutboxBacklogFull (default
   * OUTBOX_BACKLOG_WAIT_MS; 0 throws at once).
   */
  backlogWaitMs?: number;
}

/** The default bound of the unpublished backlog (docs/outbox.md). */
export const OUTBOX_BACKLOG_MAX = 10_000;
/** The default wait for room in the backlog. */
export const OUTBOX_BACKLOG_WAIT_MS = 1_000;
const BACKLOG_POLL_MS = 50;

/** The outbox holds backlogMax unpublished events or more: nothing was written; the caller's transaction is intact. */
export class OutboxBacklogFull extends Error {
  override name = 'OutboxBacklogFull';
}

// Writes only while the backlog's upper bound is below $5: no row and no seq bump otherwise.
const ENQUEUE = `WITH b AS (
  SELECT coalesce((SELECT max(id) FROM verdict_outbox) - (SELECT min(id) FROM verdict_outbox WHERE published_at IS NULL) + 1, 0) AS n),
s AS (
  INSERT INTO verdict_outbox_aggregate (aggregate, seq) SELECT $1, 1 WHERE (SELECT n FROM b) < $5
  ON CONFLICT (aggregate) DO UPDATE SET seq = verdict_outbox_aggregate.seq + 1
  RETURNING seq)
INSERT INTO verdict_outbox (event_id, aggregate, seq, type, payload) SELECT $2, $1, s.seq, $3, $4::jsonb FROM s RETURNING id, seq`;

const BACKLOG = `SELECT count(*)::int AS n FROM (SELECT 1 FROM verdict_outbox WHERE published_at IS NULL LIMIT $1) x`;

/**
 * Writes the event in `client`'s current transaction (call it between BEGIN
 * and COMMIT). Throws OutboxBacklogFull, having written nothing, when the
 * unpublished backlog stays at `backlogMax` for `backlogWaitMs`.
 */
export async function enqueue(
  client: Queryable,
  e: OutboxEvent,
  o: EnqueueOptions = {},
): Promise<{ id: string; seq: number }> {
  const backlogMax = o.backlogMax ?? OUTBOX_BACKLOG_MAX;
  const backlogWaitMs = o.backlogWaitMs ?? OUTBOX_BACKLOG_WAIT_MS;
  if (!(Number.isSafeInteger(backlogMax) && backlogMax >= 1))
    throw new RangeError(`outbox backlogMax must be a positive integer, not ${backlogMax}`);
  if (!(Number.isFinite(backlogWaitMs) && backlogWaitMs >= 0))
    throw new RangeError(`outbox backlogWaitMs must be 0 or more, not ${backlogWaitMs}`);
  for (const [field, v] of [
    ['aggregate', e.aggregate],
    ['type', e.type],
    ['id', e.id ?? 'x'],
  ] as const) {
    if (typeof v !== 'string' || v.length === 0 || v.length > TEXT_CHARS_MAX)
      throw new MessageError(`outbox event ${field} must be a string of 1–${TEXT_CHARS_MAX} characters`);
  }
  const json = payloadJson(e.payload);
  const id = e.id ?? randomUUID();
  try {
    const deadlineAtMs = Date.now() + backlogWaitMs;
    for (;;) {
      const r = await client.query<{ id: string; seq: string }>(ENQUEUE, [e.aggregate, id, e.type, json, backlogMax]);
      if (r.rows.length > 0) return { id, seq: Number(r.rows[0].seq) };
      // The bound says full; the exact count decides (published rows and rolled-back ids between the two ends count in
      // the bound).
      const n = (await client.query<{ n: number }>(BACKLOG, [backlogMax])).rows[0].n;
      if (n < backlogMax) {
        const w = await client.query<{ id: string; seq: string }>(ENQUEUE, [
          e.aggregate,
          id,
          e.type,
          json,
          Number.MAX_SAFE_INTEGER,
        ]);
        return { id, seq: Number(w.rows[0].seq) };
      }
      const leftMs = deadlineAtMs - Date.now();
      if (leftMs <= 0)
        throw new OutboxBacklogFull(
          `the outbox holds ${n} or more unpublished events (backlogMax ${backlogMax}), for ${backlogWaitMs} ms: the relay or the broker is behind; nothing was written, retry later`,
        );
      await new Promise((r) => setTimeout(r, Math.min(BACKLOG_POLL_MS, leftMs)));
    }
  } catch (err) {
    if ((err as { code?: string }).code === '23505')
      throw new MessageError(`outbox event id ${JSON.stringify(id)} was enqueued before; ids must be unique`);
    throw explainMissingTable(err, 'outbox');
  }
}

export const outbox = { enqueue };
