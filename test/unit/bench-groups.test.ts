// The groups scenario's figures as the model and the report read them
// (bench/analysis/groups-model.ts, bench/report/groups-section.ts): the
// peak window feeds the fit, every point gets a prediction beside it, and
// the report prints the parameters and the 9 × 16 prediction.
import { describe, expect, it } from 'vitest';
import { modelOf, withModel } from '../../bench/analysis/groups-model.ts';
import { groupsSection } from '../../bench/report/groups-section.ts';
import type { GroupsFigures, GroupsPoint, GroupsWindow } from '../../bench/scenarios/groups.ts';

function window(clients: number, tps: number, byNode: [string, number, number][]): GroupsWindow {
  const nodesMs = byNode.reduce((t, [, , ms]) => t + ms, 0);
  return {
    clients,
    tps,
    p50_us: 5_000,
    p99_us: 9_000,
    aborted: 0,
    errors: 0,
    load_avg: 1,
    cpu: {
      ms_per_txn: nodesMs + 1,
      sys_ms_per_txn: 0,
      by_kind: { participant: 0.8, loadgen: 0.2 },
      by_process: [],
      cores: 2,
      ceiling_tps: 0,
      busy: 0.9,
    },
    by_node: byNode.map(([node, groups_led, cpu_ms_per_txn]) => ({
      node,
      groups_led,
      cpu_ms_per_txn,
      raft_bytes_per_txn: groups_led > 0 ? 200 : 10,
    })),
    cpu_ms_per_txn_nodes: nodesMs,
    cpu_ms_per_txn_participants: 0.8,
    cpu_ms_per_txn_loadgen: 0.2,
    fsyncs_per_txn: 0.3,
    fsyncs_per_txn_per_node: 0.1,
    group_batches_per_fsync: 1,
    disk_flushes_per_txn: null,
    disk_us_per_flush: null,
    raft_messages_per_txn: 1,
    raft_stream_writes_per_txn: 1,
    raft_bytes_per_txn: 220,
    participant_messages_per_txn: 8,
    participant_grpc_messages_per_txn: 2,
  };
}

function point(groups: number, windows: GroupsWindow[]): GroupsPoint {
  const peak = windows.reduce((b, w) => (w.tps > b.tps ? w : b));
  return {
    nodes: 3,
    groups,
    peak_tps: peak.tps,
    peak_clients: peak.clients,
    p50_us_at_peak: peak.p50_us,
    leaders_before: ['n1', 'n2'].slice(0, groups),
    leaders_after: ['n1', 'n2'].slice(0, groups),
    spread: groups > 1,
    idle: { cpu_ms_per_s: 0, raft_messages_per_s: 0, raft_stream_writes_per_s: 0, load_avg: 1 },
    windows,
  };
}

const G1 = point(1, [
  window(16, 100, [
    ['n1', 1, 9],
    ['n2', 0, 9],
    ['n3', 0, 9],
  ]),
  // The peak: the leader 2 ms (0 of its own + 2 × 1 per follower), the followers 1 ms each.
  window(64, 500, [
    ['n1', 1, 2],
    ['n2', 0, 1],
    ['n3', 0, 1],
  ]),
]);
const G2 = point(2, [
  window(64, 480, [
    ['n1', 1, 1.5],
    ['n2', 1, 1.5],
    ['n3', 0, 1],
  ]),
]);

const FIGURES: GroupsFigures = {
  settings: {
    nodes: [3],
    groups: [1, 2],
    clients: [16, 64],
    warmupMs: 1,
    measureMs: 1,
    spreadWaitMs: 1,
    idleMs: 1,
    cores: 2,
    participants: 2,
    commit: 'classic',
  },
  points: [G1, G2],
  fsync_ms: 0.5,
  model: null,
};

describe('the groups model and report section', () => {
  it('fits on the peak window at G = 1 and predicts each point on this machine', () => {
    const m = modelOf(FIGURES.points, 2, 0.5)!;
    expect(m.params.perFollowerMs).toBeCloseTo(1);
    expect(m.params.leaderBaseMs).toBeCloseTo(0);
    expect(m.params.clientMs).toBeCloseTo(1);
    // One machine: 2 + 2 × 1 + 1 = 5 ms a transaction on 2 cores → 400 tx/s; 500 measured is +25%.
    expect(m.validation[0]).toMatchObject({ nodes: 3, groups: 1, measured_tps: 500, predicted_tps: 400, error: 0.25 });
    expect(m.validation[1]).toMatchObject({ groups: 2, measured_tps: 480, predicted_tps: 400 });
    expect(m.nine_by_16.groups).toBe(9);
    expect(m.nine_by_16.prediction.tps).toBeGreaterThan(m.nine_by_16.at_g1.tps);
  });

  it('has no model without a point at G = 1', () => {
    expect(modelOf([G2], 2, 0.5)).toBeNull();
  });

  it('prints the points, the parameters and the 9 × 16 prediction', () => {
    const table = (head: string[], rows: (string | number)[][]): string =>
      [head, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
    const text = groupsSection(withModel(FIGURES), table).join('\n');
    expect(text).toContain('## Decision groups: how capacity scales');
    expect(text).toContain('| 3 | 2 | n1 n2 | 480 (64) |');
    expect(text).toContain('fitted on 3x1');
    expect(text).toMatch(/9 machines of 16 cores.*G = 9/);
  });
});
