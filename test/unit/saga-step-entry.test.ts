// One replicated write per saga step: the entry that records step k DONE
// also records step k+1 STARTED (docs/sagas.md, "How a step is logged").
// These tests hold that entry to it through the node's state machine: what
// it applies to, what a snapshot taken after it restores, and that a replay
// of the log and a restore from the snapshot continue to the same bytes.
// They also hold the orchestrator to calling step k+1 only once that entry
// is applied, and the table to its legal transitions whatever the log holds.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCommand } from '../../src/commit/state.ts';
import { NodeStateMachine } from '../../src/node/machine.ts';
import { ProposalBatcher } from '../../src/node/proposal-batcher.ts';
import { nodeProducts } from '../../src/node/products.ts';
import { EntryType, type Entry } from '../../src/raft/types.ts';
import {
  currentCall,
  SAGA_TRANSITIONS,
  SagaTable,
  STEP_TRANSITIONS,
  type SagaCommand,
  type SagaRecord,
} from '../../src/saga/state.ts';
import { InvariantError } from '../../src/util/assert.ts';
import { DONE, SagaWorld, steps } from './saga-fixture.ts';

const machine = (): NodeStateMachine => new NodeStateMachine(nodeProducts().tables);
const entry = (index: number, cmd: SagaCommand): Entry => ({
  index,
  term: 1,
  type: EntryType.Normal,
  data: encodeCommand(cmd),
});
const sagaIn = (m: NodeStateMachine, id = 's1'): SagaRecord => {
  const t = m.products.find((p): p is SagaTable => p instanceof SagaTable);
  const s = t?.sagas.get(id);
  if (!s) throw new Error(`no saga ${id} in the state machine`);
  return s;
};
const done = (step: number, atMs: number): SagaCommand => ({
  t: 'saga.result',
  sagaId: 's1',
  step,
  kind: 'action',
  outcome: 'done',
  output: `out${step}`,
  reason: '',
  atMs,
});
/** The log of a 3-step saga run to its end: its start and one entry per step. */
const LOG: SagaCommand[] = [
  {
    t: 'saga.start',
    sagaId: 's1',
    steps: [0, 1, 2].map((k) => ({ service: `svc${k}`, name: `step${k}`, input: `in${k}` })),
    pivot: null,
    atMs: 10,
    owner: 'CN=app',
  },
  done(0, 11),
  done(1, 12),
  done(2, 13),
];

describe('a saga step in one log entry', () => {
  it("the entry of step 0's DONE also starts step 1: step 1 is the current call, both lines carry that entry's index", () => {
    const m = machine();
    m.apply(entry(1, LOG[0]));
    m.apply(entry(2, LOG[1]));
    const s = sagaIn(m);
    expect(s.status).toEqual(['done', 'running', 'pending']);
    expect(s.outputs).toEqual(['out0', null, null]);
    expect(currentCall(s)).toEqual({ step: 1, kind: 'action' });
    expect(s.timeline.filter((e) => e.index === 2).map((e) => `${e.what} ${e.step} ${e.kind}`)).toEqual([
      'done 0 action',
      'sent 1 action',
    ]);
  });

  it('a snapshot taken after that entry restores the started step, and the restored table and a replay of the log end in the same bytes', () => {
    const m = machine();
    m.apply(entry(1, LOG[0]));
    m.apply(entry(2, LOG[1]));
    const snap = m.snapshot();
    const restored = machine();
    restored.restore(snap);
    expect(Buffer.from(restored.snapshot()).toString('utf8')).toBe(Buffer.from(snap).toString('utf8'));
    expect(currentCall(sagaIn(restored))).toEqual({ step: 1, kind: 'action' });
    // The rest of the log, applied to the restored table and to a replay from the first entry.
    const replayed = machine();
    for (const [i, cmd] of LOG.entries()) replayed.apply(entry(i + 1, cmd));
    for (const [i, cmd] of LOG.entries()) if (i >= 2) restored.apply(entry(i + 1, cmd));
    expect(Buffer.from(restored.snapshot()).toString('utf8')).toBe(Buffer.from(replayed.snapshot()).toString('utf8'));
    expect(sagaIn(replayed).state).toBe('finished');
    expect(sagaIn(replayed).status).toEqual(['done', 'done', 'done']);
  });

  it('the same entry applied again changes nothing (a repeated answer of a step that is no longer the current call)', () => {
    const m = machine();
    m.apply(entry(1, LOG[0]));
    m.apply(entry(2, LOG[1]));
    const before = Buffer.from(m.snapshot()).toString('utf8');
    m.apply(entry(3, LOG[1]));
    expect(Buffer.from(m.snapshot()).toString('utf8')).toBe(before);
  });

  it('the orchestrator logs a 3-step saga in 4 entries and calls step k+1 only once the entry of step k is applied', () => {
    const w = new SagaWorld();
    let logged = 0;
    w.engine.start('s1', steps(3), null, () => {});
    for (let k = 0; k < 3; k++) {
      logged += w.proposals.length;
      expect(w.calls).toHaveLength(0);
      w.applyAll();
      expect(w.calls.map((c) => c.req.key)).toEqual([`s1/${k}/action`]);
      w.answer(DONE);
      // The answer is being logged: nothing more goes out until it is applied.
      expect(w.proposals.map((p) => p.cmd.t)).toEqual(['saga.result']);
      expect(w.calls).toHaveLength(0);
    }
    logged += w.proposals.length;
    w.applyAll();
    expect(logged).toBe(4);
    expect(w.sagas.sagas.get('s1')?.state).toBe('finished');
  });
});

