// Membership change in the Raft core (src/raft/confchange.ts, Raft.applyConfChange),
// driven through the production driver on the simulator's virtual clock and
// disks: learners, promotion, one change at a time, leader removal, restart.

import { describe, expect, it } from 'vitest';
import { Driver, type StateMachine } from '../../src/node/driver.ts';
import {
  checkConfChange,
  ConfChangeRefusedError,
  ConfChangeType,
  decodeConfChange,
  encodeConfChange,
  nextConfState,
} from '../../src/raft/confchange.ts';
import { MemoryStorage } from '../../src/raft/memory-storage.ts';
import { ProposalDroppedError } from '../../src/raft/raft.ts';
import { RawNode } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import { EMPTY, emptyConfState, Role, type ConfState, type Entry, type NodeId } from '../../src/raft/types.ts';
import { EventQueue } from '../sim/event-queue.ts';
import { SimDisk } from '../sim/sim-disk.ts';

class Machine implements StateMachine<number> {
  data: string[] = [];
  apply(e: Entry): number {
    this.data.push(Buffer.from(e.data).toString());
    return this.data.length;
  }
  snapshot(): Uint8Array {
    return Buffer.from(JSON.stringify(this.data));
  }
  restore(d: Uint8Array): void {
    this.data = JSON.parse(Buffer.from(d).toString()) as string[];
  }
}

interface Node {
  id: NodeId;
  disk: SimDisk;
  driver: Driver<number> | null;
  sm: Machine;
  conf: ConfState;
}

/** A few drivers on one virtual clock; messages take 1 ms; links can be cut. */
class World {
  readonly q = new EventQueue();
  readonly rng = new Rng(7);
  readonly nodes = new Map<NodeId, Node>();
  readonly cut = new Set<string>();

  constructor(
    voters: NodeId[],
    private readonly snapshotEntries = 1_000_000,
  ) {
    for (const id of voters) this.add(id, { voters, learners: [], votersOutgoing: [] });
  }

  /** Starts a node; a joining node gets an empty configuration. */
  add(id: NodeId, conf: ConfState = emptyConfState()): Node {
    const n: Node = { id, disk: new SimDisk(this.q, new Rng(this.rng.u32())), driver: null, sm: new Machine(), conf };
    // The cluster's first voters found it; a node added later starts empty, as a new node does (rejoining).
    if (conf.voters.length > 0) n.disk.found();
    this.nodes.set(id, n);
    this.start(n);
    return n;
  }

  start(n: Node): void {
    const raw = RawNode.restart(
      { id: n.id, random: new Rng(this.rng.u32()).asRandom(), electionTicks: 10, heartbeatTicks: 1 },
      n.disk.recover(),
      n.conf,
    );
    n.sm = new Machine();
    const d = new Driver<number>({
      node: raw,
      store: n.disk,
      transport: {
        send: (msgs) => {
          for (const m of msgs)
            this.q.after(1, () => {
              if (this.cut.has(`${m.from}>${m.to}`)) return;
              this.nodes.get(m.to)?.driver?.receive([m]);
            });
        },
      },
      sm: n.sm,
      snapshotEntries: this.snapshotEntries,
      snapshotKeepEntries: 2,
      waitersMax: 1000,
      onFatal: (err) => {
        throw err;
      },
    });
    n.driver = d;
    const tick = (): void => {
      if (n.driver !== d) return;
      d.tick();
      this.q.after(100, tick);
    };
    this.q.after(this.rng.int(100), tick);
  }

  crash(id: NodeId): void {
    const n = this.nodes.get(id)!;
    n.driver?.stop();
    n.driver = null;
    n.disk.crash();
  }

  isolate(id: NodeId, on = true): void {
    for (const other of this.nodes.keys()) {
      if (other === id) continue;
      for (const k of [`${id}>${other}`, `${other}>${id}`]) on ? this.cut.add(k) : this.cut.delete(k);
    }
  }

  run(ms: number): void {
    this.q.runUntil(this.q.now + ms);
  }

  leader(): Node {
    const ls = [...this.nodes.values()].filter((n) => n.driver?.isLeader());
    ls.sort((a, b) => b.driver!.node.raft.term - a.driver!.node.raft.term);
    if (ls.length === 0) throw new Error('no leader');
    return ls[0];
  }

  /** Runs until a leader exists (bounded). */
  electLeader(): Node {
    for (let i = 0; i < 100; i++) {
      if ([...this.nodes.values()].some((n) => n.driver?.isLeader())) return this.leader();
      this.run(100);
    }
    throw new Error('no leader elected within 10 s');
  }

