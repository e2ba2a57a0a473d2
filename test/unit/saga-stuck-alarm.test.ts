// A stuck saga raises an alarm a person can act on (src/saga/saga-core.ts,
// src/node/saga-metrics.ts): the leader's warn line names the saga, its type
// and labels, the step, its service and handler, attempts and last error, and
// is repeated at most every sagaStuckLogIntervalMs, at most
// STUCK_LINES_PER_SCAN lines a scan; the stuck metrics count by type with a
// bounded number of label values.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { DecisionTable } from '../../src/commit/state.ts';
import { NO_TYPE_LABEL, OTHER_TYPE_LABEL, SagaMetrics, TypeLabels } from '../../src/node/saga-metrics.ts';
import { SagaCore, STUCK_LINES_PER_SCAN } from '../../src/saga/saga-core.ts';
import { SagaTable, type SagaApplyResult, type SagaCommand } from '../../src/saga/state.ts';

interface Line {
  obj: Record<string, unknown>;
  msg: string;
  atMs: number;
}

const INTERVAL_MS = 5_000;

function world(): {
  w: SagaCore;
  sagas: SagaTable;
  lines: Line[];
  flagged: (string | undefined)[];
  clock: { now: number };
  apply: (c: SagaCommand) => SagaApplyResult;
} {
  const table = new DecisionTable();
  table.apply({ t: 'register', id: 'pay', endpoint: '127.0.0.1:9', atMs: 0, kind: 'memory' }, 1);
  const sagas = new SagaTable();
  const lines: Line[] = [];
  const flagged: (string | undefined)[] = [];
  const clock = { now: 1_000_000 };
  let index = 1;
  // The pure saga core on a clock of the test's: the step service's calls fail, which is not this test's business.
  const w = new SagaCore({
    table: sagas,
    services: table.participants,
    io: {
      nowMs: () => clock.now,
      random: () => 0.5,
      after: () => () => {},
      propose: () => {},
      callStep: (_to, _req, _timeoutMs, cb) => cb(new Error('step service unreachable')),
      endSaga: (_to, _sagaId, _timeoutMs, cb) => cb(new Error('step service unreachable')),
      endSagas: (_to, _sagaIds, _timeoutMs, cb) => cb(new Error('step service unreachable')),
    },
    log: { warn: (obj, msg) => lines.push({ obj, msg, atMs: clock.now }) },
    stuckLogIntervalMs: INTERVAL_MS,
    observe: { stuckFlagged: (type) => flagged.push(type) },
  });
  const apply = (c: SagaCommand): SagaApplyResult => {
    const r = sagas.apply(c, ++index);
    w.onApplied(r);
    return r;
  };
  return { w, sagas, lines, flagged, clock, apply };
}

/** Starts saga `id` whose step 1 refuses, so that step 0's compensation is the current call, and flags it stuck. */
function stuckSaga(apply: (c: SagaCommand) => SagaApplyResult, id: string, type?: string): void {
  apply({
    t: 'saga.start',
    sagaId: id,
    steps: [
      { service: 'pay', name: 'debit', input: '{"order":"ORD-7731"}' },
      { service: 'pay', name: 'ship', input: '' },
    ],
    pivot: null,
    atMs: 1,
    ...(type ? { type, labels: { amount: '12,400 RUB', order: 'ORD-7731' } } : {}),
  });
  apply({
    t: 'saga.result',
    sagaId: id,
    step: 0,
    kind: 'action',
    outcome: 'done',
    output: 'debited',
    reason: '',
    atMs: 2,
  });
  apply({
    t: 'saga.result',
    sagaId: id,
    step: 1,
    kind: 'action',
    outcome: 'failed',
    output: '',
    reason: 'out of stock',
    atMs: 3,
  });
  for (let i = 0; i < 4; i++)
    apply({
      t: 'saga.attempt',
      sagaId: id,
      step: 0,
      kind: 'compensate',
      error: `refund system unreachable (${i})`,
      atMs: 4 + i,
    });
  apply({
    t: 'saga.stuck',
    sagaId: id,
    step: 0,
    kind: 'compensate',
    attempts: 4,
    lastError: 'refund system unreachable (3)',
    atMs: 10,
  });
}

