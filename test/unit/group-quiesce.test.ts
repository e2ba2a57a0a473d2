// Idle groups cost nothing (src/raft/raft.ts, Raft.quiesced; src/node/group-host.ts): three hosts of real node cores
// with G groups over a simulated network. An idle cluster quiesces every group and then sends only one node
// heartbeat frame per peer per tick; a proposal or a read wakes its group; no group elects while its leader's node is
// heard; a leader node that dies (its streams reset, or silent) or is cut off loses its groups to the others within
// the usual election bound, and a cut-off quiesced leader steps down (CheckQuorum).

import { describe, expect, it } from 'vitest';
import { coreReplica, GroupHost, type GroupReplica } from '../../src/node/group-host.ts';
import { encodeProbe, NodeStateMachine } from '../../src/node/machine.ts';
import { RawNode } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import type { GroupMessage } from '../../src/transport/types.ts';
import { EventQueue } from '../sim/event-queue.ts';
import { queueCore } from './core-fixture.ts';
import { SimDisk } from '../sim/sim-disk.ts';

const TICK_MS = 100;
const ELECTION_TICKS = 10;
/** An ordinary election after a leader falls silent: a randomized timeout of up to 2 election timeouts, and a vote. */
const ELECTION_BOUND_MS = 2 * ELECTION_TICKS * TICK_MS + 1_000;

type CoreReplica = ReturnType<typeof coreReplica>;

/**
 * Three hosts of real node cores on an event queue. `cut`: nodes whose traffic is dropped both ways (a partition);
 * `down`: crashed nodes. Counts the group messages sent and the node heartbeat frames.
 */
function quietCluster(G: number, quiesce = true, seed = 46) {
  const q = new EventQueue();
  const rng = new Rng(seed);
  const ids = ['n1', 'n2', 'n3'];
  const cut = new Set<string>();
  const down = new Set<string>();
  const hosts = new Map<string, GroupHost<CoreReplica>>();
  const counts = { messages: 0, heartbeats: 0 };
  const deliver = (from: string, to: string, f: () => void): void => {
    const open = (): boolean => !cut.has(from) && !cut.has(to) && !down.has(to) && !down.has(from);
    if (open()) q.after(1, () => open() && f());
  };
  for (const id of ids) {
    const sent = new Set<string>();
    const host = new GroupHost<CoreReplica>({
      groups: G,
      spread: false,
      transport: {
        send: (gms: GroupMessage[]) => {
          if (down.has(id)) return;
          counts.messages += gms.length;
          for (const to of new Set(gms.map((gm) => gm.message.to))) {
            sent.add(to);
            const batch = gms.filter((gm) => gm.message.to === to);
            const quiesced = hosts.get(id)?.quiescedLeading() ?? [];
            deliver(id, to, () => {
              hosts.get(to)?.heard(id, quiesced);
              hosts.get(to)?.receive(batch);
            });
          }
        },
        heartbeat: () => {
          if (down.has(id)) return;
          for (const to of ids) {
            if (to === id || sent.has(to)) continue;
            counts.heartbeats += 1;
            const quiesced = hosts.get(id)?.quiescedLeading() ?? [];
            deliver(id, to, () => hosts.get(to)?.heard(id, quiesced));
          }
          sent.clear();
        },
      },
      replica: (_g, transport) => {
        const disk = new SimDisk(q, new Rng(rng.u32()));
        disk.found();
        const node = RawNode.restart(
          { id, random: new Rng(rng.u32()).asRandom(), electionTicks: ELECTION_TICKS, heartbeatTicks: 1, quiesce },
          disk.recover(),
          { voters: ids, learners: [], votersOutgoing: [] },
        );
        return coreReplica(queueCore({ id, ids, node, machine: new NodeStateMachine(), disk, q, transport }));
      },
    });
    hosts.set(id, host);
    const tick = (): void => {
      if (down.has(id)) return;
      host.tick();
      q.after(TICK_MS, tick);
    };
    q.after(rng.int(TICK_MS), tick);
  }
  const live = (): string[] => ids.filter((id) => !down.has(id));
  const replica = (id: string, g: number): CoreReplica => (hosts.get(id) as GroupHost<CoreReplica>).replica(g);
  /** Group g's leader among the live nodes that are not cut off, or undefined. */
  const leaderOf = (g: number): string | undefined =>
    live().find((id) => !cut.has(id) && replica(id, g).core.driver.isLeader());
  const groups = Array.from({ length: G }, (_, g) => g);
  const allLed = (): boolean => groups.every((g) => leaderOf(g) !== undefined);
  /** Every live node's replica of every group is quiesced. */
  const allQuiet = (): boolean => live().every((id) => groups.every((g) => replica(id, g).core.driver.node.quiesced()));
  /** Each group's term and leader as each live node sees them. */
  const view = (): string[] =>
    live().flatMap((id) =>
      groups.map((g) => {
        const raft = replica(id, g).core.driver.node.raft;
        return `${id}/g${g}: term ${raft.term} leader ${raft.lead}`;
      }),
    );
  /** Crashes node `id`; with `streamsReset`, its peers see their streams to it break a millisecond later (SIGKILL). */
  const crash = (id: string, streamsReset: boolean): void => {
    down.add(id);
    hosts.get(id)?.crash();
    if (streamsReset) for (const p of live()) q.after(1, () => hosts.get(p)?.reportUnreachable(id));
  };
  return { q, ids, hosts, cut, counts, replica, leaderOf, allLed, allQuiet, view, crash, groups };
}

