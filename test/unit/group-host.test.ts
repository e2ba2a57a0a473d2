// The host of a node's decision groups (src/node/group-host.ts): it routes
// each inbound message to its group's replica and nowhere else, tags what a
// replica sends with its group, and ticks, warns, stops and crashes every
// replica together. Then three hosts of real node cores over a simulated
// network: every group elects its own leader and keeps its own log.

import { describe, expect, it } from 'vitest';
import { encodeCommand } from '../../src/commit/state.ts';
import {
  coreReplica,
  GroupHost,
  preferredLeader,
  type GroupReplica,
  type HandOverResult,
  type LeaderView,
} from '../../src/node/group-host.ts';
import { encodeMemberContext, NodeStateMachine } from '../../src/node/machine.ts';
import { ConfChangeType } from '../../src/raft/confchange.ts';
import { groupOf } from '../../src/domain/group.ts';
import { RawNode } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import { message, MessageType as MT, type Message } from '../../src/raft/types.ts';
import type { GroupMessage, Transport } from '../../src/transport/types.ts';
import { EventQueue } from '../sim/event-queue.ts';
import { queueCore } from './core-fixture.ts';
import { SimDisk } from '../sim/sim-disk.ts';

const hb = (term: number): Message => message({ type: MT.Heartbeat, from: 'n1', to: 'n2', term });

class Stub implements GroupReplica {
  readonly got: Message[][] = [];
  readonly events: string[] = [];
  constructor(readonly transport: Transport) {}
  receive(ms: Message[]): void {
    this.got.push(ms);
  }
  reportUnreachable(peer: string): void {
    this.events.push(`unreachable ${peer}`);
  }
  tick(): void {
    this.events.push('tick');
  }
  stop(): void {
    this.events.push('stop');
  }
  crash(): void {
    this.events.push('crash');
  }
}

function stubHost(groups: number) {
  const sent: GroupMessage[][] = [];
  const refused: string[] = [];
  const host = new GroupHost<Stub>({
    groups,
    replica: (_g, t) => new Stub(t),
    transport: { send: (ms) => sent.push(ms) },
    onRefused: (_gm, why) => refused.push(why),
  });
  return { host, sent, refused };
}

describe('the group host', () => {
  it("routes each message to its group's replica only, one call per group, in arrival order", () => {
    const { host, refused } = stubHost(4);
    host.receive([
      { group: 2, message: hb(1) },
      { group: 0, message: hb(2) },
      { group: 2, message: hb(3) },
      { group: 4, message: hb(4) },
      { group: -1, message: hb(5) },
    ]);
    expect(host.replicas.map((r) => r.got.map((b) => b.map((m) => m.term)))).toEqual([[[2]], [], [[1, 3]], []]);
    expect(refused).toEqual([
      'group 4 is not a group of this node (it has 4)',
      'group -1 is not a group of this node (it has 4)',
    ]);
  });

  it("tags what each replica sends with the replica's group, on the one transport", () => {
    const { host, sent } = stubHost(3);
    host.replica(2).transport.send([hb(7), hb(8)]);
    host.replica(0).transport.send([hb(9)]);
    expect(sent.map((b) => b.map((gm) => [gm.group, gm.message.term]))).toEqual([
      [
        [2, 7],
        [2, 8],
      ],
      [[0, 9]],
    ]);
  });

  it('with one group passes a batch through whole to the one replica, as before groups', () => {
    const { host, refused } = stubHost(1);
    host.receive([
      { group: 0, message: hb(1) },
      { group: 0, message: hb(2) },
      { group: 1, message: hb(3) },
    ]);
    expect(host.replicas[0].got.map((b) => b.map((m) => m.term))).toEqual([[1, 2]]);
    expect(refused).toHaveLength(1);
    expect(host.replicaOf('anything')).toBe(host.replicas[0]);
  });

  it('ticks, broken streams, stop and crash reach every group; replicaOf follows groupOf', () => {
    const { host } = stubHost(4);
    host.tick();
    host.reportUnreachable('n3');
    host.stop();
    host.crash();
    for (const r of host.replicas) expect(r.events).toEqual(['tick', 'unreachable n3', 'stop', 'crash']);
    for (const id of ['t1', 't2', 'order-42']) expect(host.replicaOf(id)).toBe(host.replicas[groupOf(id, 4)]);
    expect(() => host.replica(4)).toThrow(/invariant/);
    expect(() => stubHost(0)).toThrow(/whole number from 1 to/);
  });

  it('three hosts of real node cores: each of four groups elects a leader and applies only its own entries', () => {
    const G = 4;
    const { q, hosts, machines, ids } = coreCluster(G, false);
    const leaderOf = (g: number) => [...hosts.values()].map((h) => h.replica(g).core).find((c) => c.driver.isLeader());
    q.runUntil(10_000, () => Array.from({ length: G }, (_, g) => leaderOf(g)).every((c) => c !== undefined));
    const answered: number[] = [];
    for (let g = 0; g < G; g++) {
      const c = leaderOf(g);
      expect(c, `group ${g} elects a leader`).toBeDefined();
      const register = encodeCommand({
        t: 'register',
        id: `p-of-group-${g}`,
        endpoint: `127.0.0.1:${7001 + g}`,
        atMs: 1,
        kind: 'memory',
      });
      c?.proposeEntry('register', register, (err) => !err && answered.push(g));
    }
    q.runUntil(q.now + 5_000, () => answered.length === G);
    q.runUntil(q.now + 1_000);
    expect(answered.sort()).toEqual([0, 1, 2, 3]);
    for (const id of ids) {
      for (let g = 0; g < G; g++) {
        const registered = [...(machines.get(id)?.[g].table.participants.keys() ?? [])];
        expect(registered, `${id} group ${g}`).toEqual([`p-of-group-${g}`]);
      }
    }
  });
});

