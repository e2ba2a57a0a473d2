// Heuristic outcomes (R4) and operators' resolutions on the cluster side:
// the decision table's comparison (HEURCOM / HEURRB / HEURMIX / HEURHAZ),
// its survival of Forget and snapshots, and the engine's rules for
// `ReportHeuristic` and `txn resolve` against a fake world in which
// proposals are applied to a real DecisionTable when the test says so.

import { describe, expect, test } from 'vitest';
import { EngineError, type ResolveAnswer } from '../../src/commit/engine.ts';
import {
  DecisionTable,
  heuristicKind,
  type ApplyResult,
  type Command,
  type HeuristicRecord,
} from '../../src/commit/state.ts';
import { EngineWorld } from './engine-fixture.ts';
import { RESERVE_TTL_MS_MAX, reserveTtlProblem } from '../../src/domain/protocol.ts';

const report = (
  txnId: string,
  participantId: string,
  outcome: 'commit' | 'abort',
): Extract<Command, { t: 'heuristic' }> => ({
  t: 'heuristic',
  txnId,
  participantId,
  outcome,
  gid: `verdict:local:${participantId}:${txnId}`,
  operator: 'alice@db1',
  reason: 'cluster down for hours, locks held',
  atMs: 500,
});

function recordOf(r: ApplyResult): HeuristicRecord {
  if (r.t !== 'heuristic') throw new Error(`expected a heuristic result, got ${r.t}`);
  return r.record;
}

