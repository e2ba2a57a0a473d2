import type { Message, NodeId } from '../raft/types.ts';

/**
 * Node-to-node delivery. Sending never blocks and never throws for a peer
 * that is down: Raft tolerates loss, and the transport reports the peer as
 * unreachable so the leader can slow down probing it.
 */
export interface Transport {
  send(messages: Message[]): void;
}

export type InboundHandler = (messages: Message[]) => void;
export type UnreachableHandler = (peer: NodeId) => void;

/**
 * One decision group's Raft message (docs/architecture.md, "Decision groups"): what a node hosting several groups sends
 * and receives.
 */
export interface GroupMessage {
  /** 0..groups-1; group 0 is the one group of a cluster of one group. */
  group: number;
  message: Message;
}

/** Node-to-node delivery for every group a node hosts: one stream per peer carries them all. */
export interface GroupTransport {
  send(messages: GroupMessage[]): void;
  /**
   * Node-level liveness for quiesced groups (src/node/group-host.ts): a frame with no message to every peer that was
   * sent nothing since the last call. The receiver takes any frame from a peer as "its node is alive".
   */
  heartbeat?(): void;
}