  /**
   * Proposes a change at the leader and runs until it is applied there;
   * returns the error, if any. Retries while an earlier change is pending
   * (a new leader must first apply an entry of its own term).
   */
  change(type: ConfChangeType, id: NodeId): { err: Error | null; conf: ConfState | null } {
    for (let attempt = 0; ; attempt++) {
      const out: { err: Error | null; conf: ConfState | null; done: boolean } = { err: null, conf: null, done: false };
      this.electLeader().driver!.proposeConfChange({ type, nodeId: id, context: EMPTY }, (err, r) =>
        Object.assign(out, { err, conf: r?.confState ?? null, done: true }),
      );
      for (let i = 0; i < 100 && !out.done; i++) this.run(20);
      if (attempt < 20 && out.err instanceof ProposalDroppedError && /in progress/.test(out.err.message)) {
        this.run(100);
        continue;
      }
      return out;
    }
  }

  /** Proposes a command at the leader; returns whether it was applied within `ms`. */
  put(data: string, ms = 2_000): boolean {
    let ok = false;
    this.leader().driver!.propose(Buffer.from(data), (err) => (ok = err === null));
    const until = this.q.now + ms;
    while (!ok && this.q.now < until) this.run(20);
    return ok;
  }
}

describe('conf change helpers', () => {
  const cs: ConfState = { voters: ['a', 'b'], learners: ['c'], votersOutgoing: [] };

  it('checks a change against the configuration', () => {
    expect(checkConfChange(cs, { type: ConfChangeType.AddLearner, nodeId: 'd' })).toBeNull();
    expect(checkConfChange(cs, { type: ConfChangeType.AddLearner, nodeId: 'a' })).toMatch(/already a voter/);
    expect(checkConfChange(cs, { type: ConfChangeType.AddLearner, nodeId: 'c' })).toMatch(/already a learner/);
    expect(checkConfChange(cs, { type: ConfChangeType.AddVoter, nodeId: 'c' })).toBeNull();
    expect(checkConfChange(cs, { type: ConfChangeType.Remove, nodeId: 'x' })).toMatch(/not a member/);
    expect(
      checkConfChange(
        { voters: ['a'], learners: [], votersOutgoing: [] },
        { type: ConfChangeType.Remove, nodeId: 'a' },
      ),
    ).toMatch(/last voter/);
  });

  it('computes the next configuration and round-trips the entry', () => {
    expect(nextConfState(cs, { type: ConfChangeType.AddVoter, nodeId: 'c' })).toEqual({
      voters: ['a', 'b', 'c'],
      learners: [],
      votersOutgoing: [],
    });
    expect(nextConfState(cs, { type: ConfChangeType.Remove, nodeId: 'a' })).toEqual({
      voters: ['b'],
      learners: ['c'],
      votersOutgoing: [],
    });
    const cc = { type: ConfChangeType.AddLearner, nodeId: 'd', base: cs, context: new Uint8Array([1, 2, 3]) };
    expect(decodeConfChange(encodeConfChange(cc))).toEqual(cc);
    expect(() => decodeConfChange(Buffer.from('{nope'))).toThrow(/malformed membership change/);
  });
});

