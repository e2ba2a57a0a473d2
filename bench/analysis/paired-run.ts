// `npm run bench -- paired [--warmup-ms 20000] [--segment-ms 3000] [--settle-ms 200] [--rounds 12]`
//
// The paired step of `npm run bench` on its own (bench/scenarios/paired.ts): a 1-node
// and a 3-node Verdict cluster with two memory participants each, and etcd
// 3.4, all up at once; one load generator takes classic commit on one node,
// classic and parallel commit on three, the raw log and etcd in turn, one
// operation in flight, pausing the systems it is not measuring. Prints a
// line per target and the ratios, then one JSON line.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { msPerFlush } from '../harness/disk-flushes.ts';
import { measurePaired } from '../scenarios/paired.ts';
import { intFlag as flag, killAllNow, stopAll } from '../harness/procs.ts';

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-paired-'));
  process.on('exit', killAllNow);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void stopAll().then(() => process.exit(130)));
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const loadStart = loadavg()[0];
  try {
    const p = await measurePaired(dir, {
      warmupMs: flag('warmup-ms', 20_000),
      segmentMs: flag('segment-ms', 3_000),
      settleMs: flag('settle-ms', 200),
      rounds: flag('rounds', 12),
      log,
    });
    for (const [label, t] of Object.entries(p.targets))
      log(
        `${label.padEnd(10)} p50 ${(t.p50_us / 1000).toFixed(2)} ms, p99 ${(t.p99_us / 1000).toFixed(2)} ms, ${t.count} counted, rounds' p50 ${t.round_p50_us.map((x) => (x / 1000).toFixed(2)).join(' ')}` +
          (t.round_flush_us === undefined
            ? ''
            : `; rounds' ms per disk flush ${t.round_flush_us.map(msPerFlush).join(' ')}`),
      );
    if (p.flushes_skipped) log(`no flush times: ${p.flushes_skipped}`);
    for (const [key, r] of Object.entries(p.ratios))
      log(
        r === null
          ? `${key}: no etcd (${p.etcd_skipped})`
          : `${key}: pooled ${r.pooled}, median of rounds ${r.median_round}, below 1 in ${r.rounds_below_1} of ${r.rounds.length} rounds`,
      );
    process.stdout.write(JSON.stringify({ loadAvgStart: loadStart, loadAvgEnd: loadavg()[0], ...p }) + '\n');
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
