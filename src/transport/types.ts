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
