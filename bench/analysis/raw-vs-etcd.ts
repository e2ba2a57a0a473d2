// `npm run bench -- raw-vs-etcd [--warmup-ms 20000] [--measure-ms 10000]`
//
// Verdict's raw replicated log beside etcd 3.4, in one run, on this machine:
// a 3-node Verdict cluster, then a 3-member etcd cluster, each measured with
// bench/harness/loadgen.ts (100-byte Puts to the leader, 1 and 64 in flight). The
// part of `npm run bench` that gives anchors.etcd.* and the two
// raft-over-etcd ratios, for checking those alone, with the fsync floor of
// the same run (a 200-byte append and fdatasync on the same disk). Prints
// one JSON line.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { measureEtcdAnchor } from '../scenarios/etcd-anchor.ts';
import type { FsyncFloor } from '../floors/floor-child.ts';
import type { LoadResult, RawLoad } from '../harness/loadgen.ts';
import { BenchCluster, intFlag as flag, killAllNow, runJsonChild, stopAll } from '../harness/procs.ts';
import { etcdRatios } from '../report/results.ts';

const WARMUP_MS = flag('warmup-ms', 20_000);
const MEASURE_MS = flag('measure-ms', 10_000);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-raw-etcd-'));
  process.on('exit', killAllNow);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void stopAll().then(() => process.exit(130)));
  const loadStart = loadavg()[0];
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  try {
    const fsync = await runJsonChild<FsyncFloor>(
      'fsync floor',
      'floors/floor-child.ts',
      { mode: 'fsync', file: join(dir, 'fsync-floor.dat'), bytes: 200, samplesMax: 2_000, measureMs: 5_000 },
      join(dir, 'floors.log'),
      35_000,
    );
    log(
      `fsync of 200 B: p50 ${(fsync.fsync.p50_us / 1000).toFixed(2)} ms, p99 ${(fsync.fsync.p99_us / 1000).toFixed(2)} ms`,
    );
    const cluster = await BenchCluster.start(join(dir, 'verdict'), 3, 'raw');
    const raft: Record<string, number> = {};
    try {
      for (const inflight of [1, 64]) {
        const leader = await cluster.waitForLeader();
        const cfg: RawLoad = {
          mode: 'raw',
          leader: leader.address,
          inflight,
          warmupMs: WARMUP_MS,
          measureMs: MEASURE_MS,
          valueBytes: 100,
        };
        const r = await runJsonChild<LoadResult>(
          `load raw inflight${inflight}`,
          'harness/loadgen.ts',
          cfg,
          join(dir, 'verdict', `load-${inflight}.log`),
          WARMUP_MS + MEASURE_MS + 90_000,
        );
        log(
          `verdict raw log, 3 nodes, ${inflight} in flight: ${r.tps} puts/s, p50 ${(r.latency.p50_us / 1000).toFixed(2)} ms, p99 ${(r.latency.p99_us / 1000).toFixed(2)} ms, errors ${JSON.stringify(r.errors)}`,
        );
        if (inflight === 1) raft.seq_p50_us = r.latency.p50_us;
        else raft.inflight64_tps = r.tps;
      }
    } finally {
      await cluster.destroy();
    }
    const etcd = await measureEtcdAnchor(dir, { warmupMs: WARMUP_MS, measureMs: MEASURE_MS, log });
    if ('skipped' in etcd) log(`etcd anchor skipped: ${etcd.skipped}`);
    else
      log(
        `etcd ${etcd.version}, 3 members: 1 in flight p50 ${(etcd.seq_p50_us / 1000).toFixed(2)} ms (${etcd.seq_tps} puts/s); 64 in flight ${etcd.inflight64_tps} puts/s, p50 ${(etcd.inflight64_p50_us / 1000).toFixed(2)} ms; errors ${JSON.stringify(etcd.errors)}`,
      );
    const out = {
      warmupMs: WARMUP_MS,
      measureMs: MEASURE_MS,
      loadAvgStart: loadStart,
      loadAvgEnd: loadavg()[0],
      fsync_200B: fsync.fsync,
      raft,
      anchors: { etcd },
      ratios: etcdRatios(raft, etcd),
    };
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
