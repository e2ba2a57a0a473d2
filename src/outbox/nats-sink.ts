// The outbox's broker: NATS JetStream. The sink publishes each event with its
// message id as Nats-Msg-Id, so a republish inside the stream's duplicate
// window is dropped by the broker itself (the PubAck says `duplicate`), and
// resolves only on the PubAck, which JetStream sends once the message is
// stored. The partition's lease epoch rides in a header as well as in the
// body. The consumer side (consumeToInbox) feeds the stream to
// Inbox.handleBatch: batches of messages, each one transaction, different
// aggregates in parallel and each aggregate's messages in stream order,
// acknowledging only after the batch's transaction committed, so each effect
// happens exactly once and in its aggregate's order.
//
// The connection is made lazily and remade after a failure: a broker that is
// down at the relay's start, or restarted under it, fails publishes (the rows
// stay unpublished) until it is back.
import type { JetStreamClient, JetStreamManager, JsMsg, NatsConnection } from 'nats';
import { INBOX_BATCH_MAX, type BatchOutcome, type Inbox, type InboxResult } from './inbox.ts';
import { decodeMessage, encodeMessage, MessageError, type OutboxMessage } from './message.ts';
import pg from 'pg';
import type { Queryable } from './schema.ts';
import { connectPg } from './pg-connect.ts';
import type { Sink } from './sink.ts';
import { loadWith } from '../util/optional-package.ts';

export const EPOCH_HEADER = 'Verdict-Epoch';
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const SUBJECT = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,7}$/;
const CONNECT_TIMEOUT_MS = 3_000;
/** Messages delivered and not yet acknowledged, at most: what the batches are made of. */
const ACK_PENDING_MAX = 2_048;
const FETCH_MAX = 256;
const CONCURRENCY_MAX = 256;

export class NatsSinkError extends Error {
  override name = 'NatsSinkError';
}

export interface NatsTarget {
  /** nats://HOST:PORT */
  url: string;
  /** The JetStream stream, created when missing. */
  stream: string;
  /** The subject events are published on (the stream's only subject when it is created here). */
  subject: string;
  /** The stream's duplicate window when it is created here (default 2 minutes). */
  duplicateWindowMs?: number;
}

/** The host:port of a nats:// URL, or a NatsSinkError naming the flag's problem. */
export function natsServer(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new NatsSinkError(`sink ${JSON.stringify(url)} is not a URL; write nats://HOST:PORT`);
  }
  if (u.protocol !== 'nats:' || u.hostname === '' || u.port === '')
    throw new NatsSinkError(`sink ${JSON.stringify(url)}: only nats://HOST:PORT (NATS JetStream) is supported`);
  return `${u.hostname}:${u.port}`;
}

export function checkTarget(t: NatsTarget): void {
  natsServer(t.url);
  if (!NAME.test(t.stream))
    throw new NatsSinkError(`stream name ${JSON.stringify(t.stream)} must be 1–64 letters, digits, _ or -`);
  if (!SUBJECT.test(t.subject))
    throw new NatsSinkError(
      `subject ${JSON.stringify(t.subject)} must be dot-separated tokens of letters, digits, _ or - (no wildcards)`,
    );
}

type Nats = typeof import('nats');

/** The NATS client, loaded when a sink or consumer first connects: only they need the `nats` package. */
function loadNats(): Promise<Nats> {
  return loadWith(
    'the NATS sink',
    ['nats'],
    () => import('nats'),
    (m) => new NatsSinkError(m),
  );
}

/** Connects (bounded) and makes sure the stream exists. */
async function open(t: NatsTarget, name: string): Promise<{ nc: NatsConnection; jsm: JetStreamManager; nats: Nats }> {
  const nats = await loadNats();
  const nc = await nats.connect({
    servers: natsServer(t.url),
    name,
    timeout: CONNECT_TIMEOUT_MS,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  });
  try {
    const jsm = await nc.jetstreamManager({ timeout: CONNECT_TIMEOUT_MS });
    try {
      await jsm.streams.info(t.stream);
    } catch (err) {
      if (!/stream not found/i.test((err as Error).message)) throw err;
      await jsm.streams.add({
        name: t.stream,
        subjects: [t.subject],
        duplicate_window: (t.duplicateWindowMs ?? 120_000) * 1_000_000,
      });
    }
    return { nc, jsm, nats };
  } catch (err) {
    await nc.close().catch(() => {});
    throw err;
  }
}

