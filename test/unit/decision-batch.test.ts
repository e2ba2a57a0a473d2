// The decision batch entry (src/commit/decision-batch.ts) and the batcher that
// builds it (src/node/proposal-batcher.ts): what one proposal batch writes to
// the log, how a node decodes it at the edge and at apply, and that a command
// that fits a batch is refused as a JSON entry of its own.
import { batchDecoder } from '../sim/protocol-mutants.ts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BATCH_RECORDS_MAX,
  batchable,
  decodeDecisionBatch,
  encodeDecisionBatch,
  recordBytesBound,
  TAG_DECISION_BATCH,
  type BatchCommand,
} from '../../src/commit/decision-batch.ts';
import { encodeCommand, type ApplyResult, type Command, type DecisionCommand } from '../../src/commit/state.ts';
import type { ProposeCallback } from '../../src/node/driver.ts';
import { entryProblem, NodeStateMachine } from '../../src/node/machine.ts';
import { ProposalBatcher } from '../../src/node/proposal-batcher.ts';
import { EntryType, type Entry } from '../../src/raft/types.ts';

const id = fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' });
const decide: fc.Arbitrary<BatchCommand> = fc.record({
  t: fc.constant('decide' as const),
  txnId: id,
  outcome: fc.constantFrom('commit' as const, 'abort' as const),
  reason: fc.string({ maxLength: 200, unit: 'grapheme' }),
  participants: fc.array(id, { maxLength: 8 }),
  atMs: fc.double({ min: 0, max: 4e12, noNaN: true }),
});
const forget: fc.Arbitrary<BatchCommand> = fc.record({
  t: fc.constant('forget' as const),
  txnIds: fc.array(id, { maxLength: 8 }),
});
const hex = (n: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });
const traceparent = fc.tuple(hex(32), hex(16), hex(2)).map(([t, s, f]) => `00-${t}-${s}-${f}`);
// Decides and Stages with the trace context the leader hands their records (NodeCoreOptions.traceOf).
const tracedDecide: fc.Arbitrary<BatchCommand> = fc
  .tuple(decide, traceparent)
  .map(([d, trace]) => ({ ...d, trace }) as BatchCommand);
const stage: fc.Arbitrary<BatchCommand> = fc.record(
  {
    t: fc.constant('stage' as const),
    txnId: id,
    participants: fc.array(id, { maxLength: 8 }),
    atMs: fc.double({ min: 0, max: 4e12, noNaN: true }),
    trace: traceparent,
  },
  { requiredKeys: ['t', 'txnId', 'participants', 'atMs'] },
);
const batch = fc.array(fc.oneof(decide, forget), { minLength: 1, maxLength: 30 });
const tracedBatch = fc.array(fc.oneof(decide, forget, tracedDecide, stage), { minLength: 1, maxLength: 30 });

const entry = (index: number, data: Uint8Array): Entry => ({ term: 1, index, type: EntryType.Normal, data });

