// The real-process chaos test (see chaos.ts). Short by default, so it runs in
// `npm test`; `npm run test:chaos` runs it for minutes.
//
//   VERDICT_CHAOS_MS    how long the nemesis injects faults (default 25000)
//   VERDICT_CHAOS_SEED  the seed of the fault schedule (default: a fresh one, printed)
import { randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useProcessCleanup } from '../process/harness.ts';
import { runChaos } from './chaos.ts';

useProcessCleanup();

const durationMs = Number(process.env.VERDICT_CHAOS_MS ?? 25_000);
const seed = Number(process.env.VERDICT_CHAOS_SEED ?? randomInt(1, 2 ** 31 - 1));
if (!Number.isInteger(durationMs) || durationMs < 1_000)
  throw new Error(
    `VERDICT_CHAOS_MS must be an integer number of milliseconds >= 1000, not "${process.env.VERDICT_CHAOS_MS}"`,
  );
if (!Number.isInteger(seed) || seed < 0)
  throw new Error(`VERDICT_CHAOS_SEED must be a non-negative integer, not "${process.env.VERDICT_CHAOS_SEED}"`);

describe('chaos on real processes', () => {
  it(
    `keeps every transaction all-or-nothing through kills, stops and partitions (seed ${seed}, ${durationMs} ms of faults)`,
    async () => {
      const r = await runChaos({ durationMs, seed });
      // A run that injected nothing or committed nothing proves nothing.
      expect(r.faults, 'faults injected').toBeGreaterThan(0);
      expect(r.committed, 'transactions committed').toBeGreaterThan(0);
      expect(
        r.violations.map((v) => `${v.txnId}: ${v.what}`),
        r.summary,
      ).toEqual([]);
    },
    durationMs + 420_000,
  );
});
