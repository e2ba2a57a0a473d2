// The groups scenario's figures as the model and the report read them
// (bench/analysis/groups-model.ts, bench/report/groups-section.ts): every
// loaded window feeds the fit, each point left out is predicted by the
// others, the smallest cluster predicts the larger, and the report prints
// the parameters, the tables, the error ranges and the 9 × 16 prediction.
import { describe, expect, it } from 'vitest';
import { alignedTable, parseResults } from '../../bench/analysis/groups-model-run.ts';
import { fitPointOf, modelOf, withModel } from '../../bench/analysis/groups-model.ts';
import { idleMsPerSec, nodeMsPerTxn, txnsPerBatch, type ScaleParams } from '../../bench/analysis/scale-model.ts';
import { equalInFlightRows, groupsSection, togetherRows } from '../../bench/report/groups-section.ts';
import type { GroupsFigures, GroupsPoint, GroupsWindow } from '../../bench/scenarios/groups.ts';

/** What the synthetic cluster costs. */
const TRUE: ScaleParams = {
  idleMsPerSecBase: 4,
  idleMsPerSecPerGroup: 8,
  leaderBaseMs: 0.25,
  perFollowerMs: 0.08,
  leaderBatchMs: 1,
  perFollowerBatchMs: 0.3,
  nodeResidual: 0,
  clientMs: 0.3,
  clientBatchMs: 0.6,
  phasesOneGroup: 1,
  phases: 2,
  leaderBytesPerFollower: 150,
  followerBytes: 15,
  raftMessagesPerTxn: 0.5,
  participantMessagesPerTxn: 8,
  fittedOn: [],
};
const CORES = 2;

/** A window as the scenario writes it for a cluster that costs exactly TRUE, with `busy` of the cores used. */
function window(nodes: number, groups: number, clients: number, tps: number, busy: number): GroupsWindow {
  const b = 1 / txnsPerBatch(TRUE, clients, groups);
  const idle = idleMsPerSec(TRUE, groups);
  const byNode = Array.from({ length: nodes }, (_, i) => {
    const led = Array.from({ length: groups }, (_, g) => g % nodes).filter((x) => x === i).length;
    return {
      node: `n${i + 1}`,
      groups_led: led,
      cpu_ms_per_txn: nodeMsPerTxn(TRUE, nodes, groups, led, b) + idle / tps,
      raft_bytes_per_txn: (led / groups) * (nodes - 1) * 150 + (1 - led / groups) * 15,
    };
  });
  const nodesMs = byNode.reduce((t, n) => t + n.cpu_ms_per_txn, 0);
  const participants = TRUE.clientMs + b * TRUE.clientBatchMs;
  return {
    clients,
    tps,
    p50_us: 5_000,
    p99_us: 9_000,
    aborted: 0,
    errors: 0,
    load_avg: 1,
    cpu: {
      ms_per_txn: nodesMs + participants,
      sys_ms_per_txn: 0,
      by_kind: {},
      by_process: [],
      cores: CORES,
      ceiling_tps: 0,
      busy,
    },
    by_node: byNode,
    cpu_ms_per_txn_nodes: nodesMs,
    cpu_ms_per_txn_participants: participants,
    cpu_ms_per_txn_loadgen: 0,
    // Half the group batches share an fsync with another group's at G > 1.
    fsyncs_per_txn: (nodes * b) / (groups > 1 ? 1.5 : 1),
    fsyncs_per_txn_per_node: b / (groups > 1 ? 1.5 : 1),
    group_batches_per_fsync: groups > 1 ? 1.5 : 1,
    disk_flushes_per_txn: null,
    disk_us_per_flush: null,
    raft_messages_per_txn: 1,
    raft_stream_writes_per_txn: 1,
    raft_bytes_per_txn: 200,
    participant_messages_per_txn: 8,
    participant_grpc_messages_per_txn: 2,
  };
}

function point(nodes: number, groups: number): GroupsPoint {
  // Throughput falls with G, as measured; the windows used what CPU the model says they needed, less other work.
  const windows = [16, 64, 256].map((clients) => {
    const tps = (50 * Math.sqrt(clients)) / groups;
    const w = window(nodes, groups, clients, tps, 0);
    return { ...w, cpu: { ...w.cpu!, busy: (w.cpu!.ms_per_txn * tps) / (CORES * 1000) } };
  });
  const peak = windows.reduce((b, w) => (w.tps > b.tps ? w : b));
  const leaders = Array.from({ length: groups }, (_, g) => `n${(g % nodes) + 1}`);
  return {
    nodes,
    groups,
    peak_tps: peak.tps,
    peak_clients: peak.clients,
    p50_us_at_peak: peak.p50_us,
    leaders_before: leaders,
    leaders_after: leaders,
    spread: groups > 1,
    idle: {
      cpu_ms_per_s: nodes * idleMsPerSec(TRUE, groups),
      raft_messages_per_s: 0,
      raft_stream_writes_per_s: 0,
      load_avg: 1,
    },
    windows,
  };
}

