// Node-to-node Raft transport over gRPC: one long-lived client stream per
// peer for outbound traffic (see peer.ts), and the `verdict.raft.Raft`
// service for inbound traffic, served by the node beside its other services.
import { childLogger } from '../util/child-log.ts';
import { assert } from '../util/assert.ts';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { LOCAL_MESSAGES, MessageType, NONE, type EntryType, type Message, type NodeId } from '../raft/types.ts';
import { PeerLink } from './peer.ts';
import {
  fromWireEnvelope,
  raftService,
  streamMethod,
  WireDecodeError,
  type RaftHandlers,
  type WireBatch,
  type WireStreamAck,
} from './proto.ts';
import {
  checkEnvelope,
  checkMessage,
  clip,
  DEFAULT_EDGE_LIMITS,
  RELAYED_TYPES,
  type RaftEdgeLimits,
  type RaftEdgeView,
  type Refusal,
} from './raft-edge.ts';
import { RefusalLog } from './refusal-log.ts';
import type { GroupMessage, GroupTransport, InboundHandler, Transport, UnreachableHandler } from './types.ts';
import type { AuthenticatedCall } from './tls.ts';

/** Large enough for a snapshot in one message; bigger snapshots need chunking. */
export const MESSAGE_BYTES_MAX = 64 * 1024 * 1024;

const KEEPALIVE = {
  // Notice a dead peer (half-open TCP) within ~15 s even when Raft is quiet.
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
} as const;

/** Options for the grpc.Server that the node creates and passes to register(). */
export const SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_receive_message_length': MESSAGE_BYTES_MAX,
  'grpc.max_send_message_length': MESSAGE_BYTES_MAX,
  ...KEEPALIVE,
};

export interface GrpcTransportOptions {
  clusterId: string;
  selfId: NodeId;
  /** Peer id → "host:port". An entry for selfId is ignored. */
  peers: ReadonlyMap<NodeId, string>;
  onMessages: InboundHandler;
  /**
   * Decision groups (docs/architecture.md, "Decision groups"): how many this
   * node hosts (1 when absent; the edge refuses any other group), and with
   * more than one, where every group's inbound messages go instead of onMessages.
   */
  groups?: number;
  onGroupMessages?: (messages: GroupMessage[]) => void;
  /**
   * A batch from `peer` passed the envelope and identity checks, with or without messages: its node is alive, and it
   * leads `quiescedGroups` quiesced (the
   * group host's node-level liveness for quiesced groups).
   */
  onHeard?: (peer: NodeId, quiescedGroups: readonly number[]) => void;
  /** The groups this node leads quiesced, named on every batch it sends (PeerLinkOptions.quiescedGroups). */
  quiescedGroups?: () => readonly number[];
  onUnreachable: UnreachableHandler;
  logger: Logger;
  /** Defaults to insecure; TLS plugs in here. */
  credentials?: grpc.ChannelCredentials;
  /** Credentials for one peer (TLS that checks the peer's certificate names it); overrides `credentials`. */
  credentialsFor?: (peer: NodeId) => grpc.ChannelCredentials;
  /**
   * Checks who opened an inbound stream (with TLS: that the client
   * certificate names node `from` of this cluster). Returns why the stream
   * is refused, or null.
   */
  authorizePeer?: (call: AuthenticatedCall, from: NodeId) => string | null;
  /**
   * The members of the configuration in effect (voters, learners, outgoing
   * voters): a batch from anyone else is refused. Default: the ids in `peers`.
   */
  members?: () => ReadonlySet<NodeId>;
  /** This node's current term, for the edge's bound on a peer's term. Default: 0. */
  term?: () => number;
  /** Why the state machine could not apply an entry's payload (src/node/machine.ts), or null. */
  entryProblem?: (type: EntryType, data: Uint8Array) => string | null;
  /** Why the state machine could not restore a snapshot's data, or null. */
  snapshotProblem?: (data: Uint8Array) => string | null;
  edgeLimits?: RaftEdgeLimits;
  queueMessagesMax?: number;
  queueBytesMax?: number;
  /** A batch is split above this size, so one write never holds up a stream for long. */
  batchBytesMax?: number;
  backoffMinMs?: number;
  backoffMaxMs?: number;
  closeTimeoutMs?: number;
  random?: () => number;
}

/** How an inbound stream is refused: a status code and a reason the sender logs. */
type RejectStatus = Pick<grpc.StatusObject, 'code' | 'details'>;
type Finish = (status: RejectStatus | null) => void;

/**
 * A frame that did not decode as a Batch; carried to the handler so it is refused with a reason, not an INTERNAL
 * status.
 */
