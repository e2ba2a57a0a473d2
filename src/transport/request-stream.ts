// Numbered requests on one long-lived bidi stream, in batches, standing in
// for unary calls request by request. The machine behind both the SDK's
// Commits on Coordinator.CommitStream (src/client/commit-stream.ts) and the
// leader's PREPAREs/DECISIONs on Participant.Exchange
// (src/transport/participant-exchange.ts); what differs between them is a
// RequestStreamSpec.
//
// - Each request is numbered and waits in `pending` with its own deadline,
//   checked by one sweep timer (not a timer per request); a late answer is
//   dropped, as a unary call's would be.
// - Requests of one event-loop turn share a batch message (setImmediate),
//   written on a stream opened on first use. A request sent with a linger
//   (a DECISION: no client is waiting on it) does not end the turn's
//   batch by itself: it waits up to its linger for another request (at one
//   transaction at a time, the next PREPARE to the same participant) and
//   goes in that one's message, so the participant wakes once, not twice.
// - Answers come by number, in any order.
// - The stream ends with UNIMPLEMENTED (a server without the stream method)
//   and the spec has `unary` (the participant's Exchange, which the protocol
//   makes optional): what waits, and every later request, goes as unary
//   calls for good. Without `unary` it ends like any other stream.
// - The stream ends otherwise: requests written but unanswered fail with
//   spec.ended (their fate is unknown, as for a unary call cut off mid-way);
//   requests not written yet go out on the next stream.
// - close(): everything waiting fails with CANCELLED.
import * as http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';

export function serviceError(code: grpc.status, details: string, metadata = new grpc.Metadata()): grpc.ServiceError {
  return Object.assign(new Error(`${code} ${grpc.status[code]}: ${details}`), { code, details, metadata });
}

export type Answer<T> = (err: grpc.ServiceError | null, res?: T) => void;

/** A numbered request, as handed to RequestStreamSpec.batch. */
export interface Numbered<Req> {
  id: number;
  req: Req;
}

export interface RequestStreamSpec<Req, Res, Batch, Answers, Ans> {
  method: grpc.MethodDefinition<Batch, Answers>;
  /** One batch message for these requests. */
  batch(requests: Numbered<Req>[]): Batch;
  /** The answers a response message carries. */
  answers(msg: Answers): Ans[];
  answerId(a: Ans): number;
  /** What an answer to `req` means for its caller. */
  settle(a: Ans, req: Req): { value: Res } | { error: grpc.ServiceError };
  /** The same request as a unary call, for a server without the stream method; absent where every server has it. */
  unary?(req: Req, timeoutMs: number): Promise<Res>;
  /**
   * The failure of requests written on a stream that ended without answering them (never UNIMPLEMENTED when `unary` is
   * set).
   */
  ended(st: grpc.StatusObject): grpc.ServiceError;
  /** Requests waiting for an answer at once; beyond this one fails at once with RESOURCE_EXHAUSTED. */
  pendingMax: number;
  /** Requests per batch message at most (a batch also stops at the end of an event-loop turn). */
  batchMax?: number;
  /** How often deadlines are checked while requests wait. */
  sweepMs: number;
  texts: {
    /** CANCELLED details for a request sent after close(). */
    closed: string;
    /** CANCELLED details for the requests close() fails. */
    closing: string;
    /** RESOURCE_EXHAUSTED details when `waiting` requests already wait. */
    busy(waiting: number): string;
    /** DEADLINE_EXCEEDED details. */
    late(req: Req): string;
  };
}

interface Pending<Req, Res> {
  req: Req;
  deadlineAtMs: number;
  cb: Answer<Res>;
}

