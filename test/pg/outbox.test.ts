// The outbox and inbox against a real PostgreSQL: init, enqueue in the
// application's transaction, the polling relay (late commits, rollbacks,
// order per aggregate, a broker that is down, a crash between the broker's
// confirmation and the mark) and the inbox (exactly-once effect, stale
// epochs, the retention rule). The sink here records what it is given
// in-process; the relay's contract with it is the Sink interface.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue } from '../../src/outbox/enqueue.ts';
import { Inbox } from '../../src/outbox/inbox.ts';
import type { OutboxMessage } from '../../src/outbox/message.ts';
import { markPublished, PollingRelay, type Fence } from '../../src/outbox/polling-relay.ts';
import { initSchema } from '../../src/outbox/schema.ts';
import type { Sink } from '../../src/outbox/sink.ts';
import { sql, startPostgres, type PgServer } from './harness.ts';

let server: PgServer;
let shop: string;
let consumer: string;

beforeAll(async () => {
  server = await startPostgres({
    databases: ['shop', 'consumer', 'empty', 'cli'],
    maxPreparedTransactions: null,
    private: true,
  });
  shop = server.url('shop');
  consumer = server.url('consumer');
}, 60_000);
afterAll(async () => server?.stop());

class RecordingSink implements Sink {
  readonly got: OutboxMessage[] = [];
  down = false;
  /** Confirms, then throws as if the relay crashed before marking (once per id listed). */
  readonly crashAfter = new Set<string>();
  async publish(m: OutboxMessage): Promise<{ duplicate: boolean }> {
    if (this.down) throw new Error('broker unavailable');
    const duplicate = this.got.some((g) => g.id === m.id);
    this.got.push(m);
    if (this.crashAfter.delete(m.id)) throw new Error('relay crashed after the confirmation');
    return { duplicate };
  }
  async close(): Promise<void> {}
}

const allPartitions = (n: number, epoch = 1): Fence => ({
  owned: () => new Map(Array.from({ length: n }, (_, p) => [p, epoch])),
  valid: () => true,
  leaseName: (p) => `outbox/test/p${p}`,
});

async function client(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}

async function inTxn(url: string, fn: (c: pg.Client) => Promise<void>): Promise<void> {
  const c = await client(url);
  try {
    await c.query('BEGIN');
    await fn(c);
    await c.query('COMMIT');
  } finally {
    await c.end();
  }
}

async function drain(relay: PollingRelay, rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) if ((await relay.round()).read === 0) return;
}

