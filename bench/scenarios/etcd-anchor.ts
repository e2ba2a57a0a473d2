// The etcd anchor's measurement: etcd 3.4, three members on loopback, the
// raw-log load of bench/harness/loadgen.ts (100-byte Puts to the leader) one at a time
// and 64 in flight, with the same warm-up and window as Verdict's raw log.
import { join } from 'node:path';
import { EtcdCluster, ensureEtcd } from '../harness/etcd.ts';
import type { LoadResult, RawLoad } from '../harness/loadgen.ts';
import { childProc, CpuWindow } from '../harness/cpu-sample.ts';
import { runJsonChild } from '../harness/procs.ts';

export interface EtcdAnchor {
  version: string;
  members: number;
  seq_p50_us: number;
  seq_p99_us: number;
  seq_tps: number;
  inflight64_tps: number;
  inflight64_p50_us: number;
  inflight64_p99_us: number;
  /**
   * CPU of the three members and the load generator per acknowledged Put (bench/harness/cpu-sample.ts), beside
   * Verdict's raw log's; null if not sampled.
   */
  seq_cpu_ms_per_put: number | null;
  inflight64_cpu_ms_per_put: number | null;
  /** Failed Puts in the two windows, by code. */
  errors: Record<string, number>;
}

export type EtcdAnchorResult = EtcdAnchor | { skipped: string };

export async function measureEtcdAnchor(
  dir: string,
  o: { warmupMs: number; measureMs: number; log: (line: string) => void },
): Promise<EtcdAnchorResult> {
  const bin = ensureEtcd(o.log);
  if ('skipped' in bin) return bin;
  const cluster = await EtcdCluster.start(bin, join(dir, 'etcd'));
  try {
    const runs: LoadResult[] = [];
    const cpu: (number | null)[] = [];
    for (const inflight of [1, 64]) {
      const leader = await cluster.leader();
      const cfg: RawLoad = {
        mode: 'raw',
        system: 'etcd',
        leader,
        inflight,
        warmupMs: o.warmupMs,
        measureMs: o.measureMs,
        valueBytes: 100,
      };
      const window = new CpuWindow(() => cluster.members.flatMap((m) => childProc('etcd', m.name, m.child)));
      const r = await runJsonChild<LoadResult>(
        `load etcd inflight${inflight}`,
        'harness/loadgen.ts',
        cfg,
        join(dir, 'etcd', `load-inflight${inflight}.log`),
        o.warmupMs + o.measureMs + 90_000,
        {
          onLine: window.onLine,
        },
      );
      runs.push(r);
      cpu.push(window.figures(r.ok)?.ms_per_txn ?? null);
    }
    const [seq, many] = runs;
    const errors: Record<string, number> = {};
    for (const r of runs) for (const [k, v] of Object.entries(r.errors)) errors[k] = (errors[k] ?? 0) + v;
    return {
      version: cluster.version,
      members: cluster.members.length,
      seq_p50_us: seq.latency.p50_us,
      seq_p99_us: seq.latency.p99_us,
      seq_tps: seq.tps,
      inflight64_tps: many.tps,
      inflight64_p50_us: many.latency.p50_us,
      inflight64_p99_us: many.latency.p99_us,
      seq_cpu_ms_per_put: cpu[0],
      inflight64_cpu_ms_per_put: cpu[1],
      errors,
    };
  } finally {
    await cluster.destroy();
  }
}