const POINTS = [3, 5].flatMap((n) => [1, 2, 4].map((g) => point(n, g)));

const FIGURES: GroupsFigures = {
  settings: {
    nodes: [3, 5],
    groups: [1, 2, 4],
    clients: [16, 64, 256],
    warmupMs: 1,
    measureMs: 1,
    spreadWaitMs: 1,
    idleMs: 1,
    cores: CORES,
    participants: 2,
    commit: 'classic',
  },
  points: POINTS,
  fsync_ms: 0.5,
  model: null,
};

describe('the groups model and report section', () => {
  it('reads a group batch as a synced persist of one group: fsyncs per node × group batches per fsync', () => {
    const p = POINTS[2]!;
    const w = p.windows[0]!;
    expect(fitPointOf(p, w).batchesPerTxn).toBeCloseTo(1 / txnsPerBatch(TRUE, w.clients, 4), 9);
  });

  it('fits every window and predicts each point left out, and 5 nodes from 3, where the points follow the model', () => {
    const m = modelOf(POINTS, CORES, 0.5)!;
    expect(m.params.leaderBatchMs).toBeCloseTo(1, 6);
    expect(m.params.phases).toBeCloseTo(2, 6);
    expect(m.leave_one_out).toHaveLength(18);
    expect(m.validation_from_smallest).toHaveLength(9);
    expect(m.validation_from_smallest.every((v) => v.nodes === 5)).toBe(true);
    for (const v of [...m.leave_one_out, ...m.validation_from_smallest]) {
      expect(Math.abs(v.cpu_error), `${v.nodes}x${v.groups} c${v.clients}`).toBeLessThan(0.002);
      expect(Math.abs(v.error), `${v.nodes}x${v.groups} c${v.clients}`).toBeLessThan(0.002);
      expect(v.predicted_txns_per_batch).toBeCloseTo(v.measured_txns_per_batch, 2);
      // Every core of the machine gives more than the share the window got.
      expect(v.ceiling_tps).toBeGreaterThan(v.predicted_tps);
    }
    expect(m.errors.leave_one_out.cpu.mean_abs).toBeLessThan(0.002);
    expect(m.errors.from_smallest?.tps.mean_abs).toBeLessThan(0.002);
    expect(m.leave_one_out.filter((v) => v.peak)).toHaveLength(6);
  });

  it('finds the CPU a window was short of: a point whose nodes cost more than the model says shows it', () => {
    const dear = POINTS.map((p) =>
      p.nodes === 3 && p.groups === 4
        ? { ...p, windows: p.windows.map((w) => ({ ...w, cpu: { ...w.cpu!, ms_per_txn: w.cpu!.ms_per_txn * 1.5 } })) }
        : p,
    );
    const row = modelOf(dear, CORES, 0.5)!.leave_one_out.find((v) => v.nodes === 3 && v.groups === 4)!;
    expect(row.cpu_error).toBeCloseTo(0.5, 2);
  });

  it('predicts 9 machines of 16 cores with a node bound to one core, and says what every core would give', () => {
    const x = modelOf(POINTS, CORES, 0.5)!.nine_by_16;
    expect(x.assumptions).toMatchObject({ cores_per_node: 1, latency_ms: 50, low_latency_ms: 10 });
    expect(x.prediction.usableCores).toBe(1);
    expect(x.every_core.prediction.tps).toBeGreaterThan(x.prediction.tps * 5);
    expect(x.low_latency.prediction.tps).toBeLessThan(x.prediction.tps);
    expect(x.prediction.tps).toBeGreaterThan(x.at_g1.tps);
  });

  it('has no model when the windows hold one batch size', () => {
    const flat = POINTS.filter((p) => p.nodes === 3 && p.groups === 1).map((p) => ({ ...p, windows: [p.windows[0]!] }));
    expect(modelOf(flat, CORES, 0.5)).toBeNull();
  });

  it('prints the points, the parameters, the left-out table, the error ranges and the 9 × 16 prediction', () => {
    const table = (head: string[], rows: (string | number)[][]): string =>
      [head, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
    const text = groupsSection(withModel(FIGURES), table).join('\n');
    expect(text).toContain('## Decision groups: how capacity scales');
    expect(text).toContain('fitted on every loaded window of 3x1, 3x2, 3x4, 5x1, 5x2, 5x4');
    expect(text).toMatch(/\| 3 \| 4 \| 256 \(peak\) \| /);
    expect(text).toMatch(/Left out in turn: CPU per transaction [-+]\d+% to [-+]\d+%/);
    expect(text).toMatch(/9 machines of 16 cores.*G = \d+ .*gives \d+ tx\/s, bound by cpu/);
    // A results file from before the batching term: the section says how to fit it again.
    const old = { ...FIGURES, model: { params: {} } as unknown as GroupsFigures['model'] };
    expect(groupsSection(old, table).join('\n')).toContain('npm run bench -- groups-model FILE --write');
  });

  it('sets each window of G > 1 beside the G = 1 window with as many in flight per group, and prints them', () => {
    const rows = equalInFlightRows(FIGURES);
    // G = 4 at 64 and 256 clients meet G = 1 at 16 and 64; G = 2's 32 and 128 per group have no G = 1 window.
    expect(rows.map((r) => [r.nodes, r.groups, r.clients, r.clients_per_group])).toEqual([
      [3, 4, 64, 16],
      [3, 4, 256, 64],
      [5, 4, 64, 16],
      [5, 4, 256, 64],
    ]);
    const at = (nodes: number, groups: number, clients: number): GroupsWindow =>
      POINTS.find((p) => p.nodes === nodes && p.groups === groups)?.windows.find(
        (w) => w.clients === clients,
      ) as GroupsWindow;
    expect(rows[1].cpu_nodes).toBe(at(3, 4, 256).cpu_ms_per_txn_nodes);
    expect(rows[1].cpu_nodes_g1).toBe(at(3, 1, 64).cpu_ms_per_txn_nodes);
    expect(rows[1].tps_g1).toBe(at(3, 1, 64).tps);
    const w1 = at(3, 1, 64);
    expect(rows[1].cpu_all_g1).toBeCloseTo(w1.cpu_ms_per_txn_nodes + w1.cpu_ms_per_txn_participants, 3);
    const table = (head: string[], body: (string | number)[][]): string =>
      [head, ...body].map((r) => `| ${r.join(' | ')} |`).join('\n');
    const text = groupsSection(FIGURES, table).join('\n');
    expect(text).toContain('At equal transactions in flight per group');
    expect(text).toContain('256 (64)');
  });

  it('sets the windows with every leader on one node beside G = 1 and G spread, and leaves them out of the fit', () => {
    const spread4 = POINTS.find((p) => p.nodes === 3 && p.groups === 4) as GroupsPoint;
    const one1 = POINTS.find((p) => p.nodes === 3 && p.groups === 1) as GroupsPoint;
    // As cheap as G = 1 at the same clients (what the groups cost when one node batches them all), 10 % more.
    const together: GroupsPoint = {
      ...spread4,
      leaders_before: ['n1', 'n1', 'n1', 'n1'],
      spread: false,
      together: true,
      windows: one1.windows.map((w) => ({ ...w, cpu_ms_per_txn_nodes: w.cpu_ms_per_txn_nodes * 1.1 })),
    };
    const figures: GroupsFigures = { ...FIGURES, points: [...POINTS, together] };
    const rows = togetherRows(figures);
    expect(rows.map((r) => [r.nodes, r.groups, r.clients])).toEqual(one1.windows.map((w) => [3, 4, w.clients]));
    for (const r of rows) {
      const w1 = one1.windows.find((w) => w.clients === r.clients) as GroupsWindow;
      const ws = spread4.windows.find((w) => w.clients === r.clients) as GroupsWindow;
      expect(r.cpu_nodes / r.cpu_nodes_g1).toBeCloseTo(1.1, 6);
      expect(r.cpu_nodes_g1).toBe(w1.cpu_ms_per_txn_nodes);
      expect(r.cpu_nodes_spread).toBe(ws.cpu_ms_per_txn_nodes);
      expect(r.tps_spread).toBe(ws.tps);
    }
    // The equal-in-flight comparison and the model take the spread points only.
    expect(equalInFlightRows(figures)).toEqual(equalInFlightRows(FIGURES));
    expect(modelOf(figures.points, CORES, 1)?.params).toEqual(modelOf(FIGURES.points, CORES, 1)?.params);
    const table = (head: string[], body: (string | number)[][]): string =>
      [head, ...body].map((r) => `| ${r.join(' | ')} |`).join('\n');
    const text = groupsSection(figures, table).join('\n');
    expect(text).toContain('Every leader on one node');
    expect(text).toContain('n1 n1 n1 n1 (on one node)');
  });

  it('reads a results file or a tool output after npm banner lines, and aligns its tables', () => {
    expect(parseResults('\n> verdict bench\n> node bench/run.mjs\n\n{"groups": null}\n', 'x').groups).toBeNull();
    expect(() => parseResults('no json', 'f.json')).toThrow(/f.json: no JSON object/);
    expect(alignedTable(['a', 'bb'], [[1, 2]]).split('\n')).toEqual([
      '| a   | bb  |',
      '| --- | --- |',
      '| 1   | 2   |',
    ]);
  });
});
