// A countermeasure for sagas' lack of isolation (docs/sagas.md): the
// semantic lock. A step's action marks the row it changes as pending for its
// saga; the saga's completion (a later step) or the step's compensation
// clears the mark; every other writer sees it and refuses, waits, or takes a
// path that commutes with it. The mark is an ordinary column, so it is
// written in the step's own transaction, with its inbox row.
//
// `SemanticLock` is the interface a step handler programs against; the
// package ships the PostgreSQL implementation, `postgresSemanticLock`, for a
// table with a nullable text column `saga_pending`. Identifiers are checked
// here, values are bound parameters. The three functions below it are the
// same operations with the table named on each call.

import type pg from 'pg';

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

function ident(name: string): string {
  if (!IDENT.test(name))
    throw new Error(`semantic lock: ${JSON.stringify(name)} is not a plain lower-case SQL identifier`);
  return name;
}

/**
 * Marks row `id` of `table` pending for `sagaId`. False when another saga
 * holds it (the caller answers FAILED, or retries) or the row is missing.
 * Taking a mark the same saga already holds succeeds (a repeat is harmless).
 */
export function markPending(
  tx: PgConnection,
  table: string,
  idColumn: string,
  id: string,
  sagaId: string,
): Promise<boolean> {
  return postgresSemanticLock(table, idColumn).mark(tx, id, sagaId);
}

/**
 * Clears the mark `sagaId` holds on row `id` (its completion or its compensation); a mark of another saga is left
 * alone.
 */
export function clearPending(
  tx: PgConnection,
  table: string,
  idColumn: string,
  id: string,
  sagaId: string,
): Promise<void> {
  return postgresSemanticLock(table, idColumn).clear(tx, id, sagaId);
}

/** The saga holding row `id`, or null: what another writer checks before it changes the row. */
export function pendingFor(tx: PgConnection, table: string, idColumn: string, id: string): Promise<string | null> {
  return postgresSemanticLock(table, idColumn).holder(tx, id);
}

/** What a PostgreSQL lock runs its statements on: pg's Client, PoolClient (a step's transaction) or Pool. */
export type PgConnection = pg.ClientBase | pg.Pool;

/**
 * The semantic lock of one kind of row, whatever stores it. `Tx` is the
 * store's handle for the step's own local transaction, so the mark commits
 * or rolls back with the step's effect and its inbox record.
 */
export interface SemanticLock<Tx> {
  /**
   * Marks row `id` pending for `sagaId`; false when another saga holds it or the row is missing. Repeating it is
   * harmless.
   */
  mark(tx: Tx, id: string, sagaId: string): Promise<boolean>;
  /** Clears the mark `sagaId` holds on row `id` (its completion or compensation); another saga's mark is left alone. */
  clear(tx: Tx, id: string, sagaId: string): Promise<void>;
  /** The saga holding row `id`, or null: what another writer checks before it changes the row. */
  holder(tx: Tx, id: string): Promise<string | null>;
}

/** The semantic lock on `table` (rows named by `idColumn`), in its `saga_pending` column. */
export function postgresSemanticLock(table: string, idColumn = 'id'): SemanticLock<PgConnection> {
  const t = ident(table);
  const c = ident(idColumn);
  return {
    async mark(tx, id, sagaId) {
      const r = await tx.query(
        `UPDATE ${t} SET saga_pending = $2 WHERE ${c} = $1 AND (saga_pending IS NULL OR saga_pending = $2)`,
        [id, sagaId],
      );
      return (r.rowCount ?? 0) > 0;
    },
    async clear(tx, id, sagaId) {
      await tx.query(`UPDATE ${t} SET saga_pending = NULL WHERE ${c} = $1 AND saga_pending = $2`, [id, sagaId]);
    },
    async holder(tx, id) {
      const r = await tx.query<{ saga_pending: string | null }>(`SELECT saga_pending FROM ${t} WHERE ${c} = $1`, [id]);
      return r.rows[0]?.saga_pending ?? null;
    },
  };
}
