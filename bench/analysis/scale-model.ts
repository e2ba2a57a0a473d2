// A capacity model of a cluster with G decision groups, fitted to what the
// groups scenario (bench/scenarios/groups.ts) measured on one machine, and
// its prediction for other shapes: N machines of C cores, one node each.
//
// Per committed transaction, the model counts:
//   - CPU on the leader of the transaction's group: leaderBaseMs of its own
//     (client and participant calls, the engine, its own persist) and
//     perFollowerMs for each follower it replicates to;
//   - CPU on each follower: perFollowerMs (receive, persist, acknowledge);
//   - fsync batches on every node (syncsPerTxn: one batch carries many
//     transactions and, with the shared writer, every group's entries of a
//     turn);
//   - bytes of Raft traffic the leader sends each follower, and back.
// Participants and clients are counted (clientMs) but live on machines of
// their own in a deployment; on this one machine they share the cores.
//
// The throughput a shape allows is the least of three ceilings:
//   - CPU: the busiest machine, less what its nodes spend with no load at
//     all (ticks, heartbeats and their answers: a cost per group a second,
//     not per transaction). With leaders spread (group g on node g mod N)
//     that machine leads ceil(G/N) of the G groups, so it serves that share
//     of the transactions as leader and the rest as follower;
//   - disk: each node's fsync rate (1000 / fsyncMs a second) over its syncs
//     per transaction. Batching makes this a floor of the ceiling, not the
//     ceiling: under more load a batch carries more transactions;
//   - network: the busiest machine's bytes out per transaction against the
//     link's bandwidth.
// Latency between machines does not enter a ceiling: it lengthens each
// commit, so holding the throughput needs proportionally more transactions
// in flight (Little's law), which the model assumes the clients supply.
//
// Pure: no I/O, no clock. Tests in test/unit/scale-model.test.ts. Its
// parameters and predictions are part of the results file's `groups` key,
// so their shapes are declared with it (bench/scenarios/groups.ts).

import type { Prediction, ScaleParams } from '../scenarios/groups.ts';

export type { Prediction, ScaleParams };

/** One measured point of the groups scenario, reduced to what the fit reads. */
export interface FitPoint {
  nodes: number;
  groups: number;
  /** Committed transactions a second in the window. */
  tps: number;
  /** Each node's CPU ms per committed transaction, with how many groups it led in the window. */
  byNode: { node: string; groupsLed: number; cpuMsPerTxn: number; raftBytesPerTxn: number }[];
  /** Participants and load generators together, CPU ms per committed transaction. */
  clientMsPerTxn: number;
  /** With no load, one node's CPU ms a second (the nodes' mean): ticks, heartbeats and their answers, per group. */
  idleMsPerSecPerNode: number;
  /** Every node's segment fsyncs (one per writer batch) over committed transactions, summed over the nodes. */
  syncsPerTxn: number;
  /** Raft messages sent by every node per committed transaction. */
  raftMessagesPerTxn: number;
  /** PREPARE/DECISION requests and votes/acks per committed transaction. */
  participantMessagesPerTxn: number;
}

export interface Shape {
  machines: number;
  coresPerMachine: number;
  groups: number;
  /** One fdatasync on the node's disk, ms. */
  fsyncMs: number;
  /** Bytes a second one machine can send. */
  networkBytesPerSec: number;
  /**
   * Every node, participant and client on one machine of coresPerMachine
   * cores (this benchmark's machine): the CPU ceiling is the sum of all of
   * them, wherever the leaders are.
   */
  oneMachine?: boolean;
}

const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);

/**
 * Fits the parameters to points measured at one group (at G = 1 one node is
 * the leader of every transaction, so leader and follower costs separate).
 * With several cluster sizes, perFollowerMs is the followers' mean and
 * leaderBaseMs the mean of (leader − (N−1) · perFollowerMs): the leader's
 * work per follower is taken to equal a follower's (encode and send, against
 * receive and persist), the one assumption a single machine cannot check.
 */
export function fitParams(points: FitPoint[]): ScaleParams {
  const ones = points.filter((p) => p.groups === 1 && p.tps > 0);
  if (ones.length === 0) throw new Error('fitParams needs at least one point at G = 1');
  for (const p of ones) {
    const leaders = p.byNode.filter((n) => n.groupsLed > 0);
    if (leaders.length !== 1 || p.byNode.length !== p.nodes)
      throw new Error(
        `the point of ${p.nodes} nodes at G = 1 needs one leader and ${p.nodes} nodes (has ${leaders.length} and ${p.byNode.length})`,
      );
  }
  // Each node's idle work a second, spread over the point's transactions, is not a cost of a transaction.
  const marginal = (p: FitPoint, cpuMsPerTxn: number): number => cpuMsPerTxn - p.idleMsPerSecPerNode / p.tps;
  const followers = ones.flatMap((p) =>
    p.byNode.filter((n) => n.groupsLed === 0).map((n) => ({ ...n, cpuMsPerTxn: marginal(p, n.cpuMsPerTxn) })),
  );
  const perFollowerMs = mean(followers.map((n) => n.cpuMsPerTxn));
  const leaderOf = (p: FitPoint): FitPoint['byNode'][number] => p.byNode.find((n) => n.groupsLed > 0)!;
  const leaderBaseMs = mean(ones.map((p) => marginal(p, leaderOf(p).cpuMsPerTxn) - (p.nodes - 1) * perFollowerMs));
  const idle = fitIdle(points);
  return {
    idleMsPerSecBase: idle.base,
    idleMsPerSecPerGroup: idle.perGroup,
    leaderBaseMs,
    perFollowerMs,
    clientMs: mean(ones.map((p) => p.clientMsPerTxn)),
    syncsPerTxnPerNode: mean(ones.map((p) => p.syncsPerTxn / p.nodes)),
    leaderBytesPerFollower: mean(ones.map((p) => leaderOf(p).raftBytesPerTxn / (p.nodes - 1))),
    followerBytes: mean(followers.map((n) => n.raftBytesPerTxn)),
    raftMessagesPerTxn: mean(ones.map((p) => p.raftMessagesPerTxn)),
    participantMessagesPerTxn: mean(ones.map((p) => p.participantMessagesPerTxn)),
    fittedOn: ones.map((p) => `${p.nodes}x${p.groups}`),
  };
}

