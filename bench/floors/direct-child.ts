// What the direct floors (bench/floors/pg-direct.ts, mysql-direct.ts, pg-minimal.ts) share:
// the child process's life (one JSON argument in, one JSON line out, exit
// when the orchestrator goes away or a hard deadline passes) and the shape
// of the result.
import { encode, newHistogram, recordMs, summarize, type Histogram, type LatencySummary } from '../harness/hist.ts';

/** What a direct floor child prints (bench/floors/pg-direct.ts, mysql-direct.ts, pg-minimal.ts). */
export interface PgDirectResult {
  connections: number;
  measured_ms: number;
  ok: number;
  errors: Record<string, number>;
  tps: number;
  latency: LatencySummary;
  /**
   * gids of this run found still prepared at the end and rolled back (0 unless a failure interrupted a transaction).
   */
  leftover_prepared: number;
  histogram: string;
}

/** Time the workers get after the measured window to finish the transaction in hand. */
export const DRAIN_MS = 30_000;

export interface DirectTiming {
  connections: number;
  warmupMs: number;
  measureMs: number;
}

export function directResult(
  cfg: DirectTiming,
  ok: number,
  errors: Record<string, number>,
  h: Histogram,
  leftover: number,
): PgDirectResult {
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

/**
 * The closed loop of a direct floor: `connections` workers, each running
 * txn(worker, seq) back to back until the measured window ends. A
 * transaction that throws is counted by errorCode (in the window) and the
 * worker goes on; txn undoes its own half-done work before it throws. Only
 * transactions that finish inside the window count.
 */
export async function closedLoop(
  cfg: DirectTiming,
  txn: (worker: number, seq: number) => Promise<void>,
  errorCode: (err: unknown) => string,
): Promise<{ ok: number; errors: Record<string, number>; h: Histogram }> {
  if (!(Number.isInteger(cfg.connections) && cfg.connections >= 1))
    throw new Error(`connections must be a positive integer, not ${cfg.connections}`);
  const h = newHistogram();
  const errors: Record<string, number> = {};
  let ok = 0;
  const measureFrom = performance.now() + cfg.warmupMs;
  const stopAt = measureFrom + cfg.measureMs;
  const worker = async (i: number): Promise<void> => {
    for (let seq = 0; performance.now() < stopAt; seq++) {
      const t0 = performance.now();
      try {
        await txn(i, seq);
      } catch (err) {
        if (performance.now() >= measureFrom) errors[errorCode(err)] = (errors[errorCode(err)] ?? 0) + 1;
        continue;
      }
      const t1 = performance.now();
      if (t1 < measureFrom || t1 > stopAt) continue;
      ok++;
      recordMs(h, t1 - t0);
    }
  };
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(Array.from({ length: cfg.connections }, (_, i) => worker(i))),
    new Promise<void>((r) => (timer = setTimeout(r, cfg.warmupMs + cfg.measureMs + DRAIN_MS))),
  ]);
  clearTimeout(timer);
  return { ok, errors, h };
}

/** Runs a direct floor as the child process: reads its config from argv, prints its result, exits. */
export async function directChildMain<C extends DirectTiming>(
  name: string,
  run: (cfg: C) => Promise<PgDirectResult>,
): Promise<void> {
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
