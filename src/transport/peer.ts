// The outbound half of the transport for one peer: a bounded queue, one
// long-lived client stream, and a capped, jittered reconnect backoff.
//
// States: no stream (idle) → stream open → stream ended → backoff → (next
// flush) stream open … A stream is opened lazily, only when there is
// something to send, so a silent peer costs nothing.
import { childLogger } from '../util/child-log.ts';
import { assert } from '../util/assert.ts';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { type Message, type NodeId } from '../raft/types.ts';
import { messageBytes, streamMethod, toWire, toWireEnvelope, type WireBatch, type WireStreamAck } from './proto.ts';
import { explainConnectError } from './tls.ts';

/** Distinct reasons a run of failed streams to one peer warns about; later ones go to debug. */
export const WARNED_REASONS_MAX = 4;

export interface PeerLinkOptions {
  clusterId: string;
  selfId: NodeId;
  peerId: NodeId;
  address: string;
  credentials: grpc.ChannelCredentials;
  channelOptions: grpc.ChannelOptions;
  queueMessagesMax: number;
  queueBytesMax: number;
  batchBytesMax: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  /** How long close() waits for the peer to acknowledge the end of the stream. */
  closeTimeoutMs: number;
  random: () => number;
  logger: Logger;
  /** Must not call back into the Raft core synchronously; the transport defers it. */
  reportUnreachable: (peer: NodeId) => void;
  /**
   * The decision groups this node leads quiesced, named on every batch (WireBatch.quiescedGroups): the peer's followers
   * of those groups take the batch as their leader's heartbeat. Absent (one group): none.
   */
  quiescedGroups?: () => readonly number[];
  /** Counts what is handed to the stream (one batch of `messages` Raft messages, about `bytes` bytes). */
  onBatch?: (messages: number, bytes: number) => void;
}

export class PeerLink {
  readonly address: string;
  private readonly o: PeerLinkOptions;
  private readonly log: Logger;
  private readonly client: grpc.Client;

  // Invariant: queue.length <= queueMessagesMax and queueBytes <= queueBytesMax.
  private queue: Message[] = [];
  /**
   * groupsQueued[i] is queue[i]'s decision group; empty while every queued message is group 0's (a cluster of one
   * group).
   */
  private groupsQueued: number[] = [];
  private queueBytes = 0;
  private flushScheduled = false;
  /** Set once per overflow episode, cleared when the queue drains, so Raft hears of it once. */
  private overflowReported = false;
  /** A batch of messages went to the stream since the last heartbeat(), which then sends none. */
  private wroteSinceHeartbeat = false;
  /** heartbeat() asked for a frame with no message; it goes with the next flush. */
  private heartbeatDue = false;

  private call: grpc.ClientWritableStream<WireBatch> | null = null;
  private callOpenedAtMs = 0;
  /** grpc's own buffer is full: wait for 'drain' instead of writing more. */
  private waitingDrain = false;
  private backoffTimer: NodeJS.Timeout | null = null;
  /** Consecutive short-lived streams; drives the backoff exponent. */
  private failures = 0;
  /** The reasons already warned about in this run of failures (at most WARNED_REASONS_MAX). */
  private warnedReasons = new Set<string>();
  private closed = false;

  constructor(o: PeerLinkOptions) {
    this.o = o;
    this.address = o.address;
    this.log = childLogger(o.logger, { peer: o.peerId, address: o.address });
    this.client = new grpc.Client(o.address, o.credentials, o.channelOptions);
  }

  pendingCount(): number {
    return this.queue.length;
  }

  /** Queues `m`, of decision group `group` (0 in a cluster of one group, whose bytes carry no group). */
  enqueue(m: Message, group = 0): void {
    if (this.closed) return;
    const bytes = messageBytes(m);
    if (this.queue.length + 1 > this.o.queueMessagesMax || this.queueBytes + bytes > this.o.queueBytesMax) {
      // Tail drop: Raft retransmits whatever matters, and the leader slows
      // down once it hears the peer is unreachable.
      if (!this.overflowReported) {
        this.overflowReported = true;
        this.log.warn({ queued: this.queue.length, queueBytes: this.queueBytes }, 'peer queue full; dropping messages');
        this.o.reportUnreachable(this.o.peerId);
      }
      return;
    }
    if (group !== 0 && this.groupsQueued.length < this.queue.length) this.groupsQueued = this.queue.map(() => 0);
    if (group !== 0 || this.groupsQueued.length > 0) this.groupsQueued.push(group);
    this.queue.push(m);
    this.queueBytes += bytes;
    this.scheduleFlush();
  }

  /**
   * Node-level liveness (GroupTransport.heartbeat): a frame with no message, unless messages went (or are queued to
   * go) to the peer since the last call. The peer takes any frame as "this node is alive".
   */
  heartbeat(): void {
    if (this.closed) return;
    if (this.wroteSinceHeartbeat || this.queue.length > 0) {
      this.wroteSinceHeartbeat = false;
      return;
    }
    this.heartbeatDue = true;
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // One flush per event-loop turn: every send() of this turn goes out in one batch.
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (
      this.closed ||
      (this.queue.length === 0 && !this.heartbeatDue) ||
      this.backoffTimer !== null ||
      this.waitingDrain
    )
      return;
    const call = this.call ?? this.openStream();
    while (this.queue.length > 0 || this.heartbeatDue) {
      // A batch of messages is a heartbeat too; an empty queue makes a batch of none.
      this.heartbeatDue = false;
      if (!call.write(this.takeBatch())) {
        this.waitingDrain = true;
        call.once('drain', () => {
          if (call !== this.call) return;
          this.waitingDrain = false;
          this.scheduleFlush();
        });
        break;
      }
    }
    if (this.queue.length === 0) this.overflowReported = false;
  }

