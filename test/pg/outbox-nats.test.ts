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
import { startTogether } from '../start-together.ts';
import { sql, startPostgres, waitFor, withClient, type PgServer } from './harness.ts';

let server: PgServer;
let nats: NatsServer;

beforeAll(async () => {
  [server, nats] = await startTogether([
    startPostgres({ databases: ['shop', 'consumer'], maxPreparedTransactions: null, private: true }),
    startNats(),
  ]);
  await withClient(server.url('shop'), (c) => initSchema(c, 'outbox'));
  await withClient(server.url('consumer'), (c) => initSchema(c, 'inbox'));
  await sql(server.url('consumer'), 'CREATE TABLE effects (aggregate text, seq bigint, n int)');
}, 60_000);
afterAll(async () => Promise.all([server?.stop(), nats?.stop()]));

/** Each test's relays hold their own lease (`lease`): the published mark is fenced by its epoch. */
const fence = (epoch: number, lease = 'outbox/nats-test'): Fence => ({
  owned: () => new Map([[0, epoch]]),
  valid: () => true,
  leaseName: (p) => `${lease}/p${p}`,
});

async function write(url: string, aggregate: string, n: number): Promise<void> {
  await withClient(url, async (c) => {
    await c.query('BEGIN');
    await enqueue(c, { aggregate, type: 'counted', payload: { n } });
    await c.query('COMMIT');
  });
}

