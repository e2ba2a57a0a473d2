// The outbox's broker: NATS JetStream. The sink publishes each event with its
// message id as Nats-Msg-Id, so a republish inside the stream's duplicate
// window is dropped by the broker itself (the PubAck says `duplicate`), and
// resolves only on the PubAck, which JetStream sends once the message is
// stored. The partition's lease epoch rides in a header as well as in the
// body. The consumer side (consumeToInbox) feeds the stream to Inbox.handle,
// different aggregates in parallel and each aggregate's messages one at a
// time in stream order, acknowledging only after the inbox's transaction
// committed, so each effect happens exactly once and in its aggregate's order.
//
// The connection is made lazily and remade after a failure: a broker that is
// down at the relay's start, or restarted under it, fails publishes (the rows
// stay unpublished) until it is back.
import type { JetStreamManager, JsMsg, NatsConnection } from 'nats';
import type { Inbox, InboxResult } from './inbox.ts';
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
const ACK_PENDING_MAX = 256;
const FETCH_MAX = 64;

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
  if (u.protocol !== 'nats:' || u.hostname === '' || u.port === '') throw new NatsSinkError(`sink ${JSON.stringify(url)}: only nats://HOST:PORT (NATS JetStream) is supported`);
  return `${u.hostname}:${u.port}`;
}

