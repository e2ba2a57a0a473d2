// The MySQL floor: the shop/ledger transaction of bench/harness/pg-workload.ts with
// the ledger on MariaDB, committed with the two databases' own two-phase
// commit driven directly from this one process, no coordinator, no Verdict.
// One child process, started by bench/floors/mysql.ts with one JSON argument;
// prints one JSON line (PgDirectResult, the PostgreSQL floor's shape).
//
// N closed-loop workers, each with its own connection to shop (PostgreSQL)
// and its own to ledger (MariaDB). Per transaction, one statement per round
// trip, as an application would send them:
//
//   shop:    BEGIN; INSERT the order; PREPARE TRANSACTION 'g'
//   ledger:  XA START x; UPDATE the balance; XA END x; XA PREPARE x
//   both:    COMMIT PREPARED 'g' and XA COMMIT x (same session), at once
//
// A failure rolls back what it prepared; at the end every gid and xid of this
// run still prepared is rolled back and counted.
import mysql from 'mysql2/promise';
import pg from 'pg';
import { closedLoop, directChildMain, directResult, type PgDirectResult } from './direct-child.ts';
import { accountOf, ledgerStatement, shopStatement } from '../harness/pg-workload.ts';

export interface MySqlDirectConfig {
  shopUrl: string;
  ledgerUrl: string;
  connections: number;
  warmupMs: number;
  measureMs: number;
  tag: string;
}

/** Not Verdict's formatID, so the floor's branches never look like a participant's. */
const FORMAT_ID = 7;

function errorCode(err: unknown): string {
  const e = err as { code?: unknown; errno?: unknown };
  if (typeof e.errno === 'number') return `mysql-${e.errno}`;
  return typeof e.code === 'string' ? `sqlstate-${e.code}` : 'ERROR';
}

async function run(cfg: MySqlDirectConfig): Promise<PgDirectResult> {
  const shops = await Promise.all(
    Array.from({ length: cfg.connections }, async () => {
      const c = new pg.Client({
        connectionString: cfg.shopUrl,
        connectionTimeoutMillis: 10_000,
        application_name: 'verdict-bench-mysql-direct',
      });
      c.on('error', () => {});
      await c.connect();
      return c;
    }),
  );
  const ledgers = await Promise.all(
    Array.from({ length: cfg.connections }, () =>
      mysql.createConnection({ uri: cfg.ledgerUrl, connectTimeout: 10_000 }),
    ),
  );
  for (const l of ledgers) l.on('error', () => {});
  const prefix = `bench-mydirect-${cfg.tag}-`;

  const { ok, errors, h } = await closedLoop(
    cfg,
    async (i, seq) => {
      const shop = shops[i];
      const ledger = ledgers[i];
      const id = `${cfg.tag}-m${i}-${seq}`;
      const account = accountOf(i, seq);
      const gShop = `${prefix}${i}-${seq}`;
      const x = `'${prefix}${i}-${seq}','ledger',${FORMAT_ID}`;
      let shopPrepared = false;
      let ledgerStarted = false;
      try {
        await shop.query('BEGIN');
        await shop.query(shopStatement(id, account));
        await shop.query(`PREPARE TRANSACTION '${gShop}'`);
        shopPrepared = true;
        await ledger.query(`XA START ${x}`);
        ledgerStarted = true;
        await ledger.query(ledgerStatement(account));
        await ledger.query(`XA END ${x}`);
        await ledger.query(`XA PREPARE ${x}`);
        await Promise.all([shop.query(`COMMIT PREPARED '${gShop}'`), ledger.query(`XA COMMIT ${x}`)]);
      } catch (err) {
        await shop.query('ROLLBACK').catch(() => {});
        if (shopPrepared) await shop.query(`ROLLBACK PREPARED '${gShop}'`).catch(() => {});
        if (ledgerStarted) {
          await ledger.query(`XA END ${x}`).catch(() => {});
          await ledger.query(`XA ROLLBACK ${x}`).catch(() => {});
        }
        throw err;
      }
    },
    errorCode,
  );

  let leftover = 0;
  const r = await shops[0].query<{ gid: string }>(
    'SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1)',
    [prefix],
  );
  for (const row of r.rows) {
    await shops[0].query(`ROLLBACK PREPARED '${row.gid}'`).catch(() => {});
    leftover++;
  }
  const [branches] = (await ledgers[0].query('XA RECOVER')) as unknown as [
    { formatID: number; gtrid_length: number; data: Buffer | string }[],
  ];
  for (const b of branches) {
    const gtrid = (Buffer.isBuffer(b.data) ? b.data : Buffer.from(String(b.data), 'latin1'))
      .subarray(0, b.gtrid_length)
      .toString('latin1');
    if (Number(b.formatID) !== FORMAT_ID || !gtrid.startsWith(prefix)) continue;
    await ledgers[0].query(`XA ROLLBACK '${gtrid}','ledger',${FORMAT_ID}`).catch(() => {});
    leftover++;
  }
  await Promise.all([...shops.map((c) => c.end().catch(() => {})), ...ledgers.map((c) => c.end().catch(() => {}))]);
  return directResult(cfg, ok, errors, h, leftover);
}

await directChildMain('mysql-direct', run);