export class RequestStream<Req, Res, Batch, Answers, Ans> {
  /** Falls back to unary calls for good once the server says it has no stream method. */
  private unaryOnly = false;
  private call: grpc.ClientDuplexStream<Batch, Answers> | null = null;
  private nextId = 1;
  // Invariant: pending.size <= spec.pendingMax; outbox holds the ids not yet written (some may have failed by deadline
  // since).
  private readonly pending = new Map<number, Pending<Req, Res>>();
  private outbox: number[] = [];
  private flushScheduled = false;
  /** The timer of requests sent with a linger and nothing else to go with yet; null when none is set. */
  private lingerTimer: NodeJS.Timeout | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly client: grpc.Client,
    private readonly spec: RequestStreamSpec<Req, Res, Batch, Answers, Ans>,
  ) {}

  /**
   * `cb` hears the answer or the failure. With `lingerMs` > 0 the request
   * waits up to that long for another one to share a batch message with
   * (see the top of this file); without, it goes at the end of this turn.
   */
  send(req: Req, timeoutMs: number, cb: Answer<Res>, lingerMs = 0): void {
    if (this.closed) return cb(serviceError(grpc.status.CANCELLED, this.spec.texts.closed));
    if (this.unaryOnly) return this.sendUnary(req, timeoutMs, cb);
    if (this.pending.size >= this.spec.pendingMax)
      return cb(serviceError(grpc.status.RESOURCE_EXHAUSTED, this.spec.texts.busy(this.pending.size)));
    const id = this.nextId++;
    this.pending.set(id, { req, deadlineAtMs: Date.now() + timeoutMs, cb });
    this.outbox.push(id);
    if (this.sweepTimer === null) {
      this.sweepTimer = setInterval(() => this.sweep(), this.spec.sweepMs);
      this.sweepTimer.unref();
    }
    if (lingerMs > 0) return this.lingerFor(lingerMs);
    this.scheduleFlush();
  }

  private lingerFor(ms: number): void {
    if (this.flushScheduled || this.lingerTimer !== null) return;
    this.lingerTimer = setTimeout(() => {
      this.lingerTimer = null;
      this.flush();
    }, ms);
  }

  /** Ends the stream; requests still waiting fail with CANCELLED. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopSweep();
    if (this.lingerTimer !== null) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    this.outbox = [];
    const call = this.call;
    this.call = null;
    const waiting = [...this.pending.values()];
    this.pending.clear();
    const err = serviceError(grpc.status.CANCELLED, this.spec.texts.closing);
    for (const p of waiting) p.cb(err);
    call?.cancel();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // One batch per event-loop turn: every request of this turn shares a message.
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.lingerTimer !== null) {
      clearTimeout(this.lingerTimer);
      this.lingerTimer = null;
    }
    if (this.closed || this.unaryOnly || this.outbox.length === 0) return;
    const out: Numbered<Req>[] = [];
    for (const id of this.outbox) {
      const p = this.pending.get(id);
      if (p !== undefined) out.push({ id, req: p.req });
    }
    this.outbox = [];
    if (out.length === 0) return;
    const call = this.call ?? this.open();
    const max = this.spec.batchMax ?? Infinity;
    // grpc-js buffers what the socket cannot take yet; the pending bound limits how much.
    for (let i = 0; i < out.length; i += max)
      call.write(this.spec.batch(out.length <= max ? out : out.slice(i, i + max)));
  }

  private open(): grpc.ClientDuplexStream<Batch, Answers> {
    const m = this.spec.method;
    const call = this.client.makeBidiStreamRequest<Batch, Answers>(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      new grpc.Metadata(),
    );
    this.call = call;
    call.on('data', (msg: Answers) => {
      for (const a of this.spec.answers(msg)) this.answer(a);
    });
    // 'status' is the one place the end is handled; 'error' repeats it.
    call.on('error', () => {});
    call.on('status', (st: grpc.StatusObject) => this.onEnd(call, st));
    return call;
  }

  private answer(a: Ans): void {
    const id = this.spec.answerId(a);
    const p = this.pending.get(id);
    // Already failed by its deadline: the late answer is dropped, as a unary call's would be.
    if (p === undefined) return;
    this.pending.delete(id);
    const r = this.spec.settle(a, p.req);
    if ('error' in r) p.cb(r.error);
    else p.cb(null, r.value);
  }

  private onEnd(call: grpc.ClientDuplexStream<Batch, Answers>, st: grpc.StatusObject): void {
    if (call !== this.call) return;
    this.call = null;
    if (st.code === grpc.status.UNIMPLEMENTED && this.spec.unary !== undefined) {
      // A server without the stream method: the same requests, as unary calls, from now on.
      this.unaryOnly = true;
      this.stopSweep();
      this.outbox = [];
      const waiting = [...this.pending.values()];
      this.pending.clear();
      const nowMs = Date.now();
      for (const p of waiting) this.sendUnary(p.req, Math.max(1, p.deadlineAtMs - nowMs), p.cb);
      return;
    }
    // Answers that did not come will not come on a new stream: fail them as a broken unary call would.
    // Requests not written yet go out on the next stream.
    const unsent = new Set(this.outbox);
    const err = this.spec.ended(st);
    for (const [id, p] of this.pending) {
      if (unsent.has(id)) continue;
      this.pending.delete(id);
      p.cb(err);
    }
    if (this.outbox.length > 0) this.scheduleFlush();
  }

  private sendUnary(req: Req, timeoutMs: number, cb: Answer<Res>): void {
    // unaryOnly is set only when the spec has unary.
    this.spec.unary!(req, timeoutMs).then(
      (r) => cb(null, r),
      (err: grpc.ServiceError) => cb(err),
    );
  }

  /** Fails every request past its deadline with DEADLINE_EXCEEDED; stops when nothing waits. */
  private sweep(): void {
    const nowMs = Date.now();
    for (const [id, p] of this.pending) {
      if (nowMs < p.deadlineAtMs) continue;
      this.pending.delete(id);
      p.cb(serviceError(grpc.status.DEADLINE_EXCEEDED, this.spec.texts.late(p.req)));
    }
    if (this.pending.size === 0) this.stopSweep();
  }

  private stopSweep(): void {
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
  }
}

