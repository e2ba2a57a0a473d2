// The relay as a long-running process (`verdict outbox relay`): a lease loop
// that keeps this relay's partitions (./lease-keeper.ts), a publish loop that
// runs polling or CDC rounds, and a lag loop that measures how far behind the
// outbox is, exports it as Prometheus metrics and logs a warning above a
// threshold. The lag loop measures the whole outbox (every partition), so any
// running relay reports a backlog another relay left behind.
//
// Every failure is retried with a bounded back-off: PostgreSQL down (the
// connection is remade), the broker down (the rows stay unpublished and the
// lag grows), the cluster unreachable (the leases lapse locally and publishing
// stops until they are renewed). One is not: a CDC slot that is lost can never
// be read again, so the relay stops (`failed` resolves with why) with its lag
// alert up. stop() finishes the round under way, gives the leases back and
// closes everything.
//
// The CDC lag alert is up while the slot retains more WAL than --warn-bytes
// and the slot has something to deliver (an outbox row not yet published),
// or while the slot is lost. After a drain the slot keeps its WAL until
// PostgreSQL moves restart_lsn on its own, which may take until the next
// writes; that retention is not lag.
import type { Logger } from 'pino';
import pg from 'pg';
import { Counter, Gauge, Registry } from 'prom-client';
import { CdcRelay, CdcSlotLost, checkCdcServer, ensureSlot, slots } from './cdc-relay.ts';
import { PARTITION_SQL, PollingRelay, PUBACKS_MAX, type Fence } from './polling-relay.ts';
import { explainMissingTable, type Queryable } from './schema.ts';
import type { Sink } from './sink.ts';
import { connectPg } from './pg-connect.ts';

/** The relay's leases (./lease-keeper.ts's LeaseKeeper): the fence, and how they are kept. */
export interface RelayLeases extends Fence {
  refresh(): Promise<void>;
  releaseAll(): Promise<void>;
  readonly refreshEveryMs: number;
  /** Live relays at the last refresh, this one included. */
  readonly relays: number;
}

export interface RelayRunOptions {
  /** This relay's name (its lease holder id): the `relay` label of every metric it exports. */
  relay: string;
  pgUrl: string;
  sink: Sink;
  keeper: RelayLeases;
  mode: 'polling' | 'cdc';
  partitions: number;
  /** CDC: the replication slot. */
  slot: string;
  allowUnboundedSlot: boolean;
  /** Pause between rounds that found nothing. */
  idleMs: number;
  batchMax: number;
  publishTimeoutMs: number;
  /** Polling: warn when the oldest unpublished event is older than this. */
  warnLagMs: number;
  /** CDC: warn when the slot retains more WAL than this. */
  warnBytes: number;
  lagEveryMs: number;
  log: Logger;
}

export class RelayStartError extends Error {
  override name = 'RelayStartError';
}

const BACKOFF_MAX_MS = 5_000;
const WARN_REPEAT_MS = 30_000;

/** One PostgreSQL connection, made on first use and remade after any error. */
class Db implements Queryable {
  private c: pg.Client | null = null;
  constructor(private readonly url: string) {}

  async query<R extends Record<string, unknown> = Record<string, unknown>>(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }> {
    if (this.c === null) this.c = await connectPg(this.url);
    try {
      return await this.c.query<R>(text, values);
    } catch (err) {
      // A connection cut by a restart shows up here; a fresh one is cheap next to a wrong guess.
      if ((err as { code?: string }).code === undefined || /^(08|57)/.test((err as { code: string }).code))
        await this.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    const c = this.c;
    this.c = null;
    await c?.end().catch(() => {});
  }
}

export interface RelayMetrics {
  registry: Registry;
  /** Labelled by partition (CDC: one, 0). */
  published: Counter<'partition'>;
  sinkErrors: Counter;
  dbErrors: Counter;
  /** Labelled by partition (CDC: one, 0). */
  unpublished: Gauge<'partition'>;
  oldestAgeSeconds: Gauge;
  retainedBytes: Gauge;
  lagAlert: Gauge;
  partitionsHeld: Gauge;
  relays: Gauge;
}

/**
 * The relay's metrics. Every series carries `relay` (the holder id), so the
 * relays of one outbox can be told apart and summed; published events and
 * the backlog are also by `partition` (bounded by --partitions, at most 1024).
 */
function relayMetrics(relay: string): RelayMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ relay });
  const counter = (name: string, help: string) => new Counter({ name, help, registers: [registry] });
  const gauge = (name: string, help: string) => new Gauge({ name, help, registers: [registry] });
  return {
    registry,
    published: new Counter({
      name: 'verdict_outbox_published_total',
      help: 'Events the broker confirmed and the relay marked published (CDC: confirmed before the slot advanced), by partition.',
      labelNames: ['partition'],
      registers: [registry],
    }),
    sinkErrors: counter(
      'verdict_outbox_sink_errors_total',
      'Publishes the broker did not confirm (down, timed out, refused); those events are retried.',
    ),
    dbErrors: counter(
      'verdict_outbox_db_errors_total',
      'Rounds that failed on PostgreSQL (down, restarted, a missing table).',
    ),
    unpublished: new Gauge({
      name: 'verdict_outbox_unpublished_rows',
      help: 'Committed events not yet confirmed by the broker and marked published, by partition; every relay measures the whole outbox.',
      labelNames: ['partition'],
      registers: [registry],
    }),
    oldestAgeSeconds: gauge(
      'verdict_outbox_oldest_unpublished_age_seconds',
      'Polling: age of the oldest unpublished event (0 when none).',
    ),
    retainedBytes: gauge(
      'verdict_outbox_slot_retained_bytes',
      'CDC: WAL the replication slot keeps (pg_current_wal_lsn() - restart_lsn); alert on it.',
    ),
    lagAlert: gauge(
      'verdict_outbox_lag_alert',
      '1 while the lag is above the warning threshold (--warn-lag-ms; for CDC --warn-bytes with rows left to deliver), or the CDC slot is lost.',
    ),
    partitionsHeld: gauge('verdict_outbox_partitions_held', 'Partitions whose lease this relay holds now.'),
    relays: gauge(
      'verdict_outbox_relays',
      'Relays of this outbox alive at the last lease refresh (this one included).',
    ),
  };
}