  /** Takes messages off the head of the queue up to batchBytesMax (at least one). */
  private takeBatch(): WireBatch {
    let bytes = 0;
    let n = 0;
    while (n < this.queue.length) {
      const b = messageBytes(this.queue[n]);
      if (n > 0 && bytes + b > this.o.batchBytesMax) break;
      bytes += b;
      n += 1;
    }
    const taken = this.queue.splice(0, n);
    this.queueBytes -= bytes;
    assert(this.queueBytes >= 0, 'queueBytes stays non-negative');
    this.o.onBatch?.(n, bytes);
    if (n > 0) this.wroteSinceHeartbeat = true;
    const batch: WireBatch = { clusterId: this.o.clusterId, from: this.o.selfId, to: this.o.peerId, messages: [] };
    if (this.groupsQueued.length === 0) batch.messages = taken.map(toWire);
    else {
      const groups = this.groupsQueued.splice(0, n);
      batch.messages = taken.map((message, i) => toWireEnvelope({ group: groups[i], message }));
    }
    // Left out where none is (always at one group), so a cluster of one group sends the bytes it always sent.
    const quiesced = this.o.quiescedGroups?.() ?? [];
    if (quiesced.length > 0) batch.quiescedGroups = [...quiesced];
    return batch;
  }

  private openStream(): grpc.ClientWritableStream<WireBatch> {
    const call = this.client.makeClientStreamRequest<WireBatch, WireStreamAck>(
      streamMethod.path,
      streamMethod.requestSerialize,
      streamMethod.responseDeserialize,
      (err) => this.onStreamEnd(call, err),
    );
    // A write racing the end of the call may be reported here too; the status
    // callback above is the one place that handles the end.
    call.on('error', () => {});
    this.call = call;
    this.callOpenedAtMs = performance.now();
    return call;
  }

  /** The stream is over, by error or because the peer closed it: drop, report, back off. */
  private onStreamEnd(call: grpc.ClientWritableStream<WireBatch>, err: grpc.ServiceError | null): void {
    if (call !== this.call) return;
    this.call = null;
    this.waitingDrain = false;
    const dropped = this.queue.length;
    this.queue = [];
    this.groupsQueued = [];
    this.heartbeatDue = false;
    this.queueBytes = 0;
    this.overflowReported = false;
    if (this.closed) return;

    // A stream that lived long was healthy: start the backoff over. A stream
    // that dies at once (peer down, or rejecting us) backs off further each time.
    const livedMs = performance.now() - this.callOpenedAtMs;
    this.failures = livedMs >= this.o.backoffMaxMs ? 1 : this.failures + 1;
    const delayMs = this.backoffDelayMs();
    // A failed connection says why in words (a refused certificate, a peer without TLS), not in OpenSSL's codes.
    const details =
      err === null
        ? 'stream ended'
        : err.code === grpc.status.UNAVAILABLE
          ? explainConnectError(err.details, this.o.credentials._isSecure())
          : err.details;
    const fields = { code: err?.code ?? grpc.status.OK, details, dropped, delayMs };
    // Warn once per reason in a run of failures: a peer that stays down must not flood the log, but a reason
    // that shows only on a later attempt (a TLS alert after a bare reset, say) must still reach it.
    if (this.failures === 1) this.warnedReasons.clear();
    if (!this.warnedReasons.has(details) && this.warnedReasons.size < WARNED_REASONS_MAX) {
      this.warnedReasons.add(details);
      this.log.warn(fields, 'stream to peer ended; reconnecting');
    } else this.log.debug(fields, 'stream to peer ended again; reconnecting');
    this.o.reportUnreachable(this.o.peerId);

    this.backoffTimer = setTimeout(() => {
      this.backoffTimer = null;
      this.flush();
    }, delayMs);
    this.backoffTimer.unref();
  }

  /**
   * Capped exponential backoff with "equal jitter" (between half and all of
   * the step, never under the minimum), so that peers that lost each other at
   * the same moment do not reconnect in lockstep.
   */
  private backoffDelayMs(): number {
    const exp = Math.min(this.failures - 1, 30);
    const stepMs = Math.min(this.o.backoffMaxMs, this.o.backoffMinMs * 2 ** exp);
    return Math.max(this.o.backoffMinMs, Math.round(stepMs / 2 + (this.o.random() * stepMs) / 2));
  }

  /** Ends the stream (letting the peer acknowledge it, within closeTimeoutMs) and the channel. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.backoffTimer !== null) clearTimeout(this.backoffTimer);
    this.backoffTimer = null;
    this.queue = [];
    this.groupsQueued = [];
    this.heartbeatDue = false;
    this.queueBytes = 0;
    const call = this.call;
    if (call !== null) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          call.cancel();
          resolve();
        }, this.o.closeTimeoutMs);
        call.on('status', () => {
          clearTimeout(timer);
          resolve();
        });
        call.end();
      });
    }
    this.call = null;
    this.client.close();
  }
}
