// `npm run bench -- failover [--runs N (3)] [--quick] [--timeline]`
//
// The failover part of `npm run bench` alone (bench/scenarios/failover.ts), with the
// full run's timings unless --quick: a fresh three-node cluster with two
// memory participants and 16 clients per run, the leader SIGKILLed in the
// middle. Prints one line per run and then the summary the full run writes
// under `failover` in bench/results/latest.json (one JSON line). Writes no
// result file. Everything is stopped at the end. --timeline: nodes and
// participants log at info, and each run prints where its in-doubt window
// went (bench/scenarios/failover-timeline.ts) with the load average at its start.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { failoverPlan, runFailover, type FailoverRun } from '../scenarios/failover.ts';
import { formatTimeline } from '../scenarios/failover-timeline.ts';
import { killAllNow, stopAll } from '../harness/procs.ts';
import { summarizeFailover } from '../report/results.ts';

function runsFlag(): number {
  const i = process.argv.indexOf('--runs');
  if (i < 0) return 3;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0 || v > 20)
    throw new Error(`--runs needs an integer 1..20, not ${process.argv[i + 1] ?? '(nothing)'}`);
  return v;
}

const quick = process.argv.includes('--quick');
const timeline = process.argv.includes('--timeline');
const runs = runsFlag();
process.on('exit', killAllNow);
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void stopAll().then(() => process.exit(130)));

const dir = mkdtempSync(join(tmpdir(), 'verdict-failover-'));
const results: FailoverRun[] = [];
try {
  for (let i = 1; i <= runs; i++) {
    const load = loadavg()[0].toFixed(1);
    const r = await runFailover(join(dir, `failover${i}`), `f${i}`, {
      ...failoverPlan(quick),
      ...(timeline ? { logLevel: 'info' } : {}),
    });
    results.push(r);
    console.log(
      `run ${i} (load ${load}): killed ${r.killedLeader}; election ${r.electionMs} ms; in doubt ${r.inDoubt.pairs} pair(s), p99 ${r.inDoubt.p99Ms ?? '-'} ms, window ${r.inDoubt.windowMs ?? '-'} ms; ` +
        `cluster view ${r.cluster.windowMs === null ? '-' : Math.round(r.cluster.windowMs)} ms; client gap ${r.clientGapMs ?? '-'} ms; still in doubt ${r.inDoubt.stillInDoubt}; rolled back ${r.decidedRolledBack}`,
    );
    if (r.events) console.log(formatTimeline(r.events));
  }
  const { runs: _runs, ...summary } = summarizeFailover(results, 'bench/analysis/failover-only.ts');
  console.log(JSON.stringify(summary));
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
