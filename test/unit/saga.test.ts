// The saga layer's pure parts: the replicated saga table (transitions, the
// pivot rule, operator acts, bad input), the orchestrator engine over a fake
// log and fake step services (persist before send, stable keys, retries,
// stuck, resume on a new leader), and the step service's inbox (exactly-once
// effects, empty compensations, no action after its compensation).

import { describe, expect, it } from 'vitest';
import { checkedCommand } from '../../src/commit/command-check.ts';
import { encodeCommand } from '../../src/commit/state.ts';
import { answerProblem, type StepAnswer, type StepRequest } from '../../src/saga/engine.ts';
import { SagaInbox, type InboxRecord } from '../../src/saga/inbox.ts';
import { currentCall, SagaTable, stepKey, type SagaApplyResult, type SagaCommand } from '../../src/saga/state.ts';
import { DONE, SagaWorld, steps } from './saga-fixture.ts';

function startedTable(n: number, pivot: number | null): SagaTable {
  const t = new SagaTable();
  t.apply({ t: 'saga.start', sagaId: 's1', steps: steps(n), pivot, atMs: 1 }, 1);
  return t;
}

const result = (
  step: number,
  kind: 'action' | 'compensate',
  outcome: 'done' | 'failed' | 'abandoned',
): SagaCommand => ({
  t: 'saga.result',
  sagaId: 's1',
  step,
  kind,
  outcome,
  output: `out${step}`,
  reason: 'r',
  atMs: 2,
});

