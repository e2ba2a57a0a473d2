// A call's failed attempts are part of the replicated saga table
// (saga.attempt), so abandonment and the stuck flag count them across
// leaders; abandoning an action before the pivot takes both a number of
// attempts and a minimum time since its first failure; a saga carries a type
// and business labels from its start. The simulator's property over leader
// changes is test/sim/system-saga-attempts.sim.test.ts.

import { describe, expect, it } from 'vitest';
import { checkedCommand } from '../../src/commit/command-check.ts';
import { encodeCommand } from '../../src/commit/state.ts';
import type { SagaEngineConfig } from '../../src/saga/engine.ts';
import { SagaTable, triesOf, type SagaCommand } from '../../src/saga/state.ts';
import { DONE, SagaWorld, steps } from './saga-fixture.ts';

const attempt = (step: number, kind: 'action' | 'compensate', error: string, atMs: number): SagaCommand => ({
  t: 'saga.attempt',
  sagaId: 's1',
  step,
  kind,
  error,
  atMs,
});

/** Hands the engine over to a new leader, as a failover does: the old one's memory is gone. */
function failover(w: SagaWorld, term: number, cfg: Partial<SagaEngineConfig>): void {
  w.engine.setLeadership(0);
  w.proposals.splice(0);
  w.calls.splice(0);
  w.engine = w.newEngine(cfg);
  w.engine.setLeadership(term);
}

describe('saga table: failed attempts', () => {
  it('counts the current call’s failed attempts with their first and last time and last error, and nothing for another call', () => {
    const t = new SagaTable();
    t.apply({ t: 'saga.start', sagaId: 's1', steps: steps(2), pivot: null, atMs: 1 }, 1);
    expect(t.apply(attempt(0, 'action', 'down 1', 10), 2).changed).toBe(true);
    expect(t.apply(attempt(0, 'action', 'down 2', 20), 3).changed).toBe(true);
    const late = t.apply(attempt(1, 'action', 'not current', 30), 4);
    expect(late.changed).toBe(false);
    expect(late.problem).toMatch(/not waiting on step 1 action/);
    const s = t.sagas.get('s1');
    if (!s) throw new Error('no saga');
    expect(triesOf(s, 0, 'action')).toEqual({
      step: 0,
      kind: 'action',
      attempts: 2,
      firstFailureAtMs: 10,
      lastFailureAtMs: 20,
      lastError: 'down 2',
    });
    expect(triesOf(s, 1, 'action')).toBeNull();
  });

  it('an operator’s retry counts the stuck call’s attempts afresh, keeping its last error to read', () => {
    const t = new SagaTable();
    t.apply({ t: 'saga.start', sagaId: 's1', steps: steps(1), pivot: null, atMs: 1 }, 1);
    for (let i = 0; i < 3; i++) t.apply(attempt(0, 'action', `down ${i}`, 10 + i), 2 + i);
    t.apply({ t: 'saga.stuck', sagaId: 's1', step: 0, kind: 'action', attempts: 3, lastError: 'down 2', atMs: 13 }, 5);
    t.apply({ t: 'saga.retry', sagaId: 's1', operator: 'ops', reason: 'service fixed', atMs: 14 }, 6);
    const s = t.sagas.get('s1');
    expect(s && triesOf(s, 0, 'action')).toMatchObject({ attempts: 0, firstFailureAtMs: null, lastError: 'down 2' });
  });

  it('keeps attempts, type and labels in snapshots; a record written without them (before they existed) loads as none', () => {
    const t = new SagaTable();
    t.apply(
      {
        t: 'saga.start',
        sagaId: 's1',
        steps: steps(1),
        pivot: null,
        atMs: 1,
        type: 'order-refund',
        labels: { order: 'ORD-7731', amount: '12,400 RUB' },
      },
      1,
    );
    t.apply(attempt(0, 'action', 'down', 10), 2);
    t.apply({ t: 'saga.start', sagaId: 's2', steps: steps(1), pivot: null, atMs: 1 }, 3);
    const json = JSON.parse(JSON.stringify(t.toJSON()));
    // s2 has no type, labels or attempts: its record carries no such fields (the bytes of an older snapshot).
    expect(Object.keys(json.s[1])).not.toContain('tries');
    expect(Object.keys(json.s[1])).not.toContain('labels');
    const copy = new SagaTable();
    copy.restoreFrom(json);
    const s1 = copy.sagas.get('s1');
    expect(s1?.type).toBe('order-refund');
    expect(s1?.labels).toEqual({ order: 'ORD-7731', amount: '12,400 RUB' });
    expect(s1 && triesOf(s1, 0, 'action')?.attempts).toBe(1);
    const old = copy.sagas.get('s2');
    expect(old && triesOf(old, 0, 'action')).toBeNull();
    json.s[0].tries = [{ step: 0, kind: 'sideways', attempts: 1 }];
    expect(() => new SagaTable().restoreFrom(json)).toThrow(/its attempts/);
  });

  it('refuses a start with a bad type or bad labels, naming the saga and the label', () => {
    const t = new SagaTable();
    const start = (extra: object): string | null =>
      t.apply({ t: 'saga.start', sagaId: 's1', steps: steps(1), pivot: null, atMs: 1, ...extra } as SagaCommand, 1)
        .problem;
    expect(start({ type: 'has space' })).toMatch(/saga s1: type "has space" must be 1–64 letters/);
    expect(start({ type: 'x'.repeat(65) })).toMatch(/must be 1–64/);
    expect(start({ labels: { 'bad key': 'v' } })).toMatch(/label name "bad key"/);
    expect(start({ labels: { order: 'x'.repeat(257) } })).toMatch(/label order holds 257 bytes \(limit 256\)/);
    expect(start({ labels: { order: 'a\nb' } })).toMatch(/label order holds a control character/);
    expect(start({ labels: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) })).toMatch(
      /has 17 labels \(limit 16\)/,
    );
    expect(t.sagas.size).toBe(0);
  });

  it('checks saga.attempt’s form where the entry enters the node', () => {
    expect(checkedCommand(encodeCommand(attempt(0, 'action', 'down', 1)), [new SagaTable()]).problem).toBeNull();
    const bad = encodeCommand({
      t: 'saga.attempt',
      sagaId: 's1',
      step: 0,
      kind: 'action',
      atMs: 1,
    } as unknown as SagaCommand);
    expect(checkedCommand(bad, [new SagaTable()]).problem).toMatch(
      /saga.attempt needs sagaId, step, kind, error and atMs/,
    );
  });
});