export class RelayRunner {
  readonly metrics: RelayMetrics;
  private readonly db: Db;
  private readonly lagDb: Db;
  private stopping = false;
  private loops: Promise<void>[] = [];
  private readonly wakers = new Set<() => void>();
  private lastWarnAtMs = 0;
  private fail: (err: Error) => void = () => {};
  /** Resolves when the relay stopped by itself for good (a lost CDC slot), with why; never while it runs. */
  readonly failed: Promise<Error> = new Promise((resolve) => (this.fail = resolve));
  private fatal: Error | null = null;

  constructor(private readonly o: RelayRunOptions) {
    this.metrics = relayMetrics(o.relay);
    // Every partition's series from the start (0 until it publishes), so a rate() sees the first events.
    for (let p = 0; p < o.partitions; p++) this.metrics.published.inc({ partition: String(p) }, 0);
    this.db = new Db(o.pgUrl);
    this.lagDb = new Db(o.pgUrl);
  }

  /**
   * Checks what can be checked before publishing: the tables (and for CDC
   * the server, and the slot's plugin and state, creating it when missing so
   * that it holds everything committed once the relay says it started; not
   * whether another relay reads it now: this one waits for the lease).
   * Refusals are RelayStartErrors.
   */
  async check(): Promise<void> {
    try {
      await this.db.query('SELECT 1 FROM verdict_outbox LIMIT 0');
      await this.db.query('SELECT 1 FROM verdict_outbox_fence LIMIT 0');
      if (this.o.mode === 'cdc') {
        await checkCdcServer(this.db, this.o.allowUnboundedSlot);
        await ensureSlot(this.db, this.o.slot);
      }
    } catch (err) {
      const e = explainMissingTable(err, 'outbox') as Error;
      throw new RelayStartError(e.message);
    }
  }

