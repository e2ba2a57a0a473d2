// Running the whole-system simulation under vitest: the seeded fast-check
// property, split in shards so that vitest's two workers share the load (each
// test file runs one shard and prints its own `ac:` line), and the replay of
// one failing schedule from its seed and path.

import fc from 'fast-check';
import { systemScenarioArb } from './system-schedule.ts';
import { SystemWorld, type Mutant, type SystemScenario } from './system-world.ts';

export const SHARDS = 2;
/** Total schedules over all shards; VERDICT_AC_SEEDS overrides (a soak: VERDICT_AC_SEEDS=200000). */
export const SEEDS = Number(process.env.VERDICT_AC_SEEDS ?? 40_000);
export const BASE_SEED = Number(process.env.VERDICT_AC_SEED ?? 20261205);
/** "seed:path" of a failing run, as printed on failure. */
export const REPLAY = process.env.VERDICT_AC_REPLAY;
/** With a replay: print every protocol event of the run. */
const TRACE = process.env.VERDICT_AC_TRACE === '1';
export const REPLAY_FILE = 'test/sim/system.sim.test.ts';
/** Runs the schedules against a mutant (see SystemScenario.mutant), to watch the checker fail, shrink and replay. */
const MUTANT = process.env.VERDICT_AC_MUTANT as Mutant | undefined;

export interface ShardOutcome {
  failed: boolean;
  line: string;
  /** Crashes and partitions that struck a node leading a quiesced group (SystemResult.quietFaults), over the shard. */
  quietFaults: number;
}

/**
 * Another family of schedules run the same way (the TCC shard, system-tcc.sim.test.ts): its generator, count, first
 * seed and file.
 */
export interface ShardFamily {
  arb: fc.Arbitrary<SystemScenario>;
  seeds: number;
  baseSeed: number;
  replayFile: string;
  label: string;
}

/** Runs shard `shard` of SEEDS schedules (or the replay), prints the `ac:` line and, on failure, how to replay it. */
export function runShard(shard: number, family?: ShardFamily): ShardOutcome {
  const shards = family === undefined ? SHARDS : 1;
  const seeds = family?.seeds ?? SEEDS;
  const n = Math.floor(seeds / shards) + (shard < seeds % shards ? 1 : 0);
  let runs = 0;
  let crashes = 0;
  let diskFaults = 0;
  let refusals = 0;
  let partitions = 0;
  let quietFaults = 0;
  let violations = 0;
  let txns = 0;
  let committed = 0;
  let steps = 0;
  const started = process.cpuUsage();
  const params: fc.Parameters<[SystemScenario]> = REPLAY
    ? { seed: Number(REPLAY.split(':')[0]), path: REPLAY.split(':').slice(1).join(':'), endOnFailure: true, numRuns: 1 }
    : { seed: (family?.baseSeed ?? BASE_SEED) + shard, numRuns: n, endOnFailure: false };
  const out = fc.check(
    fc.property(family?.arb ?? systemScenarioArb, (sc) => {
      const w = new SystemWorld(MUTANT ? { ...sc, mutant: MUTANT } : sc);
      if (REPLAY && TRACE) w.trace = (line) => console.log(line);
      const r = w.run();
      runs++;
      crashes += r.crashes;
      diskFaults += r.diskFaults;
      refusals += r.refusals;
      partitions += r.partitions;
      quietFaults += r.quietFaults;
      txns += r.txns;
      committed += r.committed;
      steps += r.steps;
      if (r.violations.length > 0) {
        violations++;
        throw new Error(r.violations.join('\n'));
      }
    }),
    params,
  );
  const cpu = process.cpuUsage(started);
  const secs = (cpu.user + cpu.system) / 1e6;
  const line = `${family?.label ?? 'ac'}: seeds=${runs} crashes=${crashes} partitions=${partitions} violations=${violations} (shard ${shard + 1}/${shards}: txns=${txns} committed=${committed} diskFaults=${diskFaults} refusedStarts=${refusals}${quietFaults > 0 ? ` quietFaults=${quietFaults}` : ''} steps=${steps} ${secs.toFixed(1)} s CPU, ${Math.round((runs / secs) * 60)} seeds/min)`;
  console.log(line);
  if (out.failed) {
    const cmd = `${MUTANT ? `VERDICT_AC_MUTANT=${MUTANT} ` : ''}VERDICT_AC_REPLAY='${out.seed}:${out.counterexamplePath}' npx vitest run ${family?.replayFile ?? REPLAY_FILE}`;
    console.error(
      `whole-system simulation failed; replay with:\n  ${cmd}\n(add VERDICT_AC_TRACE=1 to print every protocol event)\ncounterexample: ${JSON.stringify(out.counterexample)}\n${out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance)}`,
    );
  }
  return { failed: out.failed, line, quietFaults };
}

/**
 * What hunting a mutant found: whether the checker failed, after how many schedules, the violation it matched (or any
 * other), and fast-check's result.
 */
export interface MutantHunt {
  out: fc.RunDetails<[SystemScenario]>;
  tried: number;
  caught: string | null;
  other: string | null;
}

/**
 * Runs schedules from `arb` with `mutant` injected until the checker reports
 * a violation matching `expect` (fast-check stops at the first, without
 * shrinking), at most `seedsMax` of them, from `seed`.
 */
export function huntMutant(
  arb: fc.Arbitrary<SystemScenario>,
  mutant: Mutant,
  expect: RegExp,
  seed: number,
  seedsMax: number,
): MutantHunt {
  let tried = 0;
  let caught: string | null = null;
  let other: string | null = null;
  const out = fc.check(
    fc.property(arb, (sc) => {
      tried++;
      const v = new SystemWorld({ ...sc, mutant }).run().violations;
      caught = v.find((x) => expect.test(x)) ?? null;
      if (!caught && v.length > 0) other ??= v[0];
      return caught === null;
    }),
    { seed, numRuns: seedsMax, endOnFailure: true },
  );
  return { out, tried, caught, other };
}

/** The hunt's one line for a test's log: caught after how many schedules, and the violation. */
export function huntLine(mutant: Mutant, h: MutantHunt): string {
  return `${mutant} ${h.out.failed ? `caught after ${h.tried} schedules` : `NOT caught in ${h.tried} schedules`}: ${h.caught ?? h.other ?? 'no violation at all'}`;
}

/**
 * The focused schedules of the teeth without their mutant (a checker that
 * fires on a correct protocol proves nothing): `numRuns` schedules from
 * `arb`, from `seed`; fast-check throws at the first with a violation.
 * Returns how many ran.
 */
export function controlRun(arb: fc.Arbitrary<SystemScenario>, seed: number, numRuns: number): number {
  let runs = 0;
  fc.assert(
    fc.property(arb, (sc) => {
      runs++;
      return new SystemWorld(sc).run().violations.length === 0;
    }),
    { seed, numRuns },
  );
  return runs;
}