describe('saga engine: attempts across leaders', () => {
  it('a new leader carries on the count: the attempt number on the wire goes on, and the action is abandoned at the bound', () => {
    const cfg = { actionAttemptsMax: 4 };
    const w = new SagaWorld(cfg);
    w.engine.start('s1', steps(1), null, () => {});
    w.applyAll();
    for (let i = 0; i < 2; i++) {
      w.answer(new Error(`down ${i}`));
      w.applyAll();
      w.now += 2_000;
      w.engine.tick();
    }
    expect(w.calls.map((c) => c.req.attempt)).toEqual([3]);
    failover(w, 2, cfg);
    // The new leader waits out the backoff from the last logged failure, then makes attempt 3 (not 1).
    w.now += 2_000;
    w.engine.tick();
    expect(w.calls.map((c) => c.req.attempt)).toEqual([3]);
    w.answer(new Error('down 2'));
    w.applyAll();
    failover(w, 3, cfg);
    w.now += 2_000;
    w.engine.tick();
    expect(w.calls.map((c) => c.req.attempt)).toEqual([4]);
    w.answer(new Error('down 3'));
    // The fourth failure, counted across three leaders: abandoned.
    expect(w.proposals.map((p) => p.cmd)).toMatchObject([{ t: 'saga.result', outcome: 'abandoned', step: 0 }]);
    expect((w.proposals[0].cmd as { reason: string }).reason).toMatch(/gave up after 4 attempts/);
  });

  it('no call goes out before the failure before it is logged; a failed log write is proposed again, never called again', () => {
    const w = new SagaWorld();
    w.engine.start('s1', steps(1), null, () => {});
    w.applyAll();
    w.answer(new Error('down'));
    const p = w.proposals.shift();
    p?.cb(new Error('not the leader any more'));
    w.now += 5_000;
    w.engine.tick();
    expect(w.calls).toEqual([]);
    expect(w.proposals.map((x) => x.cmd.t)).toEqual(['saga.attempt']);
    w.applyAll();
    w.now += 5_000;
    w.engine.tick();
    expect(w.calls.map((c) => c.req.attempt)).toEqual([2]);
  });

  it('abandoning an action before the pivot takes both its attempts and actionAbandonAfterMs since its first failure', () => {
    const w = new SagaWorld({ actionAttemptsMax: 2, actionAbandonAfterMs: 30_000 });
    w.engine.start('s1', steps(1), null, () => {});
    w.applyAll();
    const firstAtMs = w.now;
    let calls = 0;
    while (w.proposals.every((p) => p.cmd.t !== 'saga.result')) {
      expect(w.calls.length).toBe(1);
      w.answer(new Error('restarting'));
      calls++;
      if (w.proposals.some((p) => p.cmd.t === 'saga.result')) break;
      w.applyAll();
      w.now += 1_000;
      w.engine.tick();
    }
    expect(w.now - firstAtMs).toBeGreaterThanOrEqual(30_000);
    expect(calls).toBeGreaterThan(2);
    expect(w.proposals.map((p) => p.cmd)).toMatchObject([{ t: 'saga.result', outcome: 'abandoned' }]);
    // Were the service back within the 30 s, the step would have been DONE: the saga is not compensated for a restart.
    const v = new SagaWorld({ actionAttemptsMax: 2, actionAbandonAfterMs: 30_000 });
    v.engine.start('s1', steps(1), null, () => {});
    v.applyAll();
    for (let i = 0; i < 5; i++) {
      v.answer(new Error('restarting'));
      v.applyAll();
      v.now += 2_000;
      v.engine.tick();
    }
    v.answer(DONE);
    v.applyAll();
    expect(v.sagas.sagas.get('s1')?.state).toBe('finished');
  });

  it('a compensation is flagged stuck by the count of every leader together; an action before the pivot never is', () => {
    const cfg = { stuckAfterAttempts: 3, actionAttemptsMax: 100, actionAbandonAfterMs: 0 };
    const w = new SagaWorld(cfg);
    w.engine.start('s1', steps(2), null, () => {});
    w.applyAll();
    for (let i = 0; i < 5; i++) {
      w.answer(new Error('down'));
      w.applyAll();
      w.now += 2_000;
      w.engine.tick();
    }
    expect(w.sagas.sagas.get('s1')?.stuck).toBeNull();
    w.answer(DONE);
    w.applyAll();
    w.answer({ status: 'failed', output: '', reason: 'no rooms' });
    w.applyAll();
    for (let i = 0; i < 2; i++) {
      w.answer(new Error(`refund down ${i}`));
      w.applyAll();
      w.now += 2_000;
      w.engine.tick();
    }
    failover(w, 2, cfg);
    w.now += 2_000;
    w.engine.tick();
    w.answer(new Error('refund down 2'));
    w.applyAll();
    w.applyAll();
    expect(w.sagas.sagas.get('s1')?.stuck).toMatchObject({
      step: 0,
      kind: 'compensate',
      attempts: 3,
      lastError: 'refund down 2',
    });
  });

  it('starts with a type and labels, and refuses a repeated start with other labels or bad ones before logging', () => {
    const w = new SagaWorld();
    const errs: string[] = [];
    w.engine.start('s1', steps(1), null, () => {}, 'CN=shop', { type: 'order', labels: { order: 'ORD-7731' } });
    expect(w.proposals[0].cmd).toMatchObject({ t: 'saga.start', type: 'order', labels: { order: 'ORD-7731' } });
    w.applyAll();
    w.engine.start('s1', steps(1), null, (e) => void (e && errs.push(e.message)), 'CN=shop', {
      type: 'order',
      labels: { order: 'ORD-1' },
    });
    w.engine.start('s2', steps(1), null, (e) => void (e && errs.push(e.message)), 'CN=shop', {
      type: 'no spaces allowed',
    });
    expect(errs).toEqual([
      'saga s1 already exists with another type or other labels; use a new id',
      expect.stringMatching(/saga s2: type "no spaces allowed" must be/),
    ]);
    expect(w.proposals).toEqual([]);
  });
});