  start(): void {
    this.loops = [this.leaseLoop(), this.lagLoop(), this.publishLoop()];
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const w of this.wakers) w();
    await Promise.all(this.loops);
    await this.o.keeper.releaseAll();
    await Promise.all([this.o.sink.close().catch(() => {}), this.db.close(), this.lagDb.close()]);
  }

  private async pause(ms: number): Promise<void> {
    if (this.stopping) return;
    await new Promise<void>((r) => {
      const wake = (): void => {
        clearTimeout(t);
        this.wakers.delete(wake);
        r();
      };
      const t = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }

  private async leaseLoop(): Promise<void> {
    while (!this.stopping) {
      await this.o.keeper.refresh();
      this.metrics.partitionsHeld.set(this.o.keeper.owned().size);
      this.metrics.relays.set(this.o.keeper.relays);
      // Its own timer, so a long publish round never delays a renewal.
      await this.pause(this.o.keeper.refreshEveryMs);
    }
  }

  private async publishLoop(): Promise<void> {
    const onError = (err: unknown): void => {
      this.metrics.sinkErrors.inc();
      this.rateLimitedWarn(
        { err: (err as Error).message },
        'the broker did not confirm a publish; the event stays unpublished and is retried',
      );
    };
    const common = {
      db: this.db,
      sink: this.o.sink,
      fence: this.o.keeper,
      concurrency: PUBACKS_MAX,
      publishTimeoutMs: this.o.publishTimeoutMs,
      onError,
    };
    const round =
      this.o.mode === 'polling'
        ? (
            (r) => async () =>
              r.round()
          )(new PollingRelay({ ...common, partitions: this.o.partitions, batchMax: this.o.batchMax }))
        : (
            (r) => async () =>
              r.round()
          )(new CdcRelay({ ...common, slot: this.o.slot, changesMax: this.o.batchMax * 3 }));
    let failures = 0;
    while (!this.stopping) {
      try {
        const r = await round();
        failures = 0;
        for (const [p, n] of r.byPartition) this.metrics.published.inc({ partition: String(p) }, n);
        if (r.published > 0) this.o.log.debug({ published: r.published, failed: r.failed }, 'round');
        // Something was left (a full batch, or failures): go again soon; idle otherwise.
        if (r.read === 0 || r.failed > 0)
          await this.pause(r.failed > 0 ? Math.min(BACKOFF_MAX_MS, this.o.idleMs * 10) : this.o.idleMs);
      } catch (err) {
        if (err instanceof CdcSlotLost) {
          await this.stopForGood(err);
          return;
        }
        failures++;
        this.metrics.dbErrors.inc();
        this.rateLimitedWarn(
          { err: (explainMissingTable(err, 'outbox') as Error).message },
          'relay round failed on PostgreSQL; retrying',
        );
        await this.pause(Math.min(BACKOFF_MAX_MS, 100 * 2 ** Math.min(failures, 6)));
      }
    }
  }

  /** A failure no retry can mend: the alert goes up, one error line, and `failed` resolves; the other loops end. */
  private async stopForGood(err: Error): Promise<void> {
    this.fatal = err;
    this.metrics.lagAlert.set(1);
    this.o.log.error({ err: err.message }, 'outbox relay stops: its replication slot is lost');
    this.stopping = true;
    for (const w of this.wakers) w();
    this.fail(err);
  }

  private async lagLoop(): Promise<void> {
    while (!this.stopping) {
      try {
        await this.sampleLag();
      } catch (err) {
        this.rateLimitedWarn({ err: (err as Error).message }, 'cannot measure the outbox lag');
      }
      await this.pause(this.o.lagEveryMs);
    }
  }

  /** Measures the lag once, sets the metrics, and warns above the threshold. */
  async sampleLag(): Promise<void> {
    const m = this.metrics;
    let over: Record<string, number> | null = null;
    if (this.o.mode === 'polling') {
      const r = await this.lagDb.query<{ part: number; n: string; age: number | null }>(
        `SELECT ${PARTITION_SQL} AS part, count(*) AS n, (extract(epoch FROM clock_timestamp() - min(created_at)) * 1000)::float8 AS age
           FROM verdict_outbox WHERE published_at IS NULL GROUP BY 1`,
        [this.o.partitions],
      );
      const byPartition = new Map(r.rows.map((x) => [Number(x.part), Number(x.n)]));
      let unpublished = 0;
      for (let p = 0; p < this.o.partitions; p++) {
        const n = byPartition.get(p) ?? 0;
        unpublished += n;
        m.unpublished.set({ partition: String(p) }, n);
      }
      const oldestAgeMs = Math.max(0, ...r.rows.map((x) => x.age ?? 0));
      m.oldestAgeSeconds.set(oldestAgeMs / 1_000);
      if (oldestAgeMs > this.o.warnLagMs)
        over = { unpublished, oldestAgeMs: Math.round(oldestAgeMs), warnLagMs: this.o.warnLagMs };
    } else {
      const s = (await slots(this.lagDb)).find((x) => x.slot === this.o.slot);
      const retainedBytes = s?.retainedBytes ?? 0;
      m.retainedBytes.set(retainedBytes);
      // Something to deliver: a committed outbox row not yet published (the relay marks what it published).
      const r = await this.lagDb.query<{ n: string }>(
        'SELECT count(*) AS n FROM verdict_outbox WHERE published_at IS NULL',
      );
      const unpublished = Number(r.rows[0].n);
      m.unpublished.set({ partition: '0' }, unpublished);
      if (s?.walStatus === 'lost') over = { lost: 1, unpublished };
      else if (retainedBytes > this.o.warnBytes && unpublished > 0)
        over = { retainedBytes, warnBytes: this.o.warnBytes, unpublished };
    }
    // A relay stopped for good keeps its alert up.
    if (this.fatal !== null) over ??= { lost: 1 };
    const was = (await m.lagAlert.get()).values[0]?.value === 1;
    m.lagAlert.set(over === null ? 0 : 1);
    if (over !== null && (!was || Date.now() - this.lastWarnAtMs > WARN_REPEAT_MS)) {
      this.lastWarnAtMs = Date.now();
      this.o.log.warn(
        { lag: over, mode: this.o.mode },
        'outbox lag above the warning threshold: events wait to be published',
      );
    } else if (over === null && was) this.o.log.info('outbox lag back below the warning threshold');
  }

  private warnedAtMs = 0;
  private rateLimitedWarn(fields: Record<string, unknown>, msg: string): void {
    if (Date.now() - this.warnedAtMs < 5_000) return;
    this.warnedAtMs = Date.now();
    this.o.log.warn(fields, msg);
  }
}