describe('decision table: heuristic records (R4)', () => {
  test('the comparison names X/Open XA outcomes', () => {
    expect(heuristicKind('commit', 'commit')).toBe('HEURCOM');
    expect(heuristicKind('abort', 'abort')).toBe('HEURRB');
    expect(heuristicKind('commit', 'abort')).toBe('HEURMIX');
    expect(heuristicKind('abort', 'commit')).toBe('HEURMIX');
    expect(heuristicKind('commit', null)).toBe('HEURHAZ');
  });

  test('a report is compared with the applied decision: same → HEURCOM/HEURRB, contrary → HEURMIX, none → HEURHAZ', () => {
    const t = new DecisionTable();
    t.apply({ t: 'decide', txnId: 'c', outcome: 'commit', reason: '', participants: ['a', 'b'], atMs: 1 }, 1);
    t.apply({ t: 'decide', txnId: 'x', outcome: 'abort', reason: 'vote no', participants: ['a'], atMs: 1 }, 2);
    expect(recordOf(t.apply(report('c', 'a', 'commit'), 3))).toMatchObject({
      kind: 'HEURCOM',
      decision: 'commit',
      operator: 'alice@db1',
      index: 3,
    });
    expect(recordOf(t.apply(report('c', 'b', 'abort'), 4))).toMatchObject({ kind: 'HEURMIX', decision: 'commit' });
    expect(recordOf(t.apply(report('x', 'a', 'abort'), 5))).toMatchObject({ kind: 'HEURRB', decision: 'abort' });
    expect(recordOf(t.apply(report('gone', 'a', 'commit'), 6))).toMatchObject({ kind: 'HEURHAZ', decision: null });
    expect(t.heuristics.get('c')?.map((h) => h.kind)).toEqual(['HEURCOM', 'HEURMIX']);
  });

  test('R7: a repeated report from the same participant returns the first record and adds nothing', () => {
    const t = new DecisionTable();
    t.apply({ t: 'decide', txnId: 'c', outcome: 'commit', reason: '', participants: ['a'], atMs: 1 }, 1);
    const first = t.apply(report('c', 'a', 'abort'), 2);
    const again = t.apply({ ...report('c', 'a', 'commit'), reason: 'retry' }, 3);
    expect(again).toMatchObject({ t: 'heuristic', first: false, record: { kind: 'HEURMIX', index: 2 } });
    expect(first).toMatchObject({ first: true });
    expect(t.heuristics.get('c')).toHaveLength(1);
  });

  test('heuristic records and resolutions survive Forget and a snapshot round trip; the decision stays answerable from its tombstone', () => {
    const t = new DecisionTable();
    t.apply({ t: 'decide', txnId: 'c', outcome: 'commit', reason: '', participants: ['a'], atMs: 1 }, 1);
    t.apply(report('c', 'a', 'abort'), 2);
    t.apply(
      {
        t: 'decide',
        txnId: 'c',
        outcome: 'commit',
        reason: '',
        participants: [],
        atMs: 3,
        operator: { operator: 'bob', reason: 'confirm', atMs: 3 },
      },
      3,
    );
    t.apply({ t: 'forget', txnIds: ['c'] }, 4);
    expect(t.decisions.has('c')).toBe(false);
    expect(t.heuristics.get('c')?.[0].kind).toBe('HEURMIX');
    const copy = new DecisionTable();
    copy.restoreFrom(JSON.parse(JSON.stringify(t.toJSON())));
    expect(copy.heuristics.get('c')?.[0]).toMatchObject({ kind: 'HEURMIX', participantId: 'a', decision: 'commit' });
    expect(copy.resolutions.get('c')?.[0]).toMatchObject({ operator: 'bob', outcome: 'commit', decided: false });
    expect(copy.lookup('c')?.outcome).toBe('commit');
    // A snapshot without the heuristic records (an earlier development build's) is malformed.
    const old = new DecisionTable();
    expect(() => old.restoreFrom({ p: [], d: [], t: [] })).toThrow(
      /^decision table in the snapshot is malformed: h is not a list$/,
    );
  });

  test('an operator annotation is recorded when it decides, and when it confirms the same decision; never against a contrary one (R1)', () => {
    const t = new DecisionTable();
    const op = { operator: 'carol', reason: 'stuck', atMs: 9 };
    const r1 = t.apply(
      { t: 'decide', txnId: 'u', outcome: 'abort', reason: 'resolved', participants: [], atMs: 9, operator: op },
      1,
    );
    expect(r1).toMatchObject({ first: true, resolution: { decided: true, outcome: 'abort', operator: 'carol' } });
    const r2 = t.apply(
      { t: 'decide', txnId: 'u', outcome: 'commit', reason: '', participants: [], atMs: 10, operator: op },
      2,
    );
    expect(r2).toMatchObject({ first: false, resolution: null, decision: { outcome: 'abort' } });
    const r3 = t.apply(
      {
        t: 'decide',
        txnId: 'u',
        outcome: 'abort',
        reason: '',
        participants: [],
        atMs: 11,
        operator: { ...op, operator: 'dave' },
      },
      3,
    );
    expect(r3).toMatchObject({ first: false, resolution: { decided: false, operator: 'dave' } });
    expect(t.resolutions.get('u')?.map((r) => r.operator)).toEqual(['carol', 'dave']);
  });

  test('incidents are bounded: beyond the limit the oldest transaction goes', () => {
    const t = new DecisionTable(100, 2);
    for (const id of ['t1', 't2', 't3']) t.apply(report(id, 'a', 'commit'), t.heuristics.size + 1);
    expect([...t.heuristics.keys()]).toEqual(['t2', 't3']);
  });
});

class World extends EngineWorld {
  constructor() {
    super(['a', 'b'], { inDoubtAfterMs: 1_000 });
  }

  prepared(txnId: string, parts: string[]): void {
    this.engine.begin(txnId, 0);
    this.engine.commit(
      txnId,
      parts.map((participantId) => ({ participantId, payload: new Uint8Array() })),
      () => {},
    );
  }

  report(
    txnId: string,
    participantId: string,
    outcome: 'commit' | 'abort',
  ): { rec: HeuristicRecord | null; err: EngineError | null } {
    const out: { rec: HeuristicRecord | null; err: EngineError | null } = { rec: null, err: null };
    this.engine.reportHeuristic(
      { txnId, participantId, outcome, gid: 'g', operator: 'alice', reason: 'r', atMs: 1 },
      (err, rec) => {
        out.err = err;
        out.rec = rec ?? null;
      },
    );
    return out;
  }

