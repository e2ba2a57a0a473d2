// `npm run bench -- cli-status --endpoints HOST:PORT,... [--runs N] [--bin PATH]`:
// cli.status_ms alone, against a cluster that is already running (bench/main.ts
// measures it against its own 3-node cluster). --bin times another checkout's
// bin/verdict.mjs, for a before/after comparison on the same cluster. The
// load average is printed with the figures: on a shared machine it says how
// far they are from an idle one.
import { loadavg } from 'node:os';
import { measureCliStatus } from '../scenarios/cli-status.ts';
import { BIN } from '../harness/procs.ts';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
}

const endpoints = (arg('--endpoints') ?? '').split(',').filter(Boolean);
const runs = Number(arg('--runs') ?? '20');
if (endpoints.length === 0 || !Number.isInteger(runs) || runs < 1 || runs > 1_000) {
  process.stderr.write('usage: npm run bench -- cli-status --endpoints HOST:PORT,... [--runs 1..1000] [--bin PATH]\n');
  process.exit(64);
}
const bin = arg('--bin') ?? BIN;
const loadBefore = loadavg()[0];
const t = await measureCliStatus(endpoints, runs, bin);
process.stdout.write(
  `${JSON.stringify({ bin, ...t, load_avg_1m_start: Math.round(loadBefore * 100) / 100, load_avg_1m_end: Math.round(loadavg()[0] * 100) / 100 })}\n`,
);