describe('saga entries of concurrent sagas', () => {
  it('the results of many sagas proposed in one turn go to Raft as one proposal (one append, one sync), each its own entry, each answered with its own result', () => {
    const proposals: Uint8Array[][] = [];
    let endOfTurn: (() => void) | null = null;
    const batcher = new ProposalBatcher(
      (datas, cbs) => {
        proposals.push(datas);
        const m = machine();
        m.apply(entry(1, LOG[0]));
        for (const [i, d] of datas.entries())
          cbs[i](null, { index: 10 + i, result: m.apply({ index: 10 + i, term: 1, type: EntryType.Normal, data: d }) });
      },
      (fn) => {
        endOfTurn = fn;
      },
      () => () => {},
    );
    const answered: (string | null)[] = [];
    // Eight sagas' step answers arrive in one turn (only s1 exists in this machine: the others are refused, each on its
    // own).
    for (let k = 0; k < 8; k++) {
      const cmd: SagaCommand = {
        t: 'saga.result',
        sagaId: k === 0 ? 's1' : `other${k}`,
        step: 0,
        kind: 'action',
        outcome: 'done',
        output: 'out0',
        reason: '',
        atMs: 20 + k,
      };
      batcher.add(cmd, (err, r) =>
        answered.push(
          err ? err.message : r?.result && 'problem' in r.result ? (r.result.problem as string | null) : 'no result',
        ),
      );
    }
    expect(proposals).toHaveLength(0);
    (endOfTurn as unknown as () => void)();
    expect(proposals).toHaveLength(1);
    expect(proposals[0]).toHaveLength(8);
    expect(answered[0]).toBeNull();
    expect(answered.slice(1)).toEqual([1, 2, 3, 4, 5, 6, 7].map((k) => `no saga other${k}`));
  });
});

describe('saga transitions', () => {
  const kinds = ['action', 'compensate'] as const;
  const outcomes = ['done', 'failed', 'abandoned'] as const;
  /**
   * Whether `to` follows `from` by one or more moves of `moves` (one entry may make two: a saga's last compensation
   * ends it).
   */
  const follows = <S extends string>(moves: Readonly<Record<S, readonly S[]>>, from: S, to: S): boolean => {
    const seen = new Set<S>();
    const next = [...moves[from]];
    while (next.length > 0) {
      const x = next.pop() as S;
      if (x === to) return true;
      if (seen.has(x)) continue;
      seen.add(x);
      next.push(...moves[x]);
    }
    return false;
  };
  const arbResult = fc.record({
    step: fc.integer({ min: 0, max: 3 }),
    kind: fc.constantFrom(...kinds),
    outcome: fc.constantFrom(...outcomes),
  });

  it('whatever results the log holds, every step and saga change follows the legal transitions (the table asserts each move), and a saga that has not ended waits on exactly one call', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
        fc.array(arbResult, { maxLength: 30 }),
        (pivot, results) => {
          const t = new SagaTable();
          t.apply({ t: 'saga.start', sagaId: 's1', steps: steps(4), pivot, atMs: 1 }, 1);
          const s = t.sagas.get('s1') as SagaRecord;
          for (const [i, r] of results.entries()) {
            const status = [...s.status];
            const state = s.state;
            t.apply({ t: 'saga.result', sagaId: 's1', ...r, output: '', reason: '', atMs: 2 + i }, 2 + i);
            for (const [k, was] of status.entries())
              if (s.status[k] !== was)
                expect(follows(STEP_TRANSITIONS, was, s.status[k]), `step ${k}: ${was} → ${s.status[k]}`).toBe(true);
            if (s.state !== state)
              expect(follows(SAGA_TRANSITIONS, state, s.state), `${state} → ${s.state}`).toBe(true);
            const calls = s.status.filter((x) => x === 'running' || x === 'compensating').length;
            expect(calls).toBe(s.state === 'finished' || s.state === 'compensated' ? 0 : 1);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the orchestrator asserts its leadership only moves to a later term (or ends)', () => {
    const w = new SagaWorld();
    w.engine.setLeadership(3);
    expect(() => w.engine.setLeadership(2)).toThrow(InvariantError);
    w.engine.setLeadership(0);
    w.engine.setLeadership(4);
    expect(w.engine.isLeader()).toBe(true);
  });
});
