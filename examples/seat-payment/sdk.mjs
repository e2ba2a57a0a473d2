// Seat reservation (TCC) and payment (PostgreSQL PREPARE TRANSACTION) in one
// Verdict transaction:
//
//   node examples/seat-payment/sdk.mjs
//
// `seats` is a TCC participant: its Try moves seats from free to held (and
// commits that at once, with its barrier row), Confirm moves them to sold,
// Cancel back to free. `bank` is an ordinary PostgreSQL participant: the debit
// runs in a transaction that is PREPAREd, and its CHECK (balance >= 0) makes
// it vote NO on a booking it cannot pay. Three bookings:
//
//   2 seats, payable          COMMITTED: 2 sold, the account debited
//   2 seats, not payable      ABORTED: the bank votes NO, the seats' reserve is cancelled
//   500 seats                 ABORTED: the Try refuses (not enough seats), nothing debited
//
// Exits 0 when the databases show exactly that and nothing is left held or prepared.
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { VerdictClient } from 'verdict/client';
import { startParticipant, TccRefusal } from 'verdict/participant';
import { clientSecurity, serverSecurity } from '../cluster-security.mjs';

const env = process.env;
const s = {
  seatsUrl: env.SEATS_URL ?? 'postgres://postgres@127.0.0.1:5432/theatre',
  bankUrl: env.BANK_URL ?? 'postgres://postgres@127.0.0.1:5432/bank',
  endpoints: (env.VERDICT_ENDPOINTS ?? '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003').split(','),
  clusterId: env.VERDICT_CLUSTER_ID ?? 'local',
  dataDir: env.EXAMPLE_DATA ?? 'data/examples/seat-payment',
};

async function run(url, text, values = []) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, values)).rows;
  } finally {
    await c.end();
  }
}

await run(
  s.seatsUrl,
  'CREATE TABLE IF NOT EXISTS shows (id text PRIMARY KEY, free integer NOT NULL CHECK (free >= 0), held integer NOT NULL DEFAULT 0, sold integer NOT NULL DEFAULT 0)',
);
await run(s.seatsUrl, "INSERT INTO shows (id, free) VALUES ('show-1', 100) ON CONFLICT (id) DO NOTHING");
await run(
  s.bankUrl,
  'CREATE TABLE IF NOT EXISTS accounts (id text PRIMARY KEY, balance_cents bigint NOT NULL CHECK (balance_cents >= 0))',
);
await run(s.bankUrl, "INSERT INTO accounts (id, balance_cents) VALUES ('acct-7', 100000) ON CONFLICT (id) DO NOTHING");

/**
 * The seats' handlers: the payload is {"show": "...", "seats": n}. Each runs inside the barrier's local transaction.
 */
const seatHandlers = {
  async try(tx, branch) {
    const { show, seats } = JSON.parse(new TextDecoder().decode(branch.payload));
    const r = await tx.query('UPDATE shows SET free = free - $2, held = held + $2 WHERE id = $1 AND free >= $2', [
      show,
      seats,
    ]);
    if (r.rowCount === 0) throw new TccRefusal(`not ${seats} free seats for ${show}`);
    return { ttlMs: 30_000 };
  },
  async confirm(tx, branch) {
    const { show, seats } = JSON.parse(new TextDecoder().decode(branch.payload));
    await tx.query('UPDATE shows SET held = held - $2, sold = sold + $2 WHERE id = $1', [show, seats]);
  },
  async cancel(tx, branch) {
    const { show, seats } = JSON.parse(new TextDecoder().decode(branch.payload));
    await tx.query('UPDATE shows SET held = held - $2, free = free + $2 WHERE id = $1', [show, seats]);
  },
};

const logger = pino({ level: 'warn' });
const common = { clusterId: s.clusterId, listen: '127.0.0.1:0', endpointsOfCluster: s.endpoints, logger };
const seats = await startParticipant({
  ...common,
  participantId: 'seats-tcc',
  ...serverSecurity('seats-tcc'),
  dataDir: join(s.dataDir, 'seats-tcc'),
  tcc: { postgres: { url: s.seatsUrl, handlers: seatHandlers } },
});
const bank = await startParticipant({
  ...common,
  participantId: 'bank-pg',
  ...serverSecurity('bank-pg'),
  dataDir: join(s.dataDir, 'bank-pg'),
  postgres: { url: s.bankUrl, concurrency: 4 },
});
await Promise.all([seats.registered, bank.registered]);
const client = new VerdictClient({ endpoints: s.endpoints, ...clientSecurity() });
const enc = (v) => new TextEncoder().encode(JSON.stringify(v));
const show = async () => (await run(s.seatsUrl, "SELECT free, held, sold FROM shows WHERE id = 'show-1'"))[0];
const balance = async () =>
  Number((await run(s.bankUrl, "SELECT balance_cents FROM accounts WHERE id = 'acct-7'"))[0].balance_cents);

let ok = true;
async function book(n, priceCents, expected) {
  const [before, paidBefore] = [await show(), await balance()];
  const r = await client
    .transaction({ timeoutMs: 10_000 })
    .enlist('seats-tcc', enc({ show: 'show-1', seats: n }))
    .enlist(
      'bank-pg',
      enc({ sql: [`UPDATE accounts SET balance_cents = balance_cents - ${priceCents} WHERE id = 'acct-7'`] }),
    )
    .commit();
  // The decision is final when commit() answers; the participants apply it just after: wait for nothing held (bounded).
  const committed = expected === 'COMMITTED';
  let after = await show();
  for (let i = 0; i < 100 && (after.held !== before.held || (after.sold !== before.sold) !== committed); i++) {
    await new Promise((res) => setTimeout(res, 100));
    after = await show();
  }
  const paid = await balance();
  console.log(
    `${r.outcome} ${r.txnId}: ${n} seats, free ${before.free} -> ${after.free}, sold ${before.sold} -> ${after.sold}, acct-7 ${paidBefore} -> ${paid} cents${r.reason ? ` (${r.reason})` : ''}`,
  );
  const good = committed
    ? r.outcome === 'COMMITTED' &&
      after.sold === before.sold + n &&
      after.free === before.free - n &&
      paid === paidBefore - priceCents
    : r.outcome === 'ABORTED' && after.sold === before.sold && after.free === before.free && paid === paidBefore;
  if (!good || after.held !== before.held) {
    console.log(`  expected ${expected}: this is not all-or-nothing`);
    ok = false;
  }
}

try {
  await book(2, 5_000, 'COMMITTED');
  await book(2, 1_000_000_000, 'ABORTED');
  await book(500, 100, 'ABORTED');
  const c = seats.resource.tccCounts();
  console.log(
    `seats-tcc: reserves held ${c.held}, tried ${c.tried}, confirmed ${c.confirmed}, cancelled ${c.cancelled}, empty rollbacks ${c.emptyRollbacks}, hanging Trys refused ${c.hangingRefused}`,
  );
} finally {
  client.close();
  await seats.stop();
  await bank.stop();
}
process.exit(ok ? 0 : 1);