export class NatsSink implements Sink {
  private conn: Promise<{ nc: NatsConnection; nats: Nats; js: JetStreamClient }> | null = null;

  constructor(private readonly t: NatsTarget) {
    checkTarget(t);
  }

  private connection(): Promise<{ nc: NatsConnection; nats: Nats; js: JetStreamClient }> {
    this.conn ??= open(this.t, 'verdict-outbox-relay').then(
      (c) => ({ nc: c.nc, nats: c.nats, js: c.nc.jetstream() }),
      (err: unknown) => {
        this.conn = null;
        if (err instanceof NatsSinkError) throw err;
        throw new NatsSinkError(`cannot reach NATS at ${this.t.url}: ${(err as Error).message}`);
      },
    );
    return this.conn;
  }

  async publish(m: OutboxMessage, timeoutMs: number): Promise<{ duplicate: boolean }> {
    const { nc, nats, js } = await this.connection();
    const h = nats.headers();
    h.set(EPOCH_HEADER, String(m.epoch));
    try {
      // Async publish: many outstanding on one connection (the relay's window), each resolved by its PubAck.
      const ack = await js.publish(this.t.subject, encodeMessage(m), { msgID: m.id, headers: h, timeout: timeoutMs });
      if (ack.stream !== this.t.stream)
        throw new NatsSinkError(`subject ${this.t.subject} is stored by stream ${ack.stream}, not ${this.t.stream}`);
      return { duplicate: ack.duplicate };
    } catch (err) {
      if (nc.isClosed()) this.conn = null;
      throw err instanceof NatsSinkError
        ? err
        : new NatsSinkError(`NATS did not confirm event ${m.id}: ${(err as Error).message}`);
    }
  }

  async close(): Promise<void> {
    const c = this.conn;
    this.conn = null;
    if (c !== null) await (await c.catch(() => null))?.nc.close();
  }
}

export interface ConsumeOptions extends NatsTarget {
  /** The durable consumer's name (one per consuming service). */
  durable: string;
  inbox: Inbox;
  /** The consumer's database (holds the inbox tables); one connection per batch in progress, remade after a failure. */
  pgUrl: string;
  effect: (tx: Queryable, m: OutboxMessage) => Promise<void>;
  /** Batches applied at once, each in its own transaction on its own PostgreSQL connection (default 16). */
  concurrency?: number;
  /** Messages in one batch (one transaction) at most (default 200, at most INBOX_BATCH_MAX). */
  batchMax?: number;
  /** How long a message may stay unacknowledged before the broker redelivers it (default 30 s). */
  ackWaitMs?: number;
  onResult?: (m: OutboxMessage, r: InboxResult) => void;
  onError?: (err: unknown) => void;
}

export interface InboxConsumer {
  /** Counts so far. */
  readonly counts: Record<InboxResult | 'refused' | 'failed', number>;
  stop(): Promise<void>;
}

interface Delivery {
  jm: JsMsg;
  m: OutboxMessage;
}

/**
 * A durable JetStream consumer feeding Inbox.handleBatch. Messages are read
 * in stream order and queued per aggregate. A batch is a transaction: it
 * takes one or more aggregates that no other batch holds, each with the
 * front of its queue, in order, so the stream's order, which per aggregate
 * is commit order, is the order of its effects. Up to `concurrency` batches
 * run at once, each on its own connection, so different aggregates are
 * applied in parallel; an aggregate joins a batch already under way only when
 * every batch slot is busy (it would wait anyway), which is what makes
 * batches grow with the load. Every message of a batch is acknowledged after
 * its transaction committed. An effect that fails is retried in place
 * (bounded back-off) before its aggregate's next message, never skipped,
 * while the rest of its batch commits (the batch rule: Inbox.handleBatch).
 * Up to ACK_PENDING_MAX messages are outstanding: one the broker redelivers
 * (its ack was lost, or it waited longer than ackWaitMs) queues behind the
 * original and the inbox answers it as a duplicate. A message that is not an
 * outbox message is terminated (never redelivered) and counted as refused.
 */
