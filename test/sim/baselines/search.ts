// The search for the baselines' counterexamples, and the control run of
// Verdict under the same fault classes. Schedules come from the generators
// Verdict's own simulation uses (txnArb, sysFaultArb, crashPointArb); the
// search is fast-check's seeded loop, which stops at the first schedule that
// shows the expected violation and shrinks it to a small one, so the
// timeline a reader sees is short. `seed:path` replays the shrunk schedule.

import fc from 'fast-check';
import { CRASH_POINTS, type CrashPoint, type SysFault, type SystemScenario } from '../system-scenario.ts';
import { crashPointArb, HEAL_AT_MS, LIVENESS_MS, sysFaultArb, systemScenarioArb, txnArb } from '../system-schedule.ts';
import { ThreePcWorld } from './three-pc-world.ts';
import { txnOf } from './timeline.ts';
import { TwoPcWorld } from './two-pc-world.ts';
import type { BaselineResult, BaselineScenario } from './world.ts';

export type Protocol = '2pc' | '3pc';

/** A crash point; one at the coordinator may take it down for good (the fault Verdict's 3 nodes absorb). */
const baselineCrashPointArb: fc.Arbitrary<CrashPoint> = fc
  .tuple(crashPointArb, fc.boolean())
  .map(([c, forever]) => (c.target === 'leader' && forever ? { ...c, forever } : c));

/** The network faults: what 3PC is put through (every process stays up). */
const NETWORK_FAULTS: ReadonlySet<SysFault['kind']> = new Set(['partition', 'isolate-participant', 'one-way', 'delay']);
const networkFaultArb = sysFaultArb.filter((f) => NETWORK_FAULTS.has(f.kind));

/** Shrinking may also try the first branch (no faults at all), so a counterexample keeps only the faults it needs. */
const CROSS_SHRINK = { withCrossShrink: true };

const common = {
  seed: fc.integer({ min: 0, max: 0x7fffffff }),
  participants: fc.integer({ min: 2, max: 4 }),
  txns: fc.array(txnArb, { minLength: 1, maxLength: 10 }),
  healAtMs: fc.constant(HEAL_AT_MS),
  livenessMs: fc.constant(LIVENESS_MS),
};

/** 2PC: every fault Verdict's simulation draws, plus crash points that may take the coordinator down for good. */
export const twoPcScenarioArb: fc.Arbitrary<BaselineScenario> = fc.record({
  ...common,
  faults: fc.oneof(
    CROSS_SHRINK,
    { arbitrary: fc.constant<SysFault[]>([]), weight: 1 },
    { arbitrary: fc.array(sysFaultArb, { minLength: 1, maxLength: 10 }), weight: 5 },
  ),
  crashPoints: fc.oneof(
    CROSS_SHRINK,
    { arbitrary: fc.constant<CrashPoint[]>([]), weight: 3 },
    { arbitrary: fc.array(baselineCrashPointArb, { minLength: 1, maxLength: 2 }), weight: 1 },
  ),
});

/** 3PC: network faults only. */
export const threePcScenarioArb: fc.Arbitrary<BaselineScenario> = fc.record({
  ...common,
  faults: fc.oneof(
    CROSS_SHRINK,
    { arbitrary: fc.constant<SysFault[]>([]), weight: 1 },
    { arbitrary: fc.array(networkFaultArb, { minLength: 1, maxLength: 10 }), weight: 5 },
  ),
  crashPoints: fc.constant<CrashPoint[]>([]),
});

/**
 * The control: Verdict's whole system under both fault classes — the
 * leader lost for good at a random protocol step (on top of the usual
 * faults), and network faults only.
 */
export const verdictControlArb: fc.Arbitrary<SystemScenario> = fc.oneof(
  fc.tuple(systemScenarioArb, fc.constantFrom(...CRASH_POINTS)).map(
    ([sc, point]): SystemScenario => ({
      ...sc,
      crashPoints: [{ point, target: 'leader', downMs: 0, forever: true }, ...sc.crashPoints],
    }),
  ),
  fc
    .tuple(systemScenarioArb, fc.array(networkFaultArb, { minLength: 1, maxLength: 10 }))
    .map(([sc, faults]): SystemScenario => ({ ...sc, faults, crashPoints: [], diskFaults: [] })),
);

export interface BaselineSearch {
  protocol: Protocol;
  /** The violation that is the counterexample. */
  target: RegExp;
  /** What the target is called in the printed line, e.g. "AC4 lost". */
  lost: string;
  /** Violations the protocol may show (the target among them); anything else is a bug in the model or the world. */
  allowed: (violation: string, r: BaselineResult) => boolean;
  /** Which target violations count: the counterexample the theorem is about, not a degenerate one. */
  accept: (violation: string, r: BaselineResult) => boolean;
  arb: fc.Arbitrary<BaselineScenario>;
  seed: number;
  seedsMax: number;
}