export function checkTarget(t: NatsTarget): void {
  natsServer(t.url);
  if (!NAME.test(t.stream)) throw new NatsSinkError(`stream name ${JSON.stringify(t.stream)} must be 1–64 letters, digits, _ or -`);
  if (!SUBJECT.test(t.subject)) throw new NatsSinkError(`subject ${JSON.stringify(t.subject)} must be dot-separated tokens of letters, digits, _ or - (no wildcards)`);
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
  const nc = await nats.connect({ servers: natsServer(t.url), name, timeout: CONNECT_TIMEOUT_MS, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  try {
    const jsm = await nc.jetstreamManager({ timeout: CONNECT_TIMEOUT_MS });
    try {
      await jsm.streams.info(t.stream);
    } catch (err) {
      if (!/stream not found/i.test((err as Error).message)) throw err;
      await jsm.streams.add({ name: t.stream, subjects: [t.subject], duplicate_window: (t.duplicateWindowMs ?? 120_000) * 1_000_000 });
    }
    return { nc, jsm, nats };
  } catch (err) {
    await nc.close().catch(() => {});
    throw err;
  }
}

export class NatsSink implements Sink {
  private conn: Promise<{ nc: NatsConnection; nats: Nats }> | null = null;

  constructor(private readonly t: NatsTarget) {
    checkTarget(t);
  }

  private connection(): Promise<{ nc: NatsConnection; nats: Nats }> {
    this.conn ??= open(this.t, 'verdict-outbox-relay').then(
      (c) => ({ nc: c.nc, nats: c.nats }),
      (err: unknown) => {
        this.conn = null;
        if (err instanceof NatsSinkError) throw err;
        throw new NatsSinkError(`cannot reach NATS at ${this.t.url}: ${(err as Error).message}`);
      },
    );
    return this.conn;
  }

  async publish(m: OutboxMessage, timeoutMs: number): Promise<{ duplicate: boolean }> {
    const { nc, nats } = await this.connection();
    const h = nats.headers();
    h.set(EPOCH_HEADER, String(m.epoch));
    try {
      const ack = await nc.jetstream({ timeout: timeoutMs }).publish(this.t.subject, encodeMessage(m), { msgID: m.id, headers: h, timeout: timeoutMs });
      if (ack.stream !== this.t.stream) throw new NatsSinkError(`subject ${this.t.subject} is stored by stream ${ack.stream}, not ${this.t.stream}`);
      return { duplicate: ack.duplicate };
    } catch (err) {
      if (nc.isClosed()) this.conn = null;
      throw err instanceof NatsSinkError ? err : new NatsSinkError(`NATS did not confirm event ${m.id}: ${(err as Error).message}`);
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
  /** The consumer's database (holds the inbox tables); one connection per aggregate in progress, remade after a failure. */
  pgUrl: string;
  effect: (tx: Queryable, m: OutboxMessage) => Promise<void>;
  /** Aggregates applied at once, each on its own PostgreSQL connection (default 16). */
  concurrency?: number;
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
 * A durable JetStream consumer feeding Inbox.handle. Messages are read in
 * stream order and queued per aggregate; each aggregate has at most one
 * message in progress, taken in the order its messages arrived, so the
 * stream's order, which per aggregate is commit order, is the order of its
 * effects. Up to `concurrency` aggregates are applied at once, each on its own
 * connection. A message is acknowledged after the inbox's transaction
 * committed; an effect that fails is retried in place (bounded back-off)
 * before the aggregate's next message, never skipped, while other aggregates
 * go on. Up to ACK_PENDING_MAX messages are outstanding: one the broker
 * redelivers (its ack was lost, or it waited longer than ackWaitMs) queues
 * behind the original and the inbox answers it as a duplicate. A message
 * that is not an outbox message is terminated (never redelivered) and counted
 * as refused.
 */
export async function consumeToInbox(o: ConsumeOptions): Promise<InboxConsumer> {
  checkTarget(o);
  if (!NAME.test(o.durable)) throw new NatsSinkError(`consumer name ${JSON.stringify(o.durable)} must be 1–64 letters, digits, _ or -`);
  const concurrency = o.concurrency ?? 16;
  if (!(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= ACK_PENDING_MAX))
    throw new NatsSinkError(`consumer concurrency ${concurrency} must be an integer from 1 to ${ACK_PENDING_MAX}`);
  const { nc, jsm, nats } = await open(o, `verdict-inbox-${o.durable}`);
  const ackWaitMs = o.ackWaitMs ?? 30_000;
  try {
    await jsm.consumers.info(o.stream, o.durable);
  } catch {
    await jsm.consumers.add(o.stream, {
      durable_name: o.durable,
      ack_policy: nats.AckPolicy.Explicit,
      deliver_policy: nats.DeliverPolicy.All,
      max_ack_pending: ACK_PENDING_MAX,
      ack_wait: ackWaitMs * 1_000_000,
    });
  }
  const consumer = await nc.jetstream().consumers.get(o.stream, o.durable);
  const messages = await consumer.consume({ max_messages: FETCH_MAX });
  const counts = { applied: 0, duplicate: 0, 'stale-epoch': 0, refused: 0, failed: 0 };
  let stopping = false;
  // Per aggregate, the messages not yet applied, the first one in progress.
  const queues = new Map<string, Delivery[]>();
  const running = new Set<Promise<void>>();
  const idle: pg.Client[] = [];
  const waiting: (() => void)[] = [];
  let slots = concurrency;
  const acquire = async (): Promise<void> => {
    if (slots > 0) slots--;
    else await new Promise<void>((r) => waiting.push(r));
  };
  const release = (): void => {
    const next = waiting.shift();
    if (next !== undefined) next();
    else slots++;
  };

  // Applies one aggregate's queue, front to back, on one connection.
  const drain = async (aggregate: string, queue: Delivery[]): Promise<void> => {
    await acquire();
    let db = idle.pop() ?? null;
    try {
      while (queue.length > 0 && !stopping) {
        const { jm, m } = queue[0];
        for (let attempt = 0; ; attempt++) {
          try {
            db ??= await connectPg(o.pgUrl);
            const r = await o.inbox.handle(db, m, (tx) => o.effect(tx, m));
            counts[r]++;
            o.onResult?.(m, r);
            jm.ack();
            break;
          } catch (err) {
            counts.failed++;
            o.onError?.(err);
            await db?.end().catch(() => {});
            db = null;
            // Stopping: leave it unacknowledged; the broker redelivers it to the next run.
            if (stopping) return;
            for (const d of queue) d.jm.working();
            await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** Math.min(attempt, 6))));
          }
        }
        queue.shift();
      }
    } finally {
      // Nothing awaits between the last shift and here: no message joins a queue being dropped.
      queues.delete(aggregate);
      if (db !== null) idle.push(db);
      release();
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
      if (queue !== undefined) {
        queue.push({ jm, m });
        continue;
      }
      const fresh = [{ jm, m }];
      queues.set(m.aggregate, fresh);
      const p = drain(m.aggregate, fresh).finally(() => running.delete(p));
      running.add(p);
    }
  })();
  return {
    counts,
    async stop() {
      stopping = true;
      messages.stop();
      await loop.catch(() => {});
      await Promise.all([...running]);
      await Promise.all(idle.splice(0).map((c) => c.end().catch(() => {})));
      await nc.close().catch(() => {});
    },
  };
}
