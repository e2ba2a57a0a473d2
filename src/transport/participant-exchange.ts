// The leader's side of `Participant.Exchange`: PREPAREs and DECISIONs for one
// participant endpoint on one long-lived bidi stream, in batches.
//
// Why: a unary call costs an HTTP/2 stream (headers, a stream object, a
// status trailer) on both sides, and the commit path makes two per
// participant per transaction. On the stream a request is one message in a
// batch that every send of the same event-loop turn shares; a DECISION may
// wait a little longer for the next PREPARE's batch (decide's `lingerMs`).
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
// A participant without Exchange (the protocol makes it optional) ends the
// stream with UNIMPLEMENTED: its requests in flight and every later one then
// go as unary calls on the same channel.
//
// The stream machine itself is RequestStream (./request-stream.ts), shared
// with the SDK's Coordinator.CommitStream.
import { assert } from '../util/assert.ts';
import * as grpc from '@grpc/grpc-js';

import { RequestStream, serviceError, type Answer } from './request-stream.ts';
import { unaryCall } from './unary.ts';
import {
  participantService,
  type Ack,
  type AnswerBatch,
  type DecideRequest,
  type ExchangeAnswer,
  type ExchangeBatch,
  type ExchangeRequest,
  type PrepareRequest,
  type VoteMessage,
} from './participant-rpc.ts';

/** Requests waiting for an answer on one stream; beyond this a request fails at once with RESOURCE_EXHAUSTED. */
export const EXCHANGE_PENDING_MAX = 65_536;
/** Requests per batch message (a batch also stops at the end of an event-loop turn). */
const BATCH_REQUESTS_MAX = 512;
/** How often deadlines are checked while requests are pending. */
const SWEEP_MS = 50;

/**
 * What the leader's exchanges sent and received: PREPARE and DECISION requests and the messages they went in (a
 * batch on the stream, or a unary call), and the votes and acks that came back and the messages they came in. One
 * object may count for every exchange of a node.
 */
export interface ExchangeCounts {
  requests: number;
  requestMessages: number;
  answers: number;
  answerMessages: number;
}

export function newExchangeCounts(): ExchangeCounts {
  return { requests: 0, requestMessages: 0, answers: 0, answerMessages: 0 };
}

export class ParticipantExchange {
  /** Each request carries its vote (a prepare) or ack (a decision); its id is the stream's to give. */
  private readonly stream: RequestStream<
    ExchangeRequest,
    VoteMessage | Ack,
    ExchangeBatch,
    AnswerBatch,
    ExchangeAnswer
  >;

  constructor(
    private readonly client: grpc.Client,
    endpoint: string,
    private readonly counts: ExchangeCounts = newExchangeCounts(),
  ) {
    this.stream = new RequestStream(client, {
      method: participantService.Exchange as grpc.MethodDefinition<ExchangeBatch, AnswerBatch>,
      batch: (requests) => {
        this.counted(requests.length);
        return { requests: requests.map(({ id, req }) => ({ ...req, id })) };
      },
      answers: (msg) => {
        counts.answers += msg.answers.length;
        counts.answerMessages += 1;
        // The participant said it is closing (its last message), or answered again since.
        if (msg.closing) this.closedAtMs = Date.now();
        else if (msg.answers.length > 0) this.closedAtMs = null;
        return msg.answers;
      },
      answerId: (a) => a.id,
      settle: (a, req) => {
        // The participant's own error, answered on the stream: `answered` tells it from a connection that failed
        // (src/node/participant-link.ts).
        if (a.error) return { error: Object.assign(serviceError(a.error.code, a.error.details), { answered: true }) };
        const res = req.prepare ? a.vote : a.ack;
        if (!res)
          return {
            error: serviceError(
              grpc.status.INTERNAL,
              `participant ${endpoint} answered request ${a.id} without a ${req.prepare ? 'vote' : 'ack'}`,
            ),
          };
        return { value: res };
      },
      unary: (req, timeoutMs) => {
        this.counted(1, true);
        if (req.prepare) return unaryCall(client, participantService.Prepare, req.prepare, timeoutMs);
        assert(req.decision, 'exchange request without a body');
        return unaryCall(client, participantService.Decide, req.decision, timeoutMs);
      },
      ended: (st) =>
        serviceError(
          st.code === grpc.status.OK ? grpc.status.UNAVAILABLE : st.code,
          st.code === grpc.status.OK ? `participant ${endpoint} ended the stream` : st.details,
        ),
      pendingMax: EXCHANGE_PENDING_MAX,
      batchMax: BATCH_REQUESTS_MAX,
      sweepMs: SWEEP_MS,
      texts: {
        closed: `the connection to participant ${endpoint} is closed`,
        closing: `the connection to participant ${endpoint} is closing`,
        busy: (waiting) => `${waiting} requests to participant ${endpoint} wait for an answer`,
        late: (req) =>
          `participant ${endpoint} did not answer ${req.prepare ? 'PREPARE' : 'DECISION'} for ${req.prepare?.txnId ?? req.decision?.txnId} in time`,
      },
    });
  }

  /**
   * With `metadata` (a trace context, src/transport/trace-context.ts) the
   * PREPARE goes as a unary call, whose metadata is its own: a message on
   * the shared stream has none.
   */
  /** A message of `requests` requests went out (a unary call's answer is counted as one message back). */
  private counted(requests: number, unary = false): void {
    this.counts.requests += requests;
    this.counts.requestMessages += 1;
    if (unary) {
      this.counts.answers += 1;
      this.counts.answerMessages += 1;
    }
  }

  prepare(req: PrepareRequest, timeoutMs: number, cb: Answer<VoteMessage>, metadata?: grpc.Metadata): void {
    if (metadata !== undefined) {
      this.counted(1, true);
      return settle(unaryCall(this.client, participantService.Prepare, req, timeoutMs, metadata), cb);
    }
    this.stream.send({ id: 0, prepare: req }, timeoutMs, cb as Answer<VoteMessage | Ack>);
  }

  /**
   * With `lingerMs` the DECISION waits up to that long to share the next PREPARE's message (see RequestStream.send);
   * with `metadata`, a unary call as for prepare.
   */
  decide(req: DecideRequest, timeoutMs: number, cb: Answer<Ack>, lingerMs = 0, metadata?: grpc.Metadata): void {
    if (metadata !== undefined) {
      this.counted(1, true);
      return settle(unaryCall(this.client, participantService.Decide, req, timeoutMs, metadata), cb);
    }
    this.stream.send({ id: 0, decision: req }, timeoutMs, cb as Answer<VoteMessage | Ack>, lingerMs);
  }

  /** When the participant last said it is closing (AnswerBatch.closing), unless it answered since; null otherwise. */
  closedAtMs: number | null = null;

  /** Ends the stream; requests still waiting fail with CANCELLED. */
  close(): void {
    this.stream.close();
  }
}

function settle<T>(p: Promise<T>, cb: Answer<T>): void {
  p.then(
    (v) => cb(null, v),
    (err: grpc.ServiceError) => cb(err),
  );
}
