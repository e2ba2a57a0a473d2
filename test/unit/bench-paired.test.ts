// The paired step's arithmetic and report (bench/harness/paired-plan.ts,
// bench/scenarios/paired.ts, bench/report/report.ts): ratios of pooled p50s and of each
// round's p50s, their median, a missing or empty target, the time bound of
// the load generator, the report's rows, and the target keys taken from
// the paired step with the sweeps' figures kept beside them.
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  median,
  pairedRatio,
  pairedSpanMs,
  type PairedResult,
  type PairedTargetResult,
} from '../../bench/harness/paired-plan.ts';
import { pairedFigures } from '../../bench/scenarios/paired.ts';
import { flushCounterOrNull, roundFlushes, usPerFlush } from '../../bench/harness/disk-flushes.ts';
import { boundsSection, pairedSection, sourcedRatio } from '../../bench/report/report.ts';
import { PAIRED_KEYS, targetRatios, type Results } from '../../bench/report/results.ts';

const target = (label: string, p50: number, rounds: number[], ok = 100): PairedTargetResult => ({
  label,
  ok,
  aborted: 0,
  errors: {},
  latency: {
    count: ok,
    p50_us: p50,
    p90_us: p50 * 2,
    p99_us: p50 * 3,
    p999_us: p50 * 4,
    max_us: p50 * 5,
    mean_us: p50,
  },
  round_p50_us: rounds,
});

const result: PairedResult = {
  mode: 'paired',
  rounds: 4,
  segmentMs: 3_000,
  settleMs: 200,
  targets: [
    target('classic1', 4_000, [4_000, 5_000, 3_000, 4_000]),
    target('classic3', 5_000, [5_000, 5_500, 3_600, 6_000]),
    target('parallel3', 3_800, [3_600, 5_500, 2_700, 4_000]),
    target('raw3', 3_000, [3_000, 3_000, 3_000, 3_000]),
    target('etcd3', 2_000, [2_000, 2_000, 2_000, 2_000]),
  ],
};