export interface AnswerStreamSpec<Batch, Req, Ans, Answers> {
  /** The requests a batch message carries. */
  requests(msg: Batch): Req[];
  /** One response message for these answers. */
  /** The last message of a stream ended because the server stops (end(true)); absent: none. */
  farewell?: () => Answers;
  batch(answers: Ans[]): Answers;
  /** Starts on one request; `waiting` counts it with the others unanswered on this stream. `answer` is called once. */
  handle(req: Req, waiting: number, answer: (a: Ans) => void): void;
  /**
   * Answers written but not yet taken by the client (its flow-control window is full); beyond this the stream is cut
   * off. Default ANSWER_STREAM_UNREAD_MAX.
   */
  unreadMax?: number;
  /** Told when the stream is cut off because the client does not read, with the reason sent to it. */
  onCutOff?: (peer: string, details: string) => void;
  /**
   * Told once when the client goes away without ending its side (its process died, its connection broke, it cancelled).
   */
  onBroken?: () => void;
}

/**
 * Answers a server keeps for one stream whose client does not read them.
 * An answer is small (an id, a code, a bounded reason), so this is a few MB
 * at most; past it the client is cut off instead of served into memory.
 */
export const ANSWER_STREAM_UNREAD_MAX = 8_192;
/** After the status is queued for a cut-off client, how long it has to read it before the stream is reset. */
const CUT_OFF_RESET_MS = 1_000;

/**
 * The server's side of such a stream: every request of a batch is handed
 * to spec.handle at once, and the answers produced by one callback (one
 * incoming batch, one sync, one applied Ready) go back in one message, in
 * the order they complete, written as that callback ends (a microtask), not
 * on the next turn of the loop: the caller waits on them, and by then the
 * same callback has queued its other sends (DECISIONs, appends) for the next
 * turn, which would otherwise go first and wake their receivers ahead of it.
 * When the client ends its side, what is in flight is answered, then the
 * stream ends. `streams` holds how to end each open stream (the server is
 * stopping); a stream leaves it when it ends.
 *
 * Back-pressure: answers the client has not read stay in the HTTP/2
 * stream's buffer. When more than spec.unreadMax are waiting there, the
 * stream is cut off: its requests are no longer handled, RESOURCE_EXHAUSTED
 * with the reason is queued, and if the client still does not read it the
 * stream is reset (the client sees RESOURCE_EXHAUSTED too), which frees
 * the buffer.
 */
