// fast-check generators for fault schedules. Node indexes are taken modulo
// the cluster size, so a schedule shrinks independently of the size.

import fc from 'fast-check';
import type { Fault, MemberOp, Scenario } from './raft-world.ts';

const HEAL_AT_MS = 12_000;
const at = fc.integer({ min: 0, max: HEAL_AT_MS - 1 });
const dur = fc.integer({ min: 100, max: 6_000 });
const node = fc.nat(4);

export const faultArb: fc.Arbitrary<Fault> = fc.oneof(
  fc.record({ kind: fc.constant('crash' as const), at, node, downMs: fc.integer({ min: 10, max: 5_000 }) }),
  fc.record({
    kind: fc.constant('partition' as const),
    at,
    side: fc.array(fc.nat(1), { minLength: 5, maxLength: 5 }),
    durMs: dur,
  }),
  fc.record({ kind: fc.constant('isolate-leader' as const), at, durMs: dur }),
  fc.record({ kind: fc.constant('one-way' as const), at, from: node, to: node, durMs: dur }),
  fc.record({ kind: fc.constant('loss' as const), at, percent: fc.integer({ min: 5, max: 60 }), durMs: dur }),
  fc.record({ kind: fc.constant('duplicate' as const), at, percent: fc.integer({ min: 5, max: 50 }), durMs: dur }),
  fc.record({ kind: fc.constant('delay' as const), at, extraMs: fc.integer({ min: 10, max: 400 }), durMs: dur }),
  fc.record({
    kind: fc.constant('slow-disk' as const),
    at,
    node,
    extraMs: fc.integer({ min: 20, max: 800 }),
    durMs: dur,
  }),
  fc.record({ kind: fc.constant('transfer' as const), at, to: node }),
  // Disk faults land on one node per schedule (raft-world.ts).
  fc.record({
    kind: fc.constant('lose-tail' as const),
    at,
    node,
    records: fc.integer({ min: 1, max: 30 }),
    downMs: fc.integer({ min: 10, max: 3_000 }),
  }),
  fc.record({ kind: fc.constant('corrupt' as const), at, node, downMs: fc.integer({ min: 10, max: 3_000 }) }),
);

export const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  seed: fc.integer({ min: 0, max: 0x7fffffff }),
  nodes: fc.constantFrom(3, 5),
  faults: fc.array(faultArb, { maxLength: 14 }),
  healAtMs: fc.constant(HEAL_AT_MS),
  // Election timeouts are 1–2 s of virtual time; after healing, allow several.
  livenessMs: fc.constant(15_000),
  snapshotEntries: fc.constantFrom(20, 50, 1_000_000),
});

export const memberOpArb: fc.Arbitrary<MemberOp> = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), at }),
  fc.record({ kind: fc.constant('remove' as const), at, node, leader: fc.boolean() }),
  fc.record({ kind: fc.constant('replace' as const), at, node }),
);

/** Fault schedules with membership changes on top; snapshots are frequent so new nodes often need one. */
export const membershipScenarioArb: fc.Arbitrary<Scenario> = fc.record({
  seed: fc.integer({ min: 0, max: 0x7fffffff }),
  nodes: fc.constantFrom(3, 5),
  faults: fc.array(faultArb, { maxLength: 10 }),
  members: fc.array(memberOpArb, { minLength: 1, maxLength: 5 }),
  healAtMs: fc.constant(HEAL_AT_MS),
  livenessMs: fc.constant(15_000),
  snapshotEntries: fc.constantFrom(20, 50, 1_000_000),
});
