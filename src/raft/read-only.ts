// Linearizable reads by ReadIndex (Raft thesis §6.4): the leader records its
// commit index for a read, confirms with a heartbeat round that it is still
// the leader, and then the read may be served once that index is applied.

import type { Message, NodeId } from './types.ts';

interface ReadRequest {
  index: number;
  req: Message;
  acks: Map<NodeId, boolean>;
}

export class ReadOnly {
  private readonly pending = new Map<string, ReadRequest>();
  private readonly queue: string[] = [];

  constructor(private readonly requestsMax: number) {}

  static key(ctx: Uint8Array): string {
    return Buffer.from(ctx).toString('latin1');
  }

  full(): boolean {
    return this.queue.length >= this.requestsMax;
  }

  add(index: number, req: Message): void {
    const k = ReadOnly.key(req.context);
    if (this.pending.has(k)) return;
    this.pending.set(k, { index, req, acks: new Map() });
    this.queue.push(k);
  }

  /** Records a heartbeat ack carrying `ctx`; returns the acks so far, or null if unknown. */
  recvAck(from: NodeId, ctx: Uint8Array): Map<NodeId, boolean> | null {
    const rs = this.pending.get(ReadOnly.key(ctx));
    if (!rs) return null;
    rs.acks.set(from, true);
    return rs.acks;
  }

  /**
   * A quorum confirmed the read with context `ctx`: it and every read queued
   * before it are released (a later heartbeat round confirms earlier ones).
   */
  advance(ctx: Uint8Array): { index: number; req: Message }[] {
    const k = ReadOnly.key(ctx);
    const at = this.queue.indexOf(k);
    if (at < 0) return [];
    const done = this.queue.splice(0, at + 1);
    const out: { index: number; req: Message }[] = [];
    for (const key of done) {
      const rs = this.pending.get(key);
      this.pending.delete(key);
      if (rs) out.push({ index: rs.index, req: rs.req });
    }
    return out;
  }

  lastPendingContext(): Uint8Array | null {
    if (this.queue.length === 0) return null;
    return this.pending.get(this.queue[this.queue.length - 1])?.req.context ?? null;
  }

  reset(): void {
    this.pending.clear();
    this.queue.length = 0;
  }
}
