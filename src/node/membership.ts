// The cluster's members as this node knows them, node id → address: what the
// node API tells clients (Status, redirects, ListMembers), what the console
// shows and where the transport dials.
//
// Its own state, not the config: the config holds what the operator gave
// (the seed peers), and this holder follows the replicated membership — the
// addresses of the last membership change applied from the log (kept in
// snapshots by the state machine), or the seed peers before any change. It
// is the node core's (src/node/core.ts), refreshed each time the driver
// applies a change, and read by the services.

import { assert } from '../util/assert.ts';
import type { NodeId } from '../raft/types.ts';

export class Membership {
  private readonly seed: ReadonlyMap<NodeId, string>;
  /** Never empty: this node is always in it, with its own address (invariant checked in update()). */
  private current = new Map<NodeId, string>();

  constructor(
    readonly selfId: NodeId,
    /** The config file's peers: the membership until the first change is applied. Copied, never changed. */
    seed: ReadonlyMap<NodeId, string>,
    /** This node's address when the seed does not name it (a joining node): the address it serves on. */
    private readonly selfAddress: string,
  ) {
    assert(selfId !== '', 'a node id is never empty');
    this.seed = new Map(seed);
    this.update(new Map());
  }

  /**
   * Follows `applied`, the addresses of the last applied membership change
   * (empty before the first): they replace the seed peers. This node stays
   * in the map even once removed, so that it can still say where it is.
   * Returns whether anything changed.
   */
  update(applied: ReadonlyMap<NodeId, string>): boolean {
    const known = applied.size > 0 ? applied : this.seed;
    const next = new Map(known);
    if (!next.has(this.selfId)) next.set(this.selfId, this.seed.get(this.selfId) ?? this.selfAddress);
    assert(next.size > 0 && next.has(this.selfId), 'membership always holds this node');
    const same = next.size === this.current.size && [...next].every(([id, a]) => this.current.get(id) === a);
    this.current = next;
    return !same;
  }

  /** The address of node `id`, or undefined for a node that is not a member. */
  get(id: NodeId): string | undefined {
    return this.current.get(id);
  }

  has(id: NodeId): boolean {
    return this.current.has(id);
  }

  get size(): number {
    return this.current.size;
  }

  ids(): NodeId[] {
    return [...this.current.keys()];
  }

  /** A copy: changing it changes nothing here. */
  peers(): Map<NodeId, string> {
    return new Map(this.current);
  }
}
