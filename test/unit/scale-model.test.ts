// The decision groups capacity model (bench/analysis/scale-model.ts): its
// fit recovers known costs from points made with them, its batching term
// moves CPU per transaction the way smaller batches do, and its ceilings
// on figures small enough to check by hand.
import { describe, expect, it } from 'vitest';
import {
  busiestLeaderShare,
  ceilingOf,
  fitBatchSize,
  fitIdle,
  fitParams,
  idleMsPerSec,
  nodeMsPerTxn,
  nonNegativeLeastSquares,
  oneMachineMsPerTxn,
  oneMachineTps,
  predict,
  relativeError,
  suggestGroups,
  txnsPerBatch,
  type FitPoint,
  type ScaleParams,
} from '../../bench/analysis/scale-model.ts';

/** The costs the synthetic points are made with. */
const TRUE: ScaleParams = {
  idleMsPerSecBase: 5,
  idleMsPerSecPerGroup: 7,
  leaderBaseMs: 0.3,
  perFollowerMs: 0.1,
  leaderBatchMs: 1.2,
  perFollowerBatchMs: 0.4,
  nodeResidual: 0,
  clientMs: 0.2,
  clientBatchMs: 0.5,
  phasesOneGroup: 1,
  phases: 2,
  leaderBytesPerFollower: 200,
  followerBytes: 20,
  raftMessagesPerTxn: 0.5,
  participantMessagesPerTxn: 8,
  fittedOn: [],
};

/** Group g led by node g mod N, as the scenario spreads them. */
const ledBy = (nodes: number, groups: number): number[] =>
  Array.from(
    { length: nodes },
    (_, i) => Array.from({ length: groups }, (_, g) => g % nodes).filter((x) => x === i).length,
  );

/** A window as the scenario would measure it if the cluster cost exactly what `p` says. */
function synthetic(p: ScaleParams, nodes: number, groups: number, clients: number, tps: number): FitPoint {
  const b = 1 / txnsPerBatch(p, clients, groups);
  const idle = idleMsPerSec(p, groups);
  return {
    nodes,
    groups,
    clients,
    tps,
    byNode: ledBy(nodes, groups).map((led, i) => ({
      node: `n${i + 1}`,
      groupsLed: led,
      cpuMsPerTxn: nodeMsPerTxn(p, nodes, groups, led, b) + idle / tps,
      raftBytesPerTxn: (led / groups) * (nodes - 1) * p.leaderBytesPerFollower + (1 - led / groups) * p.followerBytes,
    })),
    clientMsPerTxn: p.clientMs + b * p.clientBatchMs,
    idleMsPerSecPerNode: idle,
    batchesPerTxn: b,
    raftMessagesPerTxn: 0.5,
    participantMessagesPerTxn: 8,
  };
}

/** 3 and 5 nodes at G = 1, 2, 4 and 16, 64, 256 clients, throughput falling with G as measured. */
const GRID = [3, 5].flatMap((nodes) =>
  [1, 2, 4].flatMap((groups) =>
    [16, 64, 256].map((clients) => synthetic(TRUE, nodes, groups, clients, (40 * Math.sqrt(clients) * 4) / groups)),
  ),
);

const COSTS = [
  'leaderBaseMs',
  'perFollowerMs',
  'leaderBatchMs',
  'perFollowerBatchMs',
  'clientMs',
  'clientBatchMs',
  'phasesOneGroup',
  'phases',
  'idleMsPerSecBase',
  'idleMsPerSecPerGroup',
  'leaderBytesPerFollower',
  'followerBytes',
] as const;

const SHAPE = { machines: 9, coresPerMachine: 16, fsyncMs: 0.1, networkBytesPerSec: 1.25e9, latencyMs: 50 };

