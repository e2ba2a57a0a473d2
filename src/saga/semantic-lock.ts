// A countermeasure for sagas' lack of isolation (docs/sagas.md): the
// semantic lock. A step's action marks the row it changes as pending for its
// saga; the saga's completion (a later step) or the step's compensation
// clears the mark; every other writer sees it and refuses, waits, or takes a
// path that commutes with it. The mark is an ordinary column, so it is
// written in the step's own transaction, with its inbox row.
//
// The table needs a nullable text column `saga_pending`. Identifiers are
// checked here, values are bound parameters.

import type pg from 'pg';

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

function ident(name: string): string {
  if (!IDENT.test(name)) throw new Error(`semantic lock: ${JSON.stringify(name)} is not a plain lower-case SQL identifier`);
  return name;
}

/**
 * Marks row `id` of `table` pending for `sagaId`. False when another saga
 * holds it (the caller answers FAILED, or retries) or the row is missing.
 * Taking a mark the same saga already holds succeeds (a repeat is harmless).
 */
export async function markPending(tx: pg.PoolClient, table: string, idColumn: string, id: string, sagaId: string): Promise<boolean> {
  const r = await tx.query(`UPDATE ${ident(table)} SET saga_pending = $2 WHERE ${ident(idColumn)} = $1 AND (saga_pending IS NULL OR saga_pending = $2)`, [id, sagaId]);
  return (r.rowCount ?? 0) > 0;
}

/** Clears the mark `sagaId` holds on row `id` (its completion or its compensation); a mark of another saga is left alone. */
export async function clearPending(tx: pg.PoolClient, table: string, idColumn: string, id: string, sagaId: string): Promise<void> {
  await tx.query(`UPDATE ${ident(table)} SET saga_pending = NULL WHERE ${ident(idColumn)} = $1 AND saga_pending = $2`, [id, sagaId]);
}

/** The saga holding row `id`, or null: what another writer checks before it changes the row. */
export async function pendingFor(tx: pg.PoolClient | pg.Pool, table: string, idColumn: string, id: string): Promise<string | null> {
  const r = await tx.query<{ saga_pending: string | null }>(`SELECT saga_pending FROM ${ident(table)} WHERE ${ident(idColumn)} = $1`, [id]);
  return r.rows[0]?.saga_pending ?? null;
}
