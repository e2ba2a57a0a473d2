// Outbox events per second and end-to-end latency (the writer's COMMIT
// returned → the consumer's effect committed through the inbox), for the
// polling and the CDC relay at 16 writers, beside the broker's own floors
// measured in the same run: raw JetStream publishes waiting for the PubAck,
// 16 at a time, and the same with a consumer reading and acknowledging every
// message (publish + consume, what the outbox path is compared with). Each
// relay runs twice: at saturation (16 writers as fast as they can; the
// writers' backpressure bounds the backlog, and its largest sample is
// reported) and at a fixed 200 events/s for the latency; then, the writers
// out of the way, a backlog committed first is drained (the outbox's own
// capacity, beside the publish + consume floor). One PostgreSQL
// (wal_level = logical) and one nats-server, both started here. The relay
// runs in this process under a fixed fence (every partition, epoch 1),
// pausing 20 ms after an empty round (the relay's default --idle-ms): lease
// renewals are off the publish path, so the figures are the relay's, the
// broker's and the inbox's.
//
//   npm run bench -- outbox [--quick] prints the figures as JSON
//   VERDICT_OUTBOX_BENCH_MS=3000 shortens each window.
// bench/main.ts runs measureOutbox() in the full run: keys outbox.polling_eps,
// outbox.cdc_eps, outbox.e2e_p99_ms (polling) and the rest of OutboxFigures.
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { AckPolicy, connect, DeliverPolicy } from 'nats';
import pg from 'pg';
import { CdcRelay, ensureSlot } from '../../src/outbox/cdc-relay.ts';
import { enqueue, OutboxBacklogFull } from '../../src/outbox/enqueue.ts';
import { Inbox } from '../../src/outbox/inbox.ts';
import { consumeToInbox, NatsSink } from '../../src/outbox/nats-sink.ts';
import { PollingRelay, type Fence } from '../../src/outbox/polling-relay.ts';
import { initSchema } from '../../src/outbox/schema.ts';
import { startNats } from '../../test/nats-harness.ts';
import { startPostgres, withClient } from '../../test/pg/harness.ts';

export interface OutboxFigures {
  polling_eps: number;
  cdc_eps: number;
  /** Polling relay, commit → consumer effect. */
  e2e_p50_ms: number;
  e2e_p99_ms: number;
  cdc_e2e_p50_ms: number;
  cdc_e2e_p99_ms: number;
  /** Raw JetStream publish + PubAck, 16 in flight: the broker's floor. */
  floor_publish_eps: number;
  floor_publish_p50_ms: number;
  /** The same publishes with a durable consumer reading and acknowledging each: messages consumed per second. */
  floor_publish_consume_eps: number;
  /** Delivered events/s at saturation over floor_publish_consume_eps. */
  polling_over_floor: number;
  cdc_over_floor: number;
  /**
   * Events the 16 writers committed per second in the polling saturation run: what bounds polling_eps when the outbox
   * keeps up.
   */
  writers_commit_eps: number;
  /**
   * The outbox's own capacity: drain_events committed first, then relayed and consumed; events/s, and over the publish
   * + consume floor.
   */
  drain_events: number;
  polling_drain_eps: number;
  cdc_drain_eps: number;
  polling_drain_over_floor: number;
  cdc_drain_over_floor: number;
  /** Largest unpublished backlog sampled at saturation (writers' backpressure bound: backlog_max). */
  polling_backlog_max_seen: number;
  cdc_backlog_max_seen: number;
  backlog_max: number;
  /** Writes refused by backpressure (OutboxBacklogFull) at saturation, then retried. */
  polling_refused: number;
  cdc_refused: number;
  /** At a fixed 200 events/s, commit → consumer effect. */
  rate_eps: number;
  /** The broker alone at that rate: publish → a consumer receiving the message. */
  floor_p50_ms_at_rate: number;
  floor_p99_ms_at_rate: number;
  /** PostgreSQL alone at that rate: BEGIN, a one-row INSERT, COMMIT. */
  pg_commit_p50_ms_at_rate: number;
  pg_commit_p99_ms_at_rate: number;
  polling_p50_ms_at_rate: number;
  polling_p99_ms_at_rate: number;
  cdc_p50_ms_at_rate: number;
  cdc_p99_ms_at_rate: number;
  events_polling: number;
  events_cdc: number;
  writers: number;
  window_ms: number;
}

