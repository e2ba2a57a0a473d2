// The shop/ledger transaction of the PostgreSQL benchmark, shared by the load
// generator (through Verdict, bench/harness/loadgen.ts) and the direct floor
// (bench/floors/pg-direct.ts), so both drive exactly the same statements:
//
//   shop    INSERT INTO orders (id, account, amount_cents) VALUES (...)
//   ledger  UPDATE accounts SET balance_cents = balance_cents - amount
//           WHERE id = ...   (CHECK (balance_cents >= 0): a debit that would
//           overdraw fails, and the transaction then aborts everywhere)
//
// Each client debits its own small set of accounts in turn (ACCOUNTS_PER_CLIENT),
// so clients never wait on each other's row locks, and a client's next debit
// rarely waits on its own previous one while that one's COMMIT PREPARED is
// still on its way. Pure: SQL text only.

/** Accounts a client cycles through; the same in both drivers. */
export const ACCOUNTS_PER_CLIENT = 4;
/** Accounts seeded in ledger: enough for this many clients. */
export const CLIENTS_MAX = 256;
/** Every account starts with this much (cents), far more than a run can debit. */
export const OPENING_BALANCE_CENTS = 1_000_000_000_000;
export const DEBIT_CENTS = 1;

export const SHOP_SCHEMA = [
  'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, account text NOT NULL, amount_cents bigint NOT NULL CHECK (amount_cents > 0), created_at timestamptz NOT NULL DEFAULT now())',
  // Fails with PostgreSQL's own message (a missing column) if an `orders` table of another shape is there already.
  'SELECT id, account, amount_cents FROM orders LIMIT 0',
];

export const LEDGER_SCHEMA = [
  'CREATE TABLE IF NOT EXISTS accounts (id text PRIMARY KEY, balance_cents bigint NOT NULL CHECK (balance_cents >= 0))',
  `INSERT INTO accounts (id, balance_cents) SELECT 'acct-' || g, ${OPENING_BALANCE_CENTS} FROM generate_series(0, ${CLIENTS_MAX * ACCOUNTS_PER_CLIENT - 1}) AS g ` +
    'ON CONFLICT (id) DO UPDATE SET balance_cents = EXCLUDED.balance_cents',
];

/** The account client `worker` debits in its transaction number `seq`. */
export function accountOf(worker: number, seq: number): string {
  if (!(Number.isInteger(worker) && worker >= 0 && worker < CLIENTS_MAX))
    throw new Error(`client number ${worker} is outside 0..${CLIENTS_MAX - 1}`);
  return `acct-${worker * ACCOUNTS_PER_CLIENT + (seq % ACCOUNTS_PER_CLIENT)}`;
}

/** A SQL string literal of a value made of safe characters only (ids built here). */
function literal(v: string): string {
  if (!/^[A-Za-z0-9_.:-]+$/.test(v)) throw new Error(`"${v}" has characters the benchmark does not put in SQL`);
  return `'${v}'`;
}

/** The shop statement: one order row. orderId must be unique per transaction (it is the primary key). */
export function shopStatement(orderId: string, account: string): string {
  return `INSERT INTO orders (id, account, amount_cents) VALUES (${literal(orderId)}, ${literal(account)}, ${DEBIT_CENTS})`;
}

/** The ledger statement: the debit. */
export function ledgerStatement(account: string): string {
  return `UPDATE accounts SET balance_cents = balance_cents - ${DEBIT_CENTS} WHERE id = ${literal(account)}`;
}

/** The marked floor's marker table: the shape of the participant's (src/participant/postgres-sql.ts). */
export const DIRECT_MARKER_TABLE = 'bench_direct_markers';
export const DIRECT_MARKER_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS ${DIRECT_MARKER_TABLE} (gid text PRIMARY KEY, txn_id text NOT NULL, prepared_at timestamptz NOT NULL, committed_at timestamptz)`,
  `CREATE INDEX IF NOT EXISTS ${DIRECT_MARKER_TABLE}_age ON ${DIRECT_MARKER_TABLE} ((coalesce(committed_at, prepared_at)))`,
];

/**
 * The same marker table on MariaDB: the shape of the MySQL participant's (src/participant/resources/mysql/tables.ts).
 */
export const DIRECT_MARKER_SCHEMA_MYSQL = [
  `CREATE TABLE IF NOT EXISTS ${DIRECT_MARKER_TABLE} (gid VARCHAR(160) CHARACTER SET ascii NOT NULL PRIMARY KEY, txn_id TEXT NOT NULL, ` +
    `prepared_at DATETIME(3) NOT NULL, committed_at DATETIME(3) NULL, KEY ${DIRECT_MARKER_TABLE}_age (prepared_at)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
];
