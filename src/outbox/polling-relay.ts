// The polling relay: no cursor. Each round reads the visible unpublished
// rows of the partitions this relay holds (oldest ids first, bounded), and
// publishes them with a window of outstanding PubAcks (publishInOrder): per
// aggregate one message in flight in seq order (commit order, ./schema.ts);
// different aggregates in parallel. The round then marks what was confirmed
// with one statement per partition. A row is
// marked published only after the sink confirmed it; a crash in between
// republishes it with the same message id. A row committed late with a small
// id is simply still unpublished at the next round, so it is published; rows
// of rolled-back transactions never become visible, so they never are.
//
// Fencing: a partition is published only while its lease is valid
// (./lease-keeper.ts), every message carries the lease's epoch, and the
// published mark is fenced by that epoch in the database (markPublished): a
// relay that lost its lease (paused, cut off) marks nothing once a newer
// holder has marked.

import type { OutboxMessage } from './message.ts';
import { explainMissingTable, type Queryable } from './schema.ts';
import type { Sink } from './sink.ts';

/** Which partitions this relay may publish now, and their epochs. */
export interface Fence {
  /** partition → epoch, for the partitions whose lease is valid now. */
  owned(): ReadonlyMap<number, number>;
  /** True while the lease of `partition` at `epoch` is still valid. */
  valid(partition: number, epoch: number): boolean;
  /** The lease's name in the cluster: the key of its fence row (verdict_outbox_fence). */
  leaseName(partition: number): string;
}

/**
 * Marks `ids` published, fenced by the lease: in one statement, the fence
 * row of the partition's lease moves up to `epoch` (never down) and, only if
 * it did, the rows still unpublished are marked. Returns false when a newer
 * epoch of the lease has marked already: this relay lost the lease, and
 * marks nothing.
 */
export async function markPublished(
  db: Queryable,
  fence: Fence,
  partition: number,
  epoch: number,
  ids: string[],
): Promise<boolean> {
  const r = await db.query<{ held: number }>(
    `WITH f AS (
       INSERT INTO verdict_outbox_fence (lease, epoch) VALUES ($2, $3)
       ON CONFLICT (lease) DO UPDATE SET epoch = EXCLUDED.epoch WHERE verdict_outbox_fence.epoch <= EXCLUDED.epoch
       RETURNING epoch),
     u AS (UPDATE verdict_outbox SET published_at = clock_timestamp() WHERE id = ANY($1::bigint[]) AND published_at IS NULL AND EXISTS (SELECT 1 FROM f) RETURNING 1)
     SELECT (SELECT count(*) FROM f)::int AS held, (SELECT count(*) FROM u)::int AS marked`,
    [ids, fence.leaseName(partition), epoch],
  );
  return r.rows[0].held > 0;
}

export interface PollingRelayOptions {
  db: Queryable;
  sink: Sink;
  fence: Fence;
  partitions: number;
  batchMax?: number;
  /** The window: PubAcks outstanding at once, at most (default PUBACKS_MAX); one per aggregate. */
  concurrency?: number;
  publishTimeoutMs?: number;
  onError?: (err: unknown) => void;
}

export interface RoundReport {
  read: number;
  published: number;
  /** Of `published`: how many in each partition (only partitions with any). */
  byPartition: Map<number, number>;
  failed: number;
  /** Partitions whose marks a newer epoch of the lease refused (this relay lost them). */
  fenced: number;
}

interface Row {
  id: string;
  event_id: string;
  aggregate: string;
  seq: string;
  type: string;
  payload: unknown;
  part: number;
}

export interface PendingEvent {
  /** The caller's handle on the event (its row id). */
  key: string;
  partition: number;
  /** epoch is filled in from the partition's lease. */
  message: OutboxMessage;
}

/** The relay's default window of outstanding PubAcks. */
export const PUBACKS_MAX = 256;

/**
 * Publishes events given in commit order with a window of `concurrency`
 * outstanding PubAcks (the sink's publish is JetStream's async publish: it
 * returns at once and resolves on the PubAck). Different aggregates share the
 * window; within an aggregate one publish is outstanding at a time, in the
 * order given, and the aggregate stops at its first failure or when its
 * partition's lease is no longer valid. One at a time within an aggregate is
 * what keeps its order in the stream: with two outstanding, the first could
 * fail (a timeout, a connection cut) while the second is stored, and the
 * republished first would then follow it.
 * Returns the keys the sink confirmed.
 */