/**
 * A node's idle CPU a second against G: least squares over every point when
 * they hold two or more G; with one G, all of it is taken as per group.
 */
export function fitIdle(points: FitPoint[]): { base: number; perGroup: number } {
  const gs = points.map((p) => p.groups);
  const ys = points.map((p) => p.idleMsPerSecPerNode);
  if (new Set(gs).size < 2) return { base: 0, perGroup: mean(points.map((p) => p.idleMsPerSecPerNode / p.groups)) };
  const gm = mean(gs);
  const ym = mean(ys);
  let sxy = 0;
  let sxx = 0;
  gs.forEach((g, i) => {
    sxy += (g - gm) * (ys[i] - ym);
    sxx += (g - gm) ** 2;
  });
  const perGroup = sxy / sxx;
  return { base: ym - perGroup * gm, perGroup };
}

/** The share of the transactions the busiest machine leads, leaders spread g mod N over N machines. */
export function busiestLeaderShare(machines: number, groups: number): number {
  if (!Number.isInteger(machines) || machines < 1) throw new RangeError(`machines ${machines}: a positive integer`);
  if (!Number.isInteger(groups) || groups < 1) throw new RangeError(`groups ${groups}: a positive integer`);
  return Math.ceil(groups / machines) / groups;
}

/** The model's throughput for a shape, and which ceiling sets it. */
export function predict(p: ScaleParams, s: Shape): Prediction {
  const n = s.machines;
  const share = busiestLeaderShare(n, s.groups);
  const leaderMs = p.leaderBaseMs + (n - 1) * p.perFollowerMs;
  // On one machine every process shares the cores: what a transaction costs in all of them together.
  const cpuMs =
    s.oneMachine === true
      ? leaderMs + (n - 1) * p.perFollowerMs + p.clientMs
      : share * leaderMs + (1 - share) * p.perFollowerMs;
  // Idle work (ticks, heartbeats: per group) takes its share of the cores first.
  const idleNode = p.idleMsPerSecBase + s.groups * p.idleMsPerSecPerGroup;
  const idleMsPerSec = idleNode * (s.oneMachine === true ? n : 1);
  const spareMsPerSec = Math.max(0, s.coresPerMachine * 1000 - idleMsPerSec);
  const cpuTps = cpuMs > 0 ? spareMsPerSec / cpuMs : Number.POSITIVE_INFINITY;
  // One machine holds every node's disk writes on one disk in this benchmark; elsewhere each node has its own.
  const syncsPerTxn = p.syncsPerTxnPerNode * (s.oneMachine === true ? n : 1);
  const diskTps = syncsPerTxn > 0 && s.fsyncMs > 0 ? 1000 / s.fsyncMs / syncsPerTxn : Number.POSITIVE_INFINITY;
  const bytesOut = share * (n - 1) * p.leaderBytesPerFollower + (1 - share) * p.followerBytes;
  const networkTps =
    s.oneMachine === true || bytesOut <= 0 ? Number.POSITIVE_INFINITY : s.networkBytesPerSec / bytesOut;
  const tps = Math.min(cpuTps, diskTps, networkTps);
  const bound = tps === cpuTps ? 'cpu' : tps === diskTps ? 'disk' : 'network';
  return {
    tps,
    bound,
    cpuTps,
    diskTps,
    networkTps,
    busiestLeaderShare: share,
    busiestCpuMsPerTxn: cpuMs,
    idleMsPerSec,
  };
}

/** CPU ms per transaction the model expects at `tps` (idle work spread over the transactions included). */
export function cpuPerTxnAt(x: Prediction, tps: number): number {
  if (!(tps > 0)) throw new RangeError(`tps ${tps}: must be positive`);
  return x.busiestCpuMsPerTxn + x.idleMsPerSec / tps;
}

/**
 * The least G that the model gives the best throughput for N machines: the
 * busiest machine's leader share is least (1/N) once G is a multiple of N,
 * so the search stops at N (more groups than that only add groups to spread).
 */
export function suggestGroups(p: ScaleParams, s: Omit<Shape, 'groups'>): { groups: number; prediction: Prediction } {
  let best = { groups: 1, prediction: predict(p, { ...s, groups: 1 }) };
  for (let g = 2; g <= s.machines; g++) {
    const prediction = predict(p, { ...s, groups: g });
    // A strictly better throughput only: the fewest groups that reach the best.
    if (prediction.tps > best.prediction.tps * (1 + 1e-9)) best = { groups: g, prediction };
  }
  return best;
}

/** (measured − predicted) / predicted, as a signed fraction. */
export function relativeError(measured: number, predicted: number): number {
  if (!(predicted > 0)) throw new RangeError(`predicted ${predicted}: must be positive`);
  return (measured - predicted) / predicted;
}
