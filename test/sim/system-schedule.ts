// fast-check generators for the whole-system simulation: transactions, fault
// schedules and crash points. Indexes are taken modulo the number of nodes,
// participants or endpoints, so a scenario shrinks independently of sizes.
// Runs are short on purpose — a few seconds of virtual time, a handful of
// transactions — so that thousands of schedules fit in minutes.

import { COMMIT_NOTICE_MS_DEFAULT } from '../../src/node/driver.ts';
import fc from 'fast-check';
import { CRASH_POINTS, type CrashPoint, type SysFault, type SystemScenario, type TxnPlan } from './system-world.ts';

/** Faults happen in the first HEAL_AT_MS after load starts; transactions begin in the first LOAD_MS. */
export const HEAL_AT_MS = 5_000;
export const LOAD_MS = 4_000;
/** After healing: election (1–2 s), the in-doubt questions' backoff, redelivery and Forget fit well inside. */
export const LIVENESS_MS = 15_000;

const at = fc.integer({ min: 0, max: HEAL_AT_MS - 1 });
const dur = fc.integer({ min: 50, max: 3_000 });
const down = fc.integer({ min: 10, max: 3_000 });
const idx = fc.nat(8);

export const txnArb: fc.Arbitrary<TxnPlan> = fc.record({
  atMs: fc.integer({ min: 0, max: LOAD_MS - 1 }),
  members: fc.array(fc.nat(3), { minLength: 1, maxLength: 4 }),
  // About one transaction in six has a participant told to vote NO.
  no: fc.oneof({ arbitrary: fc.constant(null), weight: 5 }, { arbitrary: fc.nat(3), weight: 1 }),
  timeoutMs: fc.constantFrom(1_000, 2_000, 3_000),
});

export const sysFaultArb: fc.Arbitrary<SysFault> = fc.oneof(
  fc.record({ kind: fc.constant('crash-node' as const), at, node: fc.nat(4), downMs: down }),
  fc.record({ kind: fc.constant('crash-leader' as const), at, downMs: down }),
  fc.record({ kind: fc.constant('crash-participant' as const), at, participant: fc.nat(3), downMs: down }),
  fc.record({
    kind: fc.constant('partition' as const),
    at,
    side: fc.array(fc.nat(1), { minLength: 9, maxLength: 9 }),
    durMs: dur,
  }),
  fc.record({ kind: fc.constant('isolate-leader' as const), at, durMs: dur }),
  fc.record({ kind: fc.constant('isolate-participant' as const), at, participant: fc.nat(3), durMs: dur }),
  fc.record({ kind: fc.constant('one-way' as const), at, from: idx, to: idx, durMs: dur }),
  fc.record({ kind: fc.constant('loss' as const), at, percent: fc.integer({ min: 5, max: 60 }), durMs: dur }),
  fc.record({ kind: fc.constant('duplicate' as const), at, percent: fc.integer({ min: 5, max: 50 }), durMs: dur }),
  fc.record({ kind: fc.constant('delay' as const), at, extraMs: fc.integer({ min: 10, max: 400 }), durMs: dur }),
  fc.record({
    kind: fc.constant('slow-disk' as const),
    at,
    target: idx,
    extraMs: fc.integer({ min: 20, max: 800 }),
    durMs: dur,
  }),
  fc.record({ kind: fc.constant('transfer' as const), at, to: fc.nat(4) }),
);

/**
 * Disk faults on one node (system-world.ts): a field of their own, drawn
 * after the others, so adding them left every earlier schedule of a seed as
 * it was.
 */
export const diskFaultArb: fc.Arbitrary<SysFault> = fc.oneof(
  fc.record({
    kind: fc.constant('lose-tail' as const),
    at,
    node: fc.nat(4),
    records: fc.integer({ min: 1, max: 20 }),
    downMs: down,
  }),
  fc.record({ kind: fc.constant('corrupt' as const), at, node: fc.nat(4), downMs: down }),
  fc.record({ kind: fc.constant('wipe' as const), at, node: fc.nat(4), downMs: down }),
);

export const crashPointArb: fc.Arbitrary<CrashPoint> = fc.record({
  point: fc.constantFrom(...CRASH_POINTS),
  target: fc.oneof(fc.constant('leader' as const), fc.nat(3)),
  downMs: down,
});

/** The real simulation: about one run in six has no faults at all, so AC3 is checked too. */
export const systemScenarioArb: fc.Arbitrary<SystemScenario> = fc.record({
  seed: fc.integer({ min: 0, max: 0x7fffffff }),
  nodes: fc.constantFrom(3, 3, 3, 5),
  participants: fc.integer({ min: 2, max: 4 }),
  txns: fc.array(txnArb, { minLength: 1, maxLength: 10 }),
  faults: fc.oneof(
    { arbitrary: fc.constant<SysFault[]>([]), weight: 1 },
    { arbitrary: fc.array(sysFaultArb, { minLength: 1, maxLength: 10 }), weight: 5 },
  ),
  crashPoints: fc.oneof(
    { arbitrary: fc.constant<CrashPoint[]>([]), weight: 3 },
    { arbitrary: fc.array(crashPointArb, { minLength: 1, maxLength: 2 }), weight: 1 },
  ),
  healAtMs: fc.constant(HEAL_AT_MS),
  livenessMs: fc.constant(LIVENESS_MS),
  snapshotEntries: fc.constantFrom(10, 1_000_000),
  commitNoticeMs: fc.constantFrom(0, COMMIT_NOTICE_MS_DEFAULT),
  diskFaults: fc.oneof(
    { arbitrary: fc.constant<SysFault[]>([]), weight: 2 },
    { arbitrary: fc.array(diskFaultArb, { minLength: 1, maxLength: 3 }), weight: 1 },
  ),
});