describe('bench paired step', () => {
  it('divides pooled p50s and each round by its own round, and takes the median of the rounds', () => {
    expect(pairedRatio(result, 'classic3', 'classic1')).toEqual({
      pooled: 1.25,
      rounds: [1.25, 1.1, 1.2, 1.5],
      median_round: 1.225,
      rounds_below_1: 0,
    });
    const par = pairedRatio(result, 'parallel3', 'classic1');
    expect(par.pooled).toBe(0.95);
    expect(par.rounds).toEqual([0.9, 1.1, 0.9, 1]);
    expect(par.median_round).toBe(0.95);
    expect(par.rounds_below_1).toBe(2);
  });

  it('gives no ratio for a target that is missing or counted nothing', () => {
    const none = { pooled: null, rounds: [], median_round: null, rounds_below_1: 0 };
    expect(pairedRatio(result, 'raw3', 'nope')).toEqual(none);
    const empty: PairedResult = { ...result, targets: [...result.targets.slice(0, 4), target('etcd3', 0, [], 0)] };
    expect(pairedRatio(empty, 'raw3', 'etcd3')).toEqual(none);
  });

  it('medians: the middle value, or the mean of the two middle values', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('bounds the load generator by every segment plus a second of handshake each', () => {
    const targets = result.targets.map((t) => ({
      label: t.label,
      kind: 'raw' as const,
      system: 'verdict' as const,
      leader: 'x',
      valueBytes: 100,
    }));
    // 5 warm-ups of 20 s, 12 rounds of 5 segments of 3 s, 65 segments in all.
    expect(pairedSpanMs({ targets, warmupMs: 20_000, segmentMs: 3_000, rounds: 12 })).toBe(100_000 + 180_000 + 65_000);
  });

  it('reports each target and the three ratios beside the sweeps', () => {
    const p = pairedFigures(result, { warmupMs: 20_000 }, { nodes1: 0, nodes3: 1 }, null);
    expect(p.ratios.raft_seq_p50_over_etcd?.pooled).toBe(1.5);
    expect(p.targets.classic3).toMatchObject({ count: 100, p50_us: 5_000, p99_us: 15_000 });
    const r = {
      paired: p,
      ratios: { latency_p50_3_over_1: 1.4, latency_p50_3_parallel_over_1: 1.1, raft_seq_p50_over_etcd: 1.9 },
    } as unknown as Results;
    const md = pairedSection(r).join('\n');
    expect(md).toContain('Leader changes over the step: 0 (1 node), 1 (3 nodes).');
    expect(md).toMatch(/\| classic3 \| 100 \| 5\.00 \| 15\.00 \| 3\.60 – 6\.00 \| 0 \|/);
    expect(md).toMatch(/\| 3-node parallel ÷ 1-node classic .*\| ≤ 1\.0 \| 0\.95× \| 0\.95× \| 2 of 4 \| 1\.1× \|/);
    expect(md).toMatch(/\| raw log ÷ etcd, 1 in flight .*\| 1\.5× \| 1\.5× \| 0 of 4 \| 1\.9× \|/);
    const noEtcd = pairedFigures(
      { ...result, targets: result.targets.slice(0, 4) },
      { warmupMs: 1_000 },
      { nodes1: 0, nodes3: 0 },
      'etcd is not installed',
    );
    expect(noEtcd.ratios.raft_seq_p50_over_etcd).toBeNull();
    expect(pairedSection({ paired: noEtcd, ratios: {} } as unknown as Results).join('\n')).toContain(
      'etcd was left out: etcd is not installed.',
    );
    expect(pairedSection({ paired: null } as unknown as Results).join('\n')).toContain('The step failed in this run');
  });

  it("takes the three latency target keys from the paired step, keeps the sweeps' beside them, and leaves every other key alone", () => {
    const p = pairedFigures(result, { warmupMs: 20_000 }, { nodes1: 0, nodes3: 0 }, null);
    const sweep = {
      latency_p50_3_over_1: 1.4,
      latency_p50_3_parallel_over_1: 1.1,
      raft_seq_p50_over_etcd: 1.9,
      raft_inflight64_over_etcd: 3.1,
      latency_p50_16p_over_1p: 4,
    };
    const t = targetRatios(sweep, p);
    expect(t.ratios).toEqual({
      latency_p50_3_over_1: 1.25,
      latency_p50_3_parallel_over_1: 0.95,
      raft_seq_p50_over_etcd: 1.5,
      raft_inflight64_over_etcd: 3.1,
      latency_p50_16p_over_1p: 4,
    });
    expect(t.ratios_sweep).toEqual({
      latency_p50_3_over_1: 1.4,
      latency_p50_3_parallel_over_1: 1.1,
      raft_seq_p50_over_etcd: 1.9,
    });
    expect(t.ratio_source).toEqual({
      latency_p50_3_over_1: 'paired',
      latency_p50_3_parallel_over_1: 'paired',
      raft_seq_p50_over_etcd: 'paired',
    });
    expect(Object.keys(t.ratio_source)).toEqual([...PAIRED_KEYS]);
    // A pooled ratio keeps its three decimals: 1.004 is not rounded down to a met 1.0.
    const close = targetRatios(sweep, {
      ...p,
      ratios: {
        ...p.ratios,
        latency_p50_3_parallel_over_1: { ...p.ratios.latency_p50_3_parallel_over_1, pooled: 1.004 },
      },
    });
    expect(close.ratios.latency_p50_3_parallel_over_1).toBe(1.004);
  });

  it("falls back to the sweeps' figure where the paired step failed or left etcd out, and says so", () => {
    const sweep = { latency_p50_3_over_1: 1.4, latency_p50_3_parallel_over_1: 1.1, raft_seq_p50_over_etcd: 1.9 };
    const failed = targetRatios(sweep, null);
    expect(failed.ratios).toEqual(sweep);
    expect(failed.ratio_source).toEqual({
      latency_p50_3_over_1: 'sweep',
      latency_p50_3_parallel_over_1: 'sweep',
      raft_seq_p50_over_etcd: 'sweep',
    });
    const noEtcd = pairedFigures(
      { ...result, targets: result.targets.slice(0, 4) },
      { warmupMs: 1_000 },
      { nodes1: 0, nodes3: 0 },
      'etcd is not installed',
    );
    const part = targetRatios(sweep, noEtcd);
    expect(part.ratios).toMatchObject({ latency_p50_3_over_1: 1.25, raft_seq_p50_over_etcd: 1.9 });
    expect(part.ratio_source.raft_seq_p50_over_etcd).toBe('sweep');
    expect(targetRatios({}, null).ratios).toEqual({
      latency_p50_3_over_1: null,
      latency_p50_3_parallel_over_1: null,
      raft_seq_p50_over_etcd: null,
    });
  });

  it('reports a target key with its source and the sweep beside it, and judges the target on the key', () => {
    const p = pairedFigures(result, { warmupMs: 20_000 }, { nodes1: 0, nodes3: 0 }, null);
    const r = {
      paired: p,
      ...targetRatios(
        { latency_p50_3_over_1: 1.4, latency_p50_3_parallel_over_1: 1.1, raft_seq_p50_over_etcd: 1.9 },
        p,
      ),
    } as unknown as Results;
    expect(sourcedRatio(r, 'latency_p50_3_parallel_over_1')).toBe('0.95× (paired; the sweep: 1.1×)');
    const old = { ratios: { latency_p50_3_parallel_over_1: 1.1 } } as unknown as Results;
    expect(sourcedRatio(old, 'latency_p50_3_parallel_over_1')).toBe('1.1×');
    const md = pairedSection(r).join('\n');
    expect(md).toContain('The pooled ratios are the target keys');
    expect(md).toMatch(/\| 3-node parallel ÷ 1-node classic .*\| 0\.95× \| 0\.95× \| 2 of 4 \| 1\.1× \|/);
    const bounds = boundsSection({
      ...r,
      machine: { cores: 2 },
      peak_tps: {},
      failover: { election_ms_per_run: [] },
    } as unknown as Results).join('\n');
    expect(bounds).toContain(
      '| `ratios.latency_p50_3_parallel_over_1` | 0.95× (paired; the sweep: 1.1×) | ≤ 1.0 | yes |',
    );
    expect(bounds).toContain('| `ratios.raft_seq_p50_over_etcd` | 1.5× (paired; the sweep: 1.9×) | ≤ 1.0 | no |');
  });

  it('turns flush counters read at each segment into µs per flush per round, leaving out each warm-up', () => {
    expect(usPerFlush({ flushes: 10, ms: 5 }, { flushes: 30, ms: 7 })).toBe(100);
    expect(usPerFlush({ flushes: 10, ms: 5 }, { flushes: 10, ms: 5 })).toBeNull();
    const at = (flushes: number, ms: number) => ({ flushes, ms });
    // Two targets: warm-ups a, b; then rounds a, b, a, b; then the reading after the last.
    const starts = [
      { label: 'raw3', at: at(0, 0) },
      { label: 'etcd3', at: at(100, 50) },
      { label: 'raw3', at: at(200, 100) },
      { label: 'etcd3', at: at(400, 120) },
      { label: 'raw3', at: at(500, 140) },
      { label: 'etcd3', at: at(700, 180) },
    ];
    expect(roundFlushes(starts, at(700, 180))).toEqual({ raw3: [100, 200], etcd3: [200, null] });
  });

  it("reports each round's flush time beside its p50, or why there is none", () => {
    const p = pairedFigures(result, { warmupMs: 1_000 }, { nodes1: 0, nodes3: 0 }, null, {
      rounds: { classic1: [90, 200, 95, 100], raw3: [180, null, 210, 190] },
    });
    expect(p.flushes_skipped).toBeNull();
    expect(p.targets.raw3.round_flush_us).toEqual([180, null, 210, 190]);
    expect(p.targets.etcd3.round_flush_us).toEqual([]);
    const md = pairedSection({ paired: p, ratios: {} } as unknown as Results).join('\n');
    expect(md).toMatch(/\| raw3 \| 100 \| 3\.00 \| 9\.00 \| 3\.00 – 3\.00 \| 0\.180 – 0\.210 \| 0 \|/);
    expect(md).toMatch(/\| etcd3 \| .* \| - \| 0 \|/);
    const none = pairedFigures(result, { warmupMs: 1_000 }, { nodes1: 0, nodes3: 0 }, null, {
      skipped: '/proc/diskstats has no flush counters for device 0:42',
    });
    expect(none.targets.raw3.round_flush_us).toBeUndefined();
    const md2 = pairedSection({ paired: none, ratios: {} } as unknown as Results).join('\n');
    expect(md2).toContain('No flush times: /proc/diskstats has no flush counters for device 0:42.');
    expect(md2).not.toContain('ms per disk flush');
  });

  it('reads the flush counters of the disk under a directory from /proc/diskstats, or says why it cannot', () => {
    const dir = mkdtempSync(join(tmpdir(), 'verdict-flushes-'));
    try {
      const disk = flushCounterOrNull(dir);
      if (disk.read === null) {
        // tmpfs, overlay or a kernel before 5.5: the reason names the device.
        expect(disk.why).toMatch(/^\/proc\/diskstats has no flush counters for device \d+:\d+ \(the one holding /);
        return;
      }
      const before = disk.read();
      const fd = openSync(join(dir, 'f'), 'w');
      writeSync(fd, Buffer.alloc(200, 1));
      fdatasyncSync(fd);
      closeSync(fd);
      const after = disk.read();
      expect(Number.isInteger(before.flushes) && Number.isInteger(before.ms)).toBe(true);
      expect(after.flushes).toBeGreaterThanOrEqual(before.flushes);
      expect(after.ms).toBeGreaterThanOrEqual(before.ms);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
