// The PostgreSQL floor: the shop/ledger transaction of bench/harness/pg-workload.ts
// committed with PostgreSQL's two-phase commit driven directly, no
// coordinator, no Verdict. One child process, started by bench/floors/pg.ts with one
// JSON argument; prints one JSON line (PgDirectResult).
//
// N closed-loop workers, each with its own connection to shop and its own to
// ledger (N connections per database). Per transaction, one statement per
// round trip, as an application would send them:
//
//   shop:    BEGIN; INSERT the order; PREPARE TRANSACTION 'g-shop'
//   ledger:  BEGIN; UPDATE the balance; PREPARE TRANSACTION 'g-ledger'
//   both:    COMMIT PREPARED 'g-shop' and COMMIT PREPARED 'g-ledger', at once
//
// With `marker` (floors.pg_direct_16_marked) each PREPARE TRANSACTION goes
// with an INSERT of a marker row, in the same round trip, into a table of the
// participant's marker table's shape: what Verdict's idempotent decisions
// cost the databases, with no coordinator.
//
// Latency is the whole transaction (first BEGIN to the second COMMIT PREPARED
// answered), in an HDR histogram of microseconds; throughput counts the
// transactions finished inside the measured window. A failure rolls back
// what it prepared, and at the end every gid of this run still prepared is
// rolled back and counted, so the floor never leaves pg_prepared_xacts behind.
import pg from 'pg';
import { closedLoop, directChildMain, directResult, type PgDirectResult } from './direct-child.ts';
import {
  accountOf,
  DIRECT_MARKER_SCHEMA,
  DIRECT_MARKER_TABLE,
  ledgerStatement,
  shopStatement,
} from '../harness/pg-workload.ts';

export interface PgDirectConfig {
  shopUrl: string;
  ledgerUrl: string;
  connections: number;
  warmupMs: number;
  measureMs: number;
  /** Unique per run: prefixes order ids and gids. */
  tag: string;
  /**
   * Also write a marker row beside PREPARE TRANSACTION in each database, in
   * the same round trip, as Verdict's PostgreSQL participant does (a table of
   * the same shape, DIRECT_MARKER_TABLE in pg-workload.ts): what that guarantee costs the
   * database with no coordinator at all. Absent: no marker.
   */
  marker?: boolean;
}

const STATEMENT_TIMEOUT_MS = 20_000;

async function connect(url: string): Promise<pg.Client> {
  const c = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: 10_000,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    application_name: 'verdict-bench-direct',
  });
  // An error on an idle connection must not crash the process; the next query reports it.
  c.on('error', () => {});
  await c.connect();
  return c;
}

function errorCode(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? `sqlstate-${code}` : 'ERROR';
}

async function run(cfg: PgDirectConfig): Promise<PgDirectResult> {
  const shops = await Promise.all(Array.from({ length: cfg.connections }, () => connect(cfg.shopUrl)));
  const ledgers = await Promise.all(Array.from({ length: cfg.connections }, () => connect(cfg.ledgerUrl)));
  const gidPrefix = `bench-direct-${cfg.tag}-`;
  if (cfg.marker === true)
    for (const c of [shops[0], ledgers[0]]) for (const stmt of DIRECT_MARKER_SCHEMA) await c.query(stmt);
  // gids and ids are made of [A-Za-z0-9-] here, so they go into the SQL as they are.
  const prepare = (gid: string, txnId: string): string =>
    cfg.marker === true
      ? `INSERT INTO ${DIRECT_MARKER_TABLE} (gid, txn_id, prepared_at) VALUES ('${gid}', '${txnId}', statement_timestamp()); PREPARE TRANSACTION '${gid}'`
      : `PREPARE TRANSACTION '${gid}'`;

  const { ok, errors, h } = await closedLoop(
    cfg,
    async (i, seq) => {
      const shop = shops[i];
      const ledger = ledgers[i];
      const id = `${cfg.tag}-d${i}-${seq}`;
      const account = accountOf(i, seq);
      const gShop = `${gidPrefix}${i}-${seq}-shop`;
      const gLedger = `${gidPrefix}${i}-${seq}-ledger`;
      const prepared: [pg.Client, string][] = [];
      try {
        await shop.query('BEGIN');
        await shop.query(shopStatement(id, account));
        await shop.query(prepare(gShop, id));
        prepared.push([shop, gShop]);
        await ledger.query('BEGIN');
        await ledger.query(ledgerStatement(account));
        await ledger.query(prepare(gLedger, id));
        prepared.push([ledger, gLedger]);
        await Promise.all([shop.query(`COMMIT PREPARED '${gShop}'`), ledger.query(`COMMIT PREPARED '${gLedger}'`)]);
      } catch (err) {
        // Undo what this transaction left: an open transaction, or a prepared one (ignored if already gone).
        for (const c of [shop, ledger]) await c.query('ROLLBACK').catch(() => {});
        for (const [c, gid] of prepared) await c.query(`ROLLBACK PREPARED '${gid}'`).catch(() => {});
        throw err;
      }
    },
    errorCode,
  );

  let leftover = 0;
  for (const conn of [shops[0], ledgers[0]]) {
    const r = await conn.query<{ gid: string }>(
      'SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1)',
      [gidPrefix],
    );
    for (const row of r.rows) {
      await conn.query(`ROLLBACK PREPARED '${row.gid}'`).catch(() => {});
      leftover++;
    }
  }
  await Promise.all([...shops, ...ledgers].map((c) => c.end().catch(() => {})));
  return directResult(cfg, ok, errors, h, leftover);
}

await directChildMain('pg-direct', run);