  resolve(
    txnId: string,
    outcome: 'commit' | 'abort',
    forceUnknown = false,
  ): { res: ResolveAnswer | null; err: EngineError | null } {
    const out: { res: ResolveAnswer | null; err: EngineError | null } = { res: null, err: null };
    this.engine.resolve(
      txnId,
      outcome,
      { operator: 'bob@ops', reason: 'stuck for an hour', forceUnknown },
      (err, res) => {
        out.err = err;
        out.res = res ?? null;
      },
    );
    return out;
  }
}

describe('commit engine: heuristic reports (R4, R3)', () => {
  test('a report for an undecided transaction first logs ABORT (R3), then records HEURMIX against it for a heuristic COMMIT', () => {
    const w = new World();
    w.prepared('t1', ['a', 'b']);
    w.vote('a', 'yes');
    const r = w.report('t1', 'a', 'commit');
    expect(w.proposals.map((p) => p.cmd.t)).toEqual(['decide']);
    expect(w.proposals[0].cmd).toMatchObject({ t: 'decide', outcome: 'abort' });
    w.applyNext();
    expect(w.proposals.map((p) => p.cmd.t)).toEqual(['heuristic']);
    w.applyNext();
    expect(r.err).toBeNull();
    expect(r.rec).toMatchObject({ kind: 'HEURMIX', decision: 'abort', outcome: 'commit' });
    // The participants that may be prepared are told ABORT: b once its PREPARE is answered.
    expect(w.decisions.some((d) => d.to === 'a' && d.req.outcome === 'abort')).toBe(true);
    w.vote('b', 'yes');
    w.engine.tick();
    expect(w.decisions.some((d) => d.to === 'b' && d.req.outcome === 'abort')).toBe(true);
    expect(w.engine.list('heuristic', 10).map((v) => [v.txnId, v.heuristics[0]?.kind])).toEqual([['t1', 'HEURMIX']]);
  });

  test('a report while COMMIT is being proposed waits for the log, then records against what it says', () => {
    const w = new World();
    w.prepared('t2', ['a', 'b']);
    w.vote('a', 'yes');
    w.vote('b', 'yes');
    expect(w.proposals[0].cmd).toMatchObject({ t: 'decide', outcome: 'commit' });
    const r = w.report('t2', 'b', 'commit');
    expect(w.proposals).toHaveLength(1);
    w.applyNext();
    w.applyNext();
    expect(r.rec).toMatchObject({ kind: 'HEURCOM', decision: 'commit' });
  });

  test('a repeated report is answered from the table without a log write (R7); an unregistered participant is refused', () => {
    const w = new World();
    w.table.apply({ t: 'decide', txnId: 't3', outcome: 'abort', reason: '', participants: [], atMs: 1 }, ++w.index);
    w.report('t3', 'a', 'abort');
    w.applyNext();
    const again = w.report('t3', 'a', 'abort');
    expect(w.proposals).toHaveLength(0);
    expect(again.rec).toMatchObject({ kind: 'HEURRB' });
    expect(w.report('t3', 'nobody', 'abort').err?.code).toBe('precondition');
  });

  test('lists: --in-doubt shows undecided transactions past the threshold, --unacked decided ones missing an ACK; participants show last seen and in-doubt counts', () => {
    const w = new World();
    w.prepared('first', ['a']);
    w.now += 500;
    w.prepared('second', ['b']);
    w.vote('b', 'yes');
    w.now += 400;
    expect(w.engine.list('in-doubt', 10).map((v) => v.txnId)).toEqual([]);
    w.now += 200;
    expect(w.engine.list('in-doubt', 10).map((v) => v.txnId)).toEqual(['first']);
    w.now += 500;
    expect(w.engine.list('in-doubt', 10).map((v) => v.txnId)).toEqual(['first', 'second']);
    const act = new Map(w.engine.participantActivity().map((p) => [p.id, p]));
    expect(act.get('b')).toEqual({ id: 'b', lastSeenAtMs: 1_500, inDoubt: 1 });
    expect(act.get('a')?.inDoubt).toBe(0);
    w.vote('a', 'yes');
    w.applyNext(); // COMMIT of second (its YES came first)
    expect(w.engine.list('unacked', 10).map((v) => v.txnId)).toEqual(['second']);
  });
});