interface Undecodable {
  undecodable: string;
}
type InboundFrame = WireBatch | Undecodable;

const isUndecodable = (f: InboundFrame): f is Undecodable => typeof (f as Undecodable).undecodable === 'string';

/** Refusals of a whole batch end the stream with this status; the sender logs it and reconnects with backoff. */
const ENVELOPE_STATUS: Partial<Record<Refusal['reason'], grpc.status>> = {
  cluster: grpc.status.FAILED_PRECONDITION,
  destination: grpc.status.FAILED_PRECONDITION,
  sender: grpc.status.PERMISSION_DENIED,
};

/** The Raft service with a decoder that never throws: an undecodable frame becomes a value the handler refuses. */
const inboundRaftService = {
  ...raftService,
  Stream: {
    ...streamMethod,
    requestDeserialize: (buf: Buffer): InboundFrame => {
      try {
        return streamMethod.requestDeserialize(buf);
      } catch (err) {
        return { undecodable: clip((err as Error).message, 200) };
      }
    },
  },
} as unknown as grpc.ServiceDefinition<RaftHandlers>;

export class GrpcTransport implements Transport {
  private readonly o: GrpcTransportOptions;
  private readonly log: Logger;
  private readonly links = new Map<NodeId, PeerLink>();
  private readonly closing = new Set<Promise<void>>();
  /** Open inbound streams, so close() can end them. Bounded by the server's connections. */
  private readonly inbound = new Set<Finish>();
  /** Peers to report unreachable at the next turn; at most one entry per peer. */
  private readonly unreachable = new Set<NodeId>();
  private closePromise: Promise<void> | null = null;
  /** The ids of `peers` (the default membership for the edge checks). */
  private peerIds: ReadonlySet<NodeId> = new Set();
  /** Refused inbound batches and messages: counted by reason, logged rate-limited. */
  readonly refusals: RefusalLog;
  /**
   * What this node handed to its peers' streams since it started, every group together: Raft messages, the batches
   * they went in (one stream write each) and their size as the queue bounds count it (an estimate of the encoding).
   */
  readonly sent = { messages: 0, batches: 0, bytes: 0 };

  constructor(o: GrpcTransportOptions) {
    assert(o.clusterId !== '', 'transport has a cluster id');
    assert(o.selfId !== NONE, 'transport has a node id');
    this.o = o;
    this.log = childLogger(o.logger, { component: 'transport', clusterId: o.clusterId, node: o.selfId });
    this.refusals = new RefusalLog(this.log);
    this.updatePeers(o.peers);
  }

  service(): { definition: grpc.ServiceDefinition<RaftHandlers>; implementation: RaftHandlers } {
    return {
      definition: inboundRaftService,
      implementation: {
        Stream: (call, cb) =>
          this.handleStream(call as unknown as grpc.ServerReadableStream<InboundFrame, WireStreamAck>, cb),
      },
    };
  }

  register(server: grpc.Server): void {
    const { definition, implementation } = this.service();
    server.addService(definition, implementation);
  }

  send(messages: Message[]): void {
    for (const m of messages) this.sendOne(m, 0);
  }

  /** Every group's messages on the one stream per peer, each tagged with its group. */
  readonly groupTransport: GroupTransport = {
    send: (messages) => {
      for (const gm of messages) this.sendOne(gm.message, gm.group);
    },
    heartbeat: () => {
      if (this.closePromise !== null) return;
      for (const link of this.links.values()) link.heartbeat();
    },
  };

  private sendOne(m: Message, group: number): void {
    assert(!LOCAL_MESSAGES.has(m.type), `local message ${MessageType[m.type]} is never sent`);
    // A relayed read or transfer request names the node that asked (src/raft/raft.ts, stepFollower).
    assert(
      m.from === this.o.selfId || (RELAYED_TYPES.has(m.type) && m.from !== NONE),
      `outbound message is from this node (from=${m.from})`,
    );
    assert(m.to !== this.o.selfId && m.to !== NONE, `outbound message has a peer as destination (to=${m.to})`);
    if (this.closePromise !== null) return;
    const link = this.links.get(m.to);
    if (link === undefined) {
      // A peer removed from the configuration, or not yet added: Raft will
      // learn it is unreachable and stop insisting.
      this.log.debug({ to: m.to, type: MessageType[m.type] }, 'message for an unknown peer dropped');
      this.reportUnreachable(m.to);
      return;
    }
    link.enqueue(m, group);
  }

  /** Messages waiting to be written to `peer` (for tests and status). */
  pendingCount(peer: NodeId): number {
    return this.links.get(peer)?.pendingCount() ?? 0;
  }