const WRITERS = 16;
const RATE_EPS = 200;
const RELAY_IDLE_MS = 20;
const BACKLOG_MAX = 10_000;
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const r2 = (x: number): number => Math.round(x * 100) / 100;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const allPartitions: Fence = {
  owned: () => new Map([[0, 1]]),
  valid: () => true,
  leaseName: (p) => `outbox/bench/p${p}`,
};

async function floor(url: string, windowMs: number): Promise<{ eps: number; p50: number }> {
  const nc = await connect({ servers: url.replace('nats://', '') });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name: 'FLOOR', subjects: ['floor.events'], duplicate_window: 120_000_000_000 });
  const js = nc.jetstream();
  const lat: number[] = [];
  const body = new TextEncoder().encode(
    JSON.stringify({ id: 'x'.repeat(36), aggregate: 'order-1', seq: 1, type: 'bench', epoch: 1, payload: { n: 1 } }),
  );
  const endAtMs = performance.now() + windowMs;
  let n = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; performance.now() < endAtMs; i++) {
        const t = performance.now();
        await js.publish('floor.events', body, { msgID: `f-${w}-${i}` });
        lat.push(performance.now() - t);
        n++;
      }
    }),
  );
  await nc.close();
  return { eps: Math.round(n / (windowMs / 1_000)), p50: r2(pct(lat, 50)) };
}

/**
 * Publishes as floor() does while a durable consumer reads and acknowledges each message: messages consumed per second.
 */
async function floorConsume(url: string, windowMs: number): Promise<number> {
  const nc = await connect({ servers: url.replace('nats://', '') });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name: 'FLOOR2', subjects: ['floor2.events'], duplicate_window: 120_000_000_000 });
  await jsm.consumers.add('FLOOR2', {
    durable_name: 'floor2',
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    max_ack_pending: 2_048,
  });
  const js = nc.jetstream();
  const messages = await (await js.consumers.get('FLOOR2', 'floor2')).consume({ max_messages: 256 });
  const body = new TextEncoder().encode(
    JSON.stringify({ id: 'x'.repeat(36), aggregate: 'order-1', seq: 1, type: 'bench', epoch: 1, payload: { n: 1 } }),
  );
  const startAtMs = performance.now();
  const endAtMs = startAtMs + windowMs;
  let consumed = 0;
  const reading = (async () => {
    for await (const m of messages) {
      m.ack();
      if (performance.now() < endAtMs) consumed++;
      else break;
    }
  })();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; performance.now() < endAtMs; i++)
        await js.publish('floor2.events', body, { msgID: `g-${w}-${i}` });
    }),
  );
  messages.stop();
  await reading;
  await nc.close();
  return Math.round(consumed / (windowMs / 1_000));
}

/**
 * The broker's latency floor at the fixed rate: 16 publishers together at
 * `rateEps`, each message timed from its publish to a durable consumer
 * receiving it (then acknowledged); p50 and p99.
 */
async function floorAtRate(url: string, rateEps: number, windowMs: number): Promise<{ p50: number; p99: number }> {
  const nc = await connect({ servers: url.replace('nats://', '') });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name: 'FLOOR3', subjects: ['floor3.events'], duplicate_window: 120_000_000_000 });
  await jsm.consumers.add('FLOOR3', {
    durable_name: 'floor3',
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    max_ack_pending: 2_048,
  });
  const js = nc.jetstream();
  const messages = await (await js.consumers.get('FLOOR3', 'floor3')).consume({ max_messages: 256 });
  const sentAtMs = new Map<string, number>();
  const lat: number[] = [];
  let sent = 0;
  let publishing = true;
  const reading = (async () => {
    for await (const m of messages) {
      m.ack();
      const id = m.headers?.get('Nats-Msg-Id') ?? '';
      const t = sentAtMs.get(id);
      if (t !== undefined) lat.push(performance.now() - t);
      if (lat.length >= sent && sent > 0 && !publishing) break;
    }
  })();
  const body = new TextEncoder().encode(
    JSON.stringify({ id: 'x'.repeat(36), aggregate: 'order-1', seq: 1, type: 'bench', epoch: 1, payload: { n: 1 } }),
  );
  const startAtMs = performance.now();
  const endAtMs = startAtMs + windowMs;
  const gapMs = (1_000 * WRITERS) / rateEps;
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; ; i++) {
        const dueAtMs = startAtMs + (w / WRITERS) * gapMs + i * gapMs;
        if (dueAtMs >= endAtMs) break;
        await sleep(dueAtMs - performance.now());
        const id = `r-${w}-${i}`;
        sentAtMs.set(id, performance.now());
        sent++;
        await js.publish('floor3.events', body, { msgID: id });
      }
    }),
  );
  publishing = false;
  const byMs = performance.now() + 10_000;
  while (lat.length < sent && performance.now() < byMs) await sleep(20);
  messages.stop();
  await reading;
  await nc.close();
  return { p50: r2(pct(lat, 50)), p99: r2(pct(lat, 99)) };
}

