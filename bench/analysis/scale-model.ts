// A capacity model of a cluster with G decision groups, fitted to what the
// groups scenario (bench/scenarios/groups.ts) measured on one machine, and
// its prediction for other shapes: N machines of C cores, one node each.
//
// Each group batches on its own: a leader sends what its group proposed in
// a turn as one append round, every node persists a group's entries of a
// turn as one batch, and the leader sends a participant the PREPAREs and
// DECISIONs of a turn as one Exchange batch. So the CPU of a transaction is
// a cost of its own plus its share of its group's batches:
//   - on the leader of its group: leaderBaseMs + (N−1) · perFollowerMs,
//     plus b · (leaderBatchMs + (N−1) · perFollowerBatchMs);
//   - on each follower: perFollowerMs + b · perFollowerBatchMs;
//   - participants and clients: clientMs + b · clientBatchMs;
// where b is a node's group batches per transaction (its synced persists of
// any group over the committed transactions) and 1/b the transactions a
// batch carries. That is the batch-size model: a transaction waits through
// a few of its group's batches (its phases: its entries persisted, the
// commit index carried), and each batch carries the group's transactions in
// flight in that phase,
//   transactions per batch = (transactions in flight / G) / phases,
// and with fewer in flight than groups, one transaction's phase. Closed-loop
// clients keep `clients` in flight; elsewhere Little's law gives
// tps × latency. With the same transactions in flight a group's batches
// carry 1/G as many, so the per-batch costs grow with G and shrink with
// load. G = 1 and G > 1 persist differently (the node's own store, the
// shared writer), so each has its phases. Every node also spends idle CPU a
// second: ticks, heartbeats and their answers, a base plus a cost per group.
//
// Several client counts per G give different batch sizes: that is what
// separates the per-batch costs from the per-transaction ones in the fit
// (least squares on relative errors, every cost non-negative). At G = 1 one node leads every
// transaction and the others follow; at G > 1 each node leads its share
// (groups led / G). The leader's work per follower (encode and send) is
// taken to equal a follower's (receive, persist, acknowledge): the one
// assumption a single machine cannot check.
//
// The throughput a shape allows is the least of three ceilings, each found
// where the load it needs meets the capacity (batches grow with the load,
// so each is a fixed point):
//   - CPU: the busiest machine, less its idle work. With leaders spread
//     (group g on node g mod N) it leads ceil(G/N) of the G groups. A node
//     is one Node.js process: one event loop, so it keeps about one core
//     busy whatever the machine has (coresPerNode);
//   - disk: each node's fsyncs, one per group batch (the shared writer
//     merges some: a floor of the ceiling);
//   - network: the busiest machine's bytes out per transaction against the
//     link's bandwidth.
// Latency does not enter a ceiling: the clients are taken to accept a
// latency (latencyMs) and to keep tps × latency in flight (Little's law),
// which sets the batch size; latency between machines lengthens each commit,
// so the same throughput needs that many more in flight.
//
// Pure: no I/O, no clock. Tests in test/unit/scale-model.test.ts. Its
// parameters and predictions are part of the results file's `groups` key,
// so their shapes are declared with it (bench/scenarios/groups.ts).

import type { Prediction, ScaleParams } from '../scenarios/groups.ts';

export type { Prediction, ScaleParams };

/** One loaded window of the groups scenario, reduced to what the fit reads. */
export interface FitPoint {
  nodes: number;
  groups: number;
  clients: number;
  /** Committed transactions a second in the window. */
  tps: number;
  /** Each node's CPU ms per committed transaction, with how many groups it led in the window. */
  byNode: { node: string; groupsLed: number; cpuMsPerTxn: number; raftBytesPerTxn: number }[];
  /** Participants and load generators together, CPU ms per committed transaction. */
  clientMsPerTxn: number;
  /** With no load, one node's CPU ms a second (the nodes' mean): ticks, heartbeats and their answers, per group. */
  idleMsPerSecPerNode: number;
  /** A node's group batches (synced persists of one group) per committed transaction, the nodes' mean. */
  batchesPerTxn: number;
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
  /** The cores one node process keeps busy (its event loop: about one); the machine's cores when absent. */
  coresPerNode?: number;
  /** The commit latency the clients accept, ms: they keep tps × latencyMs / 1000 transactions in flight. */
  latencyMs: number;
}

const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);

