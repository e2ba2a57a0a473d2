// The leader's side of `Participant.Exchange`: PREPAREs and DECISIONs for one
// participant endpoint on one long-lived bidi stream, in batches.
//
// Why: a unary call costs an HTTP/2 stream (headers, a stream object, a
// status trailer) on both sides, and the commit path makes two per
// participant per transaction. On the stream a request is one message in a
// batch that every send of the same event-loop turn shares.
//
// Semantics are those of the unary calls, request by request: each request
// is numbered, the participant answers by number in any order, each request
// has its own deadline (checked by one sweep timer, not a timer per
// request), and a request whose answer cannot come (the stream broke, the
// deadline passed) fails with the gRPC status the unary call would have
// failed with. Nothing is resent here: the engine's callers already retry
// DECISIONs with backoff (R5) and turn a failed PREPARE into an abort (R3),
// and every request is idempotent at the participant (R7).
//
// A participant without Exchange (an older build, a test double) ends the
// stream with UNIMPLEMENTED: its requests in flight and every later one then
// go as unary calls on the same channel.
import * as grpc from '@grpc/grpc-js';
import { assert } from '../raft/types.ts';
import { unaryCall } from './unary.ts';
import { participantService, type Ack, type AnswerBatch, type Decision, type ExchangeAnswer, type ExchangeBatch, type ExchangeRequest, type Prepare, type Vote } from './participant-rpc.ts';

/** Requests waiting for an answer on one stream; beyond this a request fails at once with RESOURCE_EXHAUSTED. */
export const EXCHANGE_PENDING_MAX = 65_536;
/** Requests per batch message (a batch also stops at the end of an event-loop turn). */
const BATCH_REQUESTS_MAX = 512;
/** How often deadlines are checked while requests are pending. */
const SWEEP_MS = 50;

type Answer<T> = (err: grpc.ServiceError | null, res?: T) => void;

interface Pending {
  req: ExchangeRequest;
  deadlineAtMs: number;
  /** Called with the vote (for a prepare) or the ack (for a decision). */
  cb: Answer<Vote | Ack>;
}

export function serviceError(code: grpc.status, details: string): grpc.ServiceError {
  return Object.assign(new Error(`${code} ${grpc.status[code]}: ${details}`), { code, details, metadata: new grpc.Metadata() });
}