describe("commit engine: what participants hold prepared (the console's TCC reserves)", () => {
  test('a participant holds what it voted YES on, with the enlisted payload, until the decision, and a decided one until its ACK; a NO holds nothing', () => {
    const w = new World();
    w.engine.begin('t1', 30_000);
    w.engine.commit(
      't1',
      [
        { participantId: 'a', payload: new TextEncoder().encode('2 seats, show 7') },
        { participantId: 'b', payload: new Uint8Array() },
      ],
      () => {},
    );
    const both = new Set(['a', 'b']);
    expect(w.engine.heldBy(both, 10)).toEqual([]);
    w.vote('a', 'yes');
    w.now += 250;
    const held = w.engine.heldBy(both, 10);
    expect(held).toEqual([
      expect.objectContaining({
        participantId: 'a',
        txnId: 't1',
        outcome: 'IN_PROGRESS',
        ageMs: 250,
        deadlineAtMs: 31_000,
        retries: 0,
      }),
    ]);
    expect(new TextDecoder().decode(held[0]?.payload)).toBe('2 seats, show 7');
    expect(w.engine.heldBy(new Set(['b']), 10)).toEqual([]);
    w.vote('b', 'yes');
    w.applyNext(); // COMMIT
    const decided = w.engine.heldBy(both, 10);
    expect(decided.map((h) => [h.participantId, h.phase, h.outcome, h.deadlineAtMs])).toEqual([
      ['a', 'delivering', 'COMMITTED', null],
      ['b', 'delivering', 'COMMITTED', null],
    ]);
    expect(w.engine.heldBy(both, 1)).toHaveLength(1);
    w.ackAll();
    expect(w.engine.heldBy(both, 10)).toEqual([]);

    w.engine.begin('t2', 30_000);
    w.engine.commit(
      't2',
      [
        { participantId: 'a', payload: new Uint8Array() },
        { participantId: 'b', payload: new Uint8Array() },
      ],
      () => {},
    );
    w.vote('a', 'no', 'sold out');
    expect(w.engine.heldBy(both, 10).filter((h) => h.participantId === 'a')).toEqual([]);
  });

  test("a YES's reserve TTL is recorded as an expiry on the leader's clock, counted from the vote's arrival, and kept until the ACK; a vote without one is unknown (null)", () => {
    const w = new World();
    w.engine.begin('t1', 30_000);
    w.engine.commit(
      't1',
      [
        { participantId: 'a', payload: new Uint8Array() },
        { participantId: 'b', payload: new Uint8Array() },
      ],
      () => {},
    );
    const both = new Set(['a', 'b']);
    w.now += 100; // the vote arrives at 1,100: the participant's clock plays no part
    w.vote('a', 'yes', '', 45_000);
    w.now += 200;
    w.vote('b', 'yes'); // an older participant, or no TTL: unknown
    const expiry = (): (number | null)[] => w.engine.heldBy(both, 10).map((h) => h.reserveExpiresAtMs);
    expect(expiry()).toEqual([46_100, null]);
    w.applyNext(); // COMMIT: the reserves stand until each ACK, and so does what the vote said of them
    expect(expiry()).toEqual([46_100, null]);
    w.ackAll();
    expect(expiry()).toEqual([]);
  });

  test('a reserve TTL past 30 days, or not a positive whole number, is refused by the rule the link applies; the engine never records one (an assertion)', () => {
    expect(reserveTtlProblem(1)).toBeNull();
    expect(reserveTtlProblem(RESERVE_TTL_MS_MAX)).toBeNull();
    expect(reserveTtlProblem(RESERVE_TTL_MS_MAX + 1)).toMatch(/more than 2592000000 ms \(30 days\)/);
    expect(reserveTtlProblem(0)).toMatch(/not a positive whole number/);
    expect(reserveTtlProblem(-5)).toMatch(/not a positive whole number/);
    expect(reserveTtlProblem(1.5)).toMatch(/not a positive whole number/);
    expect(reserveTtlProblem(2 ** 64)).toMatch(/more than/); // uint64's largest, as the wire decodes it
    expect(reserveTtlProblem(Number.NaN)).toMatch(/not a positive whole number/);
    for (const bad of [RESERVE_TTL_MS_MAX + 1, -1]) {
      const w = new World();
      w.prepared('t1', ['a']);
      expect(() => w.vote('a', 'yes', '', bad)).toThrow(
        /invariant violated: t1: a's reserve TTL was checked at the link/,
      );
      expect(w.engine.heldBy(new Set(['a']), 10)).toEqual([]);
    }
  });
});

