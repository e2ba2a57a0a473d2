// The etcd anchor of the benchmark: the two raft-over-etcd ratios, the
// anchors.etcd keys when etcd was measured or skipped, and the report's table
// (bench/report/results.ts, bench/report/report.ts).
import { describe, expect, it } from 'vitest';
import type { EtcdAnchor } from '../../bench/scenarios/etcd-anchor.ts';
import { etcdSection } from '../../bench/report/report.ts';
import { etcdAnchorFields, etcdRatios, type Results } from '../../bench/report/results.ts';

const etcd: EtcdAnchor = {
  version: '3.4.23',
  members: 3,
  seq_p50_us: 2_000,
  seq_p99_us: 6_000,
  seq_tps: 450,
  inflight64_tps: 4_000,
  inflight64_p50_us: 15_000,
  inflight64_p99_us: 40_000,
  seq_cpu_ms_per_put: 0.9,
  inflight64_cpu_ms_per_put: 0.3,
  errors: {},
};
const raft = { seq_p50_us: 3_000, seq_p99_us: 9_000, inflight64_tps: 6_000, inflight64_p50_us: 10_000 };

describe('bench etcd anchor', () => {
  it('ratios: sequential p50 is Verdict over etcd (lower is better), 64 in flight is throughput over etcd (higher is better)', () => {
    expect(etcdRatios(raft, etcd)).toEqual({ raft_seq_p50_over_etcd: 1.5, raft_inflight64_over_etcd: 1.5 });
  });

  it('keeps the anchors.etcd keys when etcd was skipped, null with the reason, and gives no ratio', () => {
    const skipped = { skipped: 'etcd is not installed and installing it needs root' };
    expect(etcdRatios(raft, skipped)).toEqual({ raft_seq_p50_over_etcd: null, raft_inflight64_over_etcd: null });
    expect(etcdAnchorFields(skipped)).toEqual({ seq_p50_us: null, inflight64_tps: null, skipped: skipped.skipped });
    expect(etcdAnchorFields(etcd)).toMatchObject({ seq_p50_us: 2_000, inflight64_tps: 4_000, skipped: null });
  });

  it('reports both systems side by side with the ratios, or says why etcd is missing', () => {
    const r = { raft, ratios: etcdRatios(raft, etcd), anchors: { etcd: etcdAnchorFields(etcd) } } as unknown as Results;
    const md = etcdSection(r).join('\n');
    expect(md).toContain('etcd 3.4.23, 3 members');
    expect(md).toMatch(/\| 1 in flight, p50 ms .*\| 3\.00 \| 2\.00 \| 1\.5× /);
    expect(md).toMatch(/\| 64 in flight, puts\/s .*\| 6000 \| 4000 \| 1\.5× /);
    const skipped = {
      raft,
      ratios: etcdRatios(raft, null),
      anchors: { etcd: etcdAnchorFields({ skipped: 'no apt candidate' }) },
    } as unknown as Results;
    expect(etcdSection(skipped).join('\n')).toContain('Skipped: no apt candidate.');
  });
});