/**
 * PostgreSQL's commit latency at the fixed rate, the other floor of the
 * path (the consumer's transaction commits once per event at that rate): 16
 * clients together at `rateEps`, each a one-row INSERT committed; p50 and p99.
 */
async function pgCommitAtRate(url: string, rateEps: number, windowMs: number): Promise<{ p50: number; p99: number }> {
  await withClient(url, (c) =>
    c.query('CREATE TABLE IF NOT EXISTS bench_commit_floor (id bigserial PRIMARY KEY, w int, i int)'),
  );
  const lat: number[] = [];
  const startAtMs = performance.now();
  const endAtMs = startAtMs + windowMs;
  const gapMs = (1_000 * WRITERS) / rateEps;
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      for (let i = 0; ; i++) {
        const dueAtMs = startAtMs + (w / WRITERS) * gapMs + i * gapMs;
        if (dueAtMs >= endAtMs) break;
        await sleep(dueAtMs - performance.now());
        const t = performance.now();
        await c.query('BEGIN');
        await c.query('INSERT INTO bench_commit_floor (w, i) VALUES ($1, $2)', [w, i]);
        await c.query('COMMIT');
        lat.push(performance.now() - t);
      }
      await c.end();
    }),
  );
  return { p50: r2(pct(lat, 50)), p99: r2(pct(lat, 99)) };
}

/**
 * 16 writers for windowMs, as fast as they can (`rateEps` null) or together
 * at `rateEps`, the relay and the consumer running; figures once every
 * committed event took effect.
 */