export function serveAnswerStream<Batch, Req, Ans, Answers>(
  call: grpc.ServerDuplexStream<Batch, Answers>,
  streams: Set<(closing?: boolean) => void>,
  spec: AnswerStreamSpec<Batch, Req, Ans, Answers>,
): void {
  const unreadMax = spec.unreadMax ?? ANSWER_STREAM_UNREAD_MAX;
  let out: Ans[] = [];
  let flushScheduled = false;
  let open = true;
  let inputEnded = false;
  let waiting = 0;
  /** Answers handed to call.write whose write has not completed: the client has not taken them. */
  let unread = 0;
  const close = (): void => {
    open = false;
    streams.delete(end);
  };
  // `closing`: the server is stopping; the stream's last message says so (spec.farewell) when the protocol has one.
  const end = (closing = false): void => {
    if (!open) return;
    close();
    const last = closing ? spec.farewell?.() : undefined;
    if (last !== undefined) call.write(last);
    call.end();
  };
  streams.add(end);
  const cutOff = (): void => {
    close();
    const details = `the client has not read ${unread} answers on this stream (limit ${unreadMax}); the stream is cut off: read the answers as they come, or send fewer requests at once`;
    spec.onCutOff?.(call.getPeer(), details);
    call.emit('error', { code: grpc.status.RESOURCE_EXHAUSTED, details });
    setTimeout(() => resetStream(call), CUT_OFF_RESET_MS).unref();
  };
  const flush = (): void => {
    flushScheduled = false;
    if (!open) return;
    if (out.length > 0) {
      const answers = out;
      out = [];
      unread += answers.length;
      call.write(spec.batch(answers), () => {
        unread -= answers.length;
      });
      if (unread > unreadMax) return cutOff();
    }
    if (inputEnded && waiting === 0) end();
  };
  const schedule = (): void => {
    if (flushScheduled) return;
    flushScheduled = true;
    queueMicrotask(flush);
  };
  const answer = (a: Ans): void => {
    waiting--;
    if (!open) return;
    out.push(a);
    schedule();
  };
  call.on('data', (msg: Batch) => {
    if (!open) return;
    for (const req of spec.requests(msg)) {
      waiting++;
      spec.handle(req, waiting, answer);
    }
  });
  // The client ended its side: answer what is in flight, then end ours.
  call.on('end', () => {
    inputEnded = true;
    schedule();
  });
  // A client that cancels (or dies) may first look like one that ended its
  // side, and the answers may all be out already: told even when closed.
  let brokenTold = false;
  const broken = (): void => {
    close();
    if (brokenTold) return;
    brokenTold = true;
    spec.onBroken?.();
  };
  call.on('cancelled', broken);
  call.on('error', broken);
}

/**
 * Resets the HTTP/2 stream under a server call with ENHANCE_YOUR_CALM (which
 * grpc-js clients report as RESOURCE_EXHAUSTED), dropping what it buffered.
 * grpc-js has no public way to do this, so the stream is found through the
 * call's internals; when they change shape nothing happens, and the status
 * already queued still ends the call once the client reads.
 */
function resetStream(call: unknown): void {
  const seen = new Set<unknown>();
  let c: unknown = (call as { call?: unknown }).call;
  while (typeof c === 'object' && c !== null && !seen.has(c)) {
    seen.add(c);
    const stream = (c as { stream?: { closed?: boolean; close?: (code: number) => void } }).stream;
    if (stream && typeof stream.close === 'function') {
      if (!stream.closed) stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      return;
    }
    c = (c as { nextCall?: unknown }).nextCall;
  }
}
