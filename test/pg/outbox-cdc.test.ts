// The CDC relay on a real PostgreSQL with wal_level = logical: the
// unbounded-slot guard, commit order from the slot (a late commit with a
// smaller id is published after the transactions that committed before it),
// rolled-back rows never published, the slot advanced only past what the
// broker confirmed, retained WAL growing while nothing is confirmed, and a
// slot that belongs to another program refused.
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CdcRelay, checkCdcServer, ensureSlot, parseOutboxInsert, slots } from '../../src/outbox/cdc-relay.ts';
import { enqueue } from '../../src/outbox/enqueue.ts';
import type { OutboxMessage } from '../../src/outbox/message.ts';
import type { Fence } from '../../src/outbox/polling-relay.ts';
import { initSchema } from '../../src/outbox/schema.ts';
import type { Sink } from '../../src/outbox/sink.ts';
import { startPostgres, type PgServer } from './harness.ts';

let server: PgServer;
let url: string;
let db: pg.Client;

beforeAll(async () => {
  server = await startPostgres({
    databases: ['shop'],
    maxPreparedTransactions: null,
    settings: ['wal_level=logical', 'max_replication_slots=8', 'max_wal_senders=8'],
  });
  url = server.url('shop');
  db = new pg.Client({ connectionString: url });
  await db.connect();
  await initSchema(db, 'outbox');
}, 60_000);
afterAll(async () => {
  await db?.end();
  await server?.stop();
});

class RecordingSink implements Sink {
  readonly got: OutboxMessage[] = [];
  down = false;
  async publish(m: OutboxMessage): Promise<{ duplicate: boolean }> {
    if (this.down) throw new Error('broker unavailable');
    this.got.push(m);
    return { duplicate: false };
  }
  async close(): Promise<void> {}
}

const fence: Fence = { owned: () => new Map([[0, 4]]), valid: () => true, leaseName: (p) => `outbox/cdc-test/p${p}` };

async function write(aggregate: string, payload: unknown): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('BEGIN');
  await enqueue(c, { aggregate, type: 't', payload });
  await c.query('COMMIT');
  await c.end();
}