type Cluster = ReturnType<typeof quietCluster>;

/** Runs until every group has a leader and every replica is quiesced (a bounded wait), and says so. */
function settle(c: Cluster, withinMs = 20_000): void {
  c.q.runUntil(c.q.now + withinMs, () => c.allLed() && c.allQuiet());
  expect(c.allLed(), 'every group elected a leader').toBe(true);
  expect(c.allQuiet(), 'every group quiesced on every node').toBe(true);
}

describe('idle groups quiesce (G = 4, three nodes)', () => {
  it('an idle cluster quiesces every group, then sends no group message, only one node heartbeat per peer per tick', () => {
    const c = quietCluster(4);
    settle(c);
    c.counts.messages = 0;
    c.counts.heartbeats = 0;
    c.q.runUntil(c.q.now + 5_000);
    expect(c.counts.messages).toBe(0);
    // 50 ticks, 3 nodes, 2 peers each.
    expect(c.counts.heartbeats).toBeGreaterThan(0);
    expect(c.counts.heartbeats).toBeLessThanOrEqual(50 * 3 * 2 + 6);
    expect(c.allQuiet()).toBe(true);

    // Teeth: the same idle cluster without quiescence sends every group's heartbeats and answers.
    const busy = quietCluster(4, false);
    busy.q.runUntil(20_000, () => busy.allLed());
    busy.q.runUntil(busy.q.now + 3_000);
    expect(busy.allQuiet()).toBe(false);
    busy.counts.messages = 0;
    busy.q.runUntil(busy.q.now + 5_000);
    // 4 groups × 2 followers × (heartbeat + answer) × 50 ticks.
    expect(busy.counts.messages).toBeGreaterThanOrEqual(4 * 2 * 2 * 45);
  });

  it('no election while quiesced and the leader node is heard: terms and leaders stay for a minute', () => {
    const c = quietCluster(4);
    settle(c);
    const before = c.view();
    c.q.runUntil(c.q.now + 60_000);
    expect(c.view()).toEqual(before);
    expect(c.allQuiet()).toBe(true);
  });

  it('a quiesced group wakes on a proposal, commits and applies it on every node, and quiesces again', () => {
    const c = quietCluster(4);
    settle(c);
    const g = 2;
    const leader = c.leaderOf(g) as string;
    const driver = c.replica(leader, g).core.driver;
    let answer: { err: Error | null; index?: number } | null = null;
    driver.propose(encodeProbe('k', new Uint8Array([1])), (err, r) => (answer = { err, index: r?.index }));
    expect(driver.node.quiesced(), 'the proposal woke the leader').toBe(false);
    c.q.runUntil(c.q.now + 2_000, () => answer !== null);
    const a = answer as { err: Error | null; index?: number } | null;
    expect(a?.err ?? null).toBeNull();
    const index = a?.index as number;
    c.q.runUntil(c.q.now + 2_000, () => c.ids.every((id) => c.replica(id, g).core.driver.applied >= index));
    for (const id of c.ids) expect(c.replica(id, g).core.driver.applied).toBeGreaterThanOrEqual(index);
    c.q.runUntil(c.q.now + 2_000, () => c.allQuiet());
    expect(c.allQuiet(), 'the group quiesced again').toBe(true);
  });

  it('a linearizable read (ReadIndex) on a quiesced group is answered', () => {
    const c = quietCluster(4);
    settle(c);
    const leader = c.leaderOf(1) as string;
    let err: Error | null | undefined;
    c.replica(leader, 1).core.driver.read((e) => (err = e));
    c.q.runUntil(c.q.now + 1_000, () => err !== undefined);
    expect(err).toBeNull();
  });

  for (const streamsReset of [true, false]) {
    it(`followers elect after the leader node dies ${streamsReset ? '(SIGKILL: its streams reset)' : '(silently: no stream breaks)'}, within the usual election bound`, () => {
      const c = quietCluster(4);
      settle(c);
      const dead = c.leaderOf(0) as string;
      const led = c.groups.filter((g) => c.leaderOf(g) === dead);
      expect(led.length).toBeGreaterThan(0);
      const at = c.q.now;
      c.crash(dead, streamsReset);
      c.q.runUntil(at + ELECTION_BOUND_MS, () => c.allLed());
      expect(c.allLed(), `every group has a leader on a live node ${ELECTION_BOUND_MS} ms after ${dead} died`).toBe(
        true,
      );
      // And they keep them: no election churns on among the survivors (once every survivor has heard its leader).
      c.q.runUntil(c.q.now + 1_000);
      const after = c.view();
      c.q.runUntil(c.q.now + 10_000);
      expect(c.view()).toEqual(after);
    });
  }

  it('a quiesced leader cut off from its peers steps down (CheckQuorum), the others elect, and after the heal all quiesce again', () => {
    const c = quietCluster(4);
    settle(c);
    const lonely = c.leaderOf(0) as string;
    const at = c.q.now;
    c.cut.add(lonely);
    c.q.runUntil(at + ELECTION_BOUND_MS, () =>
      c.groups.every((g) => !c.replica(lonely, g).core.driver.isLeader() && c.leaderOf(g) !== undefined),
    );
    for (const g of c.groups) {
      expect(c.replica(lonely, g).core.driver.isLeader(), `${lonely} still leads group ${g}`).toBe(false);
      expect(c.leaderOf(g), `group ${g} has a leader among the others`).toBeDefined();
    }
    c.cut.delete(lonely);
    settle(c, 30_000);
  });
});

