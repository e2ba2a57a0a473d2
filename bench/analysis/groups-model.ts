// The capacity model (./scale-model.ts) fitted to what the groups scenario
// measured (bench/scenarios/groups.ts): its parameters from every loaded
// window, its prediction beside every window on this machine (in sample,
// each nodes × G point left out in turn, and fitted on the smallest cluster
// alone beside the larger ones), and its prediction for 9 machines of 16
// cores with G as the model suggests. Pure; `npm run bench -- groups-model
// [FILE]` prints it from a results file (./groups-model-run.ts).
import type {
  ErrorRange,
  GroupsFigures,
  GroupsModel,
  GroupsPoint,
  GroupsWindow,
  ScaleParams,
  ValidationRow,
} from '../scenarios/groups.ts';
import {
  fitParams,
  oneMachineMsPerTxn,
  oneMachineTps,
  predict,
  relativeError,
  suggestGroups,
  txnsPerBatch,
  type FitPoint,
} from './scale-model.ts';

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** A loaded window of a point as the model reads it. */
export function fitPointOf(p: GroupsPoint, w: GroupsWindow): FitPoint {
  return {
    nodes: p.nodes,
    groups: p.groups,
    clients: w.clients,
    tps: w.tps,
    byNode: w.by_node.map((n) => ({
      node: n.node,
      groupsLed: n.groups_led,
      cpuMsPerTxn: n.cpu_ms_per_txn,
      raftBytesPerTxn: n.raft_bytes_per_txn,
    })),
    clientMsPerTxn: w.cpu_ms_per_txn_participants + w.cpu_ms_per_txn_loadgen,
    idleMsPerSecPerNode: p.idle.cpu_ms_per_s / p.nodes,
    // A group batch is one synced persist of one group; the shared writer puts several in one fsync.
    batchesPerTxn: w.fsyncs_per_txn_per_node * (w.group_batches_per_fsync || 1),
    raftMessagesPerTxn: w.raft_messages_per_txn,
    participantMessagesPerTxn: w.participant_messages_per_txn,
  };
}

/** The windows the model can read: committed transactions, CPU sampled, every node's figure there. */
function usable(p: GroupsPoint): GroupsWindow[] {
  return p.windows.filter((w) => w.tps > 0 && w.cpu !== null && w.by_node.length === p.nodes);
}

const fitPointsOf = (points: GroupsPoint[]): FitPoint[] =>
  points.flatMap((p) => usable(p).map((w) => fitPointOf(p, w)));

/** What the 9 × 16 prediction assumes of hardware this machine cannot show. */
export const NINE_BY_16 = {
  machines: 9,
  coresPerMachine: 16,
  networkGbitS: 10,
  coresPerNode: 1,
  latencyMs: 50,
  lowLatencyMs: 10,
};

/** One window beside the model's prediction for this machine (every process on its `cores` cores). */
export function validationRow(ps: ScaleParams, p: GroupsPoint, w: GroupsWindow, cores: number): ValidationRow {
  const cluster = {
    nodes: p.nodes,
    groups: p.groups,
    groupsLed: w.by_node.map((n) => n.groups_led),
    clients: w.clients,
  };
  const measuredBatches = fitPointOf(p, w).batchesPerTxn;
  const measuredCpu = w.cpu?.ms_per_txn ?? 0;
  const busy = w.cpu?.busy ?? 0;
  const predictedCpu = oneMachineMsPerTxn(ps, cluster, w.tps);
  const atBatches = measuredBatches > 0 ? oneMachineMsPerTxn(ps, cluster, w.tps, measuredBatches) : predictedCpu;
  // The CPU the window's processes got: the share of the cores other work on the machine left them.
  const predictedTps = oneMachineTps(ps, cluster, busy * cores * 1000);
  const safeError = (m: number, x: number): number => (x > 0 ? r3(relativeError(m, x)) : 0);
  return {
    nodes: p.nodes,
    groups: p.groups,
    clients: w.clients,
    peak: w.clients === p.peak_clients,
    measured_tps: w.tps,
    predicted_tps: Math.round(predictedTps),
    error: safeError(w.tps, predictedTps),
    ceiling_tps: Math.round(oneMachineTps(ps, cluster, cores * 1000)),
    measured_cpu_ms_per_txn: measuredCpu,
    predicted_cpu_ms_per_txn: r3(predictedCpu),
    cpu_error: safeError(measuredCpu, predictedCpu),
    cpu_ms_per_txn_at_measured_batches: r3(atBatches),
    cpu_error_at_measured_batches: safeError(measuredCpu, atBatches),
    measured_txns_per_batch: measuredBatches > 0 ? r3(1 / measuredBatches) : 0,
    predicted_txns_per_batch: r3(txnsPerBatch(ps, w.clients, p.groups)),
    busy,
    load_avg: w.load_avg,
  };
}