describe('leaders spread: group g prefers node g mod N of the sorted voters', () => {
  /** A replica that leads (or not) with a view the test sets, recording the transfers the host asks for. */
  class Leading extends Stub {
    view: LeaderView | null = null;
    inFlight = false;
    readonly transfers: string[] = [];
    /** Whom new transactions are refused for (holdNewTransactions), null while they are taken. */
    holding: string | null = null;
    inFlightCount(): number {
      return this.inFlight ? 1 : 0;
    }
    holdNewTransactions(to: string | null): void {
      this.holding = to;
    }
    leaderView(): LeaderView | null {
      return this.view;
    }
    transferLeadership(to: string): void {
      this.transfers.push(to);
    }
  }
  const hold = 5;
  const drain = 20;
  function leadingHost(groups: number) {
    const host = new GroupHost<Leading>({
      groups,
      replica: (_g, t) => new Leading(t),
      transport: { send: () => {} },
      spread: { holdOffTicks: hold, lagEntriesMax: 4, heardWithinTicks: 3, drainTicksMax: drain },
    });
    const heard = (from: string) =>
      host.receive([{ group: 0, message: message({ type: MT.HeartbeatResp, from, to: 'n1', term: 1 }) }]);
    return { host, heard };
  }
  const view = (lastIndex: number, match: Record<string, number>): LeaderView => ({
    self: 'n1',
    voters: ['n3', 'n1', 'n2'],
    lastIndex,
    match: new Map(Object.entries(match)),
  });

  it('preferredLeader: g mod N of the voters sorted, whatever order they come in', () => {
    expect([0, 1, 2, 3, 4].map((g) => preferredLeader(g, ['n3', 'n1', 'n2']))).toEqual(['n1', 'n2', 'n3', 'n1', 'n2']);
    expect(preferredLeader(0, [])).toBeNull();
  });

  it('a leader hands its group to the preferred node once that node has been caught up and heard from for the hold-off, and not before', () => {
    const { host, heard } = leadingHost(4);
    const g1 = host.replica(1);
    g1.view = view(100, { n2: 99, n3: 100 });
    for (let t = 1; t < hold; t++) {
      heard('n2');
      host.tick();
    }
    expect(g1.transfers).toEqual([]);
    heard('n2');
    host.tick();
    expect(g1.transfers).toEqual(['n2']);
    // Group 0 prefers n1, which leads it: nothing to do. Groups that do not lead here are left alone.
    host.replica(0).view = view(100, { n2: 100, n3: 100 });
    for (let t = 0; t < 3 * hold; t++) {
      heard('n2');
      heard('n3');
      host.tick();
    }
    expect(host.replica(0).transfers).toEqual([]);
    expect(host.replica(2).transfers).toEqual([]);
  });

  it('a node that lags, or has not been heard from (its old match index stays), gets nothing; once back and caught up it does, after a full hold-off', () => {
    const { host, heard } = leadingHost(4);
    const g2 = host.replica(2);
    g2.view = view(100, { n2: 100, n3: 100 });
    // n3 silent (down): its match index says caught up, but it is not heard from.
    for (let t = 0; t < 3 * hold; t++) host.tick();
    expect(g2.transfers).toEqual([]);
    // Back, but behind by more than lagEntriesMax: still nothing.
    g2.view = view(100, { n2: 100, n3: 90 });
    for (let t = 0; t < 3 * hold; t++) {
      heard('n3');
      host.tick();
    }
    expect(g2.transfers).toEqual([]);
    // Caught up: one hold-off later it gets its group; a lapse in between starts the hold-off again.
    g2.view = view(100, { n2: 100, n3: 97 });
    for (let t = 0; t < hold - 1; t++) {
      heard('n3');
      host.tick();
    }
    g2.view = view(100, { n2: 100, n3: 50 });
    heard('n3');
    host.tick();
    g2.view = view(100, { n2: 100, n3: 100 });
    for (let t = 0; t < hold - 1; t++) {
      heard('n3');
      host.tick();
    }
    expect(g2.transfers).toEqual([]);
    heard('n3');
    host.tick();
    expect(g2.transfers).toEqual(['n3']);
  });

  it('the hand-over refuses new transactions and waits for a tick with none in flight (a new leader would abort its prepares, R2)', () => {
    const { host, heard } = leadingHost(4);
    const g1 = host.replica(1);
    g1.view = view(100, { n2: 100, n3: 100 });
    g1.inFlight = true;
    for (let t = 1; t < hold; t++) {
      heard('n2');
      host.tick();
    }
    expect(g1.holding).toBeNull();
    // The hold-off is over: new transactions are refused while those in flight decide.
    for (let t = 0; t < drain - 1; t++) {
      heard('n2');
      host.tick();
      expect(g1.holding).toBe('n2');
    }
    expect(g1.transfers).toEqual([]);
    g1.inFlight = false;
    heard('n2');
    host.tick();
    expect(g1.transfers).toEqual(['n2']);
    // Raft's transfer refuses them from here (EngineIO.handingOverTo); the host's hold is released.
    expect(g1.holding).toBeNull();
  });

  it('transactions still in flight after drainTicksMax call the hand-over off: new ones are taken again, and it is tried after another hold-off', () => {
    const { host, heard } = leadingHost(4);
    const g1 = host.replica(1);
    g1.view = view(100, { n2: 100, n3: 100 });
    g1.inFlight = true;
    for (let t = 1; t < hold + drain; t++) {
      heard('n2');
      host.tick();
    }
    expect(g1.holding).toBe('n2');
    heard('n2');
    host.tick();
    expect(g1.holding).toBeNull();
    expect(g1.transfers).toEqual([]);
    // Now idle: the hold-off after a hand-over called off is twice as long; then it starts again, and goes through
    // at once.
    g1.inFlight = false;
    for (let t = 1; t < 2 * hold; t++) {
      heard('n2');
      host.tick();
    }
    expect(g1.transfers).toEqual([]);
    heard('n2');
    host.tick();
    expect(g1.transfers).toEqual(['n2']);
    // A leader that loses its group while holding takes new transactions again when it leads next.
    g1.inFlight = true;
    for (let t = 0; t < hold; t++) {
      heard('n2');
      host.tick();
    }
    expect(g1.holding).toBe('n2');
    g1.view = null;
    host.tick();
    expect(g1.holding).toBeNull();
  });

  describe("an operator's transfer and a leader leaving its group drain the same way (handOver)", () => {
    function operatorHost(groups: number) {
      const started: string[] = [];
      const host = new GroupHost<Leading>({
        groups,
        replica: (_g, t) => new Leading(t),
        transport: { send: () => {} },
        spread: false,
        onTransfer: (g, from, to, why, inFlight) => started.push(`${g} ${from}->${to} ${why} ${inFlight}`),
      });
      return { host, started };
    }
    const results = () => {
      const got: HandOverResult[] = [];
      return { got, done: (r: HandOverResult) => got.push(r) };
    };

    it('at G = 1: new transactions are refused at once, those in flight decide, and only then does the transfer start', () => {
      const { host, started } = operatorHost(1);
      const g0 = host.replica(0);
      g0.view = view(100, { n2: 100, n3: 100 });
      g0.inFlight = true;
      const r = results();
      host.handOver(0, 'n2', { why: 'operator', force: false, done: r.done });
      // Nothing new is admitted from the call on (the engine answers not-the-leader, retryable).
      expect(g0.holding).toBe('n2');
      for (let t = 0; t < drain - 1; t++) {
        host.tick();
        expect(g0.holding).toBe('n2');
        expect(g0.transfers).toEqual([]);
      }
      expect(r.got).toEqual([]);
      // The last one decides: the next tick starts the transfer, never before.
      g0.inFlight = false;
      host.tick();
      expect(g0.transfers).toEqual(['n2']);
      expect(started).toEqual(['0 n1->n2 operator 0']);
      expect(r.got).toEqual([{ outcome: 'transferred', inFlight: 0, drainedTicks: drain }]);
      // Raft's transfer refuses them from here (EngineIO.handingOverTo); the host's hold is released.
      expect(g0.holding).toBeNull();
    });

    it('nothing in flight: the transfer starts in the call itself', () => {
      const { host } = operatorHost(1);
      const g0 = host.replica(0);
      g0.view = view(100, { n2: 100, n3: 100 });
      const r = results();
      host.handOver(0, 'n3', { why: 'operator', force: false, done: r.done });
      expect(g0.transfers).toEqual(['n3']);
      expect(r.got).toEqual([{ outcome: 'transferred', inFlight: 0, drainedTicks: 0 }]);
    });

    it('still in flight at the bound: without force it is called off and new transactions are taken again; with force it transfers and says how many', () => {
      const { host, started } = operatorHost(1);
      const g0 = host.replica(0);
      g0.view = view(100, { n2: 100, n3: 100 });
      g0.inFlight = true;
      const refused = results();
      host.handOver(0, 'n2', { why: 'operator', force: false, done: refused.done });
      for (let t = 0; t < drain; t++) host.tick();
      expect(refused.got).toEqual([{ outcome: 'in-flight', inFlight: 1, drainedTicks: drain }]);
      expect(g0.transfers).toEqual([]);
      expect(g0.holding).toBeNull();
      const forced = results();
      host.handOver(0, 'n2', { why: 'operator', force: true, done: forced.done });
      for (let t = 0; t < drain - 1; t++) host.tick();
      expect(g0.transfers).toEqual([]);
      host.tick();
      expect(g0.transfers).toEqual(['n2']);
      expect(forced.got).toEqual([{ outcome: 'transferred', inFlight: 1, drainedTicks: drain }]);
      expect(started).toEqual(['0 n1->n2 operator 1']);
    });

    it('a node stopping answers the hand-over it was waiting on', () => {
      const { host } = operatorHost(1);
      const g0 = host.replica(0);
      g0.view = view(100, { n2: 100, n3: 100 });
      g0.inFlight = true;
      const r = results();
      host.handOver(0, 'n2', { why: 'operator', force: false, done: r.done });
      host.tick();
      host.stop();
      expect(r.got).toEqual([{ outcome: 'not-leader', inFlight: 1, drainedTicks: 1 }]);
      expect(g0.transfers).toEqual([]);
    });

    it('a node that does not lead the group hears so at once, and refuses nothing', () => {
      const { host } = operatorHost(2);
      const r = results();
      host.handOver(1, 'n2', { why: 'operator', force: true, done: r.done });
      expect(r.got).toEqual([{ outcome: 'not-leader', inFlight: 0, drainedTicks: 0 }]);
      expect(host.replica(1).holding).toBeNull();
    });

    it("an operator's transfer replaces spreading's hand-over under way, which then waits a full hold-off again", () => {
      const { host, heard } = leadingHost(4);
      const g1 = host.replica(1);
      g1.view = view(100, { n2: 100, n3: 100 });
      g1.inFlight = true;
      for (let t = 0; t < hold; t++) {
        heard('n2');
        host.tick();
      }
      expect(g1.holding).toBe('n2');
      const r = results();
      host.handOver(1, 'n3', { why: 'operator', force: false, done: r.done });
      expect(g1.holding).toBe('n3');
      g1.inFlight = false;
      heard('n2');
      host.tick();
      expect(g1.transfers).toEqual(['n3']);
      expect(r.got.map((x) => x.outcome)).toEqual(['transferred']);
    });

    it('a leader about to be removed from its group (followMembers) waits for its transactions before handing over, and goes ahead at the bound', () => {
      class Leaving extends Leading {
        readonly proposed: string[] = [];
        cur: { voters: string[]; learners: string[]; joint: boolean } = {
          voters: ['n1', 'n2', 'n3'],
          learners: [],
          joint: false,
        };
        members() {
          return this.cur;
        }
        addressOf(id: string): string {
          return `127.0.0.1:${id}`;
        }
        proposeMemberChange(type: ConfChangeType, id: string): void {
          this.proposed.push(`${type} ${id}`);
        }
      }
      const started: string[] = [];
      const host = new GroupHost<Leaving>({
        groups: 2,
        replica: (_g, t) => new Leaving(t),
        transport: { send: () => {} },
        spread: false,
        onTransfer: (g, from, to, why, inFlight) => started.push(`${g} ${from}->${to} ${why} ${inFlight}`),
      });
      // Group 0 no longer has n1 (the operator removed it); n1 still leads group 1.
      host.replica(0).cur = { voters: ['n2', 'n3'], learners: [], joint: false };
      const g1 = host.replica(1);
      g1.view = view(100, { n2: 100, n3: 100 });
      g1.inFlight = true;
      for (let t = 0; t < 10; t++) host.tick();
      expect(g1.holding).not.toBeNull();
      const to = g1.holding;
      for (let t = 0; t < drain - 1; t++) {
        host.tick();
        expect(g1.holding).toBe(to);
      }
      expect(g1.transfers).toEqual([]);
      expect(g1.proposed).toEqual([]);
      // Still in flight at the bound: its removal must happen, so the transfer goes ahead, and says so.
      host.tick();
      expect(g1.transfers).toEqual([to]);
      expect(started).toEqual([`1 n1->${to} members 1`]);
      expect(g1.holding).toBeNull();
    });
  });

  it('one group is never spread: its leader stays where Raft elected it, as before groups', () => {
    const { host, heard } = leadingHost(1);
    host.replica(0).view = { self: 'n2', voters: ['n1', 'n2', 'n3'], lastIndex: 5, match: new Map([['n1', 5]]) };
    for (let t = 0; t < 10 * hold; t++) {
      heard('n1');
      host.tick();
    }
    expect(host.replica(0).transfers).toEqual([]);
  });

  it('three hosts of real node cores, four groups: the leaders end on n1, n2, n3, n1; after n2 is cut off and returns, it leads group 1 again', () => {
    const G = 4;
    const { q, ids, cut, leaderOf } = coreCluster(G, true);
    const leaders = () => Array.from({ length: G }, (_, g) => leaderOf(g)?.driver.node.raft.id ?? null);
    const spread = Array.from({ length: G }, (_, g) => ids[g % ids.length]);
    q.runUntil(60_000, () => leaders().every((l, g) => l === spread[g]));
    expect(leaders()).toEqual(spread);
    // n2 goes away: group 1 elects another leader among n1 and n3, and none is handed to the absent n2.
    cut.add('n2');
    q.runUntil(q.now + 30_000, () => leaders()[1] !== null);
    q.runUntil(q.now + 10_000);
    expect(leaders()[1]).not.toBe('n2');
    expect(leaders()[1]).not.toBeNull();
    // n2 returns: once caught up and heard from for the hold-off, group 1 is handed back to it.
    cut.delete('n2');
    q.runUntil(q.now + 60_000, () => leaders().every((l, g) => l === spread[g]));
    expect(leaders()).toEqual(spread);
  });
});

