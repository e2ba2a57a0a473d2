// The NATS JetStream sink and the inbox consumer against a real nats-server
// and a real PostgreSQL, in-process: the broker's dedup on the message id,
// the epoch header, a broker that is down (nothing marked, lag grows), and a
// message on the subject that is not an outbox message (refused, the
// consumer goes on).
import { connect, headers } from 'nats';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue } from '../../src/outbox/enqueue.ts';
import { Inbox } from '../../src/outbox/inbox.ts';
import { consumeToInbox, EPOCH_HEADER, NatsSink, NatsSinkError } from '../../src/outbox/nats-sink.ts';
import { PollingRelay, type Fence } from '../../src/outbox/polling-relay.ts';
import { initSchema } from '../../src/outbox/schema.ts';
import { startNats, type NatsServer } from '../nats-harness.ts';
import { sql, startPostgres, waitFor, withClient, type PgServer } from './harness.ts';

let server: PgServer;
let nats: NatsServer;

beforeAll(async () => {
  [server, nats] = await Promise.all([startPostgres({ databases: ['shop', 'consumer'], maxPreparedTransactions: null, private: true }), startNats()]);
  await withClient(server.url('shop'), (c) => initSchema(c, 'outbox'));
  await withClient(server.url('consumer'), (c) => initSchema(c, 'inbox'));
  await sql(server.url('consumer'), 'CREATE TABLE effects (aggregate text, seq bigint, n int)');
}, 60_000);
afterAll(async () => Promise.all([server?.stop(), nats?.stop()]));

const fence = (epoch: number): Fence => ({ owned: () => new Map([[0, epoch]]), valid: () => true });

async function write(url: string, aggregate: string, n: number): Promise<void> {
  await withClient(url, async (c) => {
    await c.query('BEGIN');
    await enqueue(c, { aggregate, type: 'counted', payload: { n } });
    await c.query('COMMIT');
  });
}

describe('outbox over NATS JetStream', () => {
  it('refuses a sink that is not nats://, and a bad stream or subject name', () => {
    expect(() => new NatsSink({ url: 'amqp://127.0.0.1:5672', stream: 'S', subject: 'a' })).toThrow(/only nats:\/\/HOST:PORT/);
    expect(() => new NatsSink({ url: nats.url, stream: 'a b', subject: 'a' })).toThrow(/stream name "a b"/);
    expect(() => new NatsSink({ url: nats.url, stream: 'S', subject: 'a.>' })).toThrow(/no wildcards/);
  });

  it('publishes with the message id for dedup and the epoch in a header; the consumer applies each event once, in order', async () => {
    const target = { url: nats.url, stream: 'ORDERS', subject: 'orders.events' };
    const sink = new NatsSink(target);
    const db = new pg.Client({ connectionString: server.url('shop') });
    await db.connect();
    try {
      const relay = new PollingRelay({ db, sink, fence: fence(7), partitions: 1 });
      for (let i = 1; i <= 20; i++) await write(server.url('shop'), `order-${i % 3}`, i);
      while ((await relay.round()).read > 0);
      expect((await relay.lag()).unpublished).toBe(0);
      // The same id again: JetStream's dedup window drops it and says so.
      const [first] = await sql<{ event_id: string }>(server.url('shop'), 'SELECT event_id FROM verdict_outbox ORDER BY id LIMIT 1');
      expect(await sink.publish({ id: first.event_id, aggregate: 'order-1', seq: 1, type: 'counted', epoch: 7, payload: {} }, 5_000)).toEqual({ duplicate: true });
      // The epoch header, read back raw from the stream.
      const nc = await connect({ servers: `127.0.0.1:${nats.port}` });
      const raw = await (await nc.jetstreamManager()).streams.getMessage('ORDERS', { seq: 1 });
      expect(raw.header.get(EPOCH_HEADER)).toBe('7');
      expect(raw.header.get('Nats-Msg-Id')).toBe(first.event_id);
      // Something on the subject that is not an outbox message: refused, never applied; the consumer goes on.
      const h = headers();
      h.set('Nats-Msg-Id', 'junk-1');
      await nc.jetstream().publish('orders.events', new TextEncoder().encode('not json {'), { headers: h });
      await nc.close();
      await write(server.url('shop'), 'order-1', 21);
      while ((await relay.round()).read > 0);

      const applied: string[] = [];
      const consumer = await consumeToInbox({
        ...target,
        durable: 'stock',
        inbox: new Inbox({ retentionMs: 3 * 24 * 3600_000 }),
        pgUrl: server.url('consumer'),
        effect: async (tx, m) => {
          await tx.query('INSERT INTO effects VALUES ($1, $2, $3)', [m.aggregate, m.seq, (m.payload as { n: number }).n]);
          applied.push(m.id);
        },
      });
      await waitFor('21 effects and 1 refusal', () => consumer.counts.applied === 21 && consumer.counts.refused === 1, 30_000);
      await consumer.stop();
      expect(new Set(applied).size).toBe(21);
      const rows = await sql<{ aggregate: string; seq: string }>(server.url('consumer'), 'SELECT aggregate, seq FROM effects ORDER BY ctid');
      for (const a of ['order-0', 'order-1', 'order-2']) {
        const seqs = rows.filter((r) => r.aggregate === a).map((r) => Number(r.seq));
        expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
      }
    } finally {
      await sink.close();
      await db.end();
    }
  }, 60_000);

  it('a broker that is down: the publish fails, nothing is marked, the lag grows; the rows go once it is back', async () => {
    const sink = new NatsSink({ url: nats.url, stream: 'DOWN', subject: 'down.events' });
    const db = new pg.Client({ connectionString: server.url('shop') });
    await db.connect();
    try {
      const relay = new PollingRelay({ db, sink, fence: fence(1), partitions: 1, publishTimeoutMs: 2_000 });
      await nats.halt();
      await write(server.url('shop'), 'down-1', 1);
      await write(server.url('shop'), 'down-2', 2);
      const errors: unknown[] = [];
      const r = await new PollingRelay({ db, sink, fence: fence(1), partitions: 1, publishTimeoutMs: 2_000, onError: (e) => errors.push(e) }).round();
      expect(r.published).toBe(0);
      expect(r.failed).toBe(2);
      expect(errors[0]).toBeInstanceOf(NatsSinkError);
      expect(String(errors[0])).toMatch(/NATS/);
      expect((await relay.lag()).unpublished).toBe(2);
      await nats.start();
      await waitFor(
        'the relay to publish once the broker is back',
        async () => {
          await relay.round();
          return (await relay.lag()).unpublished === 0;
        },
        30_000,
      );
    } finally {
      await sink.close();
      await db.end();
    }
  }, 60_000);
});
