// One node process hosting a replica of every decision group
// (docs/architecture.md, "Decision groups"): G node cores side by side, each
// today's NodeCore unchanged, behind one door. The host routes inbound Raft
// messages to their group's replica, gives each replica a transport that
// tags what it sends with its group (one stream per peer carries every
// group), ticks every replica on the node's one ticker, tells every replica
// that a peer's stream broke, and stops or crashes them together: a process
// lives and dies whole.
//
// Pure like the core: no timers, sockets or disk; the node process and the
// simulator hand in the transport and build the replicas. With one group the
// host holds one replica and passes everything through untouched, so a
// cluster of one group is exactly what it was before groups.

import { groupOf, groupsProblem } from '../domain/group.ts';
import type { Message, NodeId } from '../raft/types.ts';
import type { GroupMessage, GroupTransport, Transport } from '../transport/types.ts';
import { assert } from '../util/assert.ts';
import type { NodeCore } from './core.ts';

/** What the host needs of one group's replica: a node core (coreReplica) or a test's stand-in. */
export interface GroupReplica {
  /** This group's inbound Raft messages, in the order they arrived. */
  receive(messages: Message[]): void;
  /** The stream to `peer` broke (a killed process's sockets reset). */
  reportUnreachable(peer: NodeId): void;
  tick(): void;
  /** A shutdown: pending callers hear "node stopped". */
  stop(): void;
  /** A death: nobody hears anything more. */
  crash(): void;
}

export interface GroupHostOptions<R extends GroupReplica> {
  /** The cluster's number of decision groups, fixed at its founding (1..GROUPS_MAX). */
  groups: number;
  /** Builds group `group`'s replica, given the transport that tags its messages with its group. */
  replica(group: number, transport: Transport): R;
  /** The node's one transport to its peers. */
  transport: GroupTransport;
  /** A message for a group this node does not host (the edge refuses those first: this is the second line). */
  onRefused?(gm: GroupMessage, why: string): void;
}

export class GroupHost<R extends GroupReplica = GroupReplica> {
  /** replicas[g] is group g's; the length is the number of groups. */
  readonly replicas: readonly R[];

  constructor(o: GroupHostOptions<R>) {
    const bad = groupsProblem(o.groups);
    assert(bad === null, `GroupHost: ${bad}`);
    const replicas: R[] = [];
    for (let g = 0; g < o.groups; g++) {
      const group = g;
      replicas.push(o.replica(group, { send: (messages) => o.transport.send(messages.map((message) => ({ group, message }))) }));
    }
    this.replicas = replicas;
    this.onRefused = o.onRefused;
  }

  private readonly onRefused: GroupHostOptions<R>['onRefused'];

  get groups(): number {
    return this.replicas.length;
  }

  /** Group `group`'s replica. */
  replica(group: number): R {
    assert(Number.isInteger(group) && group >= 0 && group < this.replicas.length, `group ${group} is one of this host's ${this.replicas.length}`);
    return this.replicas[group];
  }

  /** The replica of the group that decides `id` (a transaction, saga or lease): groupOf(id, G). */
  replicaOf(id: string): R {
    return this.replicas[groupOf(id, this.replicas.length)];
  }

  /**
   * Inbound messages of any groups: each group's replica gets its own in one
   * call, in their order of arrival (Raft needs no order across groups).
   */
  receive(messages: readonly GroupMessage[]): void {
    if (this.replicas.length === 1) {
      // One group: every message is group 0's (the edge refused any other), passed through as one batch, as before groups.
      const mine: Message[] = [];
      for (const gm of messages) if (this.admit(gm)) mine.push(gm.message);
      if (mine.length > 0) this.replicas[0].receive(mine);
      return;
    }
    const byGroup = new Map<number, Message[]>();
    for (const gm of messages) {
      if (!this.admit(gm)) continue;
      let list = byGroup.get(gm.group);
      if (list === undefined) byGroup.set(gm.group, (list = []));
      list.push(gm.message);
    }
    for (const [g, list] of byGroup) this.replicas[g].receive(list);
  }

  /** A peer's stream broke: every group's Raft core hears it. */
  reportUnreachable(peer: NodeId): void {
    for (const r of this.replicas) r.reportUnreachable(peer);
  }

  /** One tick of the node's clock, for every group in order. */
  tick(): void {
    for (const r of this.replicas) r.tick();
  }

  stop(): void {
    for (const r of this.replicas) r.stop();
  }

  crash(): void {
    for (const r of this.replicas) r.crash();
  }

  private admit(gm: GroupMessage): boolean {
    if (Number.isInteger(gm.group) && gm.group >= 0 && gm.group < this.replicas.length) return true;
    this.onRefused?.(gm, `group ${gm.group} is not a group of this node (it has ${this.replicas.length})`);
    return false;
  }
}

/** A node core as a group's replica: its driver hears the messages and broken streams, the core the ticks. */
export function coreReplica(core: NodeCore): GroupReplica & { core: NodeCore } {
  return {
    core,
    receive: (messages) => core.driver.receive(messages),
    reportUnreachable: (peer) => core.driver.reportUnreachable(peer),
    tick: () => core.tick(),
    stop: () => core.stop(),
    crash: () => core.crash(),
  };
}