describe('saga table', () => {
  it('runs the steps in order, one call at a time, and finishes', () => {
    const t = startedTable(3, null);
    const s = t.sagas.get('s1');
    expect(s && currentCall(s)).toEqual({ step: 0, kind: 'action' });
    t.apply(result(0, 'action', 'done'), 2);
    expect(s?.status).toEqual(['done', 'running', 'pending']);
    t.apply(result(1, 'action', 'done'), 3);
    t.apply(result(2, 'action', 'done'), 4);
    expect(s?.state).toBe('finished');
    expect(s?.outputs).toEqual(['out0', 'out1', 'out2']);
  });

  it('a FAILED step compensates every done step in reverse order, not itself', () => {
    const t = startedTable(4, null);
    const s = t.sagas.get('s1');
    for (const k of [0, 1]) t.apply(result(k, 'action', 'done'), 2 + k);
    t.apply(result(2, 'action', 'failed'), 5);
    expect(s?.state).toBe('compensating');
    expect(s && currentCall(s)).toEqual({ step: 1, kind: 'compensate' });
    t.apply(result(1, 'compensate', 'done'), 6);
    expect(s && currentCall(s)).toEqual({ step: 0, kind: 'compensate' });
    t.apply(result(0, 'compensate', 'done'), 7);
    expect(s?.state).toBe('compensated');
    expect(s?.status).toEqual(['compensated', 'compensated', 'failed', 'pending']);
  });

  it('an abandoned step (it may have run) is compensated first', () => {
    const t = startedTable(2, null);
    t.apply(result(0, 'action', 'done'), 2);
    t.apply(result(1, 'action', 'abandoned'), 3);
    const s = t.sagas.get('s1');
    expect(s && currentCall(s)).toEqual({ step: 1, kind: 'compensate' });
  });

  it('after the pivot a failure is refused: the step is retried, never compensated', () => {
    const t = startedTable(3, 1);
    t.apply(result(0, 'action', 'done'), 2);
    t.apply(result(1, 'action', 'done'), 3);
    const r = t.apply(result(2, 'action', 'failed'), 4) as SagaApplyResult;
    expect(r.changed).toBe(false);
    expect(r.problem).toMatch(/saga s1 step 2 action is after the pivot/);
    expect(t.sagas.get('s1')?.state).toBe('running');
  });

  it('a repeated or late answer changes nothing (R7)', () => {
    const t = startedTable(2, null);
    t.apply(result(0, 'action', 'done'), 2);
    const again = t.apply(result(0, 'action', 'done'), 3) as SagaApplyResult;
    expect(again.changed).toBe(false);
    expect(t.sagas.get('s1')?.status).toEqual(['done', 'running']);
    const start = t.apply(
      { t: 'saga.start', sagaId: 's1', steps: steps(5), pivot: null, atMs: 9 },
      4,
    ) as SagaApplyResult;
    expect(start.changed).toBe(false);
    expect(start.saga?.steps.length).toBe(2);
  });

  it('an operator resolves only a stuck step, recorded with who and why', () => {
    const t = startedTable(2, 0);
    const op = { operator: 'alice', reason: 'paid by hand', atMs: 5 };
    const refused = t.apply({ ...result(0, 'action', 'done'), operator: op } as SagaCommand, 2) as SagaApplyResult;
    expect(refused.changed).toBe(false);
    expect(refused.problem).toMatch(/saga s1 step 0 action is not stuck/);
    t.apply({ t: 'saga.stuck', sagaId: 's1', step: 0, kind: 'action', attempts: 10, lastError: 'down', atMs: 3 }, 3);
    expect(t.sagas.get('s1')?.stuck).toMatchObject({ step: 0, attempts: 10, lastError: 'down' });
    const ok = t.apply({ ...result(0, 'action', 'done'), operator: op } as SagaCommand, 4) as SagaApplyResult;
    expect(ok.changed).toBe(true);
    const s = t.sagas.get('s1');
    expect(s?.stuck).toBeNull();
    expect(s?.timeline.find((e) => e.what === 'resolved done')).toMatchObject({
      operator: 'alice',
      detail: 'paid by hand',
      step: 0,
    });
  });

  it('refuses bad definitions naming the saga and the step, and keeps nothing', () => {
    const t = new SagaTable();
    const none = t.apply({ t: 'saga.start', sagaId: 's2', steps: [], pivot: null, atMs: 1 }, 1) as SagaApplyResult;
    expect(none.problem).toBe('saga s2 has no steps');
    const badPivot = t.apply(
      { t: 'saga.start', sagaId: 's3', steps: steps(2), pivot: 2, atMs: 1 },
      2,
    ) as SagaApplyResult;
    expect(badPivot.problem).toMatch(/saga s3: pivot 2 is not one of its steps/);
    expect(t.sagas.size).toBe(0);
  });

  it('command checks: saga commands are checked at the edge like every command', () => {
    expect(
      checkedCommand(
        encodeCommand({ t: 'saga.start', sagaId: 'x', steps: steps(1), pivot: null, atMs: 1 } as SagaCommand),
        [new SagaTable()],
      ).problem,
    ).toBeNull();
    const bad = Buffer.concat([
      Buffer.from([2]),
      Buffer.from(
        JSON.stringify({
          t: 'saga.result',
          sagaId: 'x',
          step: -1,
          kind: 'action',
          outcome: 'done',
          output: '',
          reason: '',
          atMs: 1,
        }),
      ),
    ]);
    expect(checkedCommand(bad, [new SagaTable()]).problem).toMatch(/saga.result needs/);
    const pivots = Buffer.concat([
      Buffer.from([2]),
      Buffer.from(JSON.stringify({ t: 'saga.start', sagaId: 'x', steps: steps(1), pivot: [0, 1], atMs: 1 })),
    ]);
    expect(checkedCommand(pivots, [new SagaTable()]).problem).toMatch(/saga.start needs/);
  });

  it('is kept in snapshots', () => {
    const t = startedTable(2, null);
    t.apply(result(0, 'action', 'done'), 2);
    const copy = new SagaTable();
    copy.restoreFrom(JSON.parse(JSON.stringify(t.toJSON())));
    expect(copy.sagas.get('s1')?.status).toEqual(['done', 'running']);
  });
});

