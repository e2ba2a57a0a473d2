// What the direct floors (bench/pg-direct.ts, bench/mysql-direct.ts) share:
// the child process's life (one JSON argument in, one JSON line out, exit
// when the orchestrator goes away or a hard deadline passes) and the shape
// of the result.
import { encode, summarize, type Histogram } from './hist.ts';
import type { PgDirectResult } from './pg-direct.ts';

/** Time the workers get after the measured window to finish the transaction in hand. */
export const DRAIN_MS = 30_000;

export interface DirectTiming {
  connections: number;
  warmupMs: number;
  measureMs: number;
}

export function directResult(cfg: DirectTiming, ok: number, errors: Record<string, number>, h: Histogram, leftover: number): PgDirectResult {
  return {
    connections: cfg.connections,
    measured_ms: cfg.measureMs,
    ok,
    errors,
    tps: Math.round((ok / cfg.measureMs) * 1000 * 10) / 10,
    latency: summarize(h),
    leftover_prepared: leftover,
    histogram: encode(h),
  };
}

/** Runs a direct floor as the child process: reads its config from argv, prints its result, exits. */
export async function directChildMain<C extends DirectTiming>(name: string, run: (cfg: C) => Promise<PgDirectResult>): Promise<void> {
  const cfg = JSON.parse(process.argv[2] ?? '') as C;
  // The orchestrator holds our stdin; when it goes away, so do we.
  process.stdin.on('end', () => process.exit(2)).resume();
  const hardMs = cfg.warmupMs + cfg.measureMs + DRAIN_MS + 30_000;
  setTimeout(() => {
    process.stderr.write(`${name}: hard deadline of ${hardMs} ms reached; exiting\n`);
    process.exit(3);
  }, hardMs).unref();
  const r = await run(cfg);
  process.stdout.write(JSON.stringify(r) + '\n', () => process.exit(0));
}