describe("an operator's transfer through the host, on real node cores (G = 1)", () => {
  it('a transaction in flight holds the transfer and new ones are refused meanwhile; at the bound it is called off, or with force goes ahead naming it', () => {
    const { q, hosts, ids, leaderOf } = coreCluster(1, false);
    // The engine leads once its term's first entry is applied.
    q.runUntil(10_000, () => leaderOf(0)?.engine.isLeader() === true);
    const c = leaderOf(0);
    if (c === undefined) throw new Error('no leader');
    const self = c.driver.node.raft.id;
    const host = hosts.get(self);
    const to = ids.find((id) => id !== self) ?? '';
    c.engine.begin('t1', 60_000);
    const got: HandOverResult[] = [];
    host?.handOver(0, to, { why: 'operator', force: false, done: (r) => got.push(r) });
    // Nothing new is admitted while t1 is in flight.
    expect(() => c.engine.begin('t2', 0)).toThrow(/not the leader/);
    q.runUntil(q.now + 1_000);
    expect(got).toEqual([]);
    expect(leaderOf(0)?.driver.node.raft.id).toBe(self);
    // 20 ticks at 100 ms: called off, nothing moved, new transactions taken again.
    q.runUntil(q.now + 3_000, () => got.length > 0);
    expect(got).toEqual([{ outcome: 'in-flight', inFlight: 1, drainedTicks: 20 }]);
    expect(leaderOf(0)?.driver.node.raft.id).toBe(self);
    expect(c.engine.begin('t3', 60_000)).toBeDefined();
    // Forced: after the same wait it transfers with both in flight, and says so.
    host?.handOver(0, to, { why: 'operator', force: true, done: (r) => got.push(r) });
    q.runUntil(q.now + 3_000, () => got.length > 1);
    expect(got[1]).toEqual({ outcome: 'transferred', inFlight: 2, drainedTicks: 20 });
    q.runUntil(q.now + 3_000, () => leaderOf(0)?.driver.node.raft.id === to);
    expect(leaderOf(0)?.driver.node.raft.id).toBe(to);
  });
});