  /** Inbound streams currently open (for tests and status). */
  inboundCount(): number {
    return this.inbound.size;
  }

  /** Reconciles the outbound links with a new membership. Removed or moved peers lose their queue. */
  updatePeers(peers: ReadonlyMap<NodeId, string>): void {
    if (this.closePromise !== null) return;
    this.peerIds = new Set([...peers.keys()].filter((id) => id !== this.o.selfId));
    for (const [id, link] of this.links) {
      if (peers.get(id) === link.address) continue;
      this.links.delete(id);
      this.track(link.close());
    }
    for (const [id, address] of peers) {
      if (id === this.o.selfId || this.links.has(id)) continue;
      this.links.set(id, this.newLink(id, address));
    }
  }

  /** Ends every stream, inbound and outbound, and closes the channels. Idempotent. */
  close(): Promise<void> {
    if (this.closePromise !== null) return this.closePromise;
    for (const finish of [...this.inbound]) finish(null);
    for (const link of this.links.values()) this.track(link.close());
    this.links.clear();
    this.closePromise = Promise.all([...this.closing]).then(() => undefined);
    return this.closePromise;
  }

  private newLink(peerId: NodeId, address: string): PeerLink {
    const backoffMinMs = this.o.backoffMinMs ?? 50;
    const backoffMaxMs = this.o.backoffMaxMs ?? 2_000;
    assert(0 < backoffMinMs && backoffMinMs <= backoffMaxMs, '0 < backoffMinMs <= backoffMaxMs');
    return new PeerLink({
      clusterId: this.o.clusterId,
      selfId: this.o.selfId,
      peerId,
      address,
      credentials: this.o.credentialsFor?.(peerId) ?? this.o.credentials ?? grpc.credentials.createInsecure(),
      channelOptions: {
        'grpc.max_receive_message_length': MESSAGE_BYTES_MAX,
        'grpc.max_send_message_length': MESSAGE_BYTES_MAX,
        // Keep grpc's own reconnect backoff in step with ours, so it never
        // holds a restarted peer unreachable for longer than we would.
        'grpc.initial_reconnect_backoff_ms': backoffMinMs,
        'grpc.max_reconnect_backoff_ms': backoffMaxMs,
        ...KEEPALIVE,
      },
      queueMessagesMax: this.o.queueMessagesMax ?? 4_096,
      queueBytesMax: this.o.queueBytesMax ?? MESSAGE_BYTES_MAX,
      batchBytesMax: this.o.batchBytesMax ?? 4 * 1024 * 1024,
      backoffMinMs,
      backoffMaxMs,
      closeTimeoutMs: this.o.closeTimeoutMs ?? 1_000,
      random: this.o.random ?? Math.random,
      logger: this.log,
      reportUnreachable: (peer) => this.reportUnreachable(peer),
      quiescedGroups: this.o.quiescedGroups,
      onBatch: (messages, bytes) => {
        this.sent.messages += messages;
        this.sent.batches += 1;
        this.sent.bytes += bytes;
      },
    });
  }

  private track(p: Promise<void>): void {
    this.closing.add(p);
    void p.finally(() => this.closing.delete(p));
  }

  /**
   * Reports are delivered on a later turn, never from inside send(): the
   * caller is the node's loop in the middle of handling a Ready, and must
   * not be re-entered.
   */
  private reportUnreachable(peer: NodeId): void {
    if (this.unreachable.size === 0) {
      setImmediate(() => {
        const peers = [...this.unreachable];
        this.unreachable.clear();
        if (this.closePromise !== null) return;
        for (const p of peers) this.o.onUnreachable(p);
      });
    }
    this.unreachable.add(peer);
  }

