// Orders and their events with the transactional outbox, a stock service
// with the inbox, and `verdict outbox relay` between them:
//
//   bash examples/outbox-orders/run.sh     (starts the relay, then this script)
//
// Writes 20 orders in the `shop` database, each with its `order.placed` event
// in the same transaction, plus one order whose transaction rolls back. The
// relay (a separate process, leasing its partitions from the cluster)
// publishes the events to NATS JetStream; this script's consumer applies each
// through the inbox in the `stock` database, decrementing stock once per order
// however often a message arrives. Exits 0 when stock fell by exactly the 20
// committed orders, and the rolled-back one never arrived.
import pg from 'pg';
import { consumeToInbox, enqueue, Inbox, initSchema } from 'verdict/outbox';

const env = process.env;
const shopUrl = env.SHOP_URL ?? 'postgres://postgres@127.0.0.1:5432/shop';
const stockUrl = env.STOCK_URL ?? 'postgres://postgres@127.0.0.1:5432/stock';
const natsUrl = env.NATS_URL ?? 'nats://127.0.0.1:4222';
const stream = env.OUTBOX_STREAM ?? 'ORDERS';
const subject = env.OUTBOX_SUBJECT ?? 'orders.events';
const ORDERS = 20;

async function connect(url) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}

const shop = await connect(shopUrl);
const stock = await connect(stockUrl);
await initSchema(shop, 'outbox');
await initSchema(stock, 'inbox');
await shop.query('CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, sku text NOT NULL, qty int NOT NULL)');
await stock.query('CREATE TABLE IF NOT EXISTS stock (sku text PRIMARY KEY, available int NOT NULL)');
await stock.query(`INSERT INTO stock VALUES ('book', 1000) ON CONFLICT (sku) DO NOTHING`);
const before = (await stock.query(`SELECT available FROM stock WHERE sku = 'book'`)).rows[0].available;

const run = Date.now().toString(36);
async function placeOrder(id, rollBack = false) {
  await shop.query('BEGIN');
  await shop.query('INSERT INTO orders VALUES ($1, $2, $3)', [id, 'book', 1]);
  await enqueue(shop, { aggregate: `order-${id}`, type: 'order.placed', payload: { id, sku: 'book', qty: 1 } });
  await shop.query(rollBack ? 'ROLLBACK' : 'COMMIT');
}
for (let i = 0; i < ORDERS; i++) await placeOrder(`${run}-${i}`);
await placeOrder(`${run}-rolled-back`, true);

const seen = new Set();
const consumer = await consumeToInbox({
  url: natsUrl,
  stream,
  subject,
  durable: 'stock',
  inbox: new Inbox({ retentionMs: 3 * 24 * 3600_000 }),
  pgUrl: stockUrl,
  effect: async (tx, m) => {
    await tx.query('UPDATE stock SET available = available - $2 WHERE sku = $1', [m.payload.sku, m.payload.qty]);
    seen.add(m.payload.id);
  },
});
const deadline = Date.now() + 60_000;
while ([...Array(ORDERS).keys()].some((i) => !seen.has(`${run}-${i}`)) && Date.now() < deadline)
  await new Promise((r) => setTimeout(r, 100));
await consumer.stop();
const after = (await stock.query(`SELECT available FROM stock WHERE sku = 'book'`)).rows[0].available;
await shop.end();
await stock.end();
const mine = [...seen].filter((id) => id.startsWith(`${run}-`));
console.log(
  `orders placed ${ORDERS} (+1 rolled back); applied ${mine.length}; stock ${before} -> ${after}; rolled-back order applied: ${seen.has(`${run}-rolled-back`)}`,
);
process.exit(mine.length === ORDERS && !seen.has(`${run}-rolled-back`) && before - after >= ORDERS ? 0 : 1);
