// The outbox and inbox tables, created by `verdict outbox init` (idempotent,
// versioned in verdict_outbox_meta) and written by enqueue() inside the
// application's own transaction.
//
// Order per aggregate is commit order by construction: enqueue() bumps the
// aggregate's row in verdict_outbox_aggregate (ON CONFLICT DO UPDATE takes its
// row lock) and stamps the event with the new `seq`. A second transaction
// enqueueing for the same aggregate waits on that lock until the first commits
// or rolls back, so `seq` is gap-free, and follows commit order, among the
// committed events of one aggregate. A row still in flight always has a
// larger seq than every committed one, so a relay needs no cursor: it
// publishes, per aggregate, the visible unpublished rows in seq order.
//
// verdict_outbox_fence holds, per relay lease, the highest lease epoch that
// marked rows published: a relay marks only while no newer epoch of its
// lease has (markPublished in ./polling-relay.ts), so a relay that lost its
// lease marks nothing more. Version 2 added it; `outbox init` adds it to a
// version 1 database.

export const OUTBOX_SCHEMA_VERSION = 2;

export interface Queryable {
  query<R extends Record<string, unknown> = Record<string, unknown>>(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }>;
}

const OUTBOX_DDL = [
  `CREATE TABLE IF NOT EXISTS verdict_outbox_meta (key text PRIMARY KEY, value text NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS verdict_outbox_aggregate (aggregate text PRIMARY KEY, seq bigint NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS verdict_outbox (
     id bigserial PRIMARY KEY,
     event_id text NOT NULL UNIQUE,
     aggregate text NOT NULL,
     seq bigint NOT NULL,
     type text NOT NULL,
     payload jsonb NOT NULL,
     created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     published_at timestamptz,
     UNIQUE (aggregate, seq))`,
  `CREATE INDEX IF NOT EXISTS verdict_outbox_unpublished ON verdict_outbox (id) WHERE published_at IS NULL`,
  `CREATE TABLE IF NOT EXISTS verdict_outbox_fence (lease text PRIMARY KEY, epoch bigint NOT NULL)`,
];

const INBOX_DDL = [
  `CREATE TABLE IF NOT EXISTS verdict_inbox (message_id text PRIMARY KEY, aggregate text NOT NULL, seq bigint NOT NULL, epoch bigint NOT NULL, received_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  `CREATE INDEX IF NOT EXISTS verdict_inbox_received ON verdict_inbox (received_at)`,
  `CREATE TABLE IF NOT EXISTS verdict_inbox_aggregate (aggregate text PRIMARY KEY, epoch bigint NOT NULL, seq bigint NOT NULL)`,
];

export class OutboxSchemaError extends Error {
  override name = 'OutboxSchemaError';
}

/**
 * Creates the outbox tables (or the inbox's, with `inbox`), once; a newer schema than this version knows is refused.
 */
export async function initSchema(
  c: Queryable,
  which: 'outbox' | 'inbox',
): Promise<{ created: boolean; version: number }> {
  await c.query('BEGIN');
  try {
    // One init at a time per database, so two concurrent inits do not race on CREATE.
    await c.query(`SELECT pg_advisory_xact_lock(hashtext('verdict_outbox_init'))`);
    await c.query(OUTBOX_DDL[0]);
    const key = `${which}_version`;
    const r = await c.query<{ value: string }>('SELECT value FROM verdict_outbox_meta WHERE key = $1', [key]);
    const have = r.rows.length > 0 ? Number(r.rows[0].value) : 0;
    if (have > OUTBOX_SCHEMA_VERSION)
      throw new OutboxSchemaError(
        `the ${which} tables are at schema version ${have}, newer than this Verdict's ${OUTBOX_SCHEMA_VERSION}; upgrade Verdict`,
      );
    for (const ddl of which === 'outbox' ? OUTBOX_DDL : INBOX_DDL) await c.query(ddl);
    await c.query(
      'INSERT INTO verdict_outbox_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value',
      [key, String(OUTBOX_SCHEMA_VERSION)],
    );
    await c.query('COMMIT');
    return { created: have === 0, version: OUTBOX_SCHEMA_VERSION };
  } catch (err) {
    await c.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** PostgreSQL's "relation does not exist" as a sentence naming the table and the fix; other errors unchanged. */
export function explainMissingTable(err: unknown, which: 'outbox' | 'inbox'): unknown {
  const e = err as { code?: string; message?: string };
  if (e?.code === '42P01')
    return new OutboxSchemaError(
      `${e.message}: the ${which} tables are missing; run verdict outbox init --pg-url URL${which === 'inbox' ? ' --inbox' : ''}`,
    );
  return err;
}