describe('scale model: the fit', () => {
  it('recovers per-transaction, per-batch, batch-size, idle and byte figures from points made with them', () => {
    const p = fitParams(GRID);
    for (const k of COSTS) expect(p[k], k).toBeCloseTo(TRUE[k], 6);
    expect(p.nodeResidual).toBeCloseTo(0, 9);
    expect(p.fittedOn).toEqual(['3x1', '3x2', '3x4', '5x1', '5x2', '5x4']);
  });

  it('recovers them from one cluster size alone (the fit on 3 nodes that predicts 5)', () => {
    const p = fitParams(GRID.filter((x) => x.nodes === 3));
    for (const k of COSTS) expect(p[k], k).toBeCloseTo(TRUE[k], 6);
    // And then predicts the 5-node windows exactly.
    for (const w of GRID.filter((x) => x.nodes === 5)) {
      const c = { nodes: 5, groups: w.groups, groupsLed: w.byNode.map((n) => n.groupsLed), clients: w.clients };
      const measured = w.byNode.reduce((t, n) => t + n.cpuMsPerTxn, 0) + w.clientMsPerTxn;
      expect(oneMachineMsPerTxn(p, c, w.tps)).toBeCloseTo(measured, 6);
    }
  });

  it('needs two batch sizes to tell a batch from a transaction', () => {
    const one = GRID.filter((x) => x.nodes === 3 && x.groups === 1 && x.clients === 64);
    expect(() => fitParams([...one, ...one])).toThrow(/two batch sizes/);
  });

  it('keeps every cost non-negative: a column that would fit below zero is held at zero', () => {
    // y = 2·a − 1·b exactly; with b ≥ 0 the best is b = 0 and a fitted alone.
    const xs = [
      [1, 1],
      [2, 1],
      [3, 2],
    ];
    const y = xs.map(([a, b]) => 2 * a! - b!);
    const free = nonNegativeLeastSquares(xs, y);
    expect(free.x[1]).toBe(0);
    expect(free.x[0]).toBeCloseTo((1 * 1 + 2 * 3 + 3 * 4) / (1 + 4 + 9));
    // Without the constraint it would have been exact: a = 2, b = 1 is found when the truth is non-negative.
    const y2 = xs.map(([a, b]) => 2 * a! + b!);
    expect(nonNegativeLeastSquares(xs, y2).x.map((v) => Math.round(v * 1e9) / 1e9)).toEqual([2, 1]);
  });

  it('fits the phases a transaction waits through from the batch sizes, at G = 1 and G > 1 apart', () => {
    expect(fitBatchSize(GRID)).toEqual({ phasesOneGroup: expect.closeTo(1, 9), phases: expect.closeTo(2, 9) });
    // One class alone gives both.
    const many = fitBatchSize(GRID.filter((x) => x.groups > 1));
    expect(many.phasesOneGroup).toBeCloseTo(2, 9);
  });

  it('fits idle work as a base and a cost per group over several G, all per group with one G', () => {
    const at = (groups: number, idle: number): FitPoint => ({ ...GRID[0]!, groups, idleMsPerSecPerNode: idle });
    const f = fitIdle([at(1, 30), at(2, 50), at(4, 90)]);
    expect(f.base).toBeCloseTo(10);
    expect(f.perGroup).toBeCloseTo(20);
    expect(fitIdle([at(2, 50), at(2, 50)])).toEqual({ base: 0, perGroup: 25 });
  });
});