describe('raft core: membership change', () => {
  it('a learner receives the log but neither counts toward commit nor campaigns', () => {
    const w = new World(['n1', 'n2', 'n3']);
    w.electLeader();
    expect(w.put('a')).toBe(true);
    w.add('n4');
    const r = w.change(ConfChangeType.AddLearner, 'n4');
    expect(r.err).toBeNull();
    expect(r.conf).toEqual({ voters: ['n1', 'n2', 'n3'], learners: ['n4'], votersOutgoing: [] });
    expect(w.put('b')).toBe(true);
    w.run(500);
    expect(w.nodes.get('n4')!.sm.data).toEqual(['a', 'b']);
    // With the two other voters cut off, the leader and the learner are no majority.
    const l = w.leader();
    for (const id of ['n1', 'n2', 'n3']) if (id !== l.id) w.isolate(id);
    expect(w.put('c', 1_500)).toBe(false);
    expect(l.driver!.node.raft.log.committed).toBeLessThan(l.driver!.node.raft.log.lastIndex());
    // The learner, cut off from everyone, never campaigns.
    w.cut.clear();
    w.run(1_000);
    const n4 = w.nodes.get('n4')!.driver!.node.raft;
    const term = n4.term;
    w.isolate('n4');
    w.run(5_000);
    expect(n4.term).toBe(term);
    expect(n4.role).toBe(Role.Follower);
  });

  it('allows one change at a time, and a promoted learner counts', () => {
    const w = new World(['n1', 'n2']);
    const l = w.electLeader();
    w.add('n3');
    w.add('n4');
    let err: Error | null = null;
    l.driver!.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 'n3', context: EMPTY }, () => {});
    l.driver!.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 'n4', context: EMPTY }, (e) => (err = e));
    expect(err).toBeInstanceOf(ProposalDroppedError);
    expect(String(err)).toMatch(/membership change is in progress/);
    w.run(500);
    expect(w.change(ConfChangeType.AddVoter, 'n3').conf?.voters.sort()).toEqual(['n1', 'n2', 'n3']);
    // Nonsense is refused before it reaches the log.
    expect(w.change(ConfChangeType.AddVoter, 'n3').err).toBeInstanceOf(ConfChangeRefusedError);
    // n3 now counts: the leader and n3 commit without the other voter.
    const other = ['n1', 'n2'].find((id) => id !== w.leader().id)!;
    w.isolate(other);
    expect(w.put('x')).toBe(true);
    expect(w.nodes.get('n3')!.sm.data).toContain('x');
  });

  it('a new leader proposes no change before an entry of its term is applied', () => {
    const storage = MemoryStorage.from(
      { term: 0, vote: '', commit: 0 },
      { metadata: { index: 0, term: 0, confState: { voters: ['a'], learners: [], votersOutgoing: [] } }, data: EMPTY },
      [],
    );
    const node = new RawNode({ id: 'a', storage, random: () => 0 });
    node.campaign();
    expect(node.raft.role).toBe(Role.Leader);
    expect(() => node.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 'b', context: EMPTY })).toThrow(
      /in progress/,
    );
    // Persist and apply the leader's empty entry: now a change may go.
    for (let i = 0; i < 3 && node.hasReady(); i++) node.advance(node.ready());
    expect(node.raft.log.applied).toBe(node.raft.log.lastIndex());
    expect(node.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 'b', context: EMPTY })).toBe(
      node.raft.log.lastIndex(),
    );
  });

  it('refuses to remove the last voter', () => {
    const w = new World(['n1']);
    w.electLeader();
    const r = w.change(ConfChangeType.Remove, 'n1');
    expect(r.err).toBeInstanceOf(ConfChangeRefusedError);
    expect(String(r.err)).toMatch(/last voter/);
  });

  it('a removed leader steps down and another voter takes over at once', () => {
    const w = new World(['n1', 'n2', 'n3']);
    const l = w.electLeader();
    expect(w.put('a')).toBe(true);
    const r = w.change(ConfChangeType.Remove, l.id);
    expect(r.err).toBeNull();
    expect(l.driver!.node.raft.role).toBe(Role.Follower);
    // TimeoutNow: well within one election timeout (10 ticks of 100 ms).
    w.run(300);
    const l2 = w.leader();
    expect(l2.id).not.toBe(l.id);
    expect(l2.driver!.node.confState().voters.sort()).toEqual(['n1', 'n2', 'n3'].filter((id) => id !== l.id));
    expect(w.put('b')).toBe(true);
    // The removed node never campaigns again.
    const term = l.driver!.node.raft.term;
    w.isolate(l.id);
    w.run(5_000);
    expect(l.driver!.node.raft.role).toBe(Role.Follower);
    expect(l.driver!.node.raft.term).toBe(term);
  });

  it('rebuilds the configuration from snapshot + applied changes on restart, and feeds a new node by snapshot', () => {
    const w = new World(['n1', 'n2', 'n3'], 10);
    w.electLeader();
    for (let i = 0; i < 25; i++) expect(w.put(`a${i}`)).toBe(true);
    expect(w.change(ConfChangeType.Remove, 'n3').err).toBeNull();
    w.add('n4');
    expect(w.change(ConfChangeType.AddLearner, 'n4').err).toBeNull();
    w.run(1_000);
    // The leader's log was compacted, so n4 got a snapshot, not entries from index 1.
    const n4 = w.nodes.get('n4')!;
    expect(n4.driver!.node.raft.log.firstIndex()).toBeGreaterThan(1);
    expect(n4.sm.data.slice(0, 25)).toEqual(Array.from({ length: 25 }, (_, i) => `a${i}`));
    expect(w.change(ConfChangeType.AddVoter, 'n4').err).toBeNull();
    const expected = { voters: ['n1', 'n2', 'n4'], learners: [] as string[] };
    for (const id of ['n1', 'n2', 'n4']) w.crash(id);
    for (const id of ['n1', 'n2', 'n4']) w.start(w.nodes.get(id)!);
    w.electLeader();
    expect(w.put('after')).toBe(true);
    w.run(500);
    for (const id of ['n1', 'n2', 'n4']) {
      const cs = w.nodes.get(id)!.driver!.node.confState();
      expect({ voters: cs.voters.sort(), learners: cs.learners }, id).toEqual(expected);
    }
  });
});
