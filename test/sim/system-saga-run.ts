// Running the saga simulation under vitest: the seeded fast-check property in
// shards (one per test file, so vitest's two workers share the load), and the
// replay of one failing schedule from its seed and path.

import fc from 'fast-check';
import { runSagaWorld, sagaScenarioArb, type SagaMutant, type SagaScenario } from './system-saga.ts';

export const SAGA_SHARDS = 2;
/** Total schedules over all shards; VERDICT_SAGA_SEEDS overrides (a soak: VERDICT_SAGA_SEEDS=100000). */
export const SAGA_SEEDS = Number(process.env.VERDICT_SAGA_SEEDS ?? 10_000);
export const SAGA_BASE_SEED = Number(process.env.VERDICT_SAGA_SEED ?? 20261215);
/** "seed:path" of a failing run, as printed on failure. */
export const SAGA_REPLAY = process.env.VERDICT_SAGA_REPLAY;
const TRACE = process.env.VERDICT_SAGA_TRACE === '1';
const MUTANT = process.env.VERDICT_SAGA_MUTANT as SagaMutant | undefined;

/**
 * Another family of saga schedules run the same way (sagas over decision groups, system-saga-groups.sim.test.ts): its
 * generator, count, first seed, replay command (file and test filter) and label.
 */
export interface SagaFamily {
  arb: fc.Arbitrary<SagaScenario>;
  seeds: number;
  baseSeed: number;
  replayFile: string;
  label: string;
}

/**
 * Runs shard `shard` of SAGA_SEEDS schedules (or the replay), prints the `saga:` line and, on failure, how to replay
 * it.
 */
export function runSagaShard(
  shard: number,
  family?: SagaFamily,
): { failed: boolean; line: string; quietFaults: number } {
  const shards = family === undefined ? SAGA_SHARDS : 1;
  const seeds = family?.seeds ?? SAGA_SEEDS;
  const n = Math.floor(seeds / shards) + (shard < seeds % shards ? 1 : 0);
  const t = {
    runs: 0,
    violations: 0,
    crashes: 0,
    partitions: 0,
    quietFaults: 0,
    sagas: 0,
    finished: 0,
    compensated: 0,
    stuck: 0,
    txns: 0,
    committed: 0,
    endBatches: 0,
    endBatchedSagas: 0,
    endSingles: 0,
  };
  const started = process.cpuUsage();
  const params: fc.Parameters<[Parameters<typeof runSagaWorld>[0]]> = SAGA_REPLAY
    ? {
        seed: Number(SAGA_REPLAY.split(':')[0]),
        path: SAGA_REPLAY.split(':').slice(1).join(':'),
        endOnFailure: true,
        numRuns: 1,
      }
    : { seed: (family?.baseSeed ?? SAGA_BASE_SEED) + shard, numRuns: n, endOnFailure: false };
  const out = fc.check(
    fc.property(family?.arb ?? sagaScenarioArb, (sc) => {
      const r = runSagaWorld(
        MUTANT ? { ...sc, sagaMutant: MUTANT } : sc,
        SAGA_REPLAY && TRACE ? (line) => console.log(line) : undefined,
      );
      t.runs++;
      t.crashes += r.crashes;
      t.partitions += r.partitions;
      t.quietFaults += r.quietFaults;
      t.sagas += r.sagas;
      t.finished += r.finished;
      t.compensated += r.compensated;
      t.stuck += r.stuck;
      t.txns += r.txns;
      t.committed += r.committed;
      t.endBatches += r.ext?.endCalls.batches ?? 0;
      t.endBatchedSagas += r.ext?.endCalls.batchedSagas ?? 0;
      t.endSingles += r.ext?.endCalls.singles ?? 0;
      if (r.violations.length > 0) {
        t.violations++;
        throw new Error(r.violations.join('\n'));
      }
    }),
    params,
  );
  const cpu = process.cpuUsage(started);
  const secs = (cpu.user + cpu.system) / 1e6;
  const line = `${family?.label ?? 'saga'}: seeds=${t.runs} sagas=${t.sagas} finished=${t.finished} compensated=${t.compensated} stuckFlagged=${t.stuck} crashes=${t.crashes} partitions=${t.partitions}${t.quietFaults > 0 ? ` quietFaults=${t.quietFaults}` : ''} violations=${t.violations} (shard ${shard + 1}/${shards}: txns=${t.txns} committed=${t.committed} endBatches=${t.endBatches} endBatchedSagas=${t.endBatchedSagas} endSingles=${t.endSingles} ${secs.toFixed(1)} s CPU)`;
  console.log(line);
  if (out.failed) {
    const cmd = `${MUTANT ? `VERDICT_SAGA_MUTANT=${MUTANT} ` : ''}VERDICT_SAGA_REPLAY='${out.seed}:${out.counterexamplePath}' npx vitest run ${family?.replayFile ?? 'test/sim/system-saga.sim.test.ts'}`;
    console.error(
      `saga simulation failed; replay with:\n  ${cmd}\n(add VERDICT_SAGA_TRACE=1 to print every protocol event)\ncounterexample: ${JSON.stringify(out.counterexample)}\n${out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance)}`,
    );
  }
  return { failed: out.failed, line, quietFaults: t.quietFaults };
}