export async function consumeToInbox(o: ConsumeOptions): Promise<InboxConsumer> {
  checkTarget(o);
  if (!NAME.test(o.durable))
    throw new NatsSinkError(`consumer name ${JSON.stringify(o.durable)} must be 1–64 letters, digits, _ or -`);
  const concurrency = o.concurrency ?? 16;
  if (!(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= CONCURRENCY_MAX))
    throw new NatsSinkError(`consumer concurrency ${concurrency} must be an integer from 1 to ${CONCURRENCY_MAX}`);
  const batchMax = o.batchMax ?? 200;
  if (!(Number.isInteger(batchMax) && batchMax >= 1 && batchMax <= INBOX_BATCH_MAX))
    throw new NatsSinkError(`consumer batchMax ${batchMax} must be an integer from 1 to ${INBOX_BATCH_MAX}`);
  const { nc, jsm, nats } = await open(o, `verdict-inbox-${o.durable}`);
  const ackWaitMs = o.ackWaitMs ?? 30_000;
  let info: Awaited<ReturnType<typeof jsm.consumers.info>> | null = null;
  try {
    info = await jsm.consumers.info(o.stream, o.durable);
  } catch {
    await jsm.consumers.add(o.stream, {
      durable_name: o.durable,
      ack_policy: nats.AckPolicy.Explicit,
      deliver_policy: nats.DeliverPolicy.All,
      max_ack_pending: ACK_PENDING_MAX,
      ack_wait: ackWaitMs * 1_000_000,
    });
  }
  // A durable made by an older version keeps a smaller window, which would cap the batches; a server
  // that cannot change it leaves the window as it was (smaller batches, nothing else).
  if (
    info !== null &&
    info.config.max_ack_pending !== undefined &&
    info.config.max_ack_pending >= 0 &&
    info.config.max_ack_pending < ACK_PENDING_MAX
  )
    await jsm.consumers
      .update(o.stream, o.durable, { max_ack_pending: ACK_PENDING_MAX })
      .catch((err: unknown) => o.onError?.(err));
  const consumer = await nc.jetstream().consumers.get(o.stream, o.durable);
  const messages = await consumer.consume({ max_messages: FETCH_MAX });
  const counts = { applied: 0, duplicate: 0, 'stale-epoch': 0, refused: 0, failed: 0 };
  let stopping = false;
  // Per aggregate, the messages not yet applied, in stream order.
  const queues = new Map<string, Delivery[]>();
  // Aggregates a batch holds now; and those with messages waiting for a batch, oldest first.
  const held = new Set<string>();
  const ready = new Set<string>();
  const running = new Set<Promise<void>>();
  const idle: pg.Client[] = [];
  let slots = concurrency;
  const wakers = new Set<() => void>();
  const pause = (ms: number): Promise<void> =>
    new Promise<void>((r) => {
      const wake = (): void => {
        clearTimeout(t);
        wakers.delete(wake);
        r();
      };
      const t = setTimeout(wake, ms);
      wakers.add(wake);
    });

  // Moves ready aggregates into `mine` while the batch has room for their messages.
  const takeReady = (mine: string[], room: number): void => {
    for (const a of ready) {
      if (room <= 0) break;
      ready.delete(a);
      held.add(a);
      mine.push(a);
      room -= queues.get(a)?.length ?? 0;
    }
  };

  // After a batch: counts and acknowledges what its transaction committed, and says which aggregates
  // the worker keeps: with no failure, those with messages left; with one, only the failing aggregates
  // (retried after a back-off), the others handed back to the waiting list.
  const settle = (mine: string[], batch: Delivery[], outcomes: BatchOutcome[]): { next: string[]; retry: boolean } => {
    let retry = false;
    for (const [i, d] of batch.entries()) {
      const r = outcomes[i];
      if (r === 'failed' || r === 'held') {
        retry = true;
        continue;
      }
      counts[r]++;
      o.onResult?.(d.m, r);
      d.jm.ack();
      const q = queues.get(d.m.aggregate);
      // Acknowledged messages leave the front of their queue (a batch takes each queue's front, in order).
      if (q?.[0] === d) q.shift();
    }
    const next: string[] = [];
    for (const a of mine) {
      const q = queues.get(a) ?? [];
      const failing = batch.some((d, i) => d.m.aggregate === a && (outcomes[i] === 'failed' || outcomes[i] === 'held'));
      if (q.length === 0) {
        queues.delete(a);
        held.delete(a);
      } else if (!retry || failing) next.push(a);
      else {
        held.delete(a);
        ready.add(a);
      }
    }
    return { next, retry };
  };

  // Applies batches of the aggregates it holds until none is left, on one connection.
  const worker = async (first: string): Promise<void> => {
    let mine = [first];
    let db = idle.pop() ?? null;
    let attempt = 0;
    try {
      // Let the messages already fetched reach their queues first, so the first batch is not one message by chance.
      await new Promise((r) => setImmediate(r));
      while (mine.length > 0 && !stopping) {
        if (db === null) {
          try {
            db = await connectPg(o.pgUrl);
          } catch (err) {
            counts.failed++;
            o.onError?.(err);
            await pause(Math.min(5_000, 100 * 2 ** Math.min(attempt++, 6)));
            continue;
          }
        }
        // Every other slot busy: aggregates waiting for one join this batch instead.
        if (slots === 0) takeReady(mine, batchMax - mine.reduce((n, a) => n + (queues.get(a)?.length ?? 0), 0));
        const batch: Delivery[] = [];
        for (const a of mine) batch.push(...(queues.get(a) ?? []).slice(0, batchMax - batch.length));
        let outcomes: BatchOutcome[];
        try {
          const r = await o.inbox.handleBatch(
            db,
            batch.map((d) => d.m),
            o.effect,
          );
          outcomes = r.outcomes;
          for (const err of r.errors) {
            counts.failed++;
            o.onError?.(err);
          }
        } catch (err) {
          // The whole batch is retried: what a lost commit did answer `duplicate` then.
          counts.failed++;
          o.onError?.(err);
          await db.end().catch(() => {});
          db = null;
          outcomes = batch.map(() => 'held');
        }
        let retry: boolean;
        ({ next: mine, retry } = settle(mine, batch, outcomes));
        if (retry) {
          kick();
          // Stopping: leave them unacknowledged; the broker redelivers them to the next run.
          if (stopping) return;
          for (const a of mine) for (const d of queues.get(a) ?? []) d.jm.working();
          await pause(Math.min(5_000, 100 * 2 ** Math.min(attempt++, 6)));
        } else {
          attempt = 0;
          if (mine.length === 0) takeReady(mine, batchMax);
        }
      }
    } finally {
      // Whatever this worker still holds goes back to the queue of work (stopping: it stays unacknowledged).
      for (const a of mine) {
        held.delete(a);
        if ((queues.get(a)?.length ?? 0) > 0) ready.add(a);
        else queues.delete(a);
      }
      if (db !== null) idle.push(db);
      slots++;
      kick();
    }
  };

  // Gives every waiting aggregate a batch of its own while slots are free.
  const kick = (): void => {
    if (stopping) return;
    for (const a of ready) {
      if (slots === 0) break;
      ready.delete(a);
      held.add(a);
      slots--;
      const p = worker(a).finally(() => running.delete(p));
      running.add(p);
    }
  };

  const loop = (async () => {
    for await (const jm of messages) {
      if (stopping) return;
      let m: OutboxMessage;
      try {
        m = decodeMessage(jm.data);
      } catch (err) {
        counts.refused++;
        o.onError?.(err instanceof MessageError ? err : new MessageError(String(err)));
        jm.term();
        continue;
      }
      const queue = queues.get(m.aggregate);
      if (queue !== undefined) queue.push({ jm, m });
      else queues.set(m.aggregate, [{ jm, m }]);
      if (!held.has(m.aggregate)) ready.add(m.aggregate);
      kick();
    }
  })();
  return {
    counts,
    async stop() {
      stopping = true;
      for (const w of wakers) w();
      messages.stop();
      await loop.catch(() => {});
      await Promise.all([...running]);
      await Promise.all(idle.splice(0).map((c) => c.end().catch(() => {})));
      await nc.close().catch(() => {});
    },
  };
}