describe('CDC relay', () => {
  it('refuses max_slot_wal_keep_size = -1 saying why, unless allowed; accepts a bounded one', async () => {
    await expect(checkCdcServer(db, false)).rejects.toThrow(
      /max_slot_wal_keep_size = -1: .*412 GB.*--allow-unbounded-slot/,
    );
    await checkCdcServer(db, true);
    await db.query(`ALTER SYSTEM SET max_slot_wal_keep_size = '1GB'`);
    await db.query('SELECT pg_reload_conf()');
    await new Promise((r) => setTimeout(r, 500));
    await checkCdcServer(db, false);
  });

  it('publishes in commit order, a late commit included, never a rolled-back row; advances the slot only past confirmed events', async () => {
    await ensureSlot(db, 'verdict_outbox_test');
    const sink = new RecordingSink();
    const relay = new CdcRelay({ db, sink, fence, slot: 'verdict_outbox_test' });
    const t1 = new pg.Client({ connectionString: url });
    await t1.connect();
    await t1.query('BEGIN');
    const late = await enqueue(t1, { aggregate: 'order-1', type: 'created', payload: { it: "it's late" } });
    await write('order-2', { n: 2 });
    await write('order-3', { n: 3 });
    const rb = new pg.Client({ connectionString: url });
    await rb.connect();
    await rb.query('BEGIN');
    await enqueue(rb, { aggregate: 'order-9', type: 'created', payload: {} });
    await rb.query('ROLLBACK');
    await rb.end();
    await relay.round();
    expect(sink.got.map((m) => m.aggregate).sort()).toEqual(['order-2', 'order-3']);
    await t1.query('COMMIT');
    await t1.end();
    for (let i = 0; i < 3; i++) await relay.round();
    expect(sink.got.map((m) => m.aggregate)).toEqual(expect.arrayContaining(['order-1']));
    expect(sink.got.find((m) => m.id === late.id)?.payload).toEqual({ it: "it's late" });
    expect(sink.got.map((m) => m.aggregate)).not.toContain('order-9');
    expect(sink.got.every((m) => m.epoch === 4)).toBe(true);
    expect(sink.got).toHaveLength(3);
    // Every confirmed row is marked published (prunable); the late one too.
    const marks = await db.query<{ aggregate: string; published: boolean }>(
      "SELECT aggregate, published_at IS NOT NULL AS published FROM verdict_outbox WHERE aggregate LIKE 'order-%' ORDER BY aggregate",
    );
    expect(marks.rows).toEqual([
      { aggregate: 'order-1', published: true },
      { aggregate: 'order-2', published: true },
      { aggregate: 'order-3', published: true },
    ]);
    // The slot moved past everything: nothing is read again.
    expect((await relay.round()).read).toBe(0);
    for (let i = 0; i < 4; i++) await write('acct-1', { i });
    for (let i = 0; i < 3; i++) await relay.round();
    expect(sink.got.filter((m) => m.aggregate === 'acct-1').map((m) => m.seq)).toEqual([1, 2, 3, 4]);
  });

  it('a broker that is down: the slot is not advanced, its retained WAL grows while writes continue; then everything goes', async () => {
    const sink = new RecordingSink();
    sink.down = true;
    const relay = new CdcRelay({ db, sink, fence, slot: 'verdict_outbox_test', onError: () => {} });
    const before = (await slots(db)).find((s) => s.slot === 'verdict_outbox_test')?.retainedBytes ?? 0;
    for (let i = 0; i < 50; i++) await write(`cart-${i % 5}`, { pad: randomBytes(1_000).toString('hex') });
    const r = await relay.round();
    expect(r.advancedTo).toBeNull();
    const unmarked = async (): Promise<number> =>
      Number(
        (
          await db.query(
            "SELECT count(*) AS n FROM verdict_outbox WHERE aggregate LIKE 'cart-%' AND published_at IS NULL",
          )
        ).rows[0].n,
      );
    // Nothing confirmed, nothing marked.
    expect(await unmarked()).toBe(50);
    const after = (await slots(db)).find((s) => s.slot === 'verdict_outbox_test');
    expect(after?.retainedBytes).toBeGreaterThan(before + 50 * 1_000);
    expect(after?.walStatus).toBe('reserved');
    sink.down = false;
    for (let i = 0; i < 5; i++) await relay.round();
    for (let a = 0; a < 5; a++)
      expect(sink.got.filter((m) => m.aggregate === `cart-${a}`).map((m) => m.seq)).toEqual([
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
      ]);
    // Confirmed, so marked published: prunable like the polling relay's rows.
    expect(await unmarked()).toBe(0);
  });

  it("reads from the slot only BEGIN, COMMIT and outbox inserts: not its own published_at marks, not the writers' other tables; every event still goes", async () => {
    await ensureSlot(db, 'verdict_outbox_filter');
    await db.query('CREATE TABLE IF NOT EXISTS cdc_orders (id text PRIMARY KEY)');
    // What the relay got back from the slot, line by line.
    const read: string[] = [];
    const spy = {
      query: async <R extends Record<string, unknown>>(text: string, values?: unknown[]) => {
        const r = await db.query<R>(text, values);
        if (text.includes('pg_logical_slot_peek_changes')) for (const row of r.rows) read.push(String(row.data));
        return { rows: r.rows, rowCount: r.rowCount };
      },
    };
    const sink = new RecordingSink();
    const relay = new CdcRelay({ db: spy, sink, fence, slot: 'verdict_outbox_filter' });
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query('BEGIN');
    await c.query("INSERT INTO cdc_orders VALUES ('o-1')");
    // A payload that spells other test_decoding lines must not fool the filter.
    await enqueue(c, {
      aggregate: 'filter-1',
      type: 't',
      payload: { text: 'COMMIT 1 BEGIN 2 table public.verdict_outbox: UPDATE: x' },
    });
    await c.query('COMMIT');
    await c.end();
    await relay.round();
    // The round marked its event published (an UPDATE through the slot); the next write comes after it.
    await write('filter-1', { n: 2 });
    await relay.round();
    await relay.round();
    expect(sink.got.filter((m) => m.aggregate === 'filter-1').map((m) => m.seq)).toEqual([1, 2]);
    expect(read.filter((l) => l.startsWith('table public.verdict_outbox: INSERT: '))).toHaveLength(2);
    expect(
      read.filter((l) => !/^(BEGIN|COMMIT) /.test(l) && !l.startsWith('table public.verdict_outbox: INSERT: ')),
    ).toEqual([]);
    expect(
      Number(
        (
          await db.query(
            "SELECT count(*) AS n FROM verdict_outbox WHERE aggregate = 'filter-1' AND published_at IS NULL",
          )
        ).rows[0].n,
      ),
    ).toBe(0);
    await db.query(`SELECT pg_drop_replication_slot('verdict_outbox_filter')`);
  });

  it('verdict outbox slots lists every slot; the lag alert fires when the relay is stopped while writes continue', async () => {
    const verdict = (args: string[]) =>
      spawnSync(process.execPath, [join(import.meta.dirname, '..', '..', 'bin', 'verdict.mjs'), ...args], {
        encoding: 'utf8',
        timeout: 60_000,
      });
    // The relay of the tests above is stopped; writes continue.
    for (let i = 0; i < 30; i++) await write('late-1', { pad: randomBytes(1_000).toString('hex') });
    const ok = verdict(['outbox', 'slots', '--pg-url', url, '--json']);
    expect(ok.status, ok.stderr).toBe(0);
    const listed = JSON.parse(ok.stdout) as {
      slot: string;
      active: boolean;
      walStatus: string;
      retainedBytes: number;
    }[];
    const mine = listed.find((s) => s.slot === 'verdict_outbox_test');
    expect(mine).toMatchObject({ active: false, walStatus: 'reserved' });
    const alert = verdict(['outbox', 'slots', '--pg-url', url, '--warn-bytes', String(30 * 1_000)]);
    expect(alert.status).toBe(1);
    expect(alert.stdout).toMatch(/^slot\tplugin\tactive\twal_status\tretained_bytes\n/);
    expect(alert.stderr).toMatch(
      /WARN slot verdict_outbox_test retains \d+ bytes of WAL, above --warn-bytes 30000 and nobody reads it/,
    );
  }, 120_000);

  it('refuses a slot that belongs to another program', async () => {
    await db.query(`SELECT pg_create_logical_replication_slot('someone_else', 'pgoutput')`);
    await expect(ensureSlot(db, 'someone_else')).rejects.toThrow(
      /uses plugin pgoutput, not test_decoding: it belongs to another program/,
    );
  });

  it('parses test_decoding lines, quotes included, and ignores other tables', () => {
    expect(
      parseOutboxInsert(
        `table public.verdict_outbox: INSERT: id[bigint]:7 event_id[text]:'e''1' payload[jsonb]:'{"a": "b c"}' published_at[timestamp with time zone]:null`,
      ),
    ).toEqual({
      id: '7',
      event_id: "e'1",
      payload: '{"a": "b c"}',
      published_at: null,
    });
    expect(parseOutboxInsert('table public.orders: INSERT: id[bigint]:7')).toBeNull();
  });
});
