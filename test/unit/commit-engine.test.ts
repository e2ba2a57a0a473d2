// The coordinator engine against a fake world: proposals are applied to a
// real DecisionTable when the test says so, participants answer when the
// test says so. Each test names the rule of DESIGN.md it holds to.

import { describe, expect, test } from 'vitest';
import { EngineError, type OutcomeAnswer } from '../../src/commit/engine.ts';
import { EngineWorld } from './engine-fixture.ts';

class World extends EngineWorld {
  constructor() {
    super(['a', 'b', 'c'], { retryMinMs: 100, retryMaxMs: 1_000, forgetDelayMs: 50, inFlightMax: 3 });
  }

  commit(txnId: string, parts: string[]): { answer: OutcomeAnswer | null; err: EngineError | null } {
    const out: { answer: OutcomeAnswer | null; err: EngineError | null } = { answer: null, err: null };
    this.engine.commit(txnId, parts.map((participantId) => ({ participantId, payload: new Uint8Array([1]) })), (err, a) => {
      out.err = err;
      out.answer = a ?? null;
    });
    return out;
  }
}

describe('commit engine', () => {
  test('all YES → one Decide(COMMIT) in the log, the client gets COMMITTED from applied state, then DECISION to each (R1)', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r = w.commit('t1', ['a', 'b']);
    expect(w.prepares.map((p) => p.to).sort()).toEqual(['a', 'b']);
    w.vote('a', 'yes');
    expect(w.proposals).toHaveLength(0);
    w.vote('b', 'yes');
    expect(w.proposals).toHaveLength(1);
    expect(w.proposals[0].cmd).toMatchObject({ t: 'decide', txnId: 't1', outcome: 'commit' });
    expect(r.answer).toBeNull();
    w.applyNext();
    expect(r.answer).toMatchObject({ outcome: 'committed', decisionIndex: w.index });
    expect(w.decisions.map((d) => `${d.to}:${d.req.outcome}`).sort()).toEqual(['a:commit', 'b:commit']);
  });

  test('R1: the first Decide applied wins; a COMMIT proposed after an ABORT was logged answers ABORTED', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r = w.commit('t1', ['a']);
    w.vote('a', 'yes');
    // An ABORT for t1 reached the log first (say, proposed by an earlier leader's R3 query).
    const first = w.table.apply({ t: 'decide', txnId: 't1', outcome: 'abort', reason: 'earlier', participants: [], atMs: 0 }, ++w.index);
    w.engine.onApplied(first);
    expect(r.answer).toMatchObject({ outcome: 'aborted', reason: 'earlier' });
    const second = w.applyNext();
    expect(second).toMatchObject({ t: 'decide', first: false, decision: { outcome: 'abort' } });
  });

  test('R3: a NO vote aborts with no log write, and ABORT goes to the participants that may be prepared', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r = w.commit('t1', ['a', 'b', 'c']);
    w.vote('a', 'yes');
    w.vote('b', 'no', 'constraint violated');
    expect(r.answer).toMatchObject({ outcome: 'aborted' });
    expect(r.answer?.reason).toContain('constraint violated');
    expect(w.proposals).toHaveLength(0);
    expect(w.decisions.map((d) => `${d.to}:${d.req.outcome}`).sort()).toEqual(['a:abort', 'c:abort']);
    // A late YES from c changes nothing.
    w.vote('c', 'yes');
    expect(w.proposals).toHaveLength(0);
  });

  test('R3: an unreachable participant before any decision is a NO', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r = w.commit('t1', ['a', 'b']);
    w.vote('a', new Error('connection refused'));
    expect(r.answer?.outcome).toBe('aborted');
    expect(w.proposals).toHaveLength(0);
  });

  test('R3: a participant in doubt asking about an undecided transaction gets ABORT through the log', () => {
    const w = new World();
    let answer: OutcomeAnswer | undefined;
    w.engine.outcome('ghost', 'a', (_e, a) => (answer = a));
    expect(w.proposals).toHaveLength(1);
    expect(w.proposals[0].cmd).toMatchObject({ t: 'decide', txnId: 'ghost', outcome: 'abort' });
    expect(answer).toBeUndefined();
    w.applyNext();
    expect(answer).toMatchObject({ outcome: 'aborted' });
    // A client (no participant id) asking about an unknown transaction changes nothing.
    let client: OutcomeAnswer | undefined;
    w.engine.outcome('other', '', (_e, a) => (client = a));
    expect(client?.outcome).toBe('unknown');
    expect(w.proposals).toHaveLength(0);
  });

  test('R2: a Commit for a transaction this leader did not begin is aborted through the log, never prepared', () => {
    const w = new World();
    const r = w.commit('t9', ['a']);
    expect(w.prepares).toHaveLength(0);
    expect(w.proposals[0].cmd).toMatchObject({ t: 'decide', txnId: 't9', outcome: 'abort' });
    w.applyNext();
    expect(r.answer?.outcome).toBe('aborted');
  });

  test('R2: a Commit that begins the transaction prepares it in one call; the same Commit without begin on a leader that did not begin it is aborted', () => {
    const w = new World();
    let answer: OutcomeAnswer | undefined;
    const enlist = [{ participantId: 'a', payload: new Uint8Array([1]) }];
    w.engine.commit('t7', enlist, (_e, a) => (answer = a), { timeoutMs: 5_000 });
    expect(w.prepares.map((p) => p.req.txnId)).toEqual(['t7']);
    expect(w.prepares[0].req.timeoutMs).toBe(5_000);
    // A resend with begin while this leader works on it begins nothing new and prepares nothing again (R7).
    w.engine.commit('t7', enlist, () => {}, { timeoutMs: 5_000 });
    expect(w.prepares).toHaveLength(1);
    w.vote('a', 'yes');
    w.applyNext();
    expect(answer).toMatchObject({ outcome: 'committed' });
    // Another leader (a fresh engine on the same table) gets the client's retry, which carries no begin: ABORT through the log.
    const other = new World();
    const retry = other.commit('t8', ['a']);
    expect(other.prepares).toHaveLength(0);
    expect(other.proposals[0].cmd).toMatchObject({ t: 'decide', txnId: 't8', outcome: 'abort' });
    other.applyNext();
    expect(retry.answer?.outcome).toBe('aborted');
    // Begin's own checks apply: a timeout past the limit is refused, nothing is prepared.
    let err: EngineError | null = null;
    w.engine.commit('t9', enlist, (e) => (err = e), { timeoutMs: 10_000_000 });
    expect(err).toBeInstanceOf(EngineError);
    expect(w.prepares).toHaveLength(0);
  });

  test('R2: YES votes collected under one term never become COMMIT under another', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r = w.commit('t1', ['a', 'b']);
    w.vote('a', 'yes');
    w.engine.setLeadership(0);
    expect(r.err?.code).toBe('unavailable');
    w.engine.setLeadership(2);
    w.vote('b', 'yes');
    expect(w.proposals).toHaveLength(0);
  });

  test('R7: a retried Commit with the same id gets the same outcome', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r1 = w.commit('t1', ['a']);
    const r2 = w.commit('t1', ['a']);
    w.vote('a', 'yes');
    w.applyNext();
    const r3 = w.commit('t1', ['a']);
    expect([r1.answer?.outcome, r2.answer?.outcome, r3.answer?.outcome]).toEqual(['committed', 'committed', 'committed']);
    expect(w.prepares).toHaveLength(0);
    expect(w.proposals).toHaveLength(0);
  });

  test('R5: a COMMIT is forgotten only after every participant acked, in a batch, off the critical path', () => {
    const w = new World();
    for (const id of ['t1', 't2']) {
      w.engine.begin(id, 0);
      w.commit(id, ['a', 'b']);
      w.vote('a', 'yes');
      w.vote('b', 'yes');
      w.applyNext();
    }
    // Only a's acks arrive; b's decisions fail.
    for (const d of w.decisions.splice(0)) d.cb(d.to === 'a' ? null : new Error('down'));
    w.now += 1_000;
    w.engine.tick();
    expect(w.proposals.filter((p) => p.cmd.t === 'forget')).toHaveLength(0);
    // Redelivered to b after the backoff; now b acks.
    expect(w.decisions.map((d) => d.to)).toEqual(['b', 'b']);
    w.ackAll();
    w.now += 100;
    w.engine.tick();
    expect(w.proposals.map((p) => p.cmd)).toEqual([{ t: 'forget', txnIds: ['t1', 't2'] }]);
    w.applyNext();
    expect(w.table.decisions.size).toBe(0);
    // Forgotten decisions still answer from their tombstone.
    let a: OutcomeAnswer | undefined;
    w.engine.outcome('t1', 'b', (_e, x) => (a = x));
    expect(a?.outcome).toBe('committed');
  });

  test('decision delivery backs off exponentially up to the cap while a participant is down', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    w.commit('t1', ['a']);
    w.vote('a', 'yes');
    w.applyNext();
    const sendTimes: number[] = [];
    for (let step = 0; step < 400; step++) {
      for (const d of w.decisions.splice(0)) {
        sendTimes.push(w.now);
        d.cb(new Error('down'));
      }
      w.now += 10;
      w.engine.tick();
    }
    const gaps = sendTimes.slice(1).map((t, i) => t - sendTimes[i]);
    expect(gaps.length).toBeGreaterThan(4);
    expect(gaps[1]).toBeGreaterThan(gaps[0]);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(1_000 + 10);
  });

  test('a new leader re-drives every decided but unacknowledged transaction', () => {
    const w = new World();
    w.table.apply({ t: 'decide', txnId: 'old', outcome: 'commit', reason: '', participants: ['a', 'c'], atMs: 0 }, ++w.index);
    w.engine.setLeadership(0);
    w.decisions.length = 0;
    w.engine.setLeadership(3);
    expect(w.decisions.map((d) => `${d.to}:${d.req.txnId}:${d.req.outcome}`).sort()).toEqual(['a:old:commit', 'c:old:commit']);
  });

  test('timeouts: a prepare past its deadline aborts; the in-flight bound counts undecided transactions only, releases an abort at once and names what holds it', () => {
    const w = new World();
    w.engine.begin('t1', 500);
    const r = w.commit('t1', ['a']);
    w.now += 499;
    w.engine.tick();
    expect(r.answer).toBeNull();
    w.now += 1;
    w.engine.tick();
    expect(r.answer?.outcome).toBe('aborted');
    expect(r.answer?.reason).toMatch(/timed out/);
    // The aborted t1 no longer holds a place: three undecided fit under inFlightMax=3.
    w.engine.begin('x1', 0);
    w.engine.begin('x2', 0);
    w.engine.begin('x3', 0);
    // At the bound the refusal names the limit and what holds it: counts by phase and the oldest ids.
    expect(() => w.engine.begin('x4', 0)).toThrow(/3 undecided \(begun 3, preparing 0, deciding 0\), 0 delivering, 1 aborted remembered: limit inFlightMax=3 .*oldest undecided: x1, x2, x3/);
    // Aborting one releases its place at once, not after the abort memory expires.
    let aborted = '';
    w.engine.abort('x2', 'done with it', (_err, a) => (aborted = a?.outcome ?? ''));
    expect(aborted).toBe('aborted');
    expect(() => w.engine.begin('x4', 0)).not.toThrow();
  });

  test('bad input is refused with a reason: unregistered participant, duplicates, bad ids, no participants', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    expect(w.commit('t1', ['zz']).err?.message).toMatch(/not registered/);
    expect(w.commit('t1', ['a', 'a']).err?.message).toMatch(/twice/);
    expect(w.commit('t1', []).err?.message).toMatch(/at least one/);
    expect(() => w.engine.begin('bad id!', 0)).toThrow(/transaction id/);
    w.engine.setLeadership(0);
    expect(() => w.engine.begin('t2', 0)).toThrow(/not the leader/);
  });
});
