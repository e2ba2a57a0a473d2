// The leader's calls to participants: PREPARE and DECISION over gRPC, one
// channel per participant endpoint, reused, carrying one long-lived Exchange
// stream that batches the requests (unary calls for a participant without
// it). This is where the engine's pure EngineIO meets the network.

import type { DecisionRequest, EngineVote, PrepareRequest } from '../commit/engine.ts';
import { reserveTtlProblem } from '../domain/protocol.ts';
import type { ParticipantRecord } from '../commit/state.ts';
import * as grpc from '@grpc/grpc-js';
import { ParticipantClient } from '../transport/participant-rpc.ts';
import { decisionToWire, prepareToWire, statusFromWire, voteFromWire } from '../transport/protocol-wire.ts';
import {
  MethodUnimplementedError,
  NotDeliveredError,
  type ParticipantMethod,
  type TxnStatus,
} from '../domain/protocol.ts';
import { newExchangeCounts, ParticipantExchange } from '../transport/participant-exchange.ts';
import { traceToMetadata, type TraceContext } from '../transport/trace-context.ts';

/**
 * Refusals only a participant's own PREPARE handler gives (grpc-js never
 * makes them up for a connection that failed): their details are the
 * participant's words, kept in the transaction's abort reason.
 */
const PARTICIPANT_REFUSALS: ReadonlySet<number> = new Set([
  grpc.status.FAILED_PRECONDITION,
  grpc.status.INVALID_ARGUMENT,
]);

/**
 * What the engine (and so the logged abort reason, which clients and the
 * participant read back) hears of a PREPARE that got no vote. A registered
 * endpoint is whatever the participant said, so the raw connection error
 * ("ECONNREFUSED", a timeout, "Protocol error" from a server that is not
 * gRPC) would tell whoever registered it what listens at any address the
 * leader can reach: a port scan run from the leader. Every failure that is
 * not the participant's own refusal reads the same; the node's log and the
 * console's timeline keep the error for operators.
 */
export function noVoteError(to: ParticipantRecord, err: Error): Error {
  const code = (err as Partial<grpc.ServiceError>).code;
  if (code !== undefined && PARTICIPANT_REFUSALS.has(code)) return err;
  const text = `no answer from participant ${to.id} at its registered endpoint (unreachable, not a participant, or too slow; the leader's log names the error)`;
  // The engine still learns that the PREPARE never left (it then owes no ABORT), in the same words.
  return err instanceof NotDeliveredError ? new NotDeliveredError(to.id, text) : new Error(text);
}

/**
 * True when a call failed before it had a connection to go out on: grpc-js
 * answers UNAVAILABLE "No connection established" when no transport could be
 * picked (the connection was refused, unreachable, or its TLS handshake
 * failed), so not a byte of the request reached the participant.
 */
function neverSent(err: Error): boolean {
  const e = err as Partial<grpc.ServiceError>;
  return e.code === grpc.status.UNAVAILABLE && (e.details ?? '').includes('No connection established');
}

/** A participant's UNIMPLEMENTED, as the commit protocol's error that names the method; any other error as it came. */
function named(to: ParticipantRecord, method: ParticipantMethod, err: Error): Error {
  if ((err as Partial<grpc.ServiceError>).code !== grpc.status.UNIMPLEMENTED) return err;
  return new MethodUnimplementedError(to.id, method, (err as Partial<grpc.ServiceError>).details ?? '');
}

/** Channels kept open; beyond this the least recently used is closed. */
const CHANNELS_MAX = 256;

interface Channel {
  client: ParticipantClient;
  exchange: ParticipantExchange;
  /**
   * When the first request still without any answer was sent; 0 when the participant answered everything sent before
   * its last answer.
   */
  unansweredSinceAtMs: number;
}

/** Failures that are no answer from the participant (the call never reached it, or it said nothing in time). */
const NO_ANSWER: ReadonlySet<number> = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.CANCELLED,
]);