export const SEARCHES: Record<Protocol, Omit<BaselineSearch, 'seed' | 'seedsMax'>> = {
  // With one participant there is nobody to run cooperative termination with; the theorem is about several.
  '2pc': {
    protocol: '2pc',
    target: /^t=\d+ms: AC4 termination/,
    lost: 'AC4 lost',
    allowed: (v, r) => /^t=\d+ms: AC4 termination/.test(v) && r.coordinatorLost,
    accept: (v, r) => (r.members.get(txnOf(v) ?? '')?.length ?? 0) >= 2,
    arb: twoPcScenarioArb,
  },
  // A coordinator that committed while its only participant aborted is reported as R4 and atomicity: 3PC's, not the
  // model's.
  '3pc': {
    protocol: '3pc',
    target: /^t=\d+ms: AC1 agreement/,
    lost: 'AC1 lost',
    allowed: (v) => /^t=\d+ms: (AC1 agreement|R4|atomicity)/.test(v),
    accept: () => true,
    arb: threePcScenarioArb,
  },
};

export function runBaseline(protocol: Protocol, sc: BaselineScenario): BaselineResult {
  return (protocol === '2pc' ? new TwoPcWorld(sc) : new ThreePcWorld(sc)).run();
}

export interface Found {
  /** Replayed from seed:path rather than searched for. */
  replayed: boolean;
  /** Schedules run until the first counterexample (shrinking not counted). */
  runs: number;
  shrinks: number;
  seed: number;
  path: string;
  scenario: BaselineScenario;
  result: BaselineResult;
  violation: string;
}

export interface SearchOutcome {
  found: Found | null;
  /** Every schedule run, shrinking included. */
  runs: number;
  /** Violations outside `allowed` (a bug in a baseline model), with their schedule. */
  unexpected: string[];
}

/** Runs the seeded search, or with `replay` ("seed:path") the one shrunk schedule. */
export function search(s: BaselineSearch, replay?: string): SearchOutcome {
  let runs = 0;
  const unexpected: string[] = [];
  const params: fc.Parameters<[BaselineScenario]> = replay
    ? { seed: Number(replay.split(':')[0]), path: replay.split(':').slice(1).join(':'), endOnFailure: true, numRuns: 1 }
    : { seed: s.seed, numRuns: s.seedsMax };
  const out = fc.check(
    fc.property(s.arb, (sc) => {
      runs++;
      const r = runBaseline(s.protocol, sc);
      for (const v of r.violations)
        if (!s.allowed(v, r) && unexpected.length < 5) unexpected.push(`${v}\n    schedule: ${JSON.stringify(sc)}`);
      return !r.violations.some((v) => s.target.test(v) && s.accept(v, r));
    }),
    params,
  );
  if (!out.failed || !out.counterexample) return { found: null, runs, unexpected };
  const scenario = out.counterexample[0];
  const result = runBaseline(s.protocol, scenario);
  const violation =
    result.violations.find((v) => s.target.test(v) && s.accept(v, result)) ??
    '(the shrunk schedule no longer shows it)';
  return {
    found: {
      replayed: replay !== undefined,
      runs: out.numRuns,
      shrinks: out.numShrinks,
      seed: out.seed,
      path: out.counterexamplePath ?? '',
      scenario,
      result,
      violation,
    },
    runs,
    unexpected,
  };
}

export const REPLAY_ENV = 'VERDICT_BASELINE_REPLAY';
export const TEST_FILE = 'test/sim/baselines.sim.test.ts';

/** The readable counterexample: the headline, how to replay it, the timeline of its transaction and the schedule. */
export function describe(s: BaselineSearch, f: Found): string[] {
  const txn = txnOf(f.violation);
  const others = f.result.violations.filter((v) => v !== f.violation);
  return [
    `baseline ${s.protocol}: ${s.lost} ${f.replayed ? '(replayed)' : `after ${f.runs} schedules`}: ${f.violation.replace(/^t=(\d+)ms: /, 'at t=$1ms, ')}`,
    ...others.map((v) => `  also: ${v}`),
    `  replay: ${REPLAY_ENV}='${s.protocol}:${f.seed}:${f.path}' npx vitest run ${TEST_FILE}${f.replayed ? '' : `   (shrunk in ${f.shrinks} steps)`}`,
    `  timeline of ${txn ?? 'the run'}:`,
    ...f.result.timeline.format(txn).map((l) => `  ${l}`),
    `  schedule: ${JSON.stringify(f.scenario)}`,
  ];
}