describe("membership across groups: every group follows the operator's change to group 0", () => {
  it('three hosts of real node cores, four groups: n3 removed from group 0 leaves every group; added back, it is a voter of every group again', () => {
    const G = 4;
    const { q, ids, leaderOf } = coreCluster(G, false);
    const configs = () =>
      Array.from({ length: G }, (_, g) => {
        const cs = leaderOf(g)?.driver.node.raft.confState();
        return cs === undefined ? null : `${[...cs.voters].sort().join(',')}|${[...cs.learners].sort().join(',')}`;
      });
    const operator = (type: ConfChangeType, id: string, members: string[]) => {
      const d = leaderOf(0)?.driver;
      expect(d, 'group 0 has a leader').toBeDefined();
      let err: Error | null | undefined;
      d?.proposeConfChange(
        { type, nodeId: id, context: encodeMemberContext(new Map(members.map((m) => [m, m]))) },
        (e) => (err = e),
      );
      q.runUntil(q.now + 10_000, () => err !== undefined);
      expect(err).toBeNull();
    };
    q.runUntil(20_000, () => configs().every((c) => c === 'n1,n2,n3|'));
    expect(configs()).toEqual(Array(G).fill('n1,n2,n3|'));
    operator(ConfChangeType.Remove, 'n3', ['n1', 'n2']);
    q.runUntil(q.now + 60_000, () => configs().every((c) => c === 'n1,n2|'));
    expect(configs()).toEqual(Array(G).fill('n1,n2|'));
    // Back: a learner first, then a voter, in group 0; every group follows, learner then voter.
    operator(ConfChangeType.AddLearner, 'n3', ids);
    operator(ConfChangeType.AddVoter, 'n3', ids);
    q.runUntil(q.now + 60_000, () => configs().every((c) => c === 'n1,n2,n3|'));
    expect(configs()).toEqual(Array(G).fill('n1,n2,n3|'));
  });
});