describe('outbox over NATS JetStream', () => {
  it('refuses a sink that is not nats://, and a bad stream or subject name', () => {
    expect(() => new NatsSink({ url: 'amqp://127.0.0.1:5672', stream: 'S', subject: 'a' })).toThrow(
      /only nats:\/\/HOST:PORT/,
    );
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
      const [first] = await sql<{ event_id: string }>(
        server.url('shop'),
        'SELECT event_id FROM verdict_outbox ORDER BY id LIMIT 1',
      );
      expect(
        await sink.publish(
          { id: first.event_id, aggregate: 'order-1', seq: 1, type: 'counted', epoch: 7, payload: {} },
          5_000,
        ),
      ).toEqual({ duplicate: true });
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
          await tx.query('INSERT INTO effects VALUES ($1, $2, $3)', [
            m.aggregate,
            m.seq,
            (m.payload as { n: number }).n,
          ]);
          applied.push(m.id);
        },
      });
      await waitFor(
        '21 effects and 1 refusal',
        () => consumer.counts.applied === 21 && consumer.counts.refused === 1,
        30_000,
      );
      await consumer.stop();
      expect(new Set(applied).size).toBe(21);
      const rows = await sql<{ aggregate: string; seq: string }>(
        server.url('consumer'),
        'SELECT aggregate, seq FROM effects ORDER BY ctid',
      );
      for (const a of ['order-0', 'order-1', 'order-2']) {
        const seqs = rows.filter((r) => r.aggregate === a).map((r) => Number(r.seq));
        expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
      }
    } finally {
      await sink.close();
      await db.end();
    }
  }, 60_000);

  it('the consumer applies different aggregates in parallel, each in stream order, retrying a failed effect in place; a stale epoch is dropped', async () => {
    const target = { url: nats.url, stream: 'PAR', subject: 'par.events' };
    const sink = new NatsSink(target);
    const msg = (aggregate: string, seq: number, epoch = 1) => ({
      id: `par-${aggregate}-${seq}-${epoch}`,
      aggregate,
      seq,
      type: 't',
      epoch,
      payload: { seq },
    });
    try {
      // Stream order: all of slow's events first, then fast's, then a retry case, then an epoch change.
      for (let seq = 1; seq <= 3; seq++) await sink.publish(msg('slow', seq), 5_000);
      for (let seq = 1; seq <= 5; seq++) await sink.publish(msg('fast', seq), 5_000);
      for (let seq = 1; seq <= 3; seq++) await sink.publish(msg('flaky', seq), 5_000);
      await sink.publish(msg('fenced', 1, 2), 5_000);
      await sink.publish(msg('fenced', 2, 1), 5_000);
      await sink.publish(msg('fenced', 3, 2), 5_000);

      const order = new Map<string, number[]>();
      let inFlight = 0;
      let maxInFlight = 0;
      let fastDone!: () => void;
      const fastApplied = new Promise<void>((r) => (fastDone = r));
      let slowStarted!: () => void;
      const slowRunning = new Promise<void>((r) => (slowStarted = r));
      let flakyFailures = 0;
      const consumer = await consumeToInbox({
        ...target,
        durable: 'par',
        concurrency: 4,
        inbox: new Inbox({ retentionMs: 3 * 24 * 3600_000 }),
        pgUrl: server.url('consumer'),
        effect: async (tx, m) => {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          try {
            // slow's first effect waits for every fast one, and fast's first starts only once slow's is running:
            // the two overlap, and a consumer applying one message at a time never gets past slow's first.
            if (m.aggregate === 'slow' && m.seq === 1) {
              slowStarted();
              await fastApplied;
            }
            if (m.aggregate === 'fast' && m.seq === 1) await slowRunning;
            if (m.aggregate === 'flaky' && m.seq === 2 && flakyFailures < 2) {
              flakyFailures++;
              throw new Error('flaky effect');
            }
            await tx.query('INSERT INTO effects VALUES ($1, $2, $3)', [m.aggregate, m.seq, m.seq]);
          } finally {
            inFlight--;
          }
        },
        onResult: (m, r) => {
          if (r !== 'applied') return;
          order.set(m.aggregate, [...(order.get(m.aggregate) ?? []), m.seq]);
          if (m.aggregate === 'fast' && m.seq === 5) fastDone();
        },
      });
      try {
        await waitFor(
          '13 effects and 1 stale message',
          () => consumer.counts.applied === 13 && consumer.counts['stale-epoch'] === 1,
          30_000,
        );
      } finally {
        await consumer.stop();
      }
      expect(maxInFlight).toBeGreaterThan(1);
      expect(order.get('fast')).toEqual([1, 2, 3, 4, 5]);
      expect(order.get('slow')).toEqual([1, 2, 3]);
      expect(order.get('flaky')).toEqual([1, 2, 3]);
      expect(order.get('fenced')).toEqual([1, 3]);
      expect(flakyFailures).toBe(2);
      expect(consumer.counts.failed).toBe(2);
      expect(consumer.counts.duplicate).toBe(0);
      const rows = await sql<{ n: string }>(
        server.url('consumer'),
        "SELECT count(*) AS n FROM effects WHERE aggregate IN ('slow', 'fast', 'flaky', 'fenced')",
      );
      expect(Number(rows[0].n)).toBe(13);
      // Every message was acknowledged: nothing is left for the durable consumer.
      const nc = await connect({ servers: `127.0.0.1:${nats.port}` });
      const info = await (await nc.jetstreamManager()).consumers.info('PAR', 'par');
      await nc.close();
      expect(info.num_ack_pending + info.num_pending).toBe(0);
    } finally {
      await sink.close();
    }
  }, 60_000);

  it('refuses a consumer concurrency outside 1..256', async () => {
    const o = {
      url: nats.url,
      stream: 'PAR',
      subject: 'par.events',
      durable: 'bad',
      inbox: new Inbox({ retentionMs: 3 * 24 * 3600_000 }),
      pgUrl: server.url('consumer'),
      effect: async () => {},
    };
    await expect(consumeToInbox({ ...o, concurrency: 0 })).rejects.toThrow(
      /concurrency 0 must be an integer from 1 to 256/,
    );
    await expect(consumeToInbox({ ...o, concurrency: 1.5 })).rejects.toThrow(/concurrency 1.5/);
  });

  it('a broker that is down: the publish fails, nothing is marked, the lag grows; the rows go once it is back', async () => {
    const sink = new NatsSink({ url: nats.url, stream: 'DOWN', subject: 'down.events' });
    const db = new pg.Client({ connectionString: server.url('shop') });
    await db.connect();
    try {
      const relay = new PollingRelay({
        db,
        sink,
        fence: fence(1, 'outbox/down'),
        partitions: 1,
        publishTimeoutMs: 2_000,
      });
      await nats.halt();
      await write(server.url('shop'), 'down-1', 1);
      await write(server.url('shop'), 'down-2', 2);
      const errors: unknown[] = [];
      const r = await new PollingRelay({
        db,
        sink,
        fence: fence(1, 'outbox/down'),
        partitions: 1,
        publishTimeoutMs: 2_000,
        onError: (e) => errors.push(e),
      }).round();
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