/** Solves the square system a · x = b by Gaussian elimination; null when it is singular. */
function solve(a: number[][], b: number[]): number[] | null {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  const scale = Math.max(1e-300, ...m.flat().map(Math.abs));
  for (let c = 0; c < n; c++) {
    let pivot = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[pivot]![c]!)) pivot = r;
    if (Math.abs(m[pivot]![c]!) < scale * 1e-12) return null;
    [m[c], m[pivot]] = [m[pivot]!, m[c]!];
    const top = m[c];
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const row = m[r];
      const f = row[c] / top[c];
      for (let k = c; k <= n; k++) row[k] -= f * top[k];
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}

/**
 * Least squares with every coefficient non-negative: x minimising |X x − y|² with x ≥ 0. Exact for the few
 * columns a model here has (every set of columns is tried, the best feasible kept). Rows are weighted by `w`.
 */
export function nonNegativeLeastSquares(xs: number[][], y: number[], w?: number[]): { x: number[]; rss: number } {
  const cols = xs[0]?.length ?? 0;
  if (cols === 0 || cols > 8) throw new RangeError(`nonNegativeLeastSquares: ${cols} columns (1 to 8)`);
  if (xs.length !== y.length) throw new RangeError(`nonNegativeLeastSquares: ${xs.length} rows, ${y.length} values`);
  const weight = (i: number): number => (w === undefined ? 1 : w[i]!);
  const rssOf = (x: number[]): number =>
    xs.reduce((t, row, i) => t + weight(i) * (row.reduce((s, v, j) => s + v * x[j]!, 0) - y[i]!) ** 2, 0);
  let best = { x: new Array<number>(cols).fill(0), rss: rssOf(new Array<number>(cols).fill(0)) };
  for (let mask = 1; mask < 1 << cols; mask++) {
    const free = [...Array(cols).keys()].filter((j) => (mask >> j) & 1);
    const ata = free.map((j) => free.map((k) => xs.reduce((t, row, i) => t + weight(i) * row[j]! * row[k]!, 0)));
    const aty = free.map((j) => xs.reduce((t, row, i) => t + weight(i) * row[j]! * y[i]!, 0));
    const sol = solve(ata, aty);
    if (sol === null || sol.some((v) => v < 0)) continue;
    const x = new Array<number>(cols).fill(0);
    free.forEach((j, i) => {
      x[j] = sol[i]!;
    });
    const rss = rssOf(x);
    if (rss < best.rss - 1e-15) best = { x, rss };
  }
  return best;
}

/** Of the node's transactions, the share it leads, and the followers it then replicates to as follower-equivalents. */
function roleOf(nodes: number, groups: number, groupsLed: number): { lead: number; follow: number } {
  const lead = groupsLed / groups;
  return { lead, follow: lead * (nodes - 1) + (1 - lead) };
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
    sxy += (g - gm) * (ys[i]! - ym);
    sxx += (g - gm) ** 2;
  });
  const perGroup = sxy / sxx;
  return { base: ym - perGroup * gm, perGroup };
}

/**
 * The batch-size model: transactions per batch k = 1/b against the transactions in flight per group x
 * (clients / G), k = x / phases, with G = 1 and G > 1 apart (each takes the other's when it has no window).
 * Fitted through the origin with each window weighted by b² (an error in k moves the CPU by its per-batch cost
 * times b², so the small batches weigh as the CPU does).
 */
export function fitBatchSize(points: FitPoint[]): { phasesOneGroup: number; phases: number } {
  const use = points.filter((p) => p.clients > 0 && p.batchesPerTxn > 0);
  if (use.length === 0) throw new Error('fitBatchSize needs a window with batches measured');
  const phasesOf = (ws: FitPoint[]): number | null => {
    let sxk = 0;
    let sxx = 0;
    for (const w of ws) {
      const x = w.clients / w.groups;
      const weight = w.batchesPerTxn ** 4;
      sxk += weight * x * (1 / w.batchesPerTxn);
      sxx += weight * x * x;
    }
    return ws.length > 0 && sxk > 0 ? sxx / sxk : null;
  };
  const one = phasesOf(use.filter((p) => p.groups === 1));
  const many = phasesOf(use.filter((p) => p.groups > 1));
  return {
    phasesOneGroup: one ?? many!,
    phases: many ?? one!,
  };
}

/**
 * Transactions per group batch the model expects with `inFlight` transactions in flight over `groups` groups: the
 * group's share over its phases, and no less than one transaction's phase when a group has fewer than one in flight.
 */
export function txnsPerBatch(p: ScaleParams, inFlight: number, groups: number): number {
  const phases = groups === 1 ? p.phasesOneGroup : p.phases;
  return Math.max(1, inFlight / groups) / phases;
}

