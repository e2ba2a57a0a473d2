// One PostgreSQL connection for the outbox's long-running loops (the relay, the inbox consumer).
import pg from 'pg';

/**
 * A PostgreSQL connection that survives being cut under it (a database restart): the cut surfaces on the next query
 * instead of crashing the process.
 */
export async function connectPg(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  c.on('error', () => {});
  try {
    await c.connect();
  } catch (err) {
    await c.end().catch(() => {});
    throw err;
  }
  return c;
}
