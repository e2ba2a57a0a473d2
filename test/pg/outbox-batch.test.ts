// The outbox at the broker's speed, against a real PostgreSQL and a real
// nats-server: the consumer's batches (one transaction each, a failing
// effect neither losing nor doubling the rest, a consumer killed mid-batch),
// order per aggregate with aggregates applied in parallel, and the writers'
// backpressure when the unpublished backlog reaches its bound.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue, OutboxBacklogFull } from '../../src/outbox/enqueue.ts';
import { Inbox } from '../../src/outbox/inbox.ts';
import type { OutboxMessage } from '../../src/outbox/message.ts';
import { consumeToInbox, NatsSink } from '../../src/outbox/nats-sink.ts';
import { PollingRelay, type Fence } from '../../src/outbox/polling-relay.ts';
import { initSchema } from '../../src/outbox/schema.ts';
import { startNats, type NatsServer } from '../nats-harness.ts';
import { ROOT } from '../process/harness.ts';
import { startTogether } from '../start-together.ts';
import { sql, startPostgres, waitFor, withClient, type PgServer } from './harness.ts';

let server: PgServer;
let nats: NatsServer;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  [server, nats] = await startTogether([
    startPostgres({ databases: ['shop', 'consumer'], maxPreparedTransactions: null, private: true }),
    startNats(),
  ]);
  await withClient(server.url('shop'), (c) => initSchema(c, 'outbox'));
  await withClient(server.url('consumer'), (c) => initSchema(c, 'inbox'));
  await sql(
    server.url('consumer'),
    'CREATE TABLE effects (n bigserial PRIMARY KEY, event_id text NOT NULL, aggregate text NOT NULL, seq bigint NOT NULL, txid bigint NOT NULL)',
  );
}, 60_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await Promise.all([server?.stop(), nats?.stop()]);
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const inbox = (): Inbox => new Inbox({ retentionMs: 3 * 24 * 3600_000 });
const msg = (prefix: string, aggregate: string, seq: number, epoch = 1): OutboxMessage => ({
  id: `${prefix}-${aggregate}-${seq}`,
  aggregate,
  seq,
  type: 't',
  epoch,
  payload: { seq },
});

/** Per aggregate, the seqs of its effects in the order they were committed. */
async function effectOrder(prefix: string): Promise<Map<string, number[]>> {
  const rows = await sql<{ aggregate: string; seq: string }>(
    server.url('consumer'),
    'SELECT aggregate, seq FROM effects WHERE event_id LIKE $1 ORDER BY n',
    [`${prefix}-%`],
  );
  const out = new Map<string, number[]>();
  for (const r of rows) out.set(r.aggregate, [...(out.get(r.aggregate) ?? []), Number(r.seq)]);
  return out;
}

