// The coordinator engine against a fake world: proposals are applied to a
// real DecisionTable when the test says so, participants answer when the
// test says so. Each test names the rule of DESIGN.md it holds to.

import { describe, expect, test } from 'vitest';
import { EngineError, type OutcomeAnswer } from '../../src/commit/engine.ts';
import { EngineWorld } from './engine-fixture.ts';
import { NotDeliveredError } from '../../src/domain/protocol.ts';

class World extends EngineWorld {
  constructor() {
    super(['a', 'b', 'c'], { retryMinMs: 100, retryMaxMs: 1_000, forgetDelayMs: 50, inFlightMax: 3 });
  }

  commit(txnId: string, parts: string[]): { answer: OutcomeAnswer | null; err: EngineError | null } {
    const out: { answer: OutcomeAnswer | null; err: EngineError | null } = { answer: null, err: null };
    this.engine.commit(
      txnId,
      parts.map((participantId) => ({ participantId, payload: new Uint8Array([1]) })),
      (err, a) => {
        out.err = err;
        out.answer = a ?? null;
      },
    );
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
    expect(r.answer).toMatchObject({ outcome: 'COMMITTED', decisionIndex: w.index });
    expect(w.decisions.map((d) => `${d.to}:${d.req.outcome}`).sort()).toEqual(['a:commit', 'b:commit']);
  });

  test('R1: the first Decide applied wins; a COMMIT proposed after an ABORT was logged answers ABORTED', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r = w.commit('t1', ['a']);
    w.vote('a', 'yes');
    // An ABORT for t1 reached the log first (say, proposed by an earlier leader's R3 query).
    const first = w.table.apply(
      { t: 'decide', txnId: 't1', outcome: 'abort', reason: 'earlier', participants: [], atMs: 0 },
      ++w.index,
    );
    w.engine.onApplied(first);
    expect(r.answer).toMatchObject({ outcome: 'ABORTED', reason: 'earlier' });
    const second = w.applyNext();
    expect(second).toMatchObject({ t: 'decide', first: false, decision: { outcome: 'abort' } });
  });

  test('an answered outcome never changes: a NO vote is answered ABORTED only once Decide(ABORT) is applied, and ABORT goes to every participant that may be prepared', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r = w.commit('t1', ['a', 'b', 'c']);
    w.vote('a', 'yes');
    w.vote('c', 'yes');
    w.vote('b', 'no', 'constraint violated');
    // Nobody hears ABORTED from memory: the decision is proposed first.
    expect(r.answer).toBeNull();
    expect(w.decisions).toHaveLength(0);
    expect(w.proposals.map((p) => p.cmd)).toEqual([
      expect.objectContaining({ t: 'decide', txnId: 't1', outcome: 'abort', participants: ['a', 'c'] }),
    ]);
    w.applyNext();
    expect(r.answer).toMatchObject({ outcome: 'ABORTED', decisionIndex: w.index });
    expect(r.answer?.reason).toContain('constraint violated');
    // The NO voter aborted on its own: ABORT goes to the YES voters only.
    expect(w.decisions.map((d) => `${d.to}:${d.req.outcome}`).sort()).toEqual(['a:abort', 'c:abort']);
  });

  test('R3: an unreachable participant before any decision is a NO, and its ABORT is logged too', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r = w.commit('t1', ['a', 'b']);
    w.vote('a', new Error('connection refused'));
    expect(r.answer).toBeNull();
    expect(w.proposals[0].cmd).toMatchObject({ t: 'decide', txnId: 't1', outcome: 'abort' });
    w.applyNext();
    expect(r.answer?.outcome).toBe('ABORTED');
    // A late YES from b changes nothing: the log has spoken.
    w.vote('b', 'yes');
    expect(w.proposals).toHaveLength(0);
  });

  test('ABORT is delivered like COMMIT: retried with backoff until every participant that was sent PREPARE acknowledges it, then forgotten (R5)', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    w.commit('t1', ['a', 'b']);
    w.vote('a', 'yes');
    w.vote('b', new Error('unreachable'));
    w.applyNext();
    expect(w.table.decisions.get('t1')?.participants).toEqual(['a', 'b']);
    // a acknowledges; b is still down.
    for (const d of w.decisions.splice(0)) d.cb(d.to === 'a' ? null : new Error('down'));
    for (let i = 0; i < 20; i++) {
      w.now += 100;
      w.engine.tick();
      for (const d of w.decisions.splice(0)) d.cb(new Error('down'));
    }
    expect(w.proposals.filter((p) => p.cmd.t === 'forget')).toHaveLength(0);
    expect(w.engine.list('unacked', 10).map((v) => [v.txnId, v.outcome])).toEqual([['t1', 'ABORTED']]);
    // b comes back and acknowledges the redelivered ABORT: only now is t1 forgotten.
    for (let i = 0; i < 20 && w.decisions.length === 0; i++) {
      w.now += 100;
      w.engine.tick();
    }
    expect(w.decisions.map((d) => `${d.to}:${d.req.outcome}`)).toEqual(['b:abort']);
    w.ackAll();
    w.now += 100;
    w.engine.tick();
    expect(w.proposals.map((p) => p.cmd)).toEqual([{ t: 'forget', txnIds: ['t1'] }]);
    w.applyNext();
    // Forgotten, the ABORT still answers from its tombstone, and the id stays spent.
    expect(w.table.lookup('t1')?.outcome).toBe('abort');
    expect(() => w.engine.begin('t1', 0)).toThrow(/already decided ABORTED/);
  });

  test('R3 presumed abort: an ABORT is not delivered to a participant whose PREPARE provably never reached it; one whose vote is only unknown still gets it', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    w.commit('t1', ['a', 'b', 'c']);
    w.vote('a', 'yes');
    // b's PREPARE never left (connection refused): b holds nothing, and T aborts. c's vote is still on its way: c may
    // be prepared.
    w.vote('b', new NotDeliveredError('b', 'PREPARE never reached participant b'));
    w.applyAll();
    w.vote('c', new Error('deadline exceeded'));
    expect(w.table.decisions.get('t1')).toMatchObject({ outcome: 'abort', participants: ['a', 'c'] });
    w.engine.tick();
    expect(w.decisions.map((d) => d.to).sort()).toEqual(['a', 'c']);
    w.ackAll();
    w.now += 100;
    w.engine.tick();
    // Nothing waits for b: the decision is forgotten and nothing is left unacknowledged.
    expect(w.proposals.map((p) => p.cmd)).toEqual([{ t: 'forget', txnIds: ['t1'] }]);
    w.applyNext();
    expect(w.engine.phases().delivering).toBe(0);
    // Had b prepared after all, its question would be answered from the log (R3, R4).
    let asked = '';
    w.engine.outcome('t1', 'b', (_e, a) => (asked = a?.outcome ?? ''));
    expect(asked).toBe('ABORTED');
  });

  test('R3: a retried Commit naming a participant whose PREPARE from this leader never reached it adds nothing to the ABORT', () => {
    const w = new World();
    w.engine.begin('t2', 0);
    w.commit('t2', ['a', 'b']);
    w.vote('b', new NotDeliveredError('b', 'PREPARE never reached participant b'));
    w.applyAll();
    expect(w.table.decisions.get('t2')?.participants).toEqual(['a']);
    w.commit('t2', ['a', 'b']);
    expect(w.proposals).toHaveLength(0);
  });

  test('ABORT delivery: participants a retried Commit names, which an ABORT logged from a question did not, are added to the decision and told until they acknowledge', () => {
    // A new leader: p 'a' asked about t5 (prepared by the old leader), so ABORT was logged naming only a.
    const w = new World();
    w.engine.outcome('t5', 'a', () => {});
    w.applyNext();
    expect(w.table.decisions.get('t5')?.participants).toEqual(['a']);
    // The client's retried Commit names a and b: b may be prepared too.
    const retry = w.commit('t5', ['a', 'b']);
    expect(retry.answer?.outcome).toBe('ABORTED');
    expect(w.proposals.map((p) => p.cmd)).toEqual([
      expect.objectContaining({ t: 'decide', txnId: 't5', outcome: 'abort', participants: ['b'] }),
    ]);
    expect(w.applyNext()).toMatchObject({ t: 'decide', first: false, decision: { outcome: 'abort' } });
    expect(w.table.decisions.get('t5')?.participants).toEqual(['a', 'b']);
    expect(w.decisions.map((d) => `${d.to}:${d.req.outcome}`).sort()).toEqual(['a:abort', 'b:abort']);
    // Another retry names nobody new: no log write.
    w.commit('t5', ['a', 'b']);
    expect(w.proposals).toHaveLength(0);
    w.ackAll();
    w.now += 100;
    w.engine.tick();
    expect(w.proposals.map((p) => p.cmd)).toEqual([{ t: 'forget', txnIds: ['t5'] }]);
    w.applyNext();
    // Forgotten, then a late retry names c: the decision lives again, for c, until c acknowledges.
    expect(w.commit('t5', ['a', 'c']).answer?.outcome).toBe('ABORTED');
    w.applyNext();
    expect(w.table.decisions.get('t5')).toMatchObject({ outcome: 'abort', participants: ['a', 'c'] });
    expect(w.decisions.map((d) => d.to).sort()).toEqual(['a', 'c']);
  });

  test('an answered outcome never changes: a decided id is refused at Begin and at a Commit that begins, with the recorded outcome, on this leader and the next', () => {
    const w = new World();
    w.engine.begin('t1', 500);
    const r = w.commit('t1', ['a']);
    w.now += 500;
    w.engine.tick();
    w.applyNext();
    expect(r.answer?.outcome).toBe('ABORTED');
    w.prepares.length = 0; // a never answered the first PREPARE
    // A leader change loses nothing: the refusal comes from the table.
    w.engine.setLeadership(0);
    w.engine.setLeadership(2);
    let refused: EngineError | null = null;
    try {
      w.engine.begin('t1', 0);
    } catch (err) {
      refused = err as EngineError;
    }
    expect(refused).toMatchObject({ code: 'exists', recorded: 'ABORTED' });
    let viaCommit: EngineError | null = null;
    w.engine.commit('t1', [{ participantId: 'a', payload: new Uint8Array([1]) }], (e) => (viaCommit = e), {
      timeoutMs: 1_000,
    });
    expect(viaCommit).toMatchObject({ code: 'exists', recorded: 'ABORTED' });
    expect(w.prepares).toHaveLength(0);
    // A plain retry of the Commit (no begin) is answered the recorded outcome (R7).
    expect(w.commit('t1', ['a']).answer?.outcome).toBe('ABORTED');
  });

  test('a failed ABORT proposal leaves the outcome unknown to the client and is proposed again until the log has it', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r = w.commit('t1', ['a']);
    w.vote('a', 'no');
    const p = w.proposals.shift();
    p?.cb(new Error('proposal dropped: leadership is moving'));
    expect(r.err?.code).toBe('outcome-unknown');
    w.now += 100;
    w.engine.tick();
    expect(w.proposals.map((x) => x.cmd)).toEqual([
      expect.objectContaining({ t: 'decide', txnId: 't1', outcome: 'abort' }),
    ]);
    const again = w.commit('t1', ['a']);
    w.applyNext();
    expect(again.answer?.outcome).toBe('ABORTED');
  });

  test('R3: a participant in doubt asking about an undecided transaction gets ABORT through the log', () => {
    const w = new World();
    let answer: OutcomeAnswer | undefined;
    w.engine.outcome('ghost', 'a', (_e, a) => (answer = a));
    expect(w.proposals).toHaveLength(1);
    expect(w.proposals[0].cmd).toMatchObject({ t: 'decide', txnId: 'ghost', outcome: 'abort' });
    expect(answer).toBeUndefined();
    w.applyNext();
    expect(answer).toMatchObject({ outcome: 'ABORTED' });
    // A client (no participant id) asking about an unknown transaction changes nothing.
    let client: OutcomeAnswer | undefined;
    w.engine.outcome('other', '', (_e, a) => (client = a));
    expect(client?.outcome).toBe('UNKNOWN');
    expect(w.proposals).toHaveLength(0);
  });

  test('R2: a Commit for a transaction this leader did not begin is aborted through the log, never prepared', () => {
    const w = new World();
    const r = w.commit('t9', ['a']);
    expect(w.prepares).toHaveLength(0);
    expect(w.proposals[0].cmd).toMatchObject({ t: 'decide', txnId: 't9', outcome: 'abort' });
    w.applyNext();
    expect(r.answer?.outcome).toBe('ABORTED');
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
    expect(answer).toMatchObject({ outcome: 'COMMITTED' });
    // Another leader (a fresh engine on the same table) gets the client's retry, which carries no begin: ABORT through
    // the log.
    const other = new World();
    const retry = other.commit('t8', ['a']);
    expect(other.prepares).toHaveLength(0);
    expect(other.proposals[0].cmd).toMatchObject({ t: 'decide', txnId: 't8', outcome: 'abort' });
    other.applyNext();
    expect(retry.answer?.outcome).toBe('ABORTED');
    // Begin's own checks apply: a timeout past the limit is refused, nothing is prepared.
    let err: EngineError | null = null;
    w.engine.commit('t9', enlist, (e) => (err = e), { timeoutMs: 10_000_000 });
    expect(err).toBeInstanceOf(EngineError);
    expect(w.prepares).toHaveLength(0);
  });

  test('R2: while leadership moves, a new transaction is refused as not the leader (the client retries it with begin), and those in flight decide here', () => {
    const w = new World();
    const enlist = [{ participantId: 'a', payload: new Uint8Array([1]) }];
    w.engine.begin('t1', 0);
    let answer: OutcomeAnswer | undefined;
    w.engine.commit('t2', enlist, (_e, a) => (answer = a), { timeoutMs: 5_000 });
    w.handingOverTo = 'n2';
    // A new transaction, by Begin or by a Commit that begins: refused, nothing prepared, nothing proposed.
    expect(() => w.engine.begin('t3', 0)).toThrow(/not the leader: leadership is moving to n2/);
    let refused: EngineError | null = null;
    w.engine.commit('t4', enlist, (e) => (refused = e), { timeoutMs: 5_000 });
    expect(refused).toMatchObject({ code: 'not-leader' });
    expect(w.prepares.map((p) => p.req.txnId)).toEqual(['t2']);
    expect(w.proposals).toHaveLength(0);
    // The ones this leader began go on: a Begin repeated answers as before, t1's Commit prepares, t2 commits.
    expect(w.engine.begin('t1', 0)).toBeDefined();
    const r1 = w.commit('t1', ['a', 'b']);
    w.vote('a', 'yes');
    w.vote('a', 'yes');
    w.vote('b', 'yes');
    w.applyAll();
    expect(answer).toMatchObject({ outcome: 'COMMITTED' });
    expect(r1.answer).toMatchObject({ outcome: 'COMMITTED' });
    // The Raft core already stepped down, the engine not yet told ('' : the next leader unknown): refused too.
    w.handingOverTo = '';
    expect(() => w.engine.begin('t5', 0)).toThrow(/leadership is moving to another node/);
    // Leadership stays after all: new transactions are taken again.
    w.handingOverTo = null;
    w.engine.commit('t4', enlist, () => {}, { timeoutMs: 5_000 });
    expect(w.prepares.map((p) => p.req.txnId)).toContain('t4');
  });

  test('R2: YES votes collected under one term never become COMMIT under another', () => {
    const w = new World();
    w.engine.begin('t1', 0);
    const r = w.commit('t1', ['a', 'b']);
    w.vote('a', 'yes');
    w.engine.setLeadership(0);
    expect(r.err?.code).toBe('outcome-unknown');
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
    expect([r1.answer?.outcome, r2.answer?.outcome, r3.answer?.outcome]).toEqual([
      'COMMITTED',
      'COMMITTED',
      'COMMITTED',
    ]);
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
    expect(a?.outcome).toBe('COMMITTED');
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
    w.table.apply(
      { t: 'decide', txnId: 'old', outcome: 'commit', reason: '', participants: ['a', 'c'], atMs: 0 },
      ++w.index,
    );
    w.engine.setLeadership(0);
    w.decisions.length = 0;
    w.engine.setLeadership(3);
    expect(w.decisions.map((d) => `${d.to}:${d.req.txnId}:${d.req.outcome}`).sort()).toEqual([
      'a:old:commit',
      'c:old:commit',
    ]);
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
    expect(r.answer).toBeNull();
    w.applyNext();
    expect(r.answer?.outcome).toBe('ABORTED');
    expect(r.answer?.reason).toMatch(/timed out/);
    // The aborted t1 no longer holds a place: three undecided fit under inFlightMax=3.
    w.engine.begin('x1', 0);
    w.engine.begin('x2', 0);
    w.engine.begin('x3', 0);
    // At the bound the refusal names the limit and what holds it: counts by phase and the oldest ids.
    expect(() => w.engine.begin('x4', 0)).toThrow(
      /3 undecided \(begun 3, preparing 0, deciding 0\), 1 delivering: limit inFlightMax=3 .*oldest undecided: x1, x2, x3/,
    );
    // Aborting one releases its place as soon as the ABORT is logged, not after a memory of it expires.
    let aborted = '';
    w.engine.abort('x2', 'done with it', (_err, a) => (aborted = a?.outcome ?? ''));
    w.applyNext();
    expect(aborted).toBe('ABORTED');
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