describe('scale model: the batching term', () => {
  it("a batch carries the group's transactions in flight over its phases, and at least one transaction's phase", () => {
    // 64 in flight over 4 groups is 16 a group, in 2 phases: 8 a batch; at G = 1, 64 in 1 phase.
    expect(txnsPerBatch(TRUE, 64, 4)).toBeCloseTo(8);
    expect(txnsPerBatch(TRUE, 64, 1)).toBeCloseTo(64);
    expect(txnsPerBatch(TRUE, 2, 4)).toBeCloseTo(0.5);
  });

  it('makes CPU per transaction fall as the load rises (more in flight, more a second), at every G', () => {
    for (const groups of [1, 2, 4]) {
      const at = (clients: number, tps: number): number =>
        oneMachineMsPerTxn(TRUE, { nodes: 3, groups, groupsLed: ledBy(3, groups), clients }, tps);
      const costs = [
        [8, 50],
        [16, 200],
        [64, 800],
        [256, 3200],
      ].map(([c, t]) => at(c!, t!));
      for (let i = 1; i < costs.length; i++) expect(costs[i]!).toBeLessThan(costs[i - 1]!);
    }
  });

  it('makes CPU per transaction rise with G at the same load, and with it the per-batch share', () => {
    const at = (groups: number, params = TRUE): number =>
      oneMachineMsPerTxn(params, { nodes: 3, groups, groupsLed: ledBy(3, groups), clients: 64 }, 400);
    expect(at(2)).toBeGreaterThan(at(1));
    expect(at(4)).toBeGreaterThan(at(2));
    // Without per-batch costs and idle work, G changes nothing on one machine.
    const flat = {
      ...TRUE,
      leaderBatchMs: 0,
      perFollowerBatchMs: 0,
      clientBatchMs: 0,
      idleMsPerSecBase: 0,
      idleMsPerSecPerGroup: 0,
    };
    expect(at(4, flat)).toBeCloseTo(at(1, flat));
  });

  it("at G = 1 charges the leader its own and each follower's share, and a follower its own", () => {
    const b = 0.1;
    expect(nodeMsPerTxn(TRUE, 3, 1, 1, b)).toBeCloseTo(0.3 + 2 * 0.1 + b * (1.2 + 2 * 0.4));
    expect(nodeMsPerTxn(TRUE, 3, 1, 0, b)).toBeCloseTo(0.1 + b * 0.4);
    // Leading one group of two: half as leader, half as follower.
    expect(nodeMsPerTxn(TRUE, 3, 2, 1, b)).toBeCloseTo(
      (nodeMsPerTxn(TRUE, 3, 1, 1, b) + nodeMsPerTxn(TRUE, 3, 1, 0, b)) / 2,
    );
  });
});

