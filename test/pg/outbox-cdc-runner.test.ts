// The CDC relay as it runs (RelayRunner), on a real PostgreSQL with
// wal_level = logical, for the four defects of issue 39, finding 11:
//
//   a. a standby started while the active relay reads the slot waits for the
//      lease instead of refusing the slot ("in use by PostgreSQL process N");
//   b. a lost slot (wal_status = lost) is refused at start, stops a running
//      relay with one line and its alert up, and fails `outbox slots`;
//   c. the lag alert clears once the slot has nothing to deliver, though the
//      slot still retains WAL (restart_lsn has not moved);
//   d. the published mark is fenced by the lease epoch: a relay that lost its
//      lease marks nothing the new holder marked, and does not move the slot.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CdcRelay, ensureSlot, slots } from '../../src/outbox/cdc-relay.ts';
import { enqueue } from '../../src/outbox/enqueue.ts';
import type { OutboxMessage } from '../../src/outbox/message.ts';
import type { Fence } from '../../src/outbox/polling-relay.ts';
import { RelayRunner, RelayStartError, type RelayLeases } from '../../src/outbox/relay-runner.ts';
import { initSchema } from '../../src/outbox/schema.ts';
import type { Sink } from '../../src/outbox/sink.ts';
import { startPostgres, waitFor, type PgServer } from './harness.ts';

const PG_BIN = process.env.VERDICT_PG_BIN ?? '/usr/lib/postgresql/15/bin';

let server: PgServer;
let url: string;
let db: pg.Client;
const children: ChildProcess[] = [];

beforeAll(async () => {
  server = await startPostgres({
    databases: ['shop'],
    maxPreparedTransactions: null,
    settings: [
      'wal_level=logical',
      'max_replication_slots=8',
      'max_wal_senders=8',
      'max_slot_wal_keep_size=1GB',
      'min_wal_size=32MB',
      'max_wal_size=64MB',
    ],
  });
  url = server.url('shop');
  db = new pg.Client({ connectionString: url });
  await db.connect();
  await initSchema(db, 'outbox');
}, 60_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await db?.end();
  await server?.stop();
});

class RecordingSink implements Sink {
  readonly got: OutboxMessage[] = [];
  async publish(m: OutboxMessage): Promise<{ duplicate: boolean }> {
    this.got.push(m);
    return { duplicate: false };
  }
  async close(): Promise<void> {}
}

/** The relay's leases, by hand: `held` says whether this relay holds the one CDC lease (at `epoch`). */
function leases(epoch: number, lease: string): RelayLeases & { held: boolean } {
  const l = {
    held: false,
    owned: (): ReadonlyMap<number, number> => (l.held ? new Map([[0, epoch]]) : new Map()),
    valid: (_p: number, e: number) => l.held && e === epoch,
    leaseName: (p: number) => `${lease}/p${p}`,
    refresh: async () => {},
    releaseAll: async () => {},
    refreshEveryMs: 1_000,
    relays: 1,
  };
  return l;
}

function runner(slot: string, keeper: RelayLeases, lines: string[], warnBytes = 1024 ** 3): RelayRunner {
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(s) });
  return new RelayRunner({
    relay: 'cdc-test',
    pgUrl: url,
    sink: new RecordingSink(),
    keeper,
    mode: 'cdc',
    partitions: 1,
    slot,
    allowUnboundedSlot: false,
    idleMs: 20,
    batchMax: 500,
    publishTimeoutMs: 2_000,
    warnLagMs: 60_000,
    warnBytes,
    lagEveryMs: 60_000,
    log,
  });
}

async function write(aggregate: string, n = 1): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  for (let i = 0; i < n; i++) {
    await c.query('BEGIN');
    await enqueue(c, { aggregate, type: 't', payload: { i } });
    await c.query('COMMIT');
  }
  await c.end();
}

async function unpublished(aggregatePrefix: string): Promise<number> {
  return Number(
    (
      await db.query('SELECT count(*) AS n FROM verdict_outbox WHERE aggregate LIKE $1 AND published_at IS NULL', [
        `${aggregatePrefix}%`,
      ])
    ).rows[0].n,
  );
}

