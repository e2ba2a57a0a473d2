// A PostgreSQL error that means another process won a race to create the
// same table. Apart from ./postgres-sql.ts, which loads the `pg` driver:
// code that must not load it (./heuristic.ts, reached from every
// participant) uses this too.

/**
 * Two processes created the same table at once: IF NOT EXISTS does not cover
 * that race, and the loser gets a unique violation on the catalog (23505),
 * "relation already exists" (42P07) or "type already exists" (42710, the
 * table's row type). The table is there.
 */
export function createdMeanwhile(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === '23505' || code === '42P07' || code === '42710';
}