  private handleStream(
    call: grpc.ServerReadableStream<InboundFrame, WireStreamAck>,
    callback: grpc.sendUnaryData<WireStreamAck>,
  ): void {
    let done = false;
    const finish: Finish = (status) => {
      if (done) return;
      done = true;
      this.inbound.delete(finish);
      if (status === null) callback(null, {});
      else callback(status);
    };
    if (this.closePromise !== null) {
      finish({ code: grpc.status.UNAVAILABLE, details: `node "${this.o.selfId}" is shutting down` });
      return;
    }
    this.inbound.add(finish);
    /** The sender this stream's credentials were checked for; checked again if a batch names another. */
    let authorized: NodeId | null = null;
    call.on('data', (frame: InboundFrame) => {
      if (done) return;
      const refused = (from: string, r: Refusal, code: grpc.status): void => {
        this.refusals.refuse(from, r, { peer: call.getPeer() });
        finish({ code, details: r.detail });
      };
      if (isUndecodable(frame))
        return refused(
          '?',
          { reason: 'undecodable', field: '', detail: `a frame that is not a Raft batch: ${frame.undecodable}` },
          grpc.status.INVALID_ARGUMENT,
        );
      const view = this.edgeView();
      // The checks are pure and total; a throw here would be a bug in them, and still only this sender's problem.
      let envelope: Refusal | null;
      try {
        envelope = checkEnvelope(frame, view, this.o.edgeLimits ?? DEFAULT_EDGE_LIMITS);
      } catch (err) {
        envelope = { reason: 'undecodable', field: '', detail: `batch not checkable: ${(err as Error).message}` };
      }
      if (envelope !== null)
        return refused(String(frame.from), envelope, ENVELOPE_STATUS[envelope.reason] ?? grpc.status.INVALID_ARGUMENT);
      const rejection = authorized === frame.from ? null : this.checkPeer(call, frame.from);
      if (rejection !== null) {
        finish(rejection);
        return;
      }
      authorized = frame.from;
      this.o.onHeard?.(frame.from, frame.quiescedGroups ?? []);
      const messages = this.admit(frame, view);
      if (messages.length === 0) return;
      if (this.o.onGroupMessages !== undefined) this.o.onGroupMessages(messages);
      else this.o.onMessages(messages.map((gm) => gm.message));
    });
    // A peer's stream that ends or fails means the peer (maybe our leader) went away: a SIGKILLed
    // process resets its sockets at once, and this side may notice before our own stream to it breaks.
    const lost = (): void => {
      if (authorized !== null && this.closePromise === null) this.reportUnreachable(authorized);
    };
    call.on('end', () => {
      lost();
      finish(null);
    });
    // A failed read of the stream: nothing more will come; the status callback may still reach the sender.
    call.on('error', (err) => {
      this.log.debug({ peer: call.getPeer(), err: err.message }, 'inbound Raft stream failed');
      lost();
      finish({ code: grpc.status.CANCELLED, details: 'stream failed' });
    });
    // The client went away (cancelled, connection lost): nobody will read a
    // status, but the stream must leave `inbound` or the set would grow with
    // every reconnect. grpc-js also emits 'end' today; this does not rely on it.
    call.on('cancelled', () => {
      if (!done) lost();
      done = true;
      this.inbound.delete(finish);
    });
  }

  /** What the edge checks compare a batch with: who we are, who the members are, our term. */
  private edgeView(): RaftEdgeView {
    return {
      clusterId: this.o.clusterId,
      selfId: this.o.selfId,
      members: this.o.members?.() ?? this.peerIds,
      term: this.o.term?.() ?? 0,
      entryProblem: this.o.entryProblem,
      snapshotProblem: this.o.snapshotProblem,
      groups: this.o.groups ?? 1,
    };
  }

  /**
   * The messages of a checked batch that pass the per-message checks, decoded; each refused one is dropped, counted and
   * logged.
   */
  private admit(b: WireBatch, view: RaftEdgeView): GroupMessage[] {
    const out: GroupMessage[] = [];
    for (let i = 0; i < b.messages.length; i++) {
      const w = b.messages[i];
      let r: Refusal | null;
      try {
        r = checkMessage(w, b, view, this.o.edgeLimits ?? DEFAULT_EDGE_LIMITS);
        if (r === null) out.push(fromWireEnvelope(w));
      } catch (err) {
        // A WireDecodeError names the field; anything else thrown while decoding a peer's bytes is refused the same
        // way, never fatal.
        r =
          err instanceof WireDecodeError
            ? { reason: 'undecodable', field: err.field, detail: `message not decodable: ${err.message}` }
            : { reason: 'undecodable', field: '', detail: `message not decodable: ${(err as Error).message}` };
      }
      if (r !== null)
        this.refusals.refuse(
          b.from,
          { ...r, field: `messages[${i}]${r.field ? `.${r.field}` : ''}` },
          { type: MessageType[w?.type] ?? clip(w?.type) },
        );
    }
    return out;
  }

  /** With TLS: the stream's client certificate must name the batch's sender, of this cluster. */
  private checkPeer(call: AuthenticatedCall & { getPeer(): string }, from: NodeId): RejectStatus | null {
    const problem = this.o.authorizePeer?.(call, from) ?? null;
    if (problem === null) return null;
    const details = `peer refused: stream from "${from}" at ${call.getPeer()}: ${problem}`;
    this.log.warn({ from, peer: call.getPeer() }, details);
    return { code: grpc.status.PERMISSION_DENIED, details };
  }
}