describe('commit engine: txn resolve (operator, AC2, R1)', () => {
  test('--abort of an undecided transaction logs ABORT with who/when/why and tells the prepared participants', () => {
    const w = new World();
    w.prepared('t1', ['a', 'b']);
    w.vote('a', 'yes');
    const r = w.resolve('t1', 'abort');
    expect(w.proposals[0].cmd).toMatchObject({
      t: 'decide',
      outcome: 'abort',
      operator: { operator: 'bob@ops', reason: 'stuck for an hour' },
    });
    w.applyNext();
    expect(r.res).toMatchObject({ decided: true, answer: { outcome: 'ABORTED' } });
    expect(w.table.resolutions.get('t1')?.[0]).toMatchObject({ operator: 'bob@ops', decided: true, outcome: 'abort' });
    expect(
      w.decisions
        .filter((d) => d.req.outcome === 'abort')
        .map((d) => d.to)
        .sort(),
    ).toContain('a');
  });

  test('AC2: --commit of an undecided transaction without every YES is refused, with the reason, and logs nothing', () => {
    const w = new World();
    w.prepared('t1', ['a', 'b']);
    w.vote('a', 'yes');
    const r = w.resolve('t1', 'commit');
    expect(r.err?.code).toBe('precondition');
    expect(r.err?.message).toMatch(/AC2/);
    expect(r.err?.message).toMatch(/b: no vote yet/);
    expect(w.proposals).toHaveLength(0);
    const unknown = w.resolve('never-begun', 'commit', true);
    expect(unknown.err?.message).toMatch(/did not prepare it/);
  });

  test('refuses to resolve an id the cluster has no record of (a mistyped id) unless forced, and logs nothing', () => {
    const w = new World();
    const typo = w.resolve('t-typo', 'abort');
    expect(typo.err?.code).toBe('precondition');
    expect(typo.err?.message).toMatch(/no record of transaction t-typo/);
    expect(typo.err?.message).toMatch(/--force-unknown/);
    expect(w.proposals).toHaveLength(0);
    const forced = w.resolve('t-typo', 'abort', true);
    expect(w.proposals).toHaveLength(1);
    w.applyNext();
    expect(forced.res).toMatchObject({ decided: true, answer: { outcome: 'ABORTED' } });
    // Once decided, the id is known: a repeat needs no force.
    expect(w.resolve('t-typo', 'abort').err).toBeNull();
  });

  test('R1: against a decided transaction the same outcome is confirmed and recorded; the contrary one is refused and points at the participant-side command', () => {
    const w = new World();
    w.table.apply({ t: 'decide', txnId: 'd', outcome: 'commit', reason: '', participants: [], atMs: 1 }, ++w.index);
    const contrary = w.resolve('d', 'abort');
    expect(contrary.err?.code).toBe('precondition');
    expect(contrary.err?.message).toMatch(/verdict participant resolve d --abort/);
    expect(w.proposals).toHaveLength(0);
    const same = w.resolve('d', 'commit');
    w.applyNext();
    expect(same.res).toMatchObject({ decided: false, answer: { outcome: 'COMMITTED' } });
    expect(w.table.resolutions.get('d')).toHaveLength(1);
  });

  test('--commit while this leader is proposing COMMIT with every YES waits for the log and confirms', () => {
    const w = new World();
    w.prepared('t1', ['a']);
    w.vote('a', 'yes');
    const r = w.resolve('t1', 'commit');
    w.applyNext(); // the engine's own COMMIT
    w.applyNext(); // the operator's confirmation
    expect(r.res).toMatchObject({ decided: false, answer: { outcome: 'COMMITTED' } });
  });
});