describe('decision batch encoding', () => {
  it('property: encode then decode gives back the same commands, and the edge accepts the entry', () => {
    fc.assert(
      fc.property(batch, (cmds) => {
        const data = encodeDecisionBatch(cmds);
        expect(data[0]).toBe(TAG_DECISION_BATCH);
        expect(decodeDecisionBatch(data)).toEqual({ cmds, problem: null });
        expect(entryProblem(EntryType.Normal, data)).toBeNull();
      }),
      { numRuns: 300 },
    );
  });

  it('property: Decides and Stages with a trace context round-trip too, within the bytes the batcher budgets for them', () => {
    fc.assert(
      fc.property(tracedBatch, (cmds) => {
        const data = encodeDecisionBatch(cmds);
        expect(decodeDecisionBatch(data)).toEqual({ cmds, problem: null });
        expect(entryProblem(EntryType.Normal, data)).toBeNull();
        expect(data.byteLength).toBeLessThanOrEqual(4 + cmds.reduce((n, c) => n + recordBytesBound(c), 0));
      }),
      { numRuns: 300 },
    );
  });

  it('the encoder refuses, before writing, what a follower would refuse (paired checks)', () => {
    const plain = {
      t: 'decide' as const,
      txnId: 't',
      outcome: 'commit' as const,
      reason: '',
      participants: [],
      atMs: 1,
    };
    expect(() => encodeDecisionBatch([{ ...plain, txnId: '' }])).toThrow(/has a txnId and a finite time/);
    expect(() => encodeDecisionBatch([{ ...plain, atMs: Number.NaN }])).toThrow(/finite time ≥ 0, not NaN/);
    expect(() => encodeDecisionBatch([{ t: 'stage', txnId: 's', participants: [], atMs: -1 }])).toThrow(
      /finite time ≥ 0, not -1/,
    );
    expect(() => encodeDecisionBatch([{ ...plain, outcome: 'maybe' as 'commit' }])).toThrow(
      /outcome is commit or abort/,
    );
    expect(() => encodeDecisionBatch([{ t: 'forget', txnIds: new Array(4_097).fill('x') }])).toThrow(
      /at most 4096 txnIds/,
    );
  });

  it('a trace is written only when a record has one (untraced bytes as before), has the traceparent shape, and rides only a batch', () => {
    const trace = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const plain = {
      t: 'decide' as const,
      txnId: 't',
      outcome: 'commit' as const,
      reason: '',
      participants: ['p'],
      atMs: 1,
    };
    const untraced = Buffer.from(encodeDecisionBatch([plain]));
    const traced = Buffer.from(encodeDecisionBatch([{ ...plain, trace }]));
    expect(untraced[4]).toBe(1);
    expect(traced[4]).toBe(4);
    expect(traced.byteLength).toBe(untraced.byteLength + 2 + 55);
    expect(traced.subarray(5, untraced.byteLength)).toEqual(untraced.subarray(5));
    expect(batchable({ ...plain, trace: 'not a traceparent' })).toBe(false);
    expect(() => encodeDecisionBatch([{ ...plain, trace: trace.toUpperCase() }])).toThrow(
      /traceparent of 55 characters/,
    );
    // A record whose trace was changed on the way is refused at the edge, naming it.
    const bad = Buffer.from(traced);
    bad[bad.byteLength - 1] = 'X'.charCodeAt(0);
    expect(decodeDecisionBatch(bad).problem).toBe("decision batch: record 0's trace is not a traceparent");
    expect(decodeDecisionBatch(traced.subarray(0, traced.byteLength - 3)).problem).toMatch(
      /record 0's trace \(55 bytes\) runs past/,
    );
    // As a JSON entry (an operator's Decide) a trace is refused: it has no place there.
    const json = encodeCommand({ ...plain, operator: { operator: 'ann', reason: 'r', atMs: 1 }, trace });
    expect(entryProblem(EntryType.Normal, json)).toMatch(/decide carries a trace only in a decision batch/);
  });

  it('property: any bytes after the tag decode to commands or to a one-line problem, never a throw', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (tail) => {
        const data = new Uint8Array([TAG_DECISION_BATCH, ...tail]);
        const r = decodeDecisionBatch(data);
        if (r.cmds === null) expect(r.problem).toMatch(/^decision batch: [^\n]+$/);
        expect(entryProblem(EntryType.Normal, data)).toBe(r.problem);
      }),
      { numRuns: 2_000 },
    );
  });

  it('property: a valid batch cut short, with a byte flipped or with bytes after it, is refused or decodes to well-formed commands, never a throw', () => {
    fc.assert(
      fc.property(batch, fc.nat(), fc.integer({ min: 1, max: 255 }), (cmds, at, flip) => {
        const data = Buffer.from(encodeDecisionBatch(cmds));
        const cut = data.subarray(0, at % data.byteLength);
        expect(decodeDecisionBatch(cut).problem).toMatch(/^decision batch: /);
        expect(decodeDecisionBatch(Buffer.concat([data, Buffer.from([0])])).problem).toMatch(
          /1 bytes after the last record/,
        );
        const flipped = Buffer.from(data);
        flipped[at % data.byteLength] ^= flip;
        const r = decodeDecisionBatch(flipped);
        if (r.cmds !== null)
          for (const c of r.cmds)
            expect(c.t === 'forget' ? Array.isArray(c.txnIds) : c.txnId !== '' && Number.isFinite(c.atMs)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses what the layout does not allow, naming it', () => {
    const one = encodeDecisionBatch([{ t: 'forget', txnIds: ['a'] }]);
    const withVersion = (v: number): Uint8Array => Uint8Array.from(one, (b, i) => (i === 1 ? v : b));
    expect(decodeDecisionBatch(withVersion(2)).problem).toBe('decision batch: unknown version 2');
    expect(decodeDecisionBatch(new Uint8Array([TAG_DECISION_BATCH, 1, 0, 0])).problem).toBe(
      `decision batch: 0 records (1–${BATCH_RECORDS_MAX} allowed)`,
    );
    expect(decodeDecisionBatch(new Uint8Array([TAG_DECISION_BATCH, 1, 0xff, 0xff])).problem).toBe(
      `decision batch: 65535 records (1–${BATCH_RECORDS_MAX} allowed)`,
    );
    expect(decodeDecisionBatch(new Uint8Array([TAG_DECISION_BATCH, 1, 0, 1, 9])).problem).toBe(
      'decision batch: record 0 has unknown kind 9',
    );
    // A forget that claims 4,000 ids in 2 bytes is refused before anything is allocated for them.
    expect(decodeDecisionBatch(new Uint8Array([TAG_DECISION_BATCH, 1, 0, 1, 2, 0x0f, 0xa0, 0, 0])).problem).toBe(
      "decision batch: record 0's 4000 txnIds (8000 bytes) runs past the entry's 9 bytes",
    );
    const d = Buffer.from(
      encodeDecisionBatch([{ t: 'decide', txnId: 't', outcome: 'commit', reason: '', participants: [], atMs: 1 }]),
    );
    d[5] = 7;
    expect(decodeDecisionBatch(d).problem).toBe('decision batch: record 0 has outcome 7 (0 commit, 1 abort)');
    d[5] = 0;
    d.writeDoubleBE(Number.NaN, 6);
    expect(decodeDecisionBatch(d).problem).toBe('decision batch: record 0 has time NaN');
    expect(() => new NodeStateMachine().apply(entry(9, withVersion(3)))).toThrow(
      /log entry 9 cannot be applied: decision batch: unknown version 3/,
    );
  });

  it('a Decide with an operator act, or of another command kind, is not batchable and keeps its JSON entry', () => {
    const op = { operator: 'ann', reason: 'stuck', atMs: 5 };
    expect(
      batchable({ t: 'decide', txnId: 't', outcome: 'abort', reason: 'r', participants: [], atMs: 1, operator: op }),
    ).toBe(false);
    expect(batchable({ t: 'register', id: 'p', endpoint: '127.0.0.1:1', atMs: 1, kind: 'memory' })).toBe(false);
    expect(
      batchable({ t: 'decide', txnId: 't', outcome: 'abort', reason: 'x'.repeat(70_000), participants: [], atMs: 1 }),
    ).toBe(false);
    expect(batchable({ t: 'forget', txnIds: ['a'] })).toBe(true);
  });
});

describe('applying batch entries; a command that fits one is refused as a JSON entry', () => {
  const cmds: DecisionCommand[] = [
    { t: 'register', id: 'p1', endpoint: '127.0.0.1:1', atMs: 1, kind: 'memory' },
    { t: 'decide', txnId: 'a', outcome: 'commit', reason: '', participants: ['p1'], atMs: 2 },
    { t: 'decide', txnId: 'b', outcome: 'abort', reason: 'voted NO', participants: ['p1'], atMs: 3 },
    { t: 'decide', txnId: 'a', outcome: 'abort', reason: 'late', participants: ['p1'], atMs: 4 },
    { t: 'forget', txnIds: ['a'] },
    { t: 'decide', txnId: 'c', outcome: 'commit', reason: '', participants: ['p1'], atMs: 5 },
  ];

  it('one batch entry gives the table that applying its commands one by one gives, and R1 holds inside a batch', () => {
    const oneByOne = new NodeStateMachine();
    cmds.forEach((c, i) => oneByOne.table.apply(c, i + 1));
    const now = new NodeStateMachine();
    now.apply(entry(1, encodeCommand(cmds[0])));
    const r = now.apply(entry(2, encodeDecisionBatch(cmds.slice(1) as BatchCommand[])));
    expect(r?.t).toBe('batch');
    const results = r?.t === 'batch' ? r.results : [];
    expect(results.map((x) => x.t)).toEqual(['decide', 'decide', 'decide', 'forget', 'decide']);
    // R1: the later ABORT of a, in the same entry, is a no-op that returns the COMMIT.
    expect(results[2]).toMatchObject({ t: 'decide', first: false, decision: { txnId: 'a', outcome: 'commit' } });
    expect(results[3]).toEqual({ t: 'forget', forgotten: 1, txnIds: ['a'] });
    const view = (m: NodeStateMachine) => ({
      decisions: [...m.table.decisions.values()].map(({ index: _, ...d }) => d),
      tombstones: [...m.table.tombstones].map(([k, t]) => [k, t.outcome]),
    });
    expect(view(now)).toEqual(view(oneByOne));
    expect(now.table.lookup('a')?.outcome).toBe('commit');
  });

  it('a Decide or Forget that fits a batch, as a JSON entry of its own, is refused at the edge and stops apply naming the index; the table is untouched', () => {
    const m = new NodeStateMachine();
    m.apply(entry(1, encodeCommand(cmds[0])));
    m.apply(entry(2, encodeDecisionBatch(cmds.slice(1, 3) as BatchCommand[])));
    for (const c of [cmds[3], cmds[4]]) {
      const data = encodeCommand(c);
      expect(entryProblem(EntryType.Normal, data)).toBe(
        `a ${c.t} that fits a decision batch rides one (tag 0x04), not a JSON entry of its own`,
      );
      expect(() => m.apply(entry(3, data))).toThrow(
        new RegExp(`^log entry 3 cannot be applied: a ${c.t} that fits a decision batch`),
      );
    }
    expect(m.table.lookup('a')?.outcome).toBe('commit');
    expect(m.table.decisions.has('a')).toBe(true);
    // An operator's Decide does not fit a batch: it is a JSON entry, and applies.
    const resolve: Command = {
      t: 'decide',
      txnId: 'd',
      outcome: 'abort',
      reason: 'resolved',
      participants: [],
      atMs: 6,
      operator: { operator: 'ops', reason: 'stuck', atMs: 6 },
    };
    expect(entryProblem(EntryType.Normal, encodeCommand(resolve))).toBeNull();
    m.apply(entry(3, encodeCommand(resolve)));
    expect(m.table.lookup('d')?.outcome).toBe('abort');
  });
});

describe('ProposalBatcher', () => {
  function harness(): {
    batcher: ProposalBatcher;
    proposed: Uint8Array[][];
    flush: () => void;
    answer: (i: number, result: ApplyResult | null) => void;
    cbsOf: ProposeCallback<ApplyResult | null>[][];
  } {
    const proposed: Uint8Array[][] = [];
    const cbsOf: ProposeCallback<ApplyResult | null>[][] = [];
    let pending: (() => void) | null = null;
    const batcher = new ProposalBatcher(
      (datas, cbs) => {
        proposed.push(datas);
        cbsOf.push(cbs);
      },
      (fn) => {
        pending = fn;
      },
      () => {
        throw new Error('these tests add no command with a linger');
      },
    );
    return {
      batcher,
      proposed,
      cbsOf,
      flush: () => {
        const f = pending;
        pending = null;
        f?.();
      },
      answer: (i, result) => cbsOf[cbsOf.length - 1][i](null, { index: 10 + i, result }),
    };
  }

  it('one turn: consecutive Decides and Forgets share one batch entry, other commands keep their place, each caller gets its own result', () => {
    const h = harness();
    const got: unknown[] = [];
    const cb = (tag: string) => (err: Error | null, r?: { index: number; result: ApplyResult | null }) =>
      got.push([tag, err?.message ?? r?.index, r?.result?.t]);
    h.batcher.add({ t: 'decide', txnId: 'a', outcome: 'commit', reason: '', participants: ['p'], atMs: 1 }, cb('a'));
    h.batcher.add({ t: 'forget', txnIds: ['z'] }, cb('z'));
    h.batcher.add({ t: 'register', id: 'p2', endpoint: 'e', atMs: 1, kind: 'memory' }, cb('reg'));
    h.batcher.add({ t: 'decide', txnId: 'b', outcome: 'abort', reason: 'r', participants: [], atMs: 1 }, cb('b'));
    expect(h.proposed).toEqual([]);
    h.flush();
    expect(h.proposed.length).toBe(1);
    const datas = h.proposed[0];
    expect(datas.map((d) => d[0])).toEqual([TAG_DECISION_BATCH, 0x02, TAG_DECISION_BATCH]);
    expect(decodeDecisionBatch(datas[0]).cmds?.map((c) => c.t)).toEqual(['decide', 'forget']);
    const sm = new NodeStateMachine();
    datas.forEach((d, i) => h.answer(i, sm.apply(entry(10 + i, d))));
    expect(got).toEqual([
      ['a', 10, 'decide'],
      ['z', 10, 'forget'],
      ['reg', 11, 'register'],
      ['b', 12, 'decide'],
    ]);
  });

  it('a failed batch entry fails every command in it; a result missing for a record fails that command alone', () => {
    const h = harness();
    const errs: string[] = [];
    for (const t of ['a', 'b'])
      h.batcher.add({ t: 'decide', txnId: t, outcome: 'commit', reason: '', participants: [], atMs: 1 }, (err) =>
        errs.push(err?.message ?? 'ok'),
      );
    h.flush();
    h.cbsOf[0][0](new Error('not the leader'));
    expect(errs).toEqual(['not the leader', 'not the leader']);
    errs.length = 0;
    for (const t of ['c', 'd'])
      h.batcher.add({ t: 'decide', txnId: t, outcome: 'commit', reason: '', participants: [], atMs: 1 }, (err) =>
        errs.push(err?.message ?? 'ok'),
      );
    h.flush();
    // What the simulator's batch-drops-last mutant does: the entry applies one record too few.
    const sm = new NodeStateMachine([], batchDecoder('batch-drops-last'));
    h.answer(0, sm.apply(entry(10, h.proposed[1][0])));
    expect(errs).toEqual(['ok', 'entry 10 applied without a result for record 1; retry idempotently']);
    expect(sm.table.lookup('d')).toBeNull();
  });

  describe('a command added with a linger', () => {
    const decide = (txnId: string) => ({
      t: 'decide' as const,
      txnId,
      outcome: 'commit' as const,
      reason: '',
      participants: ['p'],
      atMs: 1,
    });
    function lingering(): {
      batcher: ProposalBatcher;
      proposed: string[][];
      endTurn: () => void;
      timers: { ms: number; fn: () => void; cancelled: boolean }[];
    } {
      const proposed: string[][] = [];
      let turn: (() => void) | null = null;
      const timers: { ms: number; fn: () => void; cancelled: boolean }[] = [];
      const batcher = new ProposalBatcher(
        (datas) =>
          proposed.push(
            datas.flatMap(
              (d) =>
                decodeDecisionBatch(d).cmds?.map((c) =>
                  c.t === 'stage' || c.t === 'decide' ? `${c.t} ${c.txnId}` : c.t,
                ) ?? ['?'],
            ),
          ),
        (fn) => {
          turn = fn;
        },
        (ms, fn) => {
          const t = { ms, fn, cancelled: false };
          timers.push(t);
          return () => {
            t.cancelled = true;
          };
        },
      );
      const endTurn = (): void => {
        const f = turn;
        turn = null;
        f?.();
      };
      return { batcher, proposed, endTurn, timers };
    }

    it('waits for the next command and shares its entry, in the order they were added; its timer is cancelled', () => {
      const h = lingering();
      h.batcher.add(decide('T1'), () => {}, 5);
      h.endTurn();
      expect(h.proposed).toEqual([]);
      expect(h.timers.map((t) => [t.ms, t.cancelled])).toEqual([[5, false]]);
      h.batcher.add({ t: 'stage', txnId: 'T2', participants: ['p'], atMs: 2 }, () => {});
      expect(h.proposed).toEqual([]);
      h.endTurn();
      expect(h.proposed).toEqual([['decide T1', 'stage T2']]);
      expect(h.timers[0].cancelled).toBe(true);
    });

    it('goes alone when its linger runs out with no company; a second lingering command does not push the first one back', () => {
      const h = lingering();
      h.batcher.add(decide('T1'), () => {}, 5);
      h.batcher.add(decide('T2'), () => {}, 5);
      expect(h.timers.length).toBe(1);
      h.timers[0].fn();
      expect(h.proposed).toEqual([['decide T1', 'decide T2']]);
      // The batcher is empty again: the next lingering command sets a timer of its own.
      h.batcher.add(decide('T3'), () => {}, 5);
      expect(h.timers.length).toBe(2);
    });

    it('joins a flush already due at the end of this turn instead of waiting', () => {
      const h = lingering();
      h.batcher.add({ t: 'forget', txnIds: ['T0'] }, () => {});
      h.batcher.add(decide('T1'), () => {}, 5);
      expect(h.timers).toEqual([]);
      h.endTurn();
      expect(h.proposed).toEqual([['forget', 'decide T1']]);
    });
  });

  it(`cuts a batch at ${BATCH_RECORDS_MAX} records`, () => {
    const h = harness();
    for (let i = 0; i <= BATCH_RECORDS_MAX; i++) h.batcher.add({ t: 'forget', txnIds: [`t${i}`] }, () => {});
    h.flush();
    expect(h.proposed[0].map((d) => decodeDecisionBatch(d).cmds?.length)).toEqual([BATCH_RECORDS_MAX, 1]);
  });
});