export async function publishInOrder(
  events: PendingEvent[],
  o: { sink: Sink; fence: Fence; concurrency: number; publishTimeoutMs: number; onError?: (err: unknown) => void },
  owned: ReadonlyMap<number, number>,
): Promise<{ done: string[]; failed: number }> {
  const chains = new Map<string, PendingEvent[]>();
  for (const e of events) {
    const c = chains.get(e.message.aggregate) ?? [];
    c.push(e);
    chains.set(e.message.aggregate, c);
  }
  const done: string[] = [];
  let failed = 0;
  const queue = [...chains.values()];
  const worker = async (): Promise<void> => {
    for (let chain = queue.shift(); chain !== undefined; chain = queue.shift()) {
      for (const [i, e] of chain.entries()) {
        const epoch = owned.get(e.partition);
        // The lease ended (or moved): stop this aggregate before publishing again.
        if (epoch === undefined || !o.fence.valid(e.partition, epoch)) {
          failed += chain.length - i;
          break;
        }
        try {
          await o.sink.publish({ ...e.message, epoch }, o.publishTimeoutMs);
          done.push(e.key);
        } catch (err) {
          // One in flight per aggregate: the rest of this chain waits for the next round.
          failed += chain.length - i;
          o.onError?.(err);
          break;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.concurrency, queue.length) }, worker));
  return { done, failed };
}

/** The partition of an aggregate: PostgreSQL's hashtext, the same for every relay of one database. */
export const PARTITION_SQL = `mod(hashtext(aggregate) & 2147483647, $1::int)`;

export class PollingRelay {
  private readonly batchMax: number;
  private readonly concurrency: number;
  private readonly publishTimeoutMs: number;

  constructor(private readonly o: PollingRelayOptions) {
    this.batchMax = o.batchMax ?? 500;
    this.concurrency = o.concurrency ?? PUBACKS_MAX;
    this.publishTimeoutMs = o.publishTimeoutMs ?? 5_000;
  }

  /** One round: read, publish, mark. Never throws for a broker that is down (those rows stay unpublished). */
  async round(): Promise<RoundReport> {
    const owned = this.o.fence.owned();
    if (owned.size === 0) return { read: 0, published: 0, byPartition: new Map(), failed: 0, fenced: 0 };
    let rows: Row[];
    try {
      rows = (
        await this.o.db.query<Row & Record<string, unknown>>(
          `SELECT id, event_id, aggregate, seq, type, payload, ${PARTITION_SQL} AS part FROM verdict_outbox
           WHERE published_at IS NULL AND ${PARTITION_SQL} = ANY($2::int[]) ORDER BY id LIMIT $3`,
          [this.o.partitions, [...owned.keys()], this.batchMax],
        )
      ).rows;
    } catch (err) {
      throw explainMissingTable(err, 'outbox');
    }
    // Per aggregate, ids ascend with seq (./schema.ts); the rows read are a prefix of each aggregate's unpublished
    // events.
    const events = rows.map((r) => ({
      key: r.id,
      partition: r.part,
      message: {
        id: r.event_id,
        aggregate: r.aggregate,
        seq: Number(r.seq),
        type: r.type,
        epoch: 0,
        payload: r.payload,
      },
    }));
    const { done, failed } = await publishInOrder(
      events,
      { ...this.o, concurrency: this.concurrency, publishTimeoutMs: this.publishTimeoutMs },
      owned,
    );
    const partitionOf = new Map(events.map((e) => [e.key, e.partition]));
    const byPartition = new Map<number, string[]>();
    for (const id of done) {
      const p = partitionOf.get(id) ?? 0;
      byPartition.set(p, [...(byPartition.get(p) ?? []), id]);
    }
    let fenced = 0;
    for (const [p, ids] of byPartition) {
      const epoch = owned.get(p);
      if (epoch === undefined || !(await markPublished(this.o.db, this.o.fence, p, epoch, ids))) fenced++;
    }
    const counts = new Map([...byPartition].map(([p, ids]) => [p, ids.length]));
    return { read: rows.length, published: done.length, byPartition: counts, failed, fenced };
  }

  /** Rows waiting and the age of the oldest: the relay's lag. */
  async lag(): Promise<{ unpublished: number; oldestAgeMs: number }> {
    const r = await this.o.db.query<{ n: string; age: number | null }>(
      `SELECT count(*) AS n, (extract(epoch FROM clock_timestamp() - min(created_at)) * 1000)::float8 AS age FROM verdict_outbox WHERE published_at IS NULL`,
    );
    return { unpublished: Number(r.rows[0].n), oldestAgeMs: r.rows[0].age ?? 0 };
  }
}