describe('inbox batches', () => {
  it('handleBatch: one transaction; a failing effect leaves out itself and what follows it in its aggregate, and the rest commits once', async () => {
    const c = new pg.Client({ connectionString: server.url('consumer') });
    await c.connect();
    try {
      const ib = inbox();
      // b-1 was handled before; c's aggregate has seen epoch 5.
      await ib.handleBatch(c, [msg('hb', 'b', 1), msg('hb', 'c', 1, 5)], async () => {});
      const batch = [
        msg('hb', 'a', 1),
        msg('hb', 'a', 2),
        msg('hb', 'a', 3),
        msg('hb', 'b', 1),
        msg('hb', 'b', 2),
        msg('hb', 'b', 2),
        msg('hb', 'c', 2, 4),
      ];
      let runs = 0;
      const r = await ib.handleBatch(c, batch, async (tx, m) => {
        runs++;
        if (m.aggregate === 'a' && m.seq === 2) throw new Error('a-2 fails');
        await tx.query('INSERT INTO effects (event_id, aggregate, seq, txid) VALUES ($1, $2, $3, txid_current())', [
          m.id,
          m.aggregate,
          m.seq,
        ]);
      });
      expect(r.outcomes).toEqual(['applied', 'failed', 'held', 'duplicate', 'applied', 'duplicate', 'stale-epoch']);
      expect(r.errors.map(String)).toEqual(['Error: a-2 fails']);
      // The first run got as far as a-2 and was rolled back; the second ran a-1 and b-2 again.
      expect(runs).toBe(4);
      const rows = await sql<{ event_id: string; txid: string }>(
        server.url('consumer'),
        "SELECT event_id, txid::text FROM effects WHERE event_id LIKE 'hb-%' ORDER BY n",
      );
      expect(rows.map((x) => x.event_id)).toEqual(['hb-a-1', 'hb-b-2']);
      expect(new Set(rows.map((x) => x.txid)).size).toBe(1);
      const recorded = await sql<{ message_id: string }>(
        server.url('consumer'),
        "SELECT message_id FROM verdict_inbox WHERE message_id LIKE 'hb-%' ORDER BY 1",
      );
      expect(recorded.map((x) => x.message_id)).toEqual(['hb-a-1', 'hb-b-1', 'hb-b-2', 'hb-c-1']);
      // The failed and held ones, retried in order, apply once each.
      const again = await ib.handleBatch(
        c,
        [msg('hb', 'a', 2), msg('hb', 'a', 3), msg('hb', 'a', 1)],
        async (tx, m) => {
          await tx.query('INSERT INTO effects (event_id, aggregate, seq, txid) VALUES ($1, $2, $3, txid_current())', [
            m.id,
            m.aggregate,
            m.seq,
          ]);
        },
      );
      expect(again.outcomes).toEqual(['applied', 'applied', 'duplicate']);
      expect((await effectOrder('hb')).get('a')).toEqual([1, 2, 3]);
    } finally {
      await c.end();
    }
  });

  it('the consumer: per aggregate in stream order, aggregates in parallel transactions, several messages per transaction; a failing effect loses and doubles nothing', async () => {
    const target = { url: nats.url, stream: 'ORDERED', subject: 'ordered.events' };
    const sink = new NatsSink(target);
    const aggregates = Array.from({ length: 8 }, (_, i) => `agg${i}`);
    try {
      // Interleaved in the stream: seq 1 of every aggregate, then seq 2, …
      for (let seq = 1; seq <= 25; seq++)
        await Promise.all(aggregates.map((a) => sink.publish(msg('ord', a, seq), 5_000)));
    } finally {
      await sink.close();
    }
    let inEffect = 0;
    let inEffectMax = 0;
    let failedOnce = false;
    const consumer = await consumeToInbox({
      ...target,
      durable: 'ordered',
      concurrency: 3,
      batchMax: 50,
      inbox: inbox(),
      pgUrl: server.url('consumer'),
      effect: async (tx, m) => {
        inEffect++;
        inEffectMax = Math.max(inEffectMax, inEffect);
        try {
          // Two effects at the same moment can only be in two transactions: one transaction runs its effects one after
          // another.
          await sleep(2);
          if (m.aggregate === 'agg3' && m.seq === 7 && !failedOnce) {
            failedOnce = true;
            throw new Error('agg3-7 fails once');
          }
          await tx.query('INSERT INTO effects (event_id, aggregate, seq, txid) VALUES ($1, $2, $3, txid_current())', [
            m.id,
            m.aggregate,
            m.seq,
          ]);
        } finally {
          inEffect--;
        }
      },
    });
    try {
      await waitFor('200 effects', () => consumer.counts.applied === 200, 60_000);
    } finally {
      await consumer.stop();
    }
    expect(consumer.counts.failed).toBe(1);
    expect(consumer.counts.duplicate).toBe(0);
    const order = await effectOrder('ord');
    for (const a of aggregates) expect(order.get(a), a).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    const [counts] = await sql<{ n: string; distinct_ids: string; txs: string; biggest: string }>(
      server.url('consumer'),
      "SELECT count(*) AS n, count(DISTINCT event_id) AS distinct_ids, count(DISTINCT txid) AS txs, (SELECT max(k) FROM (SELECT count(*) AS k FROM effects WHERE event_id LIKE 'ord-%' GROUP BY txid) x) AS biggest FROM effects WHERE event_id LIKE 'ord-%'",
    );
    expect(Number(counts.n)).toBe(200);
    expect(Number(counts.distinct_ids)).toBe(200);
    // Batches: fewer transactions than messages, and some transaction held many.
    expect(Number(counts.txs)).toBeLessThan(200);
    expect(Number(counts.biggest)).toBeGreaterThan(1);
    expect(inEffectMax).toBeGreaterThan(1);
  }, 90_000);

  it('a consumer killed (SIGKILL) mid-batch: another one takes over; every effect exactly once, in order per aggregate', async () => {
    const target = { url: nats.url, stream: 'KILLED', subject: 'killed.events' };
    const sink = new NatsSink(target);
    const aggregates = Array.from({ length: 20 }, (_, i) => `k${i}`);
    try {
      for (let seq = 1; seq <= 15; seq++)
        await Promise.all(aggregates.map((a) => sink.publish(msg('kill', a, seq), 5_000)));
    } finally {
      await sink.close();
    }
    const args = { natsUrl: nats.url, ...target, durable: 'killed', pgUrl: server.url('consumer') };
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join('test', 'pg', 'fixtures', 'inbox-consumer.ts'), JSON.stringify(args)],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, PGAPPNAME: 'inbox-child' },
      },
    );
    children.add(child);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const count = async (): Promise<number> =>
      Number(
        (
          await sql<{ n: string }>(
            server.url('consumer'),
            "SELECT count(*) AS n FROM effects WHERE event_id LIKE 'kill-%'",
          )
        )[0].n,
      );
    await waitFor(`the child to commit some batches (${stderr})`, async () => (await count()) >= 40, 60_000);
    // Kill it while one of its batches is open.
    await waitFor(
      'a batch of the child in progress',
      async () =>
        (
          await sql(
            server.url('consumer'),
            "SELECT 1 FROM pg_stat_activity WHERE application_name = 'inbox-child' AND xact_start IS NOT NULL AND state <> 'idle'",
          )
        ).length > 0,
      10_000,
    );
    child.kill('SIGKILL');
    await exited;
    children.delete(child);
    const atKill = await count();
    expect(atKill).toBeLessThan(300);
    const consumer = await consumeToInbox({
      ...target,
      durable: 'killed',
      inbox: inbox(),
      pgUrl: server.url('consumer'),
      effect: async (tx, m) => {
        await tx.query('INSERT INTO effects (event_id, aggregate, seq, txid) VALUES ($1, $2, $3, txid_current())', [
          m.id,
          m.aggregate,
          m.seq,
        ]);
      },
    });
    try {
      await waitFor('every effect', async () => (await count()) >= 300, 60_000);
      // Whatever the child committed and never acknowledged comes back and is answered as a duplicate, not applied
      // again.
      await sleep(500);
    } finally {
      await consumer.stop();
    }
    expect(await count()).toBe(300);
    const [d] = await sql<{ n: string }>(
      server.url('consumer'),
      "SELECT count(DISTINCT event_id) AS n FROM effects WHERE event_id LIKE 'kill-%'",
    );
    expect(Number(d.n)).toBe(300);
    const order = await effectOrder('kill');
    for (const a of aggregates) expect(order.get(a), a).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
  }, 120_000);
});