describe('listings an operator reads', () => {
  test('an ABORT after a NO vote is logged first, then delivered like a COMMIT', () => {
    const w = new World();
    w.prepared('t-no', ['a', 'b']);
    w.vote('a', 'no', 'insufficient funds');
    // The ABORT is proposed, not yet applied: still being decided.
    expect(w.engine.view('t-no')?.phase).toBe('deciding');
    w.applyNext();
    expect(w.engine.view('t-no')?.outcome).toBe('ABORTED');
    // Delivered like a COMMIT: in flight until the participants that may be prepared acknowledge it.
    expect(w.engine.list('in-flight', 10).map((v) => [v.txnId, v.phase])).toEqual([['t-no', 'delivering']]);
    expect(w.engine.list('all', 10).map((v) => [v.txnId, v.outcome])).toEqual([['t-no', 'ABORTED']]);
  });

  test('a heuristic record of a forgotten decision has an age counted from its report, not 0', () => {
    const w = new World();
    w.now = 500_000;
    w.table.apply(
      { t: 'decide', txnId: 'old', outcome: 'commit', reason: '', participants: ['a'], atMs: 1 },
      ++w.index,
    );
    w.table.apply({ t: 'forget', txnIds: ['old'] }, ++w.index);
    w.table.apply({ ...report('old', 'a', 'commit'), atMs: w.now - 90_000 }, ++w.index);
    expect(w.engine.list('heuristic', 10)[0]).toMatchObject({ txnId: 'old', ageMs: 90_000 });
  });
});

