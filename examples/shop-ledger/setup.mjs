// The example's settings (environment variables, with defaults for a local
// cluster and PostgreSQL) and its tables. Run alone, `node setup.mjs` creates
// the tables; sdk.mjs and cli.sh run it first, so each is one command.
//
//   SHOP_URL, LEDGER_URL  two PostgreSQL databases (max_prepared_transactions > 0)
//   VERDICT_ENDPOINTS     the cluster, host:port,... (default: `npm start`'s)
//   VERDICT_CLUSTER_ID    the cluster's id (default: local, as `npm start`)
//   EXAMPLE_DATA          where the participants keep their journals
import { pathToFileURL } from 'node:url';
import pg from 'pg';

export function settings(env = process.env) {
  return {
    shopUrl: env.SHOP_URL ?? 'postgres://postgres@127.0.0.1:5432/shop',
    ledgerUrl: env.LEDGER_URL ?? 'postgres://postgres@127.0.0.1:5432/ledger',
    endpoints: (env.VERDICT_ENDPOINTS ?? '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003').split(','),
    clusterId: env.VERDICT_CLUSTER_ID ?? 'local',
    dataDir: env.EXAMPLE_DATA ?? 'data/examples/shop-ledger',
  };
}

async function run(url, statements) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const rows = [];
    for (const s of statements)
      rows.push(...(await (typeof s === 'string' ? c.query(s) : c.query(s.text, s.values))).rows);
    return rows;
  } finally {
    await c.end();
  }
}

/**
 * Orders in shop; accounts in ledger, whose balance may not go below zero (that CHECK is what makes the ledger vote
 * NO).
 */
export async function createTables(s) {
  await run(s.shopUrl, [
    'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, sku text NOT NULL, qty integer NOT NULL)',
  ]);
  await run(s.ledgerUrl, [
    'CREATE TABLE IF NOT EXISTS accounts (id text PRIMARY KEY, balance_cents bigint NOT NULL CHECK (balance_cents >= 0))',
    "INSERT INTO accounts (id, balance_cents) VALUES ('acct-9', 100000) ON CONFLICT (id) DO NOTHING",
  ]);
}

export async function orderExists(s, id) {
  return (await run(s.shopUrl, [{ text: 'SELECT 1 FROM orders WHERE id = $1', values: [id] }])).length === 1;
}

export async function balanceCents(s) {
  return Number((await run(s.ledgerUrl, ["SELECT balance_cents FROM accounts WHERE id = 'acct-9'"]))[0].balance_cents);
}

/** One order: a row in shop and a debit in ledger, as each participant's SQL. */
export function orderWork(orderId, priceCents) {
  return {
    shop: { sql: [`INSERT INTO orders (id, sku, qty) VALUES ('${orderId}', 'sku-1', 1)`] },
    ledger: { sql: [`UPDATE accounts SET balance_cents = balance_cents - ${priceCents} WHERE id = 'acct-9'`] },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await createTables(settings());
  console.log('tables ready: shop.orders, ledger.accounts (acct-9)');
}