describe('scale model: ceilings and prediction', () => {
  it('finds where a rising load meets the capacity, and infinity where it never does', () => {
    expect(ceilingOf((t) => 2 * t, 1000)).toBeCloseTo(500, 6);
    // t + 100 t / (1 + t) = 1000: t² − 899 t − 1000 = 0.
    expect(ceilingOf((t) => t * (1 + 100 / (1 + t)), 1000)).toBeCloseTo((899 + Math.sqrt(899 ** 2 + 4000)) / 2, 3);
    expect(ceilingOf(() => 5, 1000)).toBe(Number.POSITIVE_INFINITY);
    expect(ceilingOf((t) => t, 0)).toBe(0);
  });

  it('on one machine the throughput spends exactly the CPU the processes got', () => {
    const c = { nodes: 3, groups: 4, groupsLed: ledBy(3, 4), clients: 64 };
    for (const msPerSec of [500, 2000]) {
      const tps = oneMachineTps(TRUE, c, msPerSec);
      expect(tps * oneMachineMsPerTxn(TRUE, c, tps)).toBeCloseTo(msPerSec, 3);
    }
    expect(oneMachineTps(TRUE, c, 500)).toBeLessThan(oneMachineTps(TRUE, c, 2000));
  });

  it('puts ceil(G/N) of G groups on the busiest machine', () => {
    expect(busiestLeaderShare(3, 1)).toBe(1);
    expect(busiestLeaderShare(3, 2)).toBe(0.5);
    expect(busiestLeaderShare(3, 4)).toBe(0.5);
    expect(busiestLeaderShare(9, 9)).toBeCloseTo(1 / 9);
    expect(() => busiestLeaderShare(0, 1)).toThrow(RangeError);
    expect(() => busiestLeaderShare(3, 1.5)).toThrow(RangeError);
  });

  it('on N machines the busiest one bounds the CPU, at the batch size its own load gives', () => {
    const noBatch = { ...TRUE, leaderBatchMs: 0, perFollowerBatchMs: 0, idleMsPerSecBase: 0, idleMsPerSecPerGroup: 0 };
    const g1 = predict(noBatch, { ...SHAPE, machines: 3, groups: 1 });
    // The leader machine: 0.3 + 2 × 0.1 = 0.5 ms a transaction on 16 cores → 32,000 tx/s.
    expect(g1.busiestCpuMsPerTxn).toBeCloseTo(0.5);
    expect(g1.cpuTps).toBeCloseTo(32_000, 0);
    const g3 = predict(noBatch, { ...SHAPE, machines: 3, groups: 3 });
    // A third as leader, two thirds as follower: 0.5/3 + 0.2/3 ms.
    expect(g3.cpuTps).toBeCloseTo(16_000 / (0.5 / 3 + (2 / 3) * 0.1), 0);
    // With per-batch costs, the CPU ceiling is where the batch cost at that load leaves the cores full.
    const x = predict(TRUE, { ...SHAPE, groups: 9 });
    const b = 1 / x.txnsPerBatch;
    // The clients keep tps × 50 ms in flight: a ninth of them a group, in 2 phases.
    expect(x.txnsPerBatch).toBeCloseTo((x.cpuTps * 0.05) / 9 / 2, 6);
    expect(x.inFlight).toBeCloseTo(x.cpuTps * 0.05, 6);
    expect(x.cpuTps * nodeMsPerTxn(TRUE, 9, 9, 1, b)).toBeCloseTo(16_000 - idleMsPerSec(TRUE, 9), 2);
  });

  it('a node keeps one core busy: its event loop, not the machine, bounds the CPU ceiling', () => {
    const all = predict(TRUE, { ...SHAPE, groups: 9 });
    const one = predict(TRUE, { ...SHAPE, groups: 9, coresPerNode: 1 });
    expect(one.usableCores).toBe(1);
    expect(all.usableCores).toBe(16);
    expect(one.cpuTps).toBeLessThan(all.cpuTps / 10);
  });

  it('clients that accept less latency keep fewer in flight: smaller batches and a lower ceiling', () => {
    const here = predict(TRUE, { ...SHAPE, groups: 9 });
    const short = predict(TRUE, { ...SHAPE, groups: 9, latencyMs: 5 });
    expect(short.txnsPerBatch).toBeLessThan(here.txnsPerBatch);
    expect(short.cpuTps).toBeLessThan(here.cpuTps);
    expect(short.latencyMs).toBe(5);
  });

  it('names the ceiling that binds: a slow disk with one fsync per batch, a thin link', () => {
    // Next to nothing in flight: every transaction's 2 phases are batches of their own, 2 fsyncs of 10 ms.
    const slowDisk = predict(TRUE, { ...SHAPE, groups: 9, fsyncMs: 10, latencyMs: 0.001 });
    expect(slowDisk.bound).toBe('disk');
    expect(slowDisk.tps).toBeCloseTo(50, 3);
    const thinLink = predict(TRUE, { ...SHAPE, machines: 3, groups: 1, networkBytesPerSec: 1e5 });
    expect(thinLink.bound).toBe('network');
    expect(thinLink.tps).toBeCloseTo(1e5 / 400);
  });

  it('suggests G = N when batches cost nothing, and fewer groups when small batches cost more than spreading saves', () => {
    const noBatch = { ...TRUE, leaderBatchMs: 0, perFollowerBatchMs: 0, clientBatchMs: 0 };
    expect(suggestGroups(noBatch, SHAPE).groups).toBe(9);
    // At 50 ms a group makes 20 × 2 batches a second whatever the load: at 2 ms per follower each, nine groups'
    // batches would take more than the core.
    const dearBatches = { ...TRUE, leaderBatchMs: 2, perFollowerBatchMs: 2 };
    const shape = { ...SHAPE, coresPerNode: 1 };
    const s = suggestGroups(dearBatches, shape);
    expect(s.groups).toBeLessThan(9);
    expect(s.prediction.tps).toBeGreaterThan(predict(dearBatches, { ...shape, groups: 9 }).tps);
  });

  it('gives the signed relative error', () => {
    expect(relativeError(90, 100)).toBeCloseTo(-0.1);
    expect(relativeError(110, 100)).toBeCloseTo(0.1);
    expect(() => relativeError(1, 0)).toThrow(RangeError);
  });
});