async function slotOf(slot: string) {
  return (await slots(db)).find((s) => s.slot === slot);
}

const alert = async (r: RelayRunner): Promise<number> => (await r.metrics.lagAlert.get()).values[0]?.value ?? 0;

describe('the CDC relay running', () => {
  it('a: a standby started while another program reads the slot starts and waits for the lease; holding it, it publishes what was written meanwhile', async () => {
    await ensureSlot(db, 'standby_slot');
    // pg_recvlogical stands for the active relay: it holds the slot (active, with its pid) for as long as it runs.
    const reader = spawn(
      join(PG_BIN, 'pg_recvlogical'),
      ['-d', url, '--slot', 'standby_slot', '--start', '-f', '/dev/null'],
      { stdio: 'ignore' },
    );
    children.push(reader);
    await waitFor(
      'pg_recvlogical to hold the slot',
      async () => (await slotOf('standby_slot'))?.active === true,
      20_000,
    );
    const keeper = leases(1, 'outbox/standby');
    const lines: string[] = [];
    const r = runner('standby_slot', keeper, lines);
    // The check a relay makes before it holds the lease does not look at who reads the slot.
    expect((await slotOf('standby_slot'))?.active).toBe(true);
    await r.check();
    r.start();
    let failed = false;
    void r.failed.then(() => (failed = true));
    await write('standby-');
    await new Promise((res) => setTimeout(res, 500));
    expect(await unpublished('standby-')).toBe(1);
    // The active reader goes away and this relay gets the lease: it takes over.
    reader.kill('SIGTERM');
    await waitFor('the slot to be free', async () => (await slotOf('standby_slot'))?.active === false, 20_000);
    keeper.held = true;
    await waitFor(
      'the standby to publish once it holds the lease',
      async () => (await unpublished('standby-')) === 0,
      20_000,
    );
    await r.stop();
    expect(failed).toBe(false);
    await db.query(`SELECT pg_drop_replication_slot('standby_slot')`);
  }, 60_000);

  it('c: the lag alert is up while rows wait, and clears once the slot has nothing to deliver, though the slot still retains WAL', async () => {
    await ensureSlot(db, 'drain_slot');
    const keeper = leases(1, 'outbox/drain');
    const lines: string[] = [];
    // Any retained WAL is above 1 byte: only "something to deliver" decides.
    const r = runner('drain_slot', keeper, lines, 1);
    await write('drain-', 20);
    await r.sampleLag();
    expect(await alert(r)).toBe(1);
    keeper.held = true;
    r.start();
    await waitFor('the relay to drain the slot', async () => (await unpublished('drain-')) === 0, 20_000);
    await r.stop();
    await r.sampleLag();
    const retained = (await r.metrics.retainedBytes.get()).values[0]?.value ?? 0;
    // The slot still retains WAL (restart_lsn moves only later): the old rule, bytes alone, would keep the alert up.
    expect(retained).toBeGreaterThan(1);
    expect(await alert(r)).toBe(0);
    expect(lines.some((l) => /outbox lag back below the warning threshold/.test(l))).toBe(true);
    await db.query(`SELECT pg_drop_replication_slot('drain_slot')`);
  }, 60_000);

  it('d: a relay that lost its lease marks nothing the new holder marked, and does not move the slot', async () => {
    await ensureSlot(db, 'fence_slot');
    const lease = 'outbox/fence';
    const fenceAt = (epoch: number): Fence => ({
      owned: () => new Map([[0, epoch]]),
      valid: () => true,
      leaseName: (p) => `${lease}/p${p}`,
    });
    const newSink = new RecordingSink();
    const oldSink = new RecordingSink();
    const holder = new CdcRelay({ db, sink: newSink, fence: fenceAt(8), slot: 'fence_slot' });
    const stale = new CdcRelay({ db, sink: oldSink, fence: fenceAt(7), slot: 'fence_slot' });
    await write('fence-a');
    // The new holder (epoch 8) publishes and marks fence-a.
    expect(await holder.round()).toMatchObject({ published: 1, fenced: 0 });
    const markedAt = (await db.query("SELECT published_at FROM verdict_outbox WHERE aggregate = 'fence-a'")).rows[0]
      .published_at as Date;
    await write('fence-b');
    const before = (await slotOf('fence_slot'))?.retainedBytes;
    // The old holder (epoch 7, paused while the lease moved) wakes up and runs a round: its publish happens, its mark
    // does not.
    const r = await stale.round();
    expect(r).toMatchObject({ fenced: 1, advancedTo: null });
    expect(oldSink.got.map((m) => m.aggregate)).toEqual(['fence-b']);
    expect(await unpublished('fence-b')).toBe(1);
    expect(
      (await db.query("SELECT published_at FROM verdict_outbox WHERE aggregate = 'fence-a'")).rows[0].published_at,
    ).toEqual(markedAt);
    expect((await slotOf('fence_slot'))?.retainedBytes).toBeGreaterThanOrEqual(before ?? 0);
    // The new holder still finds fence-b in the slot, publishes it with its epoch and marks it.
    expect(await holder.round()).toMatchObject({ published: 1, fenced: 0 });
    expect(newSink.got.map((m) => [m.aggregate, m.epoch])).toEqual([
      ['fence-a', 8],
      ['fence-b', 8],
    ]);
    expect(await unpublished('fence-')).toBe(0);
    await db.query(`SELECT pg_drop_replication_slot('fence_slot')`);
  }, 60_000);

  it('b: a lost slot is refused at start, stops a running relay with one line and its alert up, and fails verdict outbox slots', async () => {
    await ensureSlot(db, 'lost_slot');
    await write('lost-');
    // The slot falls further behind than max_slot_wal_keep_size.
    await db.query(`ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'`);
    await db.query('SELECT pg_reload_conf()');
    await db.query('CREATE TABLE IF NOT EXISTS ballast (x text)');
    await waitFor(
      'the slot to be lost',
      async () => {
        await db.query(`INSERT INTO ballast SELECT repeat('x', 1000) FROM generate_series(1, 2000)`);
        await db.query('SELECT pg_switch_wal()');
        await db.query('CHECKPOINT');
        return (await slotOf('lost_slot'))?.walStatus === 'lost';
      },
      30_000,
    );
    const keeper = leases(1, 'outbox/lost');
    keeper.held = true;
    const lines: string[] = [];
    const refused = runner('lost_slot', keeper, lines);
    await expect(refused.check()).rejects.toThrow(RelayStartError);
    await expect(refused.check()).rejects.toThrow(/replication slot lost_slot is lost \(wal_status = lost\)/);
    // A relay already running when its slot is lost: it stops, says so once, and keeps its alert up.
    const running = runner('lost_slot', keeper, lines);
    running.start();
    const why = await running.failed;
    expect(why.message).toMatch(
      /replication slot lost_slot is lost \(wal_status = lost\).*pg_drop_replication_slot\('lost_slot'\)/,
    );
    await running.stop();
    expect(lines.filter((l) => /outbox relay stops: its replication slot is lost/.test(l))).toHaveLength(1);
    expect(await alert(running)).toBe(1);
    // Measured on its own, a lost slot raises the alert too (it retains no bytes: its restart_lsn is gone).
    const measuring = runner('lost_slot', keeper, lines);
    await measuring.sampleLag();
    expect(await alert(measuring)).toBe(1);
    // The operator's check fails on it, whatever --warn-bytes says.
    const verdict = (args: string[]) =>
      spawnSync(process.execPath, [join(import.meta.dirname, '..', '..', 'bin', 'verdict.mjs'), ...args], {
        encoding: 'utf8',
        timeout: 60_000,
      });
    const check = verdict(['outbox', 'slots', '--pg-url', url, '--warn-bytes', String(1024 ** 3)]);
    expect(check.status, check.stderr).toBe(1);
    expect(check.stderr).toMatch(/WARN slot lost_slot is lost \(wal_status = lost\)/);
    await db.query(`ALTER SYSTEM SET max_slot_wal_keep_size = '1GB'`);
    await db.query('SELECT pg_reload_conf()');
  }, 90_000);
});
