// The capacity model (./scale-model.ts) fitted to what the groups scenario
// measured (bench/scenarios/groups.ts): its parameters from the G = 1
// points, its prediction beside every measured point on this machine (and,
// fitted on the smallest cluster alone, beside the larger ones), and its
// prediction for 9 machines of 16 cores with G as the model suggests.
import type { GroupsFigures, GroupsModel, GroupsPoint, ScaleParams, ValidationRow } from '../scenarios/groups.ts';
import { cpuPerTxnAt, fitParams, predict, relativeError, suggestGroups, type FitPoint } from './scale-model.ts';

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** The peak window of a point as the model reads it. */
export function fitPointOf(p: GroupsPoint): FitPoint {
  const w = p.windows.find((x) => x.clients === p.peak_clients) ?? p.windows[0];
  return {
    nodes: p.nodes,
    groups: p.groups,
    tps: w.tps,
    byNode: w.by_node.map((n) => ({
      node: n.node,
      groupsLed: n.groups_led,
      cpuMsPerTxn: n.cpu_ms_per_txn,
      raftBytesPerTxn: n.raft_bytes_per_txn,
    })),
    clientMsPerTxn: w.cpu_ms_per_txn_participants + w.cpu_ms_per_txn_loadgen,
    idleMsPerSecPerNode: p.idle.cpu_ms_per_s / p.nodes,
    syncsPerTxn: w.fsyncs_per_txn,
    raftMessagesPerTxn: w.raft_messages_per_txn,
    participantMessagesPerTxn: w.participant_messages_per_txn,
  };
}

/** What the 9 × 16 prediction assumes of hardware this machine cannot show. */
export const NINE_BY_16 = { machines: 9, coresPerMachine: 16, networkGbitS: 10 };

export function modelOf(points: GroupsPoint[], cores: number, fsyncMs: number): GroupsModel | null {
  const fit = points.map(fitPointOf);
  if (!fit.some((p) => p.groups === 1 && p.tps > 0)) return null;
  const params = fitParams(fit);
  const here = (ps: ScaleParams, p: GroupsPoint): ValidationRow => {
    const w = p.windows.find((x) => x.clients === p.peak_clients) ?? p.windows[0];
    const measuredCpu = w.cpu?.ms_per_txn ?? 0;
    const predicted = predict(ps, {
      machines: p.nodes,
      coresPerMachine: cores,
      groups: p.groups,
      fsyncMs,
      networkBytesPerSec: Number.POSITIVE_INFINITY,
      oneMachine: true,
    });
    return {
      nodes: p.nodes,
      groups: p.groups,
      measured_tps: p.peak_tps,
      predicted_tps: Math.round(predicted.tps),
      error: r3(relativeError(p.peak_tps, predicted.tps)),
      measured_cpu_ms_per_txn: measuredCpu,
      predicted_cpu_ms_per_txn: r3(cpuPerTxnAt(predicted, p.peak_tps)),
      cpu_error: r3(relativeError(measuredCpu, cpuPerTxnAt(predicted, p.peak_tps))),
      busy: w.cpu?.busy ?? 0,
      load_avg: w.load_avg,
    };
  };
  const smallest = Math.min(...fit.filter((p) => p.groups === 1).map((p) => p.nodes));
  const fromSmallest = fitParams(fit.filter((p) => p.nodes === smallest));
  const shape = {
    machines: NINE_BY_16.machines,
    coresPerMachine: NINE_BY_16.coresPerMachine,
    fsyncMs,
    networkBytesPerSec: (NINE_BY_16.networkGbitS * 1e9) / 8,
  };
  const best = suggestGroups(params, shape);
  return {
    params,
    validation: points.map((p) => here(params, p)),
    validation_from_smallest: points.filter((p) => p.nodes !== smallest).map((p) => here(fromSmallest, p)),
    nine_by_16: {
      groups: best.groups,
      assumptions: { fsync_ms: fsyncMs, network_gbit_s: NINE_BY_16.networkGbitS },
      prediction: best.prediction,
      at_g1: predict(params, { ...shape, groups: 1 }),
    },
  };
}

/** The figures with the model fitted to their points. */
export function withModel(f: GroupsFigures): GroupsFigures {
  return { ...f, model: modelOf(f.points, f.settings.cores, f.fsync_ms) };
}
