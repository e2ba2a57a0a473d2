// `npm run bench -- fanout [--quick] [--participants N (16)] [--warmup-ms MS] [--measure-ms MS]`
//
// The participant sweep's end points alone, beside their floor in the same
// run: a 3-node cluster with N memory participant processes, one client,
// classic two-phase commit with one participant and then with all N (the
// full run's nodes3_memory1_c1 and nodes3_memory16_c1), then the fan-out
// floor (bench/floors/floors.ts, fanoutFloor: the same prepare phase done by
// minimal processes, one message in, one fdatasync, one message out each).
// Prints the ratio of the two p50s (ratios.latency_p50_16p_over_1p), the
// floor's ratio (latency_p50_16p_over_1p_fanout_floor, computed as the full
// run's report does) and how far above the floor the ratio is, with the CPU
// per transaction by process and the load average, then one JSON line.
// Writes no results file.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { childProc, CpuWindow } from '../harness/cpu-sample.ts';
import type { CommitLoad, LoadResult } from '../harness/loadgen.ts';
import { fanoutFloor } from '../floors/floors.ts';
import { BenchCluster, intFlag as flag, killAllNow, runJsonChild, stopAll } from '../harness/procs.ts';

const QUICK = process.argv.includes('--quick');
const N = flag('participants', 16);
const WARMUP_MS = flag('warmup-ms', QUICK ? 3_000 : 10_000);
const MEASURE_MS = flag('measure-ms', QUICK ? 5_000 : 12_000);

const r3 = (x: number): number => Math.round(x * 1000) / 1000;
const say = (line: string): void => void process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-fanout-'));
  process.on('exit', killAllNow);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void stopAll().then(() => process.exit(130)));
  try {
    const ids = Array.from({ length: N }, (_, i) => `p${i + 1}`);
    const cluster = await BenchCluster.start(join(dir, 'cluster'), 3, 'fan');
    let one: { p50Us: number; cpuMsPerTxn: number | null };
    let all: { p50Us: number; cpuMsPerTxn: number | null };
    try {
      await cluster.startParticipants(ids);
      one = await commit(dir, cluster, ids.slice(0, 1));
      all = await commit(dir, cluster, ids);
    } finally {
      await cluster.destroy();
    }
    const fan = await fanoutFloor(dir, { measureMs: MEASURE_MS, fsyncSamplesMax: 0 });
    say(
      `fan-out floor: PREPARE to 1 participant process ${(fan.participants1.p50_us / 1000).toFixed(2)} ms, to ${fan.n} at once ${(fan.participantsN.p50_us / 1000).toFixed(2)} ms (load average ${loadavg()[0].toFixed(2)})`,
    );
    const ratio = all.p50Us / one.p50Us;
    const floor = (one.p50Us - fan.participants1.p50_us + fan.participantsN.p50_us) / one.p50Us;
    say(`latency_p50_${N}p_over_1p ${r3(ratio)}; its fan-out floor ${r3(floor)}; ratio ÷ floor ${r3(ratio / floor)}`);
    process.stdout.write(
      `${JSON.stringify({
        participants: N,
        warmupMs: WARMUP_MS,
        measureMs: MEASURE_MS,
        p50_1p_us: one.p50Us,
        p50_np_us: all.p50Us,
        cpu_ms_per_txn_1p: one.cpuMsPerTxn,
        cpu_ms_per_txn_np: all.cpuMsPerTxn,
        fanout_participants1_us: fan.participants1.p50_us,
        fanout_participantsN_us: fan.participantsN.p50_us,
        latency_p50_np_over_1p: r3(ratio),
        fanout_floor: r3(floor),
        over_floor: r3(ratio / floor),
      })}\n`,
    );
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function commit(
  dir: string,
  cluster: BenchCluster,
  participants: string[],
): Promise<{ p50Us: number; cpuMsPerTxn: number | null }> {
  const leader = await cluster.waitForLeader();
  const cfg: CommitLoad = {
    mode: 'commit',
    workload: 'memory',
    endpoints: cluster.endpoints,
    participants,
    clients: 1,
    warmupMs: WARMUP_MS,
    measureMs: MEASURE_MS,
    keyPrefix: `fan${participants.length}`,
    txnTimeoutMs: 30_000,
    parallelCommit: false,
  };
  const window = new CpuWindow(() => [
    ...cluster.nodes.flatMap((n) => childProc(n.id === leader.id ? 'leader' : 'follower', n.id, n.child)),
    ...participants.flatMap((p) => childProc('participant', p, cluster.participants.get(p))),
  ]);
  const load = await runJsonChild<LoadResult>(
    `load ${participants.length}p`,
    'harness/loadgen.ts',
    cfg,
    join(dir, `load-${participants.length}p.log`),
    WARMUP_MS + MEASURE_MS + 90_000,
    {
      onLine: window.onLine,
    },
  );
  const cpu = window.figures(load.ok);
  say(
    `${participants.length} participant(s), 1 client: ${load.tps} tx/s, p50 ${(load.latency.p50_us / 1000).toFixed(2)} ms, p99 ${(load.latency.p99_us / 1000).toFixed(2)} ms` +
      (cpu !== null
        ? `; CPU ${cpu.ms_per_txn} ms/txn: ${Object.entries(cpu.by_kind)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}`
        : '') +
      ` (load average ${loadavg()[0].toFixed(2)})`,
  );
  return { p50Us: load.latency.p50_us, cpuMsPerTxn: cpu?.ms_per_txn ?? null };
}

await main();