describe('outbox', () => {
  it('init is idempotent and versioned; enqueue before init names the missing table and the fix', async () => {
    const c = await client(server.url('empty'));
    try {
      await c.query('BEGIN');
      await expect(enqueue(c, { aggregate: 'a', type: 't', payload: {} })).rejects.toThrow(
        /outbox tables are missing; run verdict outbox init --pg-url URL/,
      );
      await c.query('ROLLBACK');
    } finally {
      await c.end();
    }
    const d = await client(shop);
    try {
      expect(await initSchema(d, 'outbox')).toEqual({ created: true, version: 2 });
      expect(await initSchema(d, 'outbox')).toEqual({ created: false, version: 2 });
      await d.query(`UPDATE verdict_outbox_meta SET value = '9' WHERE key = 'outbox_version'`);
      await expect(initSchema(d, 'outbox')).rejects.toThrow(/schema version 9, newer than this Verdict's 2/);
      await d.query(`UPDATE verdict_outbox_meta SET value = '1' WHERE key = 'outbox_version'`);
    } finally {
      await d.end();
    }
  });

  it('refuses a payload that is not JSON, and an empty aggregate, before anything is written', async () => {
    const c = await client(shop);
    try {
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      await expect(enqueue(c, { aggregate: 'a', type: 't', payload: cyclic })).rejects.toThrow(/payload is not JSON/);
      await expect(enqueue(c, { aggregate: 'a', type: 't', payload: Number.NaN })).rejects.toThrow(/payload holds NaN/);
      await expect(enqueue(c, { aggregate: 'a', type: 't', payload: undefined })).rejects.toThrow(
        /payload is not JSON \(undefined\)/,
      );
      await expect(enqueue(c, { aggregate: '', type: 't', payload: 1 })).rejects.toThrow(
        /aggregate must be a string of 1–200/,
      );
      expect(await sql(shop, 'SELECT * FROM verdict_outbox')).toEqual([]);
    } finally {
      await c.end();
    }
  });

  it('publishes a row committed late with a smaller id; never a rolled-back one; per aggregate in commit order', async () => {
    const sink = new RecordingSink();
    const db = await client(shop);
    const relay = new PollingRelay({ db, sink, fence: allPartitions(4), partitions: 4 });
    // T1 enqueues first (smaller id) and stays open while later transactions commit and are published.
    const t1 = await client(shop);
    await t1.query('BEGIN');
    const late = await enqueue(t1, { aggregate: 'order-1', type: 'created', payload: { n: 0 } });
    for (let i = 0; i < 5; i++)
      await inTxn(
        shop,
        async (c) => void (await enqueue(c, { aggregate: `order-${i + 2}`, type: 'created', payload: { n: i } })),
      );
    // A rolled-back transaction's event.
    const rb = await client(shop);
    await rb.query('BEGIN');
    const rolled = await enqueue(rb, { aggregate: 'order-9', type: 'created', payload: {} });
    await rb.query('ROLLBACK');
    await rb.end();
    await drain(relay);
    expect(sink.got.map((m) => m.aggregate).sort()).toEqual(['order-2', 'order-3', 'order-4', 'order-5', 'order-6']);
    await t1.query('COMMIT');
    await t1.end();
    await drain(relay);
    expect(sink.got.map((m) => m.id)).toContain(late.id);
    expect(sink.got.map((m) => m.id)).not.toContain(rolled.id);
    // Concurrent writers of one aggregate: the second waits for the first, so seq follows commit order.
    const a = await client(shop);
    const b = await client(shop);
    await a.query('BEGIN');
    await b.query('BEGIN');
    await enqueue(a, { aggregate: 'acct-7', type: 'debit', payload: { by: 'a' } });
    const bDone = enqueue(b, { aggregate: 'acct-7', type: 'debit', payload: { by: 'b' } });
    await new Promise((r) => setTimeout(r, 200));
    await a.query('COMMIT');
    await bDone;
    await b.query('COMMIT');
    await a.end();
    await b.end();
    await drain(relay);
    const acct = sink.got.filter((m) => m.aggregate === 'acct-7');
    expect(acct.map((m) => [m.seq, (m.payload as { by: string }).by])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
    expect(
      (await sql<{ n: string }>(shop, 'SELECT count(*) AS n FROM verdict_outbox WHERE published_at IS NULL'))[0].n,
    ).toBe('0');
    await db.end();
  });

  it('a broker that is down: nothing is marked published, the lag grows; once it is back everything goes, in order', async () => {
    const sink = new RecordingSink();
    sink.down = true;
    const db = await client(shop);
    const relay = new PollingRelay({ db, sink, fence: allPartitions(2), partitions: 2, onError: () => {} });
    for (let i = 0; i < 6; i++)
      await inTxn(
        shop,
        async (c) => void (await enqueue(c, { aggregate: `cart-${i % 2}`, type: 'item', payload: { i } })),
      );
    const r = await relay.round();
    expect(r).toMatchObject({ published: 0 });
    expect(r.failed).toBeGreaterThan(0);
    expect((await relay.lag()).unpublished).toBe(6);
    sink.down = false;
    await drain(relay);
    expect((await relay.lag()).unpublished).toBe(0);
    for (const agg of ['cart-0', 'cart-1'])
      expect(sink.got.filter((m) => m.aggregate === agg).map((m) => m.seq)).toEqual([1, 2, 3]);
    await db.end();
  });

  it('a crash between the confirmation and the mark republishes with the same message id; the inbox applies it once', async () => {
    const sink = new RecordingSink();
    const db = await client(shop);
    const relay = new PollingRelay({ db, sink, fence: allPartitions(1, 3), partitions: 1, onError: () => {} });
    let id = '';
    await inTxn(
      shop,
      async (c) => void ({ id } = await enqueue(c, { aggregate: 'inv-1', type: 'reserved', payload: { qty: 2 } })),
    );
    sink.crashAfter.add(id);
    await relay.round();
    await drain(relay);
    const copies = sink.got.filter((m) => m.id === id);
    expect(copies).toHaveLength(2);
    expect(copies.every((m) => m.epoch === 3)).toBe(true);
    const c = await client(consumer);
    try {
      await initSchema(c, 'inbox');
      await c.query('CREATE TABLE IF NOT EXISTS stock (sku text PRIMARY KEY, reserved int NOT NULL)');
      const inbox = new Inbox({ retentionMs: 2 * 24 * 3600_000 });
      const results = [];
      for (const m of copies)
        results.push(
          await inbox.handle(
            c,
            m,
            async (tx) =>
              void (await tx.query(
                'INSERT INTO stock VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET reserved = stock.reserved + $2',
                ['inv-1', 2],
              )),
          ),
        );
      expect(results).toEqual(['applied', 'duplicate']);
      expect(await sql(consumer, 'SELECT reserved FROM stock')).toEqual([{ reserved: 2 }]);
    } finally {
      await c.end();
    }
    await db.end();
  });

  it('a partition whose lease is not valid is not published; messages carry the epoch of their partition', async () => {
    const sink = new RecordingSink();
    const db = await client(shop);
    let valid = false;
    const fence: Fence = {
      owned: () => new Map([[0, 5]]),
      valid: () => valid,
      leaseName: (p) => `outbox/fenced-test/p${p}`,
    };
    const relay = new PollingRelay({ db, sink, fence, partitions: 1 });
    await inTxn(shop, async (c) => void (await enqueue(c, { aggregate: 'fenced', type: 't', payload: null })));
    await relay.round();
    expect(sink.got).toEqual([]);
    valid = true;
    await drain(relay);
    expect(sink.got.map((m) => [m.aggregate, m.epoch])).toEqual([['fenced', 5]]);
    await db.end();
  });
  it('the published mark is fenced by the lease epoch: a relay that lost its lease marks nothing once the new holder has marked', async () => {
    const db = await client(shop);
    const lease = 'outbox/handover';
    const at = (epoch: number): Fence => ({
      owned: () => new Map([[0, epoch]]),
      valid: () => true,
      leaseName: (p) => `${lease}/p${p}`,
    });
    const ids: string[] = [];
    for (const agg of ['handover-1', 'handover-2'])
      await inTxn(
        shop,
        async (c) => void ids.push((await enqueue(c, { aggregate: agg, type: 't', payload: null })).id),
      );
    const rowId = async (eventId: string): Promise<string> =>
      String((await db.query('SELECT id FROM verdict_outbox WHERE event_id = $1', [eventId])).rows[0].id);
    const [one, two] = [await rowId(ids[0]), await rowId(ids[1])];
    // The new holder (epoch 8) marks handover-1.
    expect(await markPublished(db, at(8), 0, 8, [one])).toBe(true);
    const markedAt = async (id: string) =>
      (await db.query('SELECT published_at FROM verdict_outbox WHERE id = $1', [id])).rows[0]
        .published_at as Date | null;
    const first = await markedAt(one);
    expect(first).not.toBeNull();
    // The old holder (epoch 7) had published both before it was paused: it marks neither, and rewrites nothing.
    expect(await markPublished(db, at(7), 0, 7, [one, two])).toBe(false);
    expect(await markedAt(one)).toEqual(first);
    expect(await markedAt(two)).toBeNull();
    // The same from a whole round of the polling relay: it publishes (the broker dedups by message id), marks nothing,
    // says so.
    const stale = new PollingRelay({ db, sink: new RecordingSink(), fence: at(7), partitions: 1 });
    const r = await stale.round();
    expect(r.fenced).toBe(1);
    expect(await markedAt(two)).toBeNull();
    // The holder marks handover-2; its own earlier mark stands.
    expect(await markPublished(db, at(8), 0, 8, [one, two])).toBe(true);
    expect(await markedAt(one)).toEqual(first);
    expect(await markedAt(two)).not.toBeNull();
    await db.end();
  });
});

describe('inbox', () => {
  it('refuses a retention window that does not exceed the relay retry horizon, saying why', () => {
    expect(() => new Inbox({ retentionMs: 3600_000 })).toThrow(
      /does not exceed the relay's retry horizon of 86400000 ms/,
    );
    expect(() => new Inbox({ retentionMs: 10_000, retryHorizonMs: 10_000 })).toThrow(/would take effect twice/);
  });

  it('drops a message of an older epoch that arrives after a newer one for the same aggregate; an effect that throws records nothing', async () => {
    const c = await client(consumer);
    try {
      await initSchema(c, 'inbox');
      const inbox = new Inbox({ retentionMs: 2_000, retryHorizonMs: 1_000 });
      const msg = (id: string, seq: number, epoch: number): OutboxMessage => ({
        id,
        aggregate: 'user-1',
        seq,
        type: 't',
        epoch,
        payload: {},
      });
      let effects = 0;
      const effect = async (): Promise<void> => void effects++;
      expect(await inbox.handle(c, msg('m1', 1, 2), effect)).toBe('applied');
      expect(await inbox.handle(c, msg('m0', 2, 1), effect)).toBe('stale-epoch');
      await expect(
        inbox.handle(c, msg('m2', 2, 2), async () => Promise.reject(new Error('effect failed'))),
      ).rejects.toThrow(/effect failed/);
      // Not recorded: the redelivery runs it.
      expect(await inbox.handle(c, msg('m2', 2, 2), effect)).toBe('applied');
      expect(effects).toBe(2);
      await new Promise((r) => setTimeout(r, 2_100));
      expect(await inbox.prune(c)).toBeGreaterThanOrEqual(2);
    } finally {
      await c.end();
    }
  });
});

describe('verdict outbox init', () => {
  const verdict = (args: string[]) =>
    spawnSync(process.execPath, [join(import.meta.dirname, '..', '..', 'bin', 'verdict.mjs'), ...args], {
      encoding: 'utf8',
      timeout: 60_000,
    });

  it('creates the tables once, then says they are present; --inbox creates the inbox tables; a bad URL is one line', () => {
    const first = verdict(['outbox', 'init', '--pg-url', server.url('cli')]);
    expect(first.stdout, first.stderr).toBe('outbox tables created (schema version 2)\n');
    expect(verdict(['outbox', 'init', '--pg-url', server.url('cli')]).stdout).toBe(
      'outbox tables already present (schema version 2)\n',
    );
    expect(verdict(['outbox', 'init', '--pg-url', server.url('cli'), '--inbox']).stdout).toBe(
      'inbox tables created (schema version 2)\n',
    );
    const bad = verdict(['outbox', 'init', '--pg-url', 'postgres://postgres@127.0.0.1:1/x']);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/^verdict: cannot connect to PostgreSQL at --pg-url: .*\n$/);
    const typo = verdict(['outbox', 'init', '--pg-ur', 'x']);
    expect(typo.status).toBe(64);
    expect(typo.stderr).toMatch(/unknown flag "--pg-ur" for verdict outbox init \(did you mean --pg-url\?\)/);
  }, 120_000);
});