export class ParticipantExchange {
  /** Falls back to unary calls for good once the participant says it has no Exchange. */
  private unaryOnly = false;
  private call: grpc.ClientDuplexStream<ExchangeBatch, AnswerBatch> | null = null;
  private nextId = 1;
  // Invariant: pending.size <= EXCHANGE_PENDING_MAX; outbox holds requests not yet written (some may have failed by deadline since).
  private readonly pending = new Map<number, Pending>();
  private outbox: ExchangeRequest[] = [];
  private flushScheduled = false;
  private sweepTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly client: grpc.Client,
    private readonly endpoint: string,
  ) {}

  prepare(req: Prepare, deadlineMs: number, cb: Answer<Vote>): void {
    this.send({ id: 0, prepare: req }, deadlineMs, cb as Answer<Vote | Ack>);
  }

  decide(req: Decision, deadlineMs: number, cb: Answer<Ack>): void {
    this.send({ id: 0, decision: req }, deadlineMs, cb as Answer<Vote | Ack>);
  }

  /** Ends the stream; requests still waiting fail with CANCELLED. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopSweep();
    const call = this.call;
    this.call = null;
    this.outbox = [];
    this.failAll(serviceError(grpc.status.CANCELLED, `the connection to participant ${this.endpoint} is closing`));
    call?.cancel();
  }

  private send(req: ExchangeRequest, deadlineMs: number, cb: Answer<Vote | Ack>): void {
    if (this.closed) return cb(serviceError(grpc.status.CANCELLED, `the connection to participant ${this.endpoint} is closed`));
    if (this.unaryOnly) return this.sendUnary(req, deadlineMs, cb);
    if (this.pending.size >= EXCHANGE_PENDING_MAX) return cb(serviceError(grpc.status.RESOURCE_EXHAUSTED, `${this.pending.size} requests to participant ${this.endpoint} wait for an answer`));
    req.id = this.nextId++;
    this.pending.set(req.id, { req, deadlineAtMs: Date.now() + deadlineMs, cb });
    this.outbox.push(req);
    if (this.sweepTimer === null) {
      this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
      this.sweepTimer.unref();
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // One batch per event-loop turn: every PREPARE and DECISION of this turn shares a message.
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.closed || this.unaryOnly || this.outbox.length === 0) return;
    const call = this.call ?? this.open();
    const out = this.outbox;
    this.outbox = [];
    // grpc-js buffers what the socket cannot take yet; the pending bound limits how much.
    for (let i = 0; i < out.length; i += BATCH_REQUESTS_MAX) call.write({ requests: out.length <= BATCH_REQUESTS_MAX ? out : out.slice(i, i + BATCH_REQUESTS_MAX) });
  }

  private open(): grpc.ClientDuplexStream<ExchangeBatch, AnswerBatch> {
    const m = participantService.Exchange as grpc.MethodDefinition<ExchangeBatch, AnswerBatch>;
    const call = this.client.makeBidiStreamRequest<ExchangeBatch, AnswerBatch>(m.path, m.requestSerialize, m.responseDeserialize, new grpc.Metadata());
    this.call = call;
    call.on('data', (batch: AnswerBatch) => {
      for (const a of batch.answers) this.answer(a);
    });
    // 'status' is the one place the end is handled; 'error' repeats it.
    call.on('error', () => {});
    call.on('status', (st: grpc.StatusObject) => this.onEnd(call, st));
    return call;
  }

  private answer(a: ExchangeAnswer): void {
    const p = this.pending.get(a.id);
    // Already failed by its deadline: the late answer is dropped, as a unary call's would be.
    if (p === undefined) return;
    this.pending.delete(a.id);
    if (a.error) return p.cb(serviceError(a.error.code, a.error.details));
    const res = p.req.prepare ? a.vote : a.ack;
    if (!res) return p.cb(serviceError(grpc.status.INTERNAL, `participant ${this.endpoint} answered request ${a.id} without a ${p.req.prepare ? 'vote' : 'ack'}`));
    p.cb(null, res);
  }

  private onEnd(call: grpc.ClientDuplexStream<ExchangeBatch, AnswerBatch>, st: grpc.StatusObject): void {
    if (call !== this.call) return;
    this.call = null;
    if (st.code === grpc.status.UNIMPLEMENTED) {
      // A participant without Exchange: the same requests, as unary calls, from now on.
      this.unaryOnly = true;
      this.stopSweep();
      const waiting = [...this.pending.values()];
      this.pending.clear();
      this.outbox = [];
      const now = Date.now();
      for (const p of waiting) this.sendUnary(p.req, Math.max(1, p.deadlineAtMs - now), p.cb);
      return;
    }
    // Answers that did not come will not come on a new stream: fail them as a broken unary call would.
    // Requests not written yet go out on the next stream.
    const unsent = new Set(this.outbox.map((r) => r.id));
    const code = st.code === grpc.status.OK ? grpc.status.UNAVAILABLE : st.code;
    const err = serviceError(code, st.code === grpc.status.OK ? `participant ${this.endpoint} ended the stream` : st.details);
    for (const [id, p] of this.pending) {
      if (unsent.has(id)) continue;
      this.pending.delete(id);
      p.cb(err);
    }
    if (this.outbox.length > 0 && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private sendUnary(req: ExchangeRequest, deadlineMs: number, cb: Answer<Vote | Ack>): void {
    const done = (p: Promise<Vote | Ack>): void => void p.then((r) => cb(null, r), (err: grpc.ServiceError) => cb(err));
    if (req.prepare) done(unaryCall(this.client, participantService.Prepare, req.prepare, deadlineMs));
    else if (req.decision) done(unaryCall(this.client, participantService.Decide, req.decision, deadlineMs));
    else assert(false, 'exchange request without a body');
  }

  /** Fails every request past its deadline with DEADLINE_EXCEEDED; stops when nothing waits. */
  private sweep(): void {
    const now = Date.now();
    for (const [id, p] of this.pending) {
      if (now < p.deadlineAtMs) continue;
      this.pending.delete(id);
      p.cb(serviceError(grpc.status.DEADLINE_EXCEEDED, `participant ${this.endpoint} did not answer ${p.req.prepare ? 'PREPARE' : 'DECISION'} for ${p.req.prepare?.txnId ?? p.req.decision?.txnId} in time`));
    }
    if (this.pending.size === 0) this.stopSweep();
  }

  private stopSweep(): void {
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
  }

  private failAll(err: grpc.ServiceError): void {
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const p of waiting) p.cb(err);
  }
}
