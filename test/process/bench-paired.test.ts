// The paired step of the benchmark (bench/scenarios/paired.ts) on real processes: a
// 1-node and a 3-node cluster with memory participants and a three-member
// etcd (npm test installs it: scripts/test-deps.mjs), one load generator taking them in turn while the others are
// paused. Every target must count operations in every round (a system left
// paused would count none), every segment must find the others stopped (the
// step fails otherwise), no pause may cost a leader, and nothing may be left
// running.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ensureEtcd } from '../../bench/harness/etcd.ts';
import { measurePaired } from '../../bench/scenarios/paired.ts';
import { liveChildren, stopAll } from '../../bench/harness/procs.ts';

it('measures every target in every round, pausing the others, and stops everything', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-paired-'));
  try {
    // The etcd anchor is part of what this checks: a missing etcd fails the test, never narrows it.
    const bin = ensureEtcd(() => {});
    if ('skipped' in bin) throw new Error(`the paired step needs etcd: ${bin.skipped}`);
    const p = await measurePaired(dir, { warmupMs: 1_000, segmentMs: 800, settleMs: 100, rounds: 2, log: () => {} });
    const labels = ['classic1', 'classic3', 'parallel3', 'raw3', 'etcd3'];
    expect(Object.keys(p.targets)).toEqual(labels);
    for (const label of labels) {
      const t = p.targets[label];
      expect(t.round_p50_us, label).toHaveLength(2);
      for (const x of t.round_p50_us) expect(x, label).toBeGreaterThan(0);
      expect(t.errors, label).toEqual({});
      expect(t.aborted, label).toBe(0);
    }
    expect(p.leader_changes).toEqual({ nodes1: 0, nodes3: 0 });
    expect(p.ratios.latency_p50_3_parallel_over_1.rounds).toHaveLength(2);
    expect(p.ratios.raft_seq_p50_over_etcd?.pooled).toBeGreaterThan(0);
    expect(liveChildren()).toBe(0);
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);