describe('quiescence only with more than one group', () => {
  it('at G = 1 the host sends no node heartbeats and tells its replica nothing it heard', () => {
    let heartbeats = 0;
    const told: string[][] = [];
    const r: GroupReplica = {
      receive: () => {},
      reportUnreachable: () => {},
      heard: (peers) => told.push([...peers]),
      tick: () => {},
      stop: () => {},
      crash: () => {},
    };
    const host = new GroupHost({
      groups: 1,
      replica: () => r,
      transport: { send: () => {}, heartbeat: () => (heartbeats += 1) },
    });
    host.heard('n2');
    for (let i = 0; i < 5; i++) host.tick();
    expect(heartbeats).toBe(0);
    expect(told).toEqual([]);
  });

  it('at G = 2 the host sends a node heartbeat every tick and tells each replica who was heard since the last one, and who said it leads that group quiesced', () => {
    let heartbeats = 0;
    const told: string[] = [];
    const replica = (g: number): GroupReplica => ({
      receive: () => {},
      reportUnreachable: () => {},
      heard: (peers, leaders) => told.push(`g${g}: ${peers.join(',')} leaders ${leaders.join(',')}`),
      tick: () => {},
      stop: () => {},
      crash: () => {},
    });
    const host = new GroupHost({
      groups: 2,
      spread: false,
      replica,
      transport: { send: () => {}, heartbeat: () => (heartbeats += 1) },
    });
    host.heard('n2', [1]);
    host.heard('n3');
    host.tick();
    host.tick();
    host.heard('n3', [0]);
    host.tick();
    expect(heartbeats).toBe(3);
    expect(told).toEqual(['g0: n2,n3 leaders ', 'g1: n2,n3 leaders n2', 'g0: n3 leaders n3', 'g1: n3 leaders ']);
  });
});