describe('a stuck saga’s warn line', () => {
  it('names the saga, its type and labels, the step, service, handler, attempts and last error, once when flagged', () => {
    const { w, lines, flagged, apply } = world();
    w.setLeadership(1);
    try {
      stuckSaga(apply, 'refund-7731', 'order-refund');
      expect(flagged).toEqual(['order-refund']);
      expect(lines).toHaveLength(1);
      expect(lines[0].obj).toMatchObject({
        sagaId: 'refund-7731',
        sagaType: 'order-refund',
        labels: { amount: '12,400 RUB', order: 'ORD-7731' },
        step: 0,
        kind: 'compensate',
        service: 'pay',
        handler: 'debit',
        attempts: 4,
        lastError: 'refund system unreachable (3)',
      });
      expect(lines[0].msg).toBe(
        'saga refund-7731 (order-refund amount=12,400 RUB order=ORD-7731) is stuck and needs a person: step 0 compensate at pay/debit failed 4 times, last error: refund system unreachable (3); it keeps retrying. Fix the step service, or act by hand and record it: verdict saga show refund-7731, then verdict saga retry or verdict saga resolve',
      );
    } finally {
      w.close();
    }
  });

  it('repeats at most every sagaStuckLogIntervalMs while stuck, and stops when the saga moves on', () => {
    const { w, lines, clock, apply } = world();
    w.setLeadership(1);
    try {
      stuckSaga(apply, 'refund-1', 'order-refund');
      // Ticks every 100 ms for 30 s.
      for (let t = 0; t < 300; t++) {
        clock.now += 100;
        w.tick();
      }
      for (let i = 1; i < lines.length; i++)
        expect(lines[i].atMs - lines[i - 1].atMs).toBeGreaterThanOrEqual(INTERVAL_MS);
      expect(lines.length).toBeLessThanOrEqual(1 + 30_000 / INTERVAL_MS);
      expect(lines.length).toBeGreaterThanOrEqual(30_000 / INTERVAL_MS - 1);
      const n = lines.length;
      apply({
        t: 'saga.result',
        sagaId: 'refund-1',
        step: 0,
        kind: 'compensate',
        outcome: 'done',
        output: '',
        reason: 'by hand',
        atMs: 20,
        operator: { operator: 'bob', reason: 'by hand', atMs: 20 },
      });
      for (let t = 0; t < 200; t++) {
        clock.now += 100;
        w.tick();
      }
      expect(lines.length).toBe(n);
    } finally {
      w.close();
    }
  });

  it('writes at most STUCK_LINES_PER_SCAN lines a scan and counts the rest in one line; a new leader logs every stuck saga it takes over', () => {
    const { w, lines, clock, apply } = world();
    try {
      // Flagged while this node follows: no line, no count.
      for (let i = 0; i < 50; i++) stuckSaga(apply, `s${i}`);
      expect(lines).toEqual([]);
      w.setLeadership(2);
      clock.now += 1_000;
      w.tick();
      expect(lines).toHaveLength(STUCK_LINES_PER_SCAN + 1);
      expect(lines[STUCK_LINES_PER_SCAN].msg).toBe(
        `${50 - STUCK_LINES_PER_SCAN} more stuck sagas are due a warn line; verdict saga list --stuck lists them all`,
      );
      // Untyped sagas are named without a type.
      expect(lines[0].msg).toMatch(
        /^saga s0 is stuck and needs a person: step 0 compensate at pay\/debit failed 4 times/,
      );
    } finally {
      w.close();
    }
  });
});

describe('stuck metrics by saga type', () => {
  it('bound the label values: the first types seen, then "(other)"; no type is "(none)"', () => {
    const t = new TypeLabels(2);
    expect([t.of('a'), t.of('b'), t.of('c'), t.of('a'), t.of(undefined), t.of('')]).toEqual([
      'a',
      'b',
      OTHER_TYPE_LABEL,
      'a',
      NO_TYPE_LABEL,
      NO_TYPE_LABEL,
    ]);
  });

  it('verdict_sagas_stuck{type} counts the table’s stuck sagas; verdict_saga_stuck_total{type} the flags applied while leading', async () => {
    const { w, sagas, apply } = world();
    w.setLeadership(1);
    try {
      stuckSaga(apply, 'r1', 'order-refund');
      stuckSaga(apply, 'r2', 'order-refund');
      stuckSaga(apply, 'x1');
      const r = new Registry();
      const m = new SagaMetrics(r, { engine: () => w.engine, table: () => sagas });
      m.stuckFlagged('order-refund');
      const text = await r.metrics();
      expect(text).toMatch(/^verdict_sagas_stuck\{type="order-refund"\} 2$/m);
      expect(text).toMatch(/^verdict_sagas_stuck\{type="\(none\)"\} 1$/m);
      expect(text).toMatch(/^verdict_saga_stuck_total\{type="order-refund"\} 1$/m);
      expect(text).toMatch(/^verdict_saga_stuck_total\{type="\(none\)"\} 0$/m);
    } finally {
      w.close();
    }
  });
});