async function run(
  mode: 'polling' | 'cdc',
  rateEps: number | null,
  pgUrl: string,
  consumerUrl: string,
  natsUrl: string,
  windowMs: number,
): Promise<{ eps: number; p50: number; p99: number; events: number; refused: number; backlogMaxSeen: number }> {
  const tag = `${mode}${rateEps === null ? '' : `r${rateEps}`}`;
  const stream = tag.toUpperCase();
  const target = { url: natsUrl, stream, subject: `${tag}.events` };
  const sink = new NatsSink(target);
  const db = new pg.Client({ connectionString: pgUrl });
  await db.connect();
  const slot = `bench_${tag}`;
  if (mode === 'cdc') await ensureSlot(db, slot);
  const relay =
    mode === 'polling'
      ? new PollingRelay({ db, sink, fence: allPartitions, partitions: 1, batchMax: 1_000 })
      : new CdcRelay({ db, sink, fence: allPartitions, slot, changesMax: 3_000 });
  const committedAtMs = new Map<string, number>();
  const latencies: number[] = [];
  let lastEffectAtMs = 0;
  const consumer = await consumeToInbox({
    ...target,
    durable: `bench-${tag}`,
    inbox: new Inbox({ retentionMs: 3 * 24 * 3600_000 }),
    pgUrl: consumerUrl,
    effect: async () => {},
    onResult: (m, r) => {
      if (r !== 'applied') return;
      lastEffectAtMs = performance.now();
      const c = committedAtMs.get(m.id);
      if (c !== undefined) latencies.push(lastEffectAtMs - c);
    },
  });
  let relaying = true;
  const relayLoop = (async () => {
    while (relaying) if ((await relay.round()).read === 0) await sleep(RELAY_IDLE_MS);
  })();
  // The unpublished backlog, sampled: backpressure keeps it near BACKLOG_MAX at most.
  let backlogMaxSeen = 0;
  let sampling = true;
  const sampler = (async () => {
    const c = new pg.Client({ connectionString: pgUrl });
    await c.connect();
    while (sampling) {
      const r = await c.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM verdict_outbox WHERE published_at IS NULL',
      );
      backlogMaxSeen = Math.max(backlogMaxSeen, r.rows[0].n);
      await sleep(250);
    }
    await c.end();
  })();
  const startAtMs = performance.now();
  const endAtMs = startAtMs + windowMs;
  let events = 0;
  let refused = 0;
  const gapMs = rateEps === null ? 0 : (1_000 * WRITERS) / rateEps;
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      for (let i = 0; performance.now() < endAtMs; i++) {
        // At a fixed rate each writer keeps its own schedule, the 16 spread over one gap.
        if (rateEps !== null) {
          const dueAtMs = startAtMs + (w / WRITERS) * gapMs + i * gapMs;
          if (dueAtMs >= endAtMs) break;
          await sleep(dueAtMs - performance.now());
        }
        await c.query('BEGIN');
        try {
          const { id } = await enqueue(
            c,
            { aggregate: `${tag}-${w}-${i % 8}`, type: 'bench', payload: { w, i } },
            { backlogMax: BACKLOG_MAX },
          );
          await c.query('COMMIT');
          committedAtMs.set(id, performance.now());
          events++;
        } catch (err) {
          await c.query('ROLLBACK');
          if (!(err instanceof OutboxBacklogFull)) throw err;
          refused++;
        }
      }
      await c.end();
    }),
  );
  sampling = false;
  await sampler;
  const drainByMs = performance.now() + 120_000;
  while (consumer.counts.applied < events && performance.now() < drainByMs) await sleep(20);
  relaying = false;
  await relayLoop;
  await consumer.stop();
  await sink.close();
  await db.end();
  if (consumer.counts.applied < events)
    throw new Error(`outbox bench (${tag}): ${consumer.counts.applied} of ${events} events took effect within 120 s`);
  return {
    eps: Math.round(events / ((lastEffectAtMs - startAtMs) / 1_000)),
    p50: r2(pct(latencies, 50)),
    p99: r2(pct(latencies, 99)),
    events,
    refused,
    backlogMaxSeen,
  };
}

/**
 * The outbox's own capacity, the writers out of the way: `events` are
 * committed first (16 writers, 50 events a transaction), then the relay and
 * the consumer start; events/s from the relay's start to the last effect.
 */
async function drain(
  mode: 'polling' | 'cdc',
  pgUrl: string,
  consumerUrl: string,
  natsUrl: string,
  events: number,
): Promise<number> {
  const tag = `${mode}drain`;
  const target = { url: natsUrl, stream: tag.toUpperCase(), subject: `${tag}.events` };
  const sink = new NatsSink(target);
  const db = new pg.Client({ connectionString: pgUrl });
  await db.connect();
  const slot = `bench_${tag}`;
  if (mode === 'cdc') await ensureSlot(db, slot);
  const per = Math.ceil(events / WRITERS);
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      for (let i = 0; i < per; i += 50) {
        await c.query('BEGIN');
        for (let j = i; j < Math.min(per, i + 50); j++)
          await enqueue(
            c,
            { aggregate: `${tag}-${w}-${j % 8}`, type: 'bench', payload: { w, j } },
            { backlogMax: 1_000_000_000 },
          );
        await c.query('COMMIT');
      }
      await c.end();
    }),
  );
  const total = per * WRITERS;
  let lastEffectAtMs = 0;
  const consumer = await consumeToInbox({
    ...target,
    durable: `bench-${tag}`,
    inbox: new Inbox({ retentionMs: 3 * 24 * 3600_000 }),
    pgUrl: consumerUrl,
    effect: async () => {},
    onResult: () => void (lastEffectAtMs = performance.now()),
  });
  const relay =
    mode === 'polling'
      ? new PollingRelay({ db, sink, fence: allPartitions, partitions: 1, batchMax: 1_000 })
      : new CdcRelay({ db, sink, fence: allPartitions, slot, changesMax: 3_000 });
  let relaying = true;
  const startAtMs = performance.now();
  const relayLoop = (async () => {
    while (relaying) if ((await relay.round()).read === 0) await sleep(RELAY_IDLE_MS);
  })();
  const byMs = performance.now() + 120_000;
  while (consumer.counts.applied < total && performance.now() < byMs) await sleep(20);
  relaying = false;
  await relayLoop;
  await consumer.stop();
  await sink.close();
  await db.end();
  if (consumer.counts.applied < total)
    throw new Error(`outbox bench (${tag}): ${consumer.counts.applied} of ${total} events took effect within 120 s`);
  return Math.round(total / ((lastEffectAtMs - startAtMs) / 1_000));
}