/** The least, the greatest and the mean absolute value of a set of errors. */
export function errorRange(xs: number[]): ErrorRange {
  if (xs.length === 0) return { min: 0, max: 0, mean_abs: 0 };
  return {
    min: Math.min(...xs),
    max: Math.max(...xs),
    mean_abs: r3(xs.reduce((t, x) => t + Math.abs(x), 0) / xs.length),
  };
}

const rangesOf = (rows: ValidationRow[]): { cpu: ErrorRange; tps: ErrorRange } => ({
  cpu: errorRange(rows.map((r) => r.cpu_error)),
  tps: errorRange(rows.map((r) => r.error)),
});

/** The parameters fitted to `points`, or null when they cannot separate the costs (one batch size, too few nodes). */
function fitOrNull(points: GroupsPoint[]): ScaleParams | null {
  try {
    return fitParams(fitPointsOf(points));
  } catch {
    return null;
  }
}

/**
 * Each point's windows predicted by the model fitted to the other points (the points it cannot fit without, left out).
 */
function leaveOneOut(points: GroupsPoint[], cores: number): ValidationRow[] {
  return points.flatMap((p) => {
    const ps = fitOrNull(points.filter((q) => q !== p));
    return ps === null ? [] : usable(p).map((w) => validationRow(ps, p, w, cores));
  });
}

export function modelOf(measured: GroupsPoint[], cores: number, fsyncMs: number): GroupsModel | null {
  // The model places leaders as the cluster does (spread); the points with every leader on one node are not fitted.
  const points = measured.filter((p) => p.together !== true);
  const params = fitOrNull(points);
  if (params === null) return null;
  const sizes = [...new Set(points.map((p) => p.nodes))].sort((a, b) => a - b);
  const smallest = sizes.length > 1 ? fitOrNull(points.filter((p) => p.nodes === sizes[0])) : null;
  const fromSmallest =
    smallest === null
      ? []
      : points
          .filter((p) => p.nodes !== sizes[0])
          .flatMap((p) => usable(p).map((w) => validationRow(smallest, p, w, cores)));
  const looRows = leaveOneOut(points, cores);
  const shape = {
    machines: NINE_BY_16.machines,
    coresPerMachine: NINE_BY_16.coresPerMachine,
    coresPerNode: NINE_BY_16.coresPerNode,
    fsyncMs,
    networkBytesPerSec: (NINE_BY_16.networkGbitS * 1e9) / 8,
    latencyMs: NINE_BY_16.latencyMs,
  };
  const best = suggestGroups(params, shape);
  return {
    params,
    validation: points.flatMap((p) => usable(p).map((w) => validationRow(params, p, w, cores))),
    leave_one_out: looRows,
    validation_from_smallest: fromSmallest,
    errors: {
      leave_one_out: rangesOf(looRows),
      from_smallest: fromSmallest.length > 0 ? rangesOf(fromSmallest) : null,
    },
    nine_by_16: {
      groups: best.groups,
      assumptions: {
        fsync_ms: fsyncMs,
        network_gbit_s: NINE_BY_16.networkGbitS,
        cores_per_node: NINE_BY_16.coresPerNode,
        latency_ms: NINE_BY_16.latencyMs,
        low_latency_ms: NINE_BY_16.lowLatencyMs,
      },
      prediction: best.prediction,
      at_g1: predict(params, { ...shape, groups: 1 }),
      every_core: suggestGroups(params, { ...shape, coresPerNode: NINE_BY_16.coresPerMachine }),
      low_latency: suggestGroups(params, { ...shape, latencyMs: NINE_BY_16.lowLatencyMs }),
    },
  };
}

/** The figures with the model fitted to their points. */
export function withModel(f: GroupsFigures): GroupsFigures {
  return { ...f, model: modelOf(f.points, f.settings.cores, f.fsync_ms) };
}