describe('saga engine', () => {
  it('persists before it sends: no call goes out before the transition that names it is applied', () => {
    const w = new SagaWorld();
    let started = false;
    w.engine.start('s1', steps(2), null, (err) => (started = err === null));
    expect(w.calls).toEqual([]);
    w.applyAll();
    expect(started).toBe(true);
    expect(w.calls.map((c) => c.req.key)).toEqual([stepKey('s1', 0, 'action')]);
    w.answer(DONE);
    // Step 1 waits for step 0's DONE to be applied.
    expect(w.calls).toEqual([]);
    expect(w.proposals.map((p) => p.cmd.t)).toEqual(['saga.result']);
    w.applyAll();
    expect(w.calls.map((c) => ({ key: c.req.key, outputs: c.req.outputs }))).toEqual([
      { key: 's1/1/action', outputs: ['ok'] },
    ]);
  });

  it('retries with the same key, abandons an action before the pivot at its bound and compensates it', () => {
    const w = new SagaWorld();
    w.engine.start('s1', steps(1), null, () => {});
    w.applyAll();
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) {
      keys.push(w.answer(new Error('down')).req.key);
      if (i < 2)
        expect(w.proposals.map((p) => p.cmd)).toMatchObject([
          { t: 'saga.attempt', step: 0, kind: 'action', error: 'down' },
        ]);
      if (i < 2) w.applyAll();
      w.now += 2_000;
      w.engine.tick();
    }
    expect(new Set(keys)).toEqual(new Set(['s1/0/action']));
    expect(w.proposals.map((p) => p.cmd)).toMatchObject([{ t: 'saga.result', outcome: 'abandoned', step: 0 }]);
    w.applyAll();
    expect(w.calls.map((c) => c.req.key)).toEqual(['s1/0/compensate']);
  });

  it('a compensation never gives up: it is flagged stuck with its last error and keeps retrying', () => {
    const w = new SagaWorld();
    w.engine.start('s1', steps(2), null, () => {});
    w.applyAll();
    w.answer(DONE);
    w.applyAll();
    w.answer({ status: 'failed', output: '', reason: 'no rooms' });
    w.applyAll();
    for (let i = 0; i < 6; i++) {
      expect(w.calls[0]?.req.key).toBe('s1/0/compensate');
      w.answer(new Error(`refused ${i}`));
      w.applyAll();
      w.now += 2_000;
      w.engine.tick();
    }
    const s = w.sagas.sagas.get('s1');
    expect(s?.state).toBe('compensating');
    expect(s?.stuck).toMatchObject({ step: 0, kind: 'compensate', attempts: 4, lastError: 'refused 3' });
    expect(w.calls.length).toBe(1);
    w.answer(DONE);
    w.applyAll();
    expect(s?.state).toBe('compensated');
    expect(s?.stuck).toBeNull();
  });

  it('a step that answers garbage is retried, not taken as a refusal', () => {
    expect(answerProblem({ status: 'maybe' } as unknown as StepAnswer)).toMatch(/unknown status/);
    const w = new SagaWorld();
    w.engine.start('s1', steps(1), null, () => {});
    w.applyAll();
    w.answer({ status: 'maybe' } as unknown as StepAnswer);
    expect(w.proposals.map((p) => p.cmd.t)).toEqual(['saga.attempt']);
    w.applyAll();
    w.now += 2_000;
    w.engine.tick();
    expect(w.calls.map((c) => c.req.attempt)).toEqual([2]);
  });

  it('a new leader resumes every running saga from the log, with the same key', () => {
    const w = new SagaWorld();
    w.engine.start('s1', steps(3), null, () => {});
    w.applyAll();
    w.answer(DONE);
    w.applyAll();
    w.calls.splice(0);
    w.engine.setLeadership(0);
    w.engine = w.newEngine();
    w.engine.setLeadership(2);
    expect(w.calls.map((c) => c.req.key)).toEqual(['s1/1/action']);
  });

  it('refuses bad input naming the saga and the step, leaving nothing logged', () => {
    const w = new SagaWorld();
    const errs: string[] = [];
    const cb = (e: Error | null): void => void (e && errs.push(e.message));
    w.engine.start('s1', [{ service: 'nobody', name: 'x', input: '' }], null, cb);
    w.engine.start('s2', [], null, cb);
    w.engine.start('s3', steps(2), 5, cb);
    w.engine.resolve('s4', 0, 'done', 'op', 'r', cb);
    expect(errs).toEqual([
      'saga s1 step 0: step service nobody is not registered with this cluster',
      'saga s2 has no steps',
      'saga s3: pivot 5 is not one of its steps 0..1',
      'no saga s4',
    ]);
    w.engine.start('s5', steps(1), null, () => {});
    w.applyAll();
    w.engine.resolve('s5', 0, 'done', 'op', 'r', cb);
    expect(errs[4]).toMatch(/saga s5 step 0 is not stuck on its action .*nothing was changed/);
    expect(w.proposals).toEqual([]);
  });

  it('tells every step service the saga ended, endNoticeDelayMs later from a tick, then logs saga.ended', () => {
    const w = new SagaWorld({ endNoticeDelayMs: 50 });
    w.engine.start('s1', steps(2), null, () => {});
    w.applyAll();
    w.answer(DONE);
    w.applyAll();
    w.answer(DONE);
    w.applyAll();
    // Not at the end itself, where the notices met the next saga's start and first call.
    expect(w.endBatches).toEqual([]);
    w.now += 49;
    w.engine.tick();
    expect(w.endBatches).toEqual([]);
    w.now += 1;
    w.engine.tick();
    expect(w.endBatches.map((e) => `${e.to}:${e.sagaIds.join(',')}`).sort()).toEqual(['svc0:s1', 'svc1:s1']);
    expect(w.ends).toEqual([]);
    w.ackEnds();
    w.now += 1_000;
    w.engine.tick();
    w.applyAll();
    expect(w.sagas.sagas.get('s1')?.ended).toBe(true);
  });
});