/** A channel per participant id and endpoint: the id is what its server certificate must name. */
function channelKey(id: string, endpoint: string): string {
  return `${id}\u0000${endpoint}`;
}

export class ParticipantLink {
  private readonly clients = new Map<string, Channel>();
  /** PREPAREs and DECISIONs sent and votes and acks received on every channel, since the node started. */
  readonly exchangeCounts = newExchangeCounts();

  /**
   * `credentials`: TLS for participant `id` when the cluster uses TLS (its
   * server certificate must be `id`'s); plaintext when absent. A channel is
   * per participant and endpoint, so each is checked for its own identity.
   */
  constructor(
    private readonly clusterId: string,
    private readonly credentials?: (participantId: string) => grpc.ChannelCredentials,
    /**
     * How long a DECISION may wait for the next PREPARE to its participant (NodeConfig.decisionLingerMs); 0: at once.
     */
    private readonly decisionLingerMs = 0,
  ) {}

  private client(to: ParticipantRecord): ParticipantExchange {
    return this.channel(to).exchange;
  }

  private channel(to: ParticipantRecord): Channel {
    const key = channelKey(to.id, to.endpoint);
    let c = this.clients.get(key);
    if (c) {
      // Move to the back: Map order is our LRU order.
      this.clients.delete(key);
      this.clients.set(key, c);
      return c;
    }
    const { endpoint } = to;
    const client = new ParticipantClient(endpoint, this.credentials?.(to.id));
    c = {
      client,
      exchange: new ParticipantExchange(client.channel, endpoint, this.exchangeCounts),
      unansweredSinceAtMs: 0,
    };
    this.clients.set(key, c);
    if (this.clients.size > CHANNELS_MAX) {
      const [oldest, oc] = this.clients.entries().next().value as [string, Channel];
      this.clients.delete(oldest);
      oc.exchange.close();
      oc.client.close();
    }
    return c;
  }

  /**
   * Notes a request sent on `c` and returns the callback that notes its
   * answer: any answer (a vote, an ACK, the participant's own refusal)
   * clears the silence; a failure that never reached it (or reached it and
   * got nothing back in time) does not.
   */
  private asked<A extends unknown[]>(
    c: Channel,
    cb: (err: Error | null, ...rest: A) => void,
  ): (err: Error | null, ...rest: A) => void {
    if (c.unansweredSinceAtMs === 0) c.unansweredSinceAtMs = Date.now();
    return (err, ...rest) => {
      const e = err as (Partial<grpc.ServiceError> & { answered?: boolean }) | null;
      if (e === null || e.answered === true || (e.code !== undefined && !NO_ANSWER.has(e.code)))
        c.unansweredSinceAtMs = 0;
      cb(err, ...rest);
    };
  }

  /**
   * Since when the participant at `endpoint` has not answered anything this
   * node asked of it (0: it answered everything, or nothing was asked). A
   * stopped process keeps its TCP connection "connected"; this is what shows it.
   */
  unansweredSinceAtMs(endpoint: string): number {
    let sinceAtMs = 0;
    for (const [key, ch] of this.clients) if (key.endsWith(`\u0000${endpoint}`)) sinceAtMs = ch.unansweredSinceAtMs;
    return sinceAtMs;
  }