/** CPU ms per transaction on a node of `nodes` that leads `groupsLed` of `groups` groups, idle work left out. */
export function nodeMsPerTxn(p: ScaleParams, nodes: number, groups: number, groupsLed: number, b: number): number {
  const r = roleOf(nodes, groups, groupsLed);
  return r.lead * (p.leaderBaseMs + b * p.leaderBatchMs) + r.follow * (p.perFollowerMs + b * p.perFollowerBatchMs);
}

/**
 * Fits the parameters to the loaded windows (every G, every client count):
 * each node's CPU per transaction less its idle work a second over the
 * window's transactions, against its role and the measured batches per
 * transaction, weighted to count relative errors; the participants' and
 * clients' likewise; the batch size against the transactions in flight per
 * group; idle CPU against G; bytes against the role.
 */
export function fitParams(points: FitPoint[]): ScaleParams {
  const use = points.filter((p) => p.tps > 0);
  const rows = use.flatMap((p) =>
    p.byNode.map((n) => {
      const r = roleOf(p.nodes, p.groups, n.groupsLed);
      const b = p.batchesPerTxn;
      const y = n.cpuMsPerTxn - p.idleMsPerSecPerNode / p.tps;
      // Relative errors count: a window of 40 tx/s at 8 ms each must not outweigh one of 7,000 at 0.1 ms.
      return { x: [r.lead, r.follow, r.lead * b, r.follow * b], y, w: 1 / Math.max(1e-6, n.cpuMsPerTxn) ** 2 };
    }),
  );
  if (rows.length < 4 || new Set(use.map((p) => p.batchesPerTxn)).size < 2)
    throw new Error(
      `fitParams needs windows with at least two batch sizes and four node figures (has ${use.length} windows)`,
    );
  const cpu = nonNegativeLeastSquares(
    rows.map((r) => r.x),
    rows.map((r) => r.y),
    rows.map((r) => r.w),
  );
  const client = nonNegativeLeastSquares(
    use.map((p) => [1, p.batchesPerTxn]),
    use.map((p) => p.clientMsPerTxn),
    use.map((p) => 1 / Math.max(1e-6, p.clientMsPerTxn) ** 2),
  );
  // A node's bytes out per transaction: the leader's to each follower for its share, a follower's answers for the rest.
  const bytesFit = nonNegativeLeastSquares(
    use.flatMap((p) => p.byNode.map((n) => [(n.groupsLed / p.groups) * (p.nodes - 1), 1 - n.groupsLed / p.groups])),
    use.flatMap((p) => p.byNode.map((n) => n.raftBytesPerTxn)),
  );
  const batch = fitBatchSize(use);
  const idle = fitIdle(use);
  const ones = use.filter((p) => p.groups === 1);
  const described = ones.length > 0 ? ones : use;
  const residual = Math.sqrt(cpu.rss / rows.length);
  return {
    idleMsPerSecBase: idle.base,
    idleMsPerSecPerGroup: idle.perGroup,
    leaderBaseMs: cpu.x[0]!,
    perFollowerMs: cpu.x[1]!,
    leaderBatchMs: cpu.x[2]!,
    perFollowerBatchMs: cpu.x[3]!,
    nodeResidual: residual,
    clientMs: client.x[0]!,
    clientBatchMs: client.x[1]!,
    phasesOneGroup: batch.phasesOneGroup,
    phases: batch.phases,
    leaderBytesPerFollower: bytesFit.x[0]!,
    followerBytes: bytesFit.x[1]!,
    raftMessagesPerTxn: mean(described.map((p) => p.raftMessagesPerTxn)),
    participantMessagesPerTxn: mean(described.map((p) => p.participantMessagesPerTxn)),
    fittedOn: [...new Set(use.map((p) => `${p.nodes}x${p.groups}`))],
  };
}

/**
 * The throughput at which `load(tps)` (ms or fsyncs a second, rising with tps) reaches `capacity`: a ceiling of
 * the model. Infinite when the load never reaches it (batches that grow as fast as the load).
 */
