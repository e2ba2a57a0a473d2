// Quorum arithmetic and the flow-control window, each checked against a
// brute-force reference that is too slow for the core but obviously right.

import { InvariantError } from '../../src/util/assert.ts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Inflights } from '../../src/raft/progress.ts';
import { JointConfig, VoteResult, majorityCommitted, majorityVote } from '../../src/raft/quorum.ts';

const POOL = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];

// ---- references ----------------------------------------------------------

/** Largest i such that a strict majority of `voters` acked >= i, by trying every candidate. */
function refCommitted(voters: string[], acked: Map<string, number>): number {
  if (voters.length === 0) return Number.MAX_SAFE_INTEGER;
  const candidates = new Set<number>([0, ...voters.map((v) => acked.get(v) ?? 0)]);
  let best = 0;
  for (const i of candidates) {
    const holders = voters.filter((v) => (acked.get(v) ?? 0) >= i).length;
    if (holders * 2 > voters.length && i > best) best = i;
  }
  return best;
}

function refJointCommitted(incoming: string[], outgoing: string[], acked: Map<string, number>): number {
  return Math.min(refCommitted(incoming, acked), refCommitted(outgoing, acked));
}

/** A majority of yes in a half; an empty half never blocks. */
function halfWins(voters: string[], votes: Map<string, boolean>): boolean {
  if (voters.length === 0) return true;
  return voters.filter((v) => votes.get(v) === true).length * 2 > voters.length;
}

/** Won if every way the missing votes could go wins, Lost if none does, else Pending. */
function refJointVote(incoming: string[], outgoing: string[], votes: Map<string, boolean>): VoteResult {
  const all = [...new Set([...incoming, ...outgoing])];
  const missing = all.filter((v) => !votes.has(v));
  let wins = 0;
  const total = 1 << missing.length;
  for (let mask = 0; mask < total; mask++) {
    const completed = new Map(votes);
    missing.forEach((v, k) => completed.set(v, (mask & (1 << k)) !== 0));
    if (halfWins(incoming, completed) && halfWins(outgoing, completed)) wins++;
  }
  if (wins === total) return VoteResult.Won;
  if (wins === 0) return VoteResult.Lost;
  return VoteResult.Pending;
}

// ---- generators ----------------------------------------------------------

const voterSet = (minLength: number) => fc.subarray(POOL, { minLength, maxLength: POOL.length });

const jointArb = fc.record({
  incoming: voterSet(1),
  // Empty in most real configurations; non-empty during a joint change.
  outgoing: fc.oneof(fc.constant<string[]>([]), voterSet(1)),
});

const ackedArb = fc.dictionary(fc.constantFrom(...POOL), fc.nat({ max: 20 }));
const votesArb = fc.dictionary(fc.constantFrom(...POOL), fc.boolean());

describe('quorum: committed index', () => {
  it('majorityCommitted equals the brute-force reference', () => {
    fc.assert(
      fc.property(voterSet(0), ackedArb, (voters, ackedObj) => {
        const acked = new Map(Object.entries(ackedObj));
        expect(majorityCommitted(new Set(voters), (id) => acked.get(id))).toBe(refCommitted(voters, acked));
      }),
      { numRuns: 2000 },
    );
  });

  it('JointConfig.committed equals the brute-force reference, with outgoing voters', () => {
    fc.assert(
      fc.property(jointArb, ackedArb, ({ incoming, outgoing }, ackedObj) => {
        const acked = new Map(Object.entries(ackedObj));
        const jc = new JointConfig(incoming, outgoing);
        expect(jc.committed((id) => acked.get(id))).toBe(refJointCommitted(incoming, outgoing, acked));
      }),
      { numRuns: 3000 },
    );
  });

  it('a value acked by a minority only is never committed (spot check)', () => {
    const jc = new JointConfig(['a', 'b', 'c'], ['c', 'd', 'e']);
    // a, b, c hold 9: majority of incoming, but only c of outgoing.
    const acked = new Map([
      ['a', 9],
      ['b', 9],
      ['c', 9],
      ['d', 2],
      ['e', 1],
    ]);
    expect(jc.committed((id) => acked.get(id))).toBe(2);
  });

  it('acks from non-voters do not count', () => {
    fc.assert(
      fc.property(voterSet(1), fc.nat({ max: 50 }), (voters, big) => {
        const others = POOL.filter((p) => !voters.includes(p));
        const acked = new Map(others.map((o) => [o, big + 1]));
        expect(new JointConfig(voters).committed((id) => acked.get(id))).toBe(0);
      }),
    );
  });
});

describe('quorum: vote result', () => {
  it('majorityVote equals the enumeration of how the missing votes could go', () => {
    fc.assert(
      fc.property(voterSet(0), votesArb, (voters, votesObj) => {
        const votes = new Map(Object.entries(votesObj));
        expect(majorityVote(new Set(voters), votes)).toBe(refJointVote(voters, [], votes));
      }),
      { numRuns: 2000 },
    );
  });

  it('JointConfig.vote equals the enumeration, with outgoing voters', () => {
    fc.assert(
      fc.property(jointArb, votesArb, ({ incoming, outgoing }, votesObj) => {
        const votes = new Map(Object.entries(votesObj));
        expect(new JointConfig(incoming, outgoing).vote(votes)).toBe(refJointVote(incoming, outgoing, votes));
      }),
      { numRuns: 3000 },
    );
  });

  it('a joint election is lost when the outgoing half is lost even if the incoming half wins', () => {
    const jc = new JointConfig(['a', 'b', 'c'], ['d', 'e', 'f']);
    const votes = new Map([
      ['a', true],
      ['b', true],
      ['d', false],
      ['e', false],
    ]);
    expect(jc.vote(votes)).toBe(VoteResult.Lost);
  });
});

// ---- Inflights -------------------------------------------------------------

type Op = { kind: 'add'; gap: number; size: number } | { kind: 'free'; back: number } | { kind: 'reset' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      gap: fc.integer({ min: 1, max: 3 }),
      size: fc.nat({ max: 40 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('free' as const), back: fc.integer({ min: -2, max: 12 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const) }) },
);

describe('progress: Inflights against an array model', () => {
  it('count, bytes and full agree with the model after every operation', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 80 }),
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 })),
        fc.array(opArb, { maxLength: 600 }),
        (countMax, bytesMax, ops) => {
          const inf = new Inflights(countMax, bytesMax);
          let model: { index: number; size: number }[] = [];
          let last = 0;
          const modelBytes = () => model.reduce((s, m) => s + m.size, 0);
          const modelFull = () => model.length >= countMax || (bytesMax > 0 && modelBytes() >= bytesMax);
          for (const op of ops) {
            if (op.kind === 'add') {
              const index = last + op.gap;
              if (modelFull()) {
                expect(() => inf.add(index, op.size)).toThrow(InvariantError);
              } else {
                inf.add(index, op.size);
                model.push({ index, size: op.size });
                last = index;
              }
            } else if (op.kind === 'free') {
              const upTo = last - op.back;
              inf.freeLE(upTo);
              model = model.filter((m) => m.index > upTo);
            } else {
              inf.reset();
              model = [];
            }
            expect(inf.count()).toBe(model.length);
            expect(inf.bytesInFlight()).toBe(modelBytes());
            expect(inf.full()).toBe(modelFull());
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('rejects an index that does not increase', () => {
    const inf = new Inflights(4, 0);
    inf.add(5, 1);
    expect(() => inf.add(5, 1)).toThrow(InvariantError);
    inf.freeLE(5);
    // Once everything is freed the window starts afresh.
    inf.add(3, 1);
    expect(inf.count()).toBe(1);
  });
});
