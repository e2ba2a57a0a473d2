// The decision groups capacity model (bench/analysis/scale-model.ts): its
// fit and its arithmetic, on figures small enough to check by hand.
import { describe, expect, it } from 'vitest';
import {
  busiestLeaderShare,
  cpuPerTxnAt,
  fitIdle,
  fitParams,
  predict,
  relativeError,
  suggestGroups,
  type FitPoint,
  type ScaleParams,
} from '../../bench/analysis/scale-model.ts';

/** Three nodes at G = 1: the leader 4 ms (1 of its own + 2 × 1.5 per follower), each follower 1.5 ms. */
const THREE: FitPoint = {
  nodes: 3,
  groups: 1,
  tps: 200,
  byNode: [
    { node: 'n1', groupsLed: 1, cpuMsPerTxn: 4, raftBytesPerTxn: 600 },
    { node: 'n2', groupsLed: 0, cpuMsPerTxn: 1.5, raftBytesPerTxn: 50 },
    { node: 'n3', groupsLed: 0, cpuMsPerTxn: 1.5, raftBytesPerTxn: 50 },
  ],
  clientMsPerTxn: 2,
  idleMsPerSecPerNode: 0,
  syncsPerTxn: 0.3,
  raftMessagesPerTxn: 0.5,
  participantMessagesPerTxn: 8,
};

const PARAMS: ScaleParams = {
  idleMsPerSecBase: 0,
  idleMsPerSecPerGroup: 0,
  leaderBaseMs: 1,
  perFollowerMs: 1.5,
  clientMs: 2,
  syncsPerTxnPerNode: 0.1,
  leaderBytesPerFollower: 300,
  followerBytes: 50,
  raftMessagesPerTxn: 0.5,
  participantMessagesPerTxn: 8,
  fittedOn: ['3x1'],
};