export function ceilingOf(load: (tps: number) => number, capacity: number): number {
  if (!(capacity > 0)) return 0;
  let hi = 1;
  while (load(hi) < capacity) {
    hi *= 2;
    if (hi > 1e12) return Number.POSITIVE_INFINITY;
  }
  let lo = 0;
  for (let i = 0; i < 200 && hi - lo > hi * 1e-9; i++) {
    const mid = (lo + hi) / 2;
    if (load(mid) < capacity) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** The share of the transactions the busiest machine leads, leaders spread g mod N over N machines. */
export function busiestLeaderShare(machines: number, groups: number): number {
  if (!Number.isInteger(machines) || machines < 1) throw new RangeError(`machines ${machines}: a positive integer`);
  if (!Number.isInteger(groups) || groups < 1) throw new RangeError(`groups ${groups}: a positive integer`);
  return Math.ceil(groups / machines) / groups;
}

/** A node's idle CPU ms a second at G groups. */
export function idleMsPerSec(p: ScaleParams, groups: number): number {
  return Math.max(0, p.idleMsPerSecBase + groups * p.idleMsPerSecPerGroup);
}

/** The model's throughput for N machines, one node each, and which ceiling sets it. */
export function predict(p: ScaleParams, s: Shape): Prediction {
  const n = s.machines;
  const share = busiestLeaderShare(n, s.groups);
  // The clients keep tps × latency in flight: batches grow with the load.
  const batches = (tps: number): number => 1 / txnsPerBatch(p, (tps * s.latencyMs) / 1000, s.groups);
  const cpuMs = (tps: number): number => nodeMsPerTxn(p, n, s.groups, share * s.groups, batches(tps));
  const usableCores = Math.min(s.coresPerMachine, s.coresPerNode ?? s.coresPerMachine);
  // Idle work (ticks, heartbeats: per group) takes its share of the cores first.
  const idle = idleMsPerSec(p, s.groups);
  const cpuTps = ceilingOf((t) => t * cpuMs(t), usableCores * 1000 - idle);
  // Every node persists every group's batches: one fsync each at most.
  const diskTps = s.fsyncMs > 0 ? ceilingOf((t) => t * batches(t) * s.fsyncMs, 1000) : Number.POSITIVE_INFINITY;
  const bytesOut = share * (n - 1) * p.leaderBytesPerFollower + (1 - share) * p.followerBytes;
  const networkTps = bytesOut > 0 ? s.networkBytesPerSec / bytesOut : Number.POSITIVE_INFINITY;
  const tps = Math.min(cpuTps, diskTps, networkTps);
  const bound = tps === cpuTps ? 'cpu' : tps === diskTps ? 'disk' : 'network';
  const at = Number.isFinite(tps) ? tps : 0;
  return {
    tps,
    bound,
    cpuTps,
    diskTps,
    networkTps,
    busiestLeaderShare: share,
    busiestCpuMsPerTxn: cpuMs(at),
    idleMsPerSec: idle,
    txnsPerBatch: 1 / batches(at),
    inFlight: (at * s.latencyMs) / 1000,
    usableCores,
    latencyMs: s.latencyMs,
  };
}

/** A cluster on one machine (this benchmark's): its nodes, the groups each leads, and the clients in flight. */
export interface OneMachine {
  nodes: number;
  groups: number;
  groupsLed: number[];
  clients: number;
}

/**
 * Every process of a cluster on one machine: the CPU ms a committed transaction costs them all at `tps`, the nodes'
 * idle work a second spread over the transactions. The batches per transaction are the model's for the clients in
 * flight unless given (`batchesPerTxn`: the measured, to check the costs apart from the batch-size model).
 */
export function oneMachineMsPerTxn(p: ScaleParams, c: OneMachine, tps: number, batchesPerTxn?: number): number {
  if (!(tps > 0)) throw new RangeError(`tps ${tps}: must be positive`);
  return oneMachineMarginalMs(p, c, batchesPerTxn) + (c.nodes * idleMsPerSec(p, c.groups)) / tps;
}

function oneMachineMarginalMs(p: ScaleParams, c: OneMachine, batchesPerTxn?: number): number {
  const b = batchesPerTxn ?? 1 / txnsPerBatch(p, c.clients, c.groups);
  const nodes = c.groupsLed.reduce((t, led) => t + nodeMsPerTxn(p, c.nodes, c.groups, led, b), 0);
  return nodes + p.clientMs + b * p.clientBatchMs;
}

/** The throughput of a cluster on one machine whose processes get `msPerSec` of CPU a second (cores × 1000 at most). */
export function oneMachineTps(p: ScaleParams, c: OneMachine, msPerSec: number): number {
  const spare = msPerSec - c.nodes * idleMsPerSec(p, c.groups);
  return spare > 0 ? spare / oneMachineMarginalMs(p, c) : 0;
}

/**
 * The G that gives the model's best throughput for N machines, the fewest
 * groups among equals: more groups spread the leaders' work (the busiest
 * machine's share is least, 1/N, once G is a multiple of N) but each adds
 * its idle work and makes every group's batches smaller, so the best may
 * be below N. The search stops at N.
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