export async function measureOutbox(windowMs: number): Promise<OutboxFigures> {
  const [server, nats] = await Promise.all([
    startPostgres({
      databases: ['shop', 'consumer'],
      maxPreparedTransactions: null,
      settings: ['wal_level=logical', 'max_replication_slots=4', 'max_wal_senders=4'],
    }),
    startNats(),
  ]);
  try {
    await withClient(server.url('shop'), (c) => initSchema(c, 'outbox'));
    await withClient(server.url('consumer'), (c) => initSchema(c, 'inbox'));
    const fl = await floor(nats.url, Math.min(windowMs, 5_000));
    const flConsume = await floorConsume(nats.url, Math.min(windowMs, 5_000));
    const flAtRate = await floorAtRate(nats.url, RATE_EPS, Math.min(windowMs, 5_000));
    const pgAtRate = await pgCommitAtRate(server.url('consumer'), RATE_EPS, Math.min(windowMs, 5_000));
    // Each run's CDC slot is made at its start, so it reads only what that run writes.
    const polling = await run('polling', null, server.url('shop'), server.url('consumer'), nats.url, windowMs);
    const cdc = await run('cdc', null, server.url('shop'), server.url('consumer'), nats.url, windowMs);
    const pollingAtRate = await run(
      'polling',
      RATE_EPS,
      server.url('shop'),
      server.url('consumer'),
      nats.url,
      windowMs,
    );
    const cdcAtRate = await run('cdc', RATE_EPS, server.url('shop'), server.url('consumer'), nats.url, windowMs);
    const drained = windowMs >= 20_000 ? 20_000 : 5_000;
    const pollingDrain = await drain('polling', server.url('shop'), server.url('consumer'), nats.url, drained);
    const cdcDrain = await drain('cdc', server.url('shop'), server.url('consumer'), nats.url, drained);
    return {
      polling_eps: polling.eps,
      cdc_eps: cdc.eps,
      e2e_p50_ms: polling.p50,
      e2e_p99_ms: polling.p99,
      cdc_e2e_p50_ms: cdc.p50,
      cdc_e2e_p99_ms: cdc.p99,
      floor_publish_eps: fl.eps,
      floor_publish_p50_ms: fl.p50,
      floor_publish_consume_eps: flConsume,
      polling_over_floor: r2(polling.eps / flConsume),
      cdc_over_floor: r2(cdc.eps / flConsume),
      writers_commit_eps: Math.round(polling.events / (windowMs / 1_000)),
      drain_events: drained,
      polling_drain_eps: pollingDrain,
      cdc_drain_eps: cdcDrain,
      polling_drain_over_floor: r2(pollingDrain / flConsume),
      cdc_drain_over_floor: r2(cdcDrain / flConsume),
      polling_backlog_max_seen: polling.backlogMaxSeen,
      cdc_backlog_max_seen: cdc.backlogMaxSeen,
      backlog_max: BACKLOG_MAX,
      polling_refused: polling.refused,
      cdc_refused: cdc.refused,
      rate_eps: RATE_EPS,
      floor_p50_ms_at_rate: flAtRate.p50,
      floor_p99_ms_at_rate: flAtRate.p99,
      pg_commit_p50_ms_at_rate: pgAtRate.p50,
      pg_commit_p99_ms_at_rate: pgAtRate.p99,
      polling_p50_ms_at_rate: pollingAtRate.p50,
      polling_p99_ms_at_rate: pollingAtRate.p99,
      cdc_p50_ms_at_rate: cdcAtRate.p50,
      cdc_p99_ms_at_rate: cdcAtRate.p99,
      events_polling: polling.events,
      events_cdc: cdc.events,
      writers: WRITERS,
      window_ms: windowMs,
    };
  } finally {
    await Promise.all([server.stop(), nats.stop()]);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const ms = Number(process.env.VERDICT_OUTBOX_BENCH_MS ?? (process.argv.includes('--quick') ? 5_000 : 20_000));
  console.log(JSON.stringify(await measureOutbox(ms), null, 2));
}