/** Three hosts of real node cores on an event queue; `cut` holds the nodes whose traffic is dropped (a partition). */
function coreCluster(G: number, spread: boolean) {
  const q = new EventQueue();
  const rng = new Rng(46);
  const ids = ['n1', 'n2', 'n3'];
  const cut = new Set<string>();
  const hosts = new Map<string, GroupHost<ReturnType<typeof coreReplica>>>();
  const machines = new Map<string, NodeStateMachine[]>();
  for (const id of ids) {
    const ms: NodeStateMachine[] = [];
    machines.set(id, ms);
    const host = new GroupHost({
      groups: G,
      spread: spread ? {} : false,
      transport: {
        // One delivery per batch per peer: the messages of every group share it.
        send: (gms) => {
          for (const to of new Set(gms.map((gm) => gm.message.to))) {
            const batch = gms.filter((gm) => gm.message.to === to);
            if (!cut.has(id) && !cut.has(to))
              q.after(1, () => !cut.has(id) && !cut.has(to) && hosts.get(to)?.receive(batch));
          }
        },
      },
      replica: (_g, transport) => {
        const disk = new SimDisk(q, new Rng(rng.u32()));
        disk.found();
        const sm = new NodeStateMachine();
        ms.push(sm);
        const node = RawNode.restart(
          { id, random: new Rng(rng.u32()).asRandom(), electionTicks: 10, heartbeatTicks: 1 },
          disk.recover(),
          { voters: ids, learners: [], votersOutgoing: [] },
        );
        return coreReplica(queueCore({ id, ids, node, machine: sm, disk, q, transport }));
      },
    });
    hosts.set(id, host);
    const tick = (): void => {
      host.tick();
      q.after(100, tick);
    };
    q.after(rng.int(100), tick);
  }
  const leaderOf = (g: number) =>
    [...hosts.values()]
      .map((h) => h.replica(g).core)
      .find((c) => c.driver.isLeader() && !cut.has(c.driver.node.raft.id));
  return { q, hosts, machines, ids, cut, leaderOf };
}
