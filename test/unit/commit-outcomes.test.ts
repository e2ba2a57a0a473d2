// Answers never change, past the tables' memory: the transaction id rule,
// timed ids and the retention horizon (src/domain/txn-id.ts,
// src/commit/state.ts, CoordinatorEngine.begin).

import { describe, expect, test } from 'vitest';
import { EngineError, type OutcomeAnswer } from '../../src/commit/engine.ts';
import { DecisionTable } from '../../src/commit/state.ts';
import { newTxnId, txnIdProblem, txnIdAtMs } from '../../src/domain/txn-id.ts';
import { EngineWorld } from './engine-fixture.ts';

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
const bytes = (fill: number): Uint8Array => new Uint8Array(10).fill(fill);

describe('the transaction id rule', () => {
  test('ids are 1–128 characters of [A-Za-z0-9_.:-], starting with a letter or a digit', () => {
    expect(txnIdProblem('a')).toBeNull();
    expect(txnIdProblem(`a${'x'.repeat(127)}`)).toBeNull();
    expect(txnIdProblem('order-42:retry.1_b')).toBeNull();
    expect(txnIdProblem('')).toMatch(/1–128/);
    expect(txnIdProblem(`a${'x'.repeat(128)}`)).toMatch(/129 characters/);
    expect(txnIdProblem('-lead')).not.toBeNull();
    expect(txnIdProblem('sp ace')).not.toBeNull();
    // A hostile id is never echoed whole.
    expect((txnIdProblem('!'.repeat(100_000)) ?? '').length).toBeLessThan(300);
  });

  test('the engine holds every entry point to it, GetOutcome included (a question must not log ABORT for a hostile id)', () => {
    const w = new EngineWorld(['a'], {});
    const bad = `x${'y'.repeat(200)}`;
    const errs: (EngineError | null)[] = [];
    w.engine.outcome(bad, 'a', (e) => errs.push(e));
    w.engine.abort(bad, '', (e) => errs.push(e));
    w.engine.commit(bad, [{ participantId: 'a', payload: new Uint8Array() }], (e) => errs.push(e), {
      timeoutMs: 1_000,
    });
    expect(errs.map((e) => e?.code)).toEqual(['invalid', 'invalid', 'invalid']);
    expect(() => w.engine.begin(bad, 0)).toThrow(/201 characters/);
    expect(w.proposals).toHaveLength(0);
  });

  test('generated ids are UUIDv7s that carry their creation time; a prefix may precede one', () => {
    const id = newTxnId(T0, bytes(0xff));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(txnIdProblem(id)).toBeNull();
    expect(txnIdAtMs(id)).toBe(T0);
    expect(txnIdAtMs(`orders:${id}`)).toBe(T0);
    expect(txnIdAtMs(`orders-${id}`)).toBe(T0);
    expect(newTxnId(T0, bytes(1))).not.toBe(newTxnId(T0, bytes(2)));
    // Untimed: no UUIDv7 at the end, a UUIDv4, or one glued to other characters.
    expect(txnIdAtMs('t1')).toBeNull();
    expect(txnIdAtMs('0b5c5a7e-1f2d-4c3b-9a8e-7d6c5b4a3f21')).toBeNull();
    expect(txnIdAtMs(`x${id}`)).toBeNull();
  });
});

describe('the retention horizon', () => {
  const forgetDecided = (table: DecisionTable, txnId: string, index: number): void => {
    table.apply({ t: 'decide', txnId, outcome: 'abort', reason: '', participants: [], atMs: 0 }, index);
    table.apply({ t: 'forget', txnIds: [txnId] }, index + 1);
  };

  test('moves to the newest timed id whose tombstone is evicted, and survives a snapshot', () => {
    const table = new DecisionTable(1);
    const older = newTxnId(T0, bytes(1));
    const newer = newTxnId(T0 + 5_000, bytes(2));
    forgetDecided(table, newer, 1);
    expect(table.horizonAtMs).toBeNull();
    forgetDecided(table, older, 3);
    // newer's tombstone was evicted (the oldest goes first): the horizon is its time, and older stays remembered.
    expect(table.horizonAtMs).toBe(T0 + 5_000);
    expect(table.lookup(older)?.outcome).toBe('abort');
    expect(table.beyondHorizon(newer)).toBe(true);
    expect(table.beyondHorizon(older)).toBe(false);
    forgetDecided(table, 'untimed', 5);
    expect(table.horizonAtMs).toBe(T0 + 5_000);
    const copy = new DecisionTable(1);
    copy.restoreFrom(JSON.parse(JSON.stringify(table.toJSON())));
    expect(copy.horizonAtMs).toBe(T0 + 5_000);
  });

  test('refuses to begin a timed id at or before the horizon, or from the future; begins one after it', () => {
    const w = new EngineWorld(['a'], {});
    w.now = T0 + 60_000;
    w.table.horizonAtMs = T0;
    const refusal = (id: string): EngineError | null => {
      try {
        w.engine.begin(id, 0);
        return null;
      } catch (err) {
        return err as EngineError;
      }
    };
    expect(refusal(newTxnId(T0, bytes(1)))).toMatchObject({
      code: 'precondition',
      message: expect.stringMatching(/retention horizon/),
    });
    expect(refusal(newTxnId(T0 + 1, bytes(2)))).toBeNull();
    expect(refusal(newTxnId(w.now + 10 * 60_000, bytes(3)))).toMatchObject({
      code: 'invalid',
      message: expect.stringMatching(/client's clock/),
    });
    // The same through a Commit that begins.
    let err: EngineError | null = null;
    w.engine.commit(newTxnId(T0 - 1, bytes(4)), [{ participantId: 'a', payload: new Uint8Array() }], (e) => (err = e), {
      timeoutMs: 1_000,
    });
    expect(err).toMatchObject({ code: 'precondition' });
    expect(w.prepares.map((p) => p.req.txnId)).toEqual([]);
  });

  test('a forgotten timed id is never re-decided: a plain Commit is refused and a participant question is answered UNKNOWN, with no log write', () => {
    const w = new EngineWorld(['a'], {});
    w.now = T0 + 60_000;
    w.table.horizonAtMs = T0;
    const old = newTxnId(T0 - 1_000, bytes(5));
    let err: EngineError | null = null;
    w.engine.commit(old, [{ participantId: 'a', payload: new Uint8Array() }], (e) => (err = e));
    expect(err).toMatchObject({ code: 'precondition', message: expect.stringMatching(/forgotten/) });
    let asked: OutcomeAnswer | undefined;
    w.engine.outcome(old, 'a', (_e, a) => (asked = a));
    expect(asked?.outcome).toBe('UNKNOWN');
    let aborted: EngineError | null = null;
    w.engine.abort(old, 'cleanup', (e) => (aborted = e));
    expect(aborted).toMatchObject({ code: 'precondition' });
    expect(w.proposals).toHaveLength(0);
  });

  test("untimedIds 'refuse' begins only timed ids", () => {
    const w = new EngineWorld(['a'], { untimedIds: 'refuse' });
    w.now = T0;
    expect(() => w.engine.begin('order-42', 0)).toThrow(/carries no creation time/);
    expect(() => w.engine.begin(newTxnId(T0, bytes(6)), 0)).not.toThrow();
  });
});