  /**
   * `trace`: the context the participant continues, sent as metadata (the request then goes as a unary call, which
   * carries it).
   */
  prepare(
    to: ParticipantRecord,
    req: PrepareRequest,
    timeoutMs: number,
    trace: TraceContext | undefined,
    cb: (err: Error | null, vote?: EngineVote) => void,
  ): void {
    const c = this.channel(to);
    const md = trace === undefined ? undefined : traceToMetadata(trace);
    // The silence is judged on the raw error (its gRPC code); the engine hears it named.
    const answered = this.asked(
      c,
      (err: Error | null, w?: Parameters<Parameters<ParticipantExchange['prepare']>[2]>[1]) => {
        if (err !== null)
          return cb(
            neverSent(err)
              ? new NotDeliveredError(to.id, `PREPARE never reached participant ${to.id}: ${err.message}`)
              : named(to, 'Prepare', err),
          );
        if (w === undefined) return cb(new Error(`participant ${to.id} answered PREPARE without a vote`));
        const v = voteFromWire(w);
        if (v === null) return cb(new Error(`participant ${to.id} answered an invalid vote ${JSON.stringify(w.vote)}`));
        const ttlProblem = v.reserveTtlMs === undefined ? null : reserveTtlProblem(v.reserveTtlMs);
        if (ttlProblem !== null)
          return cb(new Error(`participant ${to.id} answered an invalid vote: YES with ${ttlProblem}`));
        cb(
          null,
          v.reserveTtlMs === undefined
            ? { vote: v.vote, reason: v.reason }
            : { vote: v.vote, reason: v.reason, reserveTtlMs: v.reserveTtlMs },
        );
      },
    );
    c.exchange.prepare(prepareToWire({ clusterId: this.clusterId, ...req }), timeoutMs, answered, md);
  }

  decide(
    to: ParticipantRecord,
    req: DecisionRequest,
    timeoutMs: number,
    trace: TraceContext | undefined,
    cb: (err: Error | null) => void,
  ): void {
    const c = this.channel(to);
    const md = trace === undefined ? undefined : traceToMetadata(trace);
    const answered = this.asked(c, (err: Error | null) => cb(err === null ? null : named(to, 'Decide', err)));
    c.exchange.decide(
      decisionToWire({ clusterId: this.clusterId, ...req }),
      timeoutMs,
      answered,
      this.decisionLingerMs,
      md,
    );
  }

  /** The status question of parallel commit's recovery: a unary call, rare (only after a leader change). */
  status(
    to: ParticipantRecord,
    txnId: string,
    timeoutMs: number,
    cb: (err: Error | null, status?: TxnStatus) => void,
  ): void {
    const c = this.channel(to);
    const answered = this.asked(c, (err: Error | null, s?: ReturnType<typeof statusFromWire>) =>
      err !== null ? cb(named(to, 'Status', err)) : cb(null, s ?? undefined),
    );
    c.client.status({ clusterId: this.clusterId, txnId, participantId: to.id }, timeoutMs).then(
      (w) => {
        const s = statusFromWire(w);
        if (s === null)
          return cb(new Error(`participant ${to.id} answered an invalid status ${JSON.stringify(w.status)}`));
        answered(null, s);
      },
      (err: Error) => answered(err),
    );
  }

  /**
   * The state of this node's connection to a participant, for operators:
   * "connected", "connecting", "down" (failed, reconnecting with backoff) or
   * "idle" (no channel, or one with nothing to carry). Idle is normal for a
   * participant no transaction has used since this node became leader.
   */
  connection(endpoint: string): 'connected' | 'connecting' | 'down' | 'idle' | 'closed' {
    let c: Channel | undefined;
    for (const [key, ch] of this.clients) if (key.endsWith(`\u0000${endpoint}`)) c = ch;
    if (c === undefined) return 'idle';
    // It said it closed cleanly (its process stopped), and has not answered since.
    if (c.exchange.closedAtMs !== null) return 'closed';
    switch (c.client.channel.getChannel().getConnectivityState(false)) {
      case grpc.connectivityState.READY:
        return 'connected';
      case grpc.connectivityState.CONNECTING:
        return 'connecting';
      case grpc.connectivityState.TRANSIENT_FAILURE:
      case grpc.connectivityState.SHUTDOWN:
        return 'down';
      default:
        return 'idle';
    }
  }

  close(): void {
    for (const c of this.clients.values()) {
      c.exchange.close();
      c.client.close();
    }
    this.clients.clear();
  }
}