describe('outbox backpressure', () => {
  const fence: Fence = { owned: () => new Map([[0, 1]]), valid: () => true, leaseName: (p) => `outbox/bp/p${p}` };
  async function write(
    c: pg.Client,
    aggregate: string,
    o: { backlogMax: number; backlogWaitMs: number },
  ): Promise<void> {
    await c.query('BEGIN');
    try {
      await enqueue(c, { aggregate, type: 't', payload: {} }, o);
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK');
      throw err;
    }
  }
  const unpublished = async (): Promise<number> =>
    Number(
      (
        await sql<{ n: string }>(
          server.url('shop'),
          'SELECT count(*) AS n FROM verdict_outbox WHERE published_at IS NULL',
        )
      )[0].n,
    );

  it('a writer gets OutboxBacklogFull (nothing written) at the bound, waits a bounded time for room, and writes once the relay has published', async () => {
    await sql(server.url('shop'), 'TRUNCATE verdict_outbox, verdict_outbox_aggregate');
    const c = new pg.Client({ connectionString: server.url('shop') });
    await c.connect();
    const sink = new NatsSink({ url: nats.url, stream: 'BP', subject: 'bp.events' });
    const relay = new PollingRelay({ db: c, sink, fence, partitions: 1 });
    try {
      const o = { backlogMax: 5, backlogWaitMs: 0 };
      for (let i = 0; i < 5; i++) await write(c, 'bp-1', o);
      await expect(write(c, 'bp-1', o)).rejects.toThrow(OutboxBacklogFull);
      await expect(write(c, 'bp-1', o)).rejects.toThrow(
        /holds 5 or more unpublished events \(backlogMax 5\).*nothing was written/,
      );
      // Refused even in a transaction that commits anyway: no row, and the aggregate's seq did not move.
      await c.query('BEGIN');
      await expect(enqueue(c, { aggregate: 'bp-1', type: 't', payload: {} }, o)).rejects.toThrow(OutboxBacklogFull);
      await c.query('COMMIT');
      expect(await unpublished()).toBe(5);
      expect(
        (
          await sql<{ seq: string }>(
            server.url('shop'),
            "SELECT seq FROM verdict_outbox_aggregate WHERE aggregate = 'bp-1'",
          )
        )[0].seq,
      ).toBe('5');

      // A bounded wait that ends with no room: the error, after about the wait.
      const t0 = Date.now();
      await expect(write(c, 'bp-1', { backlogMax: 5, backlogWaitMs: 300 })).rejects.toThrow(OutboxBacklogFull);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
      expect(Date.now() - t0).toBeLessThan(5_000);

      // A wait the relay ends: the write goes through once the backlog was published.
      const w = new pg.Client({ connectionString: server.url('shop') });
      await w.connect();
      try {
        const waiting = write(w, 'bp-1', { backlogMax: 5, backlogWaitMs: 20_000 });
        await sleep(200);
        await relay.round();
        await waiting;
      } finally {
        await w.end();
      }
      expect(await unpublished()).toBe(1);
      const seqs = await sql<{ seq: string }>(
        server.url('shop'),
        "SELECT seq FROM verdict_outbox WHERE aggregate = 'bp-1' ORDER BY seq",
      );
      expect(seqs.map((x) => Number(x.seq))).toEqual([1, 2, 3, 4, 5, 6]);

      // The bound's estimate spans published rows between an old unpublished one and the newest: the exact count lets
      // the write in.
      for (let i = 0; i < 8; i++) await write(c, `spread-${i}`, { backlogMax: 100, backlogWaitMs: 0 });
      await sql(
        server.url('shop'),
        "UPDATE verdict_outbox SET published_at = clock_timestamp() WHERE published_at IS NULL AND aggregate <> 'bp-1'",
      );
      expect(await unpublished()).toBe(1);
      await write(c, 'spread-9', o);
      expect(await unpublished()).toBe(2);
    } finally {
      await sink.close();
      await c.end();
    }
  }, 60_000);
});