describe('participant remove (replicated, refused while in doubt)', () => {
  const remove = (w: World, id: string): { removed: boolean | null; err: EngineError | null } => {
    const out: { removed: boolean | null; err: EngineError | null } = { removed: null, err: null };
    w.engine.unregisterParticipant(id, 'bob@ops', (err, removed) => {
      out.err = err;
      out.removed = removed ?? null;
    });
    return out;
  };

  test('refuses to remove a participant with a YES vote waiting for a decision, listing the transaction, and logs nothing', () => {
    const w = new World();
    w.prepared('t-doubt', ['a', 'b']);
    w.vote('a', 'yes');
    const r = remove(w, 'a');
    expect(r.err?.code).toBe('precondition');
    expect(r.err?.message).toMatch(/participant a has 1 transaction\(s\) in doubt: t-doubt/);
    expect(w.proposals).toHaveLength(0);
  });

  test('removes an idle participant through the log; a second remove is a no-op (R7)', () => {
    const w = new World();
    const r = remove(w, 'b');
    expect(w.proposals[0].cmd).toMatchObject({ t: 'unregister', id: 'b', operator: 'bob@ops', acked: [] });
    w.applyNext();
    expect(r).toEqual({ removed: true, err: null });
    expect(w.table.participants.has('b')).toBe(false);
    expect(remove(w, 'b')).toEqual({ removed: false, err: null });
    expect(w.proposals).toHaveLength(0);
  });

  test('a participant that acknowledged a COMMIT can go while another still owes its ACK; the one that owes it cannot (R5)', () => {
    const w = new World();
    w.prepared('t-c', ['a', 'b']);
    w.vote('a', 'yes');
    w.vote('b', 'yes');
    w.applyNext(); // the COMMIT
    for (const d of w.decisions.splice(0)) d.cb(d.to === 'a' ? null : new Error('b is down'));
    expect(remove(w, 'b').err?.message).toMatch(/participant b has 1 transaction\(s\) in doubt: t-c/);
    const r = remove(w, 'a');
    expect(w.proposals[0].cmd).toMatchObject({ t: 'unregister', id: 'a', acked: ['t-c'] });
    w.applyNext();
    expect(r).toEqual({ removed: true, err: null });
  });

  test('the table refuses, on every node alike, to unregister a participant a decision still names (R5)', () => {
    const t = new DecisionTable();
    t.apply({ t: 'register', id: 'a', endpoint: '127.0.0.1:1', atMs: 1, kind: 'memory' }, 1);
    t.apply({ t: 'decide', txnId: 'c', outcome: 'commit', reason: '', participants: ['a'], atMs: 1 }, 2);
    expect(t.apply({ t: 'unregister', id: 'a', operator: 'x', atMs: 2, acked: [] }, 3)).toEqual({
      t: 'unregister',
      id: 'a',
      removed: false,
      refusedBy: ['c'],
      forced: null,
    });
    expect(t.participants.has('a')).toBe(true);
    // The leader saw it acknowledge c: the decision no longer needs it.
    expect(t.apply({ t: 'unregister', id: 'a', operator: 'x', atMs: 3, acked: ['c'] }, 5)).toMatchObject({
      removed: true,
    });
    expect(t.participants.has('a')).toBe(false);
  });

  test('--force: the operator removes a participant a COMMIT still names; the decision stays owed to it, undelivered and unforgotten (R5), and is delivered when it registers again', () => {
    const w = new World();
    w.prepared('t-c', ['a', 'b']);
    w.vote('a', 'yes');
    w.vote('b', 'yes');
    w.applyNext(); // the COMMIT
    for (const d of w.decisions.splice(0)) d.cb(d.to === 'a' ? null : new Error('b is gone'));
    let out: { removed?: boolean; owed?: string[]; err: EngineError | null } = { err: null };
    w.engine.unregisterParticipant('b', 'bob@ops', (err, removed, owed) => (out = { err, removed, owed }), {
      reason: 'disk lost',
    });
    expect(w.proposals[0].cmd).toMatchObject({
      t: 'unregister',
      id: 'b',
      operator: 'bob@ops',
      force: true,
      reason: 'disk lost',
    });
    w.applyNext();
    expect(out).toEqual({ err: null, removed: true, owed: ['t-c'] });
    expect(w.table.participants.has('b')).toBe(false);
    expect(w.table.removed.get('b')).toMatchObject({ operator: 'bob@ops', reason: 'disk lost', owed: ['t-c'] });
    // Deliveries stop and nothing is unacknowledged on the leader; the decision is neither forgotten nor redelivered.
    expect(w.engine.phases().delivering).toBe(0);
    for (let i = 0; i < 20; i++) {
      w.now += 1_000;
      w.engine.tick();
    }
    expect(w.decisions).toHaveLength(0);
    expect(w.proposals).toHaveLength(0);
    expect(w.table.decisions.has('t-c')).toBe(true);
    // A snapshot keeps the removal; a new leader re-drives nothing to b and forgets nothing.
    const copy = new DecisionTable();
    copy.restoreFrom(JSON.parse(JSON.stringify(w.table.toJSON())));
    expect(copy.owedToRemoved('t-c')).toEqual(['b']);
    w.engine.setLeadership(0);
    w.engine.setLeadership(2);
    // The new leader does not know a acknowledged: a hears it again (R7); b does not.
    expect(w.decisions.map((d) => d.to)).toEqual(['a']);
    w.ackAll();
    w.now += 1_000;
    w.engine.tick();
    expect(w.proposals).toHaveLength(0);
    expect(w.engine.phases().delivering).toBe(0);
    // It comes back: the COMMIT is delivered, acknowledged, and then forgotten.
    w.engine.registerParticipant('b', '127.0.0.1:19', 'memory', [], () => {});
    w.applyNext();
    // (a hears it again too: this leader dropped what it knew of t-c, R7.)
    expect(w.decisions.map((d) => `${d.to}:${d.req.outcome}`).sort()).toEqual(['a:commit', 'b:commit']);
    w.ackAll();
    w.now += 1_000;
    w.engine.tick();
    expect(w.proposals.map((p) => p.cmd)).toEqual([{ t: 'forget', txnIds: ['t-c'] }]);
  });

  test('--force is refused while the participant is in an undecided transaction', () => {
    const w = new World();
    w.prepared('t-u', ['a', 'b']);
    w.vote('a', 'yes');
    let err: EngineError | null = null;
    w.engine.unregisterParticipant('a', 'bob@ops', (e) => (err = e), { reason: 'gone' });
    expect((err as EngineError | null)?.message).toMatch(/participant a is in 1 undecided transaction\(s\): t-u/);
    expect(w.proposals).toHaveLength(0);
  });
});
