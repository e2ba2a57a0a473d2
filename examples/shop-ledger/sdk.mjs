// The shop/ledger transaction from an application, with the SDKs:
//
//   node examples/shop-ledger/sdk.mjs
//
// Two PostgreSQL participants run in this process (startParticipant with
// `postgres`), and VerdictClient commits two orders across them: one the
// ledger can pay (COMMITTED: the order row and the debit both land) and one
// it cannot (the CHECK on the balance fails at PREPARE, the ledger votes NO,
// ABORTED: neither lands). Exits 0 when the databases show exactly that.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pino } from 'pino';
import { VerdictClient } from 'verdict/client';
import { startParticipant } from 'verdict/participant';
import { clientSecurity, serverSecurity } from '../cluster-security.mjs';
import { balanceCents, createTables, orderExists, orderWork, settings } from './setup.mjs';

const s = settings();
await createTables(s);
const logger = pino({ level: 'warn' });
const participant = (id, url) =>
  startParticipant({
    clusterId: s.clusterId,
    participantId: id,
    listen: '127.0.0.1:0',
    endpointsOfCluster: s.endpoints,
    dataDir: join(s.dataDir, id),
    logger,
    postgres: { url, concurrency: 4 },
    ...serverSecurity(id),
  });
const shop = await participant('shop-app', s.shopUrl);
const ledger = await participant('ledger-app', s.ledgerUrl);
await Promise.all([shop.registered, ledger.registered]);
const client = new VerdictClient({ endpoints: s.endpoints, ...clientSecurity() });

let ok = true;
async function order(priceCents, expected) {
  const orderId = `o-${randomUUID()}`;
  const work = orderWork(orderId, priceCents);
  const before = await balanceCents(s);
  const r = await client
    .transaction({ timeoutMs: 10_000 })
    .enlist('shop-app', work.shop)
    .enlist('ledger-app', work.ledger)
    .commit();
  // The decision is final when commit() answers; the participants apply it just after, so wait for the data (bounded).
  const landed = expected === 'COMMITTED';
  for (
    let i = 0;
    i < 100 && ((await orderExists(s, orderId)) !== landed || ((await balanceCents(s)) === before) === landed);
    i++
  )
    await new Promise((res) => setTimeout(res, 100));
  const after = await balanceCents(s);
  const exists = await orderExists(s, orderId);
  console.log(
    `${r.outcome} ${r.txnId}: order ${orderId} ${exists ? 'placed' : 'not placed'}, acct-9 ${before} -> ${after} cents${r.reason ? ` (${r.reason})` : ''}`,
  );
  if (r.outcome !== expected || exists !== landed || after !== (landed ? before - priceCents : before)) {
    console.log(`  expected ${expected}: this is not all-or-nothing`);
    ok = false;
  }
}

try {
  await order(250, 'COMMITTED');
  await order(1_000_000_000, 'ABORTED');
} finally {
  client.close();
  await shop.stop();
  await ledger.stop();
}
process.exit(ok ? 0 : 1);