describe('scale model', () => {
  it('fits leader, per-follower and per-node figures from a G = 1 point', () => {
    const p = fitParams([THREE]);
    expect(p.perFollowerMs).toBeCloseTo(1.5);
    expect(p.leaderBaseMs).toBeCloseTo(1);
    expect(p.clientMs).toBeCloseTo(2);
    expect(p.syncsPerTxnPerNode).toBeCloseTo(0.1);
    expect(p.leaderBytesPerFollower).toBeCloseTo(300);
    expect(p.followerBytes).toBeCloseTo(50);
    expect(p.fittedOn).toEqual(['3x1']);
  });

  it('fits only points at G = 1 and refuses a point without exactly one leader', () => {
    const g2: FitPoint = { ...THREE, groups: 2, byNode: THREE.byNode.map((n) => ({ ...n, cpuMsPerTxn: 99 })) };
    expect(fitParams([THREE, g2]).perFollowerMs).toBeCloseTo(1.5);
    expect(() => fitParams([g2])).toThrow(/at least one point at G = 1/);
    const twoLeaders = { ...THREE, byNode: THREE.byNode.map((n) => ({ ...n, groupsLed: 1 })) };
    expect(() => fitParams([twoLeaders])).toThrow(/one leader/);
  });

  it('averages the leader base over cluster sizes with the per-follower cost removed', () => {
    const five: FitPoint = {
      ...THREE,
      nodes: 5,
      byNode: [
        { node: 'n1', groupsLed: 1, cpuMsPerTxn: 1.2 + 4 * 1.5, raftBytesPerTxn: 1200 },
        ...['n2', 'n3', 'n4', 'n5'].map((node) => ({ node, groupsLed: 0, cpuMsPerTxn: 1.5, raftBytesPerTxn: 50 })),
      ],
    };
    const p = fitParams([THREE, five]);
    expect(p.perFollowerMs).toBeCloseTo(1.5);
    expect(p.leaderBaseMs).toBeCloseTo(1.1);
  });

  it('leaves the idle work a second out of the cost of a transaction', () => {
    // 100 ms a second per node at 200 tx/s is 0.5 ms of each node's figure.
    const busy: FitPoint = {
      ...THREE,
      idleMsPerSecPerNode: 100,
      byNode: THREE.byNode.map((n) => ({ ...n, cpuMsPerTxn: n.cpuMsPerTxn + 0.5 })),
    };
    const p = fitParams([busy]);
    expect(p.perFollowerMs).toBeCloseTo(1.5);
    expect(p.leaderBaseMs).toBeCloseTo(1);
    // One G only: all of it per group.
    expect(p.idleMsPerSecBase).toBe(0);
    expect(p.idleMsPerSecPerGroup).toBeCloseTo(100);
  });

  it('fits idle work as a base and a cost per group over several G', () => {
    const at = (groups: number, idle: number): FitPoint => ({ ...THREE, groups, idleMsPerSecPerNode: idle });
    const f = fitIdle([at(1, 30), at(2, 50), at(4, 90)]);
    expect(f.base).toBeCloseTo(10);
    expect(f.perGroup).toBeCloseTo(20);
  });

  it('takes the idle work off the cores before the transactions', () => {
    const idle = { ...PARAMS, idleMsPerSecBase: 100, idleMsPerSecPerGroup: 50 };
    const x = predict(idle, {
      machines: 3,
      coresPerMachine: 2,
      groups: 2,
      fsyncMs: 0.001,
      networkBytesPerSec: 1,
      oneMachine: true,
    });
    // Three nodes × (100 + 2 × 50) = 600 ms a second idle; 1400 left at 9 ms a transaction.
    expect(x.idleMsPerSec).toBeCloseTo(600);
    expect(x.cpuTps).toBeCloseTo(1400 / 9);
    // At 100 tx/s each transaction carries 6 ms of the idle work.
    expect(cpuPerTxnAt(x, 100)).toBeCloseTo(15);
    expect(() => cpuPerTxnAt(x, 0)).toThrow(RangeError);
  });

  it('puts ceil(G/N) of G groups on the busiest machine', () => {
    expect(busiestLeaderShare(3, 1)).toBe(1);
    expect(busiestLeaderShare(3, 2)).toBe(0.5);
    expect(busiestLeaderShare(3, 3)).toBeCloseTo(1 / 3);
    expect(busiestLeaderShare(3, 4)).toBe(0.5);
    expect(busiestLeaderShare(9, 9)).toBeCloseTo(1 / 9);
    expect(() => busiestLeaderShare(0, 1)).toThrow(RangeError);
    expect(() => busiestLeaderShare(3, 1.5)).toThrow(RangeError);
  });

  it('on one machine charges every process to the same cores, whatever G is', () => {
    // 1 + 2 × 1.5 (leader) + 2 × 1.5 (followers) + 2 (clients) = 9 ms on 2 cores: 222 tx/s.
    for (const groups of [1, 2, 4]) {
      const x = predict(PARAMS, {
        machines: 3,
        coresPerMachine: 2,
        groups,
        fsyncMs: 1,
        networkBytesPerSec: 1,
        oneMachine: true,
      });
      expect(x.busiestCpuMsPerTxn).toBeCloseTo(9);
      expect(x.cpuTps).toBeCloseTo(2000 / 9);
      expect(x.bound).toBe('cpu');
      // One disk holds three nodes' syncs: 0.3 a transaction at 1 ms each.
      expect(x.diskTps).toBeCloseTo(1000 / 0.3);
      expect(x.networkTps).toBe(Number.POSITIVE_INFINITY);
    }
  });

  it('on N machines is bound by the busiest machine, which spreading relieves', () => {
    const shape = { machines: 3, coresPerMachine: 16, fsyncMs: 0.1, networkBytesPerSec: 1.25e9 };
    const g1 = predict(PARAMS, { ...shape, groups: 1 });
    // The leader machine: 1 + 2 × 1.5 = 4 ms a transaction; 16 cores → 4000 tx/s.
    expect(g1.busiestCpuMsPerTxn).toBeCloseTo(4);
    expect(g1.cpuTps).toBeCloseTo(4000);
    const g3 = predict(PARAMS, { ...shape, groups: 3 });
    // A third as leader, two thirds as follower: 4/3 + 1 = 2.333 ms → 6857 tx/s.
    expect(g3.busiestCpuMsPerTxn).toBeCloseTo(4 / 3 + 1);
    expect(g3.cpuTps).toBeCloseTo(16000 / (4 / 3 + 1));
    // Disk: 0.1 syncs a transaction per node at 0.1 ms each → 100,000 tx/s.
    expect(g3.diskTps).toBeCloseTo(100_000);
    // Network at G = 3: a third × 2 × 300 + two thirds × 50 bytes out a transaction.
    expect(g3.networkTps).toBeCloseTo(1.25e9 / (200 + 100 / 3));
    expect(g3.tps).toBe(g3.cpuTps);
  });

  it('names the ceiling that binds', () => {
    const slowDisk = predict(PARAMS, {
      machines: 3,
      coresPerMachine: 16,
      groups: 3,
      fsyncMs: 10,
      networkBytesPerSec: 1.25e9,
    });
    expect(slowDisk.bound).toBe('disk');
    expect(slowDisk.tps).toBeCloseTo(1000);
    const thinLink = predict(PARAMS, {
      machines: 3,
      coresPerMachine: 16,
      groups: 1,
      fsyncMs: 0.1,
      networkBytesPerSec: 1e5,
    });
    expect(thinLink.bound).toBe('network');
    expect(thinLink.tps).toBeCloseTo(1e5 / 600);
  });

  it('suggests the fewest groups that reach the best throughput', () => {
    const shape = { machines: 9, coresPerMachine: 16, fsyncMs: 0.1, networkBytesPerSec: 1.25e9 };
    expect(suggestGroups(PARAMS, shape).groups).toBe(9);
    // With the disk binding at every G, more groups do not help: one it is.
    expect(suggestGroups(PARAMS, { ...shape, fsyncMs: 100 }).groups).toBe(1);
  });

  it('gives the signed relative error', () => {
    expect(relativeError(90, 100)).toBeCloseTo(-0.1);
    expect(relativeError(110, 100)).toBeCloseTo(0.1);
    expect(() => relativeError(1, 0)).toThrow(RangeError);
  });
});
