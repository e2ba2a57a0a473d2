// Outbox events per second and end-to-end latency (the writer's COMMIT
// returned → the consumer's effect committed through the inbox), for the
// polling and the CDC relay at 16 writers, beside the broker's own floor
// measured in the same run: raw JetStream publishes waiting for the PubAck,
// 16 at a time. One PostgreSQL (wal_level = logical) and one nats-server,
// both started here. The relay runs in this process under a fixed fence
// (every partition, epoch 1): lease renewals are off the publish path, so the
// figures are the relay's, the broker's and the inbox's.
//
//   npm run bench -- outbox [--quick] prints the figures as JSON
//   VERDICT_OUTBOX_BENCH_MS=3000 shortens each window.
// bench/main.ts runs measureOutbox() in the full run: keys outbox.polling_eps,
// outbox.cdc_eps, outbox.e2e_p99_ms (polling) and the rest of OutboxFigures.
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { connect } from 'nats';
import pg from 'pg';
import { CdcRelay, ensureSlot } from '../../src/outbox/cdc-relay.ts';
import { enqueue } from '../../src/outbox/enqueue.ts';
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
  events_polling: number;
  events_cdc: number;
  writers: number;
  window_ms: number;
}

const WRITERS = 16;
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const r2 = (x: number): number => Math.round(x * 100) / 100;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const allPartitions: Fence = { owned: () => new Map([[0, 1]]), valid: () => true, leaseName: (p) => `outbox/bench/p${p}` };

async function floor(url: string, windowMs: number): Promise<{ eps: number; p50: number }> {
  const nc = await connect({ servers: url.replace('nats://', '') });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name: 'FLOOR', subjects: ['floor.events'], duplicate_window: 120_000_000_000 });
  const js = nc.jetstream();
  const lat: number[] = [];
  const body = new TextEncoder().encode(JSON.stringify({ id: 'x'.repeat(36), aggregate: 'order-1', seq: 1, type: 'bench', epoch: 1, payload: { n: 1 } }));
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

/** 16 writers for windowMs, the relay and the consumer running; figures once every committed event took effect. */
async function run(mode: 'polling' | 'cdc', pgUrl: string, consumerUrl: string, natsUrl: string, windowMs: number): Promise<{ eps: number; p50: number; p99: number; events: number }> {
  const stream = mode.toUpperCase();
  const target = { url: natsUrl, stream, subject: `${mode}.events` };
  const sink = new NatsSink(target);
  const db = new pg.Client({ connectionString: pgUrl });
  await db.connect();
  if (mode === 'cdc') await ensureSlot(db, 'bench_cdc');
  const relay =
    mode === 'polling' ? new PollingRelay({ db, sink, fence: allPartitions, partitions: 1, batchMax: 1_000 }) : new CdcRelay({ db, sink, fence: allPartitions, slot: 'bench_cdc', changesMax: 1_000 });
  const committedAtMs = new Map<string, number>();
  const latencies: number[] = [];
  let lastEffectAtMs = 0;
  const consumer = await consumeToInbox({
    ...target,
    durable: `bench-${mode}`,
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
    while (relaying) if ((await relay.round()).read === 0) await sleep(5);
  })();
  const startAtMs = performance.now();
  const endAtMs = startAtMs + windowMs;
  let events = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      for (let i = 0; performance.now() < endAtMs; i++) {
        await c.query('BEGIN');
        const { id } = await enqueue(c, { aggregate: `${mode}-${w}-${i % 8}`, type: 'bench', payload: { w, i } });
        await c.query('COMMIT');
        committedAtMs.set(id, performance.now());
        events++;
      }
      await c.end();
    }),
  );
  const drainByMs = performance.now() + 120_000;
  while (consumer.counts.applied < events && performance.now() < drainByMs) await sleep(20);
  relaying = false;
  await relayLoop;
  await consumer.stop();
  await sink.close();
  await db.end();
  if (consumer.counts.applied < events) throw new Error(`outbox bench (${mode}): ${consumer.counts.applied} of ${events} events took effect within 120 s`);
  return { eps: Math.round(events / ((lastEffectAtMs - startAtMs) / 1_000)), p50: r2(pct(latencies, 50)), p99: r2(pct(latencies, 99)), events };
}

export async function measureOutbox(windowMs: number): Promise<OutboxFigures> {
  const [server, nats] = await Promise.all([
    startPostgres({ databases: ['shop', 'consumer'], maxPreparedTransactions: null, settings: ['wal_level=logical', 'max_replication_slots=4', 'max_wal_senders=4'] }),
    startNats(),
  ]);
  try {
    await withClient(server.url('shop'), (c) => initSchema(c, 'outbox'));
    await withClient(server.url('consumer'), (c) => initSchema(c, 'inbox'));
    const fl = await floor(nats.url, Math.min(windowMs, 5_000));
    const polling = await run('polling', server.url('shop'), server.url('consumer'), nats.url, windowMs);
    // The CDC run reads only what it writes: the slot is made after the polling run.
    const cdc = await run('cdc', server.url('shop'), server.url('consumer'), nats.url, windowMs);
    return {
      polling_eps: polling.eps,
      cdc_eps: cdc.eps,
      e2e_p50_ms: polling.p50,
      e2e_p99_ms: polling.p99,
      cdc_e2e_p50_ms: cdc.p50,
      cdc_e2e_p99_ms: cdc.p99,
      floor_publish_eps: fl.eps,
      floor_publish_p50_ms: fl.p50,
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
