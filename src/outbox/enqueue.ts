// outbox.enqueue(): the event becomes a row written by the caller's own
// transaction, so the state change and the event commit or roll back
// together. One statement: the aggregate's seq is bumped (its row lock
// orders concurrent writers of one aggregate; see ./schema.ts) and the row
// inserted.
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

const ENQUEUE = `WITH s AS (
  INSERT INTO verdict_outbox_aggregate (aggregate, seq) VALUES ($1, 1)
  ON CONFLICT (aggregate) DO UPDATE SET seq = verdict_outbox_aggregate.seq + 1
  RETURNING seq)
INSERT INTO verdict_outbox (event_id, aggregate, seq, type, payload) SELECT $2, $1, s.seq, $3, $4::jsonb FROM s RETURNING id, seq`;

/** Writes the event in `client`'s current transaction (call it between BEGIN and COMMIT). */
export async function enqueue(client: Queryable, e: OutboxEvent): Promise<{ id: string; seq: number }> {
  for (const [field, v] of [
    ['aggregate', e.aggregate],
    ['type', e.type],
    ['id', e.id ?? 'x'],
  ] as const) {
    if (typeof v !== 'string' || v.length === 0 || v.length > TEXT_CHARS_MAX) throw new MessageError(`outbox event ${field} must be a string of 1–${TEXT_CHARS_MAX} characters`);
  }
  const json = payloadJson(e.payload);
  const id = e.id ?? randomUUID();
  try {
    const r = await client.query<{ id: string; seq: string }>(ENQUEUE, [e.aggregate, id, e.type, json]);
    return { id, seq: Number(r.rows[0].seq) };
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw new MessageError(`outbox event id ${JSON.stringify(id)} was enqueued before; ids must be unique`);
    throw explainMissingTable(err, 'outbox');
  }
}

export const outbox = { enqueue };