describe('saga inbox', () => {
  const req = (step: number, kind: 'action' | 'compensate'): StepRequest => ({
    sagaId: 's1',
    step,
    kind,
    key: stepKey('s1', step, kind),
    name: 'n',
    input: '',
    outputs: [],
    attempt: 1,
  });
  const journal = (): { records: InboxRecord[]; append: (r: InboxRecord, cb: (e: Error | null) => void) => void } => {
    const records: InboxRecord[] = [];
    return { records, append: (r, cb) => (records.push(r), cb(null)) };
  };

  it('runs an effect once per key and answers a repeat from what it stored', () => {
    const j = journal();
    let runs = 0;
    const inbox = new SagaInbox(j);
    const answers: StepAnswer[] = [];
    for (let i = 0; i < 3; i++)
      inbox.handle(
        req(0, 'action'),
        () => ({ status: 'done', output: `run${++runs}`, effect: 'e' }),
        (_e, a) => a && answers.push(a),
      );
    expect(runs).toBe(1);
    expect(answers.map((a) => a.output)).toEqual(['run1', 'run1', 'run1']);
    // Recovered from its journal, it still knows.
    const again = SagaInbox.recover(j.records, j);
    again.handle(
      req(0, 'action'),
      () => ({ status: 'done', output: 'run2', effect: 'e' }),
      (_e, a) => a && answers.push(a),
    );
    expect(answers[3]?.output).toBe('run1');
  });

  it('a compensation before its action is recorded empty, and the late action is refused', () => {
    const j = journal();
    const inbox = new SagaInbox(j);
    let ran = 0;
    const out: StepAnswer[] = [];
    inbox.handle(
      req(1, 'compensate'),
      () => (ran++, { status: 'done', output: '', effect: 'c' }),
      (_e, a) => a && out.push(a),
    );
    inbox.handle(
      req(1, 'action'),
      () => (ran++, { status: 'done', output: '', effect: 'a' }),
      (_e, a) => a && out.push(a),
    );
    expect(ran).toBe(0);
    expect(j.records.map((r) => r.status)).toEqual(['empty', 'refused']);
    expect(out.map((a) => a.status)).toEqual(['done', 'failed']);
  });

  it('keeps keys until the saga ended, then refuses late duplicates instead of running them', () => {
    const j = journal();
    const inbox = new SagaInbox(j);
    inbox.handle(
      req(0, 'action'),
      () => ({ status: 'done', output: '', effect: 'a' }),
      () => {},
    );
    inbox.end('s1', () => {});
    expect(inbox.get('s1/0/action')).toBeUndefined();
    let err: Error | null = null;
    inbox.handle(
      req(0, 'action'),
      () => ({ status: 'done', output: '', effect: 'a' }),
      (e) => (err = e),
    );
    expect(String(err)).toMatch(/saga s1 has ended/);
    expect(j.records.filter((r) => r.t === 'step').length).toBe(1);
  });
});
