// R9 for sagas: nothing a client starts is unbounded or immortal, and no
// saga id runs twice. Every field of a definition is bounded with a clear
// refusal; a saga id whose saga was evicted is refused by the newness rule
// transaction ids follow (src/domain/id-newness.ts), never run again; a
// repeated start of a live or remembered saga answers the same saga; a client
// has a quota of running sagas; ListSagas answers in bounded pages; the
// table's new state survives snapshots, and an earlier snapshot is read.

import { describe, expect, it } from 'vitest';
import { checkedCommand } from '../../src/commit/command-check.ts';
import { encodeCommand } from '../../src/commit/state.ts';
import { newTxnId } from '../../src/domain/txn-id.ts';
import { sagaPage } from '../../src/node/saga-service.ts';
import { answerProblem, SagaError, type SagaEngineConfig } from '../../src/saga/engine.ts';
import {
  type SagaApplyResult,
  type SagaCommand,
  type SagaRecord,
  type SagaStepDef,
  SagaTable,
} from '../../src/saga/state.ts';
import { DONE, SagaWorld, steps } from './saga-fixture.ts';

/** A timed saga id created at `atMs` (a UUIDv7 after a prefix). */
const timed = (atMs: number, n = 0): string => `trip:${newTxnId(atMs, new Uint8Array(10).fill(n))}`;

const start = (
  sagaId: string,
  owner = 'CN=app',
  defs: SagaStepDef[] = steps(1),
): Extract<SagaCommand, { t: 'saga.start' }> => ({ t: 'saga.start', sagaId, steps: defs, pivot: null, atMs: 1, owner });
const done = (sagaId: string, step: number): SagaCommand => ({
  t: 'saga.result',
  sagaId,
  step,
  kind: 'action',
  outcome: 'done',
  output: 'ok',
  reason: '',
  atMs: 2,
});

/** Runs a one-step saga to its end and logs saga.ended, so the table may evict it. */
function runToEnd(t: SagaTable, sagaId: string, index: number): void {
  t.apply(start(sagaId), index);
  t.apply(done(sagaId, 0), index + 1);
  t.apply({ t: 'saga.ended', sagaIds: [sagaId] }, index + 2);
}

/** Starts through the engine and returns the refusal (or null once the start applied). */
function startVia(w: SagaWorld, sagaId: string, defs: SagaStepDef[], owner = 'CN=app'): SagaError | null {
  let out: SagaError | null | undefined;
  w.engine.start(sagaId, defs, null, (err) => (out = err), owner);
  w.applyAll();
  if (out === undefined) throw new Error('the start was not answered');
  return out;
}

describe('saga definitions: every field bounded (R9)', () => {
  const big = (n: number): string => 'x'.repeat(n);
  const cases: [string, SagaStepDef[], RegExp][] = [
    [
      'a 900,000-character step name',
      [{ service: 'svc0', name: big(900_000), input: '' }],
      /saga s step 0: name "x{40}"… \(900000 characters\) must be 1–128 printable ASCII characters/,
    ],
    [
      'a name with a control character',
      [{ service: 'svc0', name: 'a\u001b[2Jb', input: '' }],
      /step 0: name .* must be 1–128 printable ASCII characters/,
    ],
    [
      'a step service that is not a participant id',
      [{ service: big(65), name: 'n', input: '' }],
      /step 0: step service .* is not a participant id/,
    ],
    [
      'a step input over 64 KiB',
      [{ service: 'svc0', name: 'n', input: big(65_537) }],
      /step 0: input of 65537 bytes \(limit 65536\)/,
    ],
    [
      'inputs over 256 KiB together',
      Array.from({ length: 15 }, () => ({ service: 'svc0', name: 'n', input: big(64 * 1024) })),
      /saga s: its inputs hold 983040 bytes together \(limit 262144\)/,
    ],
    [
      '65 steps',
      Array.from({ length: 65 }, () => ({ service: 'svc0', name: 'n', input: '' })),
      /saga s has 65 steps \(limit 64\)/,
    ],
  ];

  for (const [what, defs, refusal] of cases)
    it(`refuses ${what} with INVALID_ARGUMENT before anything is logged, and where it applies`, () => {
      const w = new SagaWorld();
      const err = startVia(w, 's', defs);
      expect(err?.code).toBe('invalid');
      expect(err?.message).toMatch(refusal);
      expect(err?.message.length).toBeLessThan(300);
      const r = new SagaTable().apply({ ...start('s'), steps: defs }, 1);
      expect(r.problem).toMatch(refusal);
      expect(w.sagas.sagas.size).toBe(0);
    });

  it('refuses a saga id over 128 bytes and one with "/"', () => {
    const w = new SagaWorld();
    expect(startVia(w, 'x'.repeat(129), steps(1))?.message).toMatch(
      /saga id "x{40}"… \(129 characters\) must be 1 to 128 printable ASCII/,
    );
    expect(startVia(w, 'a/b', steps(1))?.code).toBe('invalid');
  });

  it("bounds a saga's outputs together, and cuts timeline texts the same way on every replica", () => {
    expect(answerProblem({ status: 'done', output: 'x'.repeat(10), reason: '' }, 9)).toMatch(
      /output of 10 bytes, past what the saga's outputs may still hold \(9 of 262144 bytes together\)/,
    );
    expect(answerProblem({ status: 'failed', output: '', reason: 'no' }, 0)).toBeNull();
    const t = new SagaTable();
    t.apply(start('s'), 1);
    t.apply(
      { t: 'saga.stuck', sagaId: 's', step: 0, kind: 'action', attempts: 10, lastError: 'e'.repeat(50_000), atMs: 3 },
      2,
    );
    const s = t.sagas.get('s') as SagaRecord;
    expect(s.stuck?.lastError.length).toBeLessThan(1_100);
    expect(s.timeline.at(-1)?.detail).toMatch(/^10 attempts; last error: e+… \(50025 characters\)$/);
  });

  it("an output past the saga's budget is an error the engine retries, never logged as an output", () => {
    const w = new SagaWorld();
    expect(startVia(w, 's', steps(5))).toBeNull();
    // Four outputs of 64 KiB fill the 256 KiB the outputs may hold together.
    for (let k = 0; k < 4; k++) {
      w.answer({ status: 'done', output: 'x'.repeat(64 * 1024), reason: '' });
      w.applyAll();
    }
    w.answer({ status: 'done', output: 'y', reason: '' });
    // Logged as a failed attempt of step 4, never as its output.
    expect(w.proposals.map((p) => p.cmd.t)).toEqual(['saga.attempt']);
    expect(w.engine.running()[0]?.lastError).toMatch(
      /output of 1 bytes, past what the saga's outputs may still hold \(0 of 262144 bytes together\)/,
    );
  });
});

describe('saga ids: an evicted id is refused, never run again (R9)', () => {
  it('an ended saga evicted from the table leaves a tombstone: its start is refused, and the table holds nothing new', () => {
    const t = new SagaTable(1, 10);
    runToEnd(t, 'trip-1', 1);
    runToEnd(t, 'trip-2', 4);
    expect(t.sagas.has('trip-1')).toBe(false);
    expect(t.tombstones.get('trip-1')).toBe('finished');
    const again = t.apply(start('trip-1'), 7) as SagaApplyResult;
    expect(again.changed).toBe(false);
    expect(again.saga).toBeNull();
    expect(again.problem).toBe('saga trip-1 finished and was forgotten; a saga id runs once: use a new id');
    expect(t.sagas.has('trip-1')).toBe(false);
  });

  it('past the tombstones, a timed id at or before the horizon is refused; a newer one starts', () => {
    const t = new SagaTable(1, 1);
    const [a, b, c] = [timed(1_000), timed(2_000), timed(3_000)];
    runToEnd(t, a, 1);
    runToEnd(t, b, 4);
    runToEnd(t, c, 7);
    // a's tombstone was pushed out: the horizon is a's creation time.
    expect(t.tombstones.has(a)).toBe(false);
    expect(t.horizonAtMs).toBe(1_000);
    expect((t.apply(start(a), 10) as SagaApplyResult).problem).toMatch(
      /at or before the retention horizon 1970-01-01T00:00:01.000Z: a saga with this id may have run and been forgotten/,
    );
    expect((t.apply(start(timed(1_000, 7)), 11) as SagaApplyResult).changed).toBe(false);
    expect((t.apply(start(timed(1_001)), 12) as SagaApplyResult).changed).toBe(true);
  });

  it('the engine refuses a forgotten id with FAILED_PRECONDITION before logging, as it refuses transaction ids (one rule)', () => {
    const w = new SagaWorld({ endedDelayMs: 0, endNoticeDelayMs: 0 });
    const finish = (id: string): void => {
      expect(startVia(w, id, steps(1))).toBeNull();
      w.answer(DONE);
      w.applyAll();
      w.ackEnds();
      w.now += 1;
      w.engine.tick();
      w.applyAll();
    };
    // A table that keeps one ended saga and one tombstone.
    const t = w.sagas as unknown as { doneMax: number; tombstonesMax: number };
    t.doneMax = 1;
    t.tombstonesMax = 1;
    const oldAtMs = w.now - 10;
    const old = timed(oldAtMs);
    finish(old);
    finish('trip-2');
    finish('trip-3');
    expect(w.sagas.horizonAtMs).toBe(oldAtMs);
    const again = startVia(w, old, steps(1));
    expect(again?.code).toBe('precondition');
    expect(again?.message).toMatch(new RegExp(`saga id ${old} was created at .*, at or before the retention horizon`));
    expect(startVia(w, 'trip-2', steps(1))?.message).toBe(
      'saga trip-2 finished and was forgotten; a saga id runs once: use a new id',
    );
    // Nothing was called again.
    expect(w.calls).toEqual([]);
    // A timed id from the future, and (with untimedIds: 'refuse') an untimed one.
    expect(startVia(w, timed(w.now + 120_000), steps(1))?.message).toMatch(
      /saga id .* more than 60000 ms after this leader's clock/,
    );
    const strict = new SagaWorld({ untimedIds: 'refuse' });
    expect(startVia(strict, 'trip-9', steps(1))?.message).toMatch(
      /saga id trip-9 carries no creation time, and this cluster starts only ids it can prove new/,
    );
    expect(startVia(strict, timed(strict.now), steps(1))).toBeNull();
  });

  it('R7: a repeated start of a running or kept saga answers the same saga and runs nothing again', () => {
    const w = new SagaWorld();
    expect(startVia(w, 'trip-1', steps(1))).toBeNull();
    w.answer(DONE);
    w.applyAll();
    let again: SagaRecord | undefined;
    w.engine.start('trip-1', steps(1), null, (err, s) => (expect(err).toBeNull(), (again = s)), 'CN=app');
    expect(again?.state).toBe('finished');
    expect(w.proposals).toEqual([]);
    expect(w.calls).toEqual([]);
  });
});

describe('sagas per client (R9)', () => {
  it('a client has at most clientRunningMax sagas running, starts in flight included; others are not affected; an end frees a place', () => {
    const w = new SagaWorld({ clientRunningMax: 2 } as Partial<SagaEngineConfig>);
    const errs: (SagaError | null)[] = [];
    // Two starts in flight (not yet applied) already fill the quota.
    for (const id of ['a1', 'a2', 'a3']) w.engine.start(id, steps(1), null, (e) => errs.push(e), 'CN=app');
    expect(errs.map((e) => e?.code)).toEqual(['exhausted']);
    expect(errs[0]?.message).toBe(
      'client CN=app has 2 sagas running (limit sagaClientRunningMax=2); wait for some to end before starting more',
    );
    w.applyAll();
    expect(startVia(w, 'b1', steps(1), 'CN=other')).toBeNull();
    expect(startVia(w, 'a4', steps(1))?.code).toBe('exhausted');
    expect(w.sagas.runningOf('CN=app')).toBe(2);
    // a1 finishes: its place is free.
    const call = w.calls.findIndex((c) => c.req.sagaId === 'a1');
    w.calls.splice(call, 1)[0]?.cb(null, DONE);
    w.applyAll();
    expect(w.sagas.runningOf('CN=app')).toBe(1);
    expect(startVia(w, 'a4', steps(1))).toBeNull();
  });

  it('running sagas are bounded in bytes as well as in count', () => {
    const w = new SagaWorld({ runningBytesMax: 100_000 } as Partial<SagaEngineConfig>);
    const def = [{ service: 'svc0', name: 'n', input: 'x'.repeat(60_000) }];
    expect(startVia(w, 'a', def)).toBeNull();
    expect(startVia(w, 'b', def)?.message).toMatch(
      /running sagas hold 60\d+ bytes of definitions and outputs \(limit 100000\); retry later/,
    );
  });

  it('ended sagas are kept up to a byte total too: the oldest ended go first', () => {
    const t = new SagaTable(10_000, 100, 150_000);
    const def = [{ service: 'svc0', name: 'n', input: 'x'.repeat(60_000) }];
    for (const [i, id] of ['a', 'b', 'c'].entries()) {
      t.apply(start(id, 'CN=app', def), i * 3 + 1);
      t.apply(done(id, 0), i * 3 + 2);
      t.apply({ t: 'saga.ended', sagaIds: [id] }, i * 3 + 3);
    }
    expect([...t.sagas.keys()]).toEqual(['b', 'c']);
    expect(t.endedBytes).toBeLessThanOrEqual(150_000);
  });
});

describe('ListSagas pages', () => {
  const table = (): SagaTable => {
    const t = new SagaTable();
    for (let i = 0; i < 10; i++)
      t.apply(
        start(`s${i}`, i % 2 === 0 ? 'CN=alice' : 'CN=bob', [{ service: 'svc0', name: 'n', input: 'x'.repeat(1_000) }]),
        i + 1,
      );
    return t;
  };
  const all = { afterIndex: -1, limit: 1_000, bytesMax: 1024 * 1024, stuckOnly: false, owner: null };

  it('pages by count and by bytes, and the token continues after the last saga given, even when sagas left between pages', () => {
    const t = table();
    const p1 = sagaPage(t.sagas.values(), { ...all, limit: 4 });
    expect(p1.sagas.map((s) => s.sagaId)).toEqual(['s0', 's1', 's2', 's3']);
    expect(p1.nextPageToken).toBe('4');
    t.sagas.delete('s4');
    const p2 = sagaPage(t.sagas.values(), { ...all, limit: 4, afterIndex: Number(p1.nextPageToken) });
    expect(p2.sagas.map((s) => s.sagaId)).toEqual(['s5', 's6', 's7', 's8']);
    const p3 = sagaPage(t.sagas.values(), { ...all, limit: 4, afterIndex: Number(p2.nextPageToken) });
    expect(p3).toEqual({ sagas: [expect.objectContaining({ sagaId: 's9' })], nextPageToken: '' });
    // About 1 KB each: a 3,000-byte page holds two, and a page always holds at least one.
    expect(sagaPage(t.sagas.values(), { ...all, bytesMax: 3_000 }).sagas.length).toBe(2);
    expect(sagaPage(t.sagas.values(), { ...all, bytesMax: 1 }).sagas.length).toBe(1);
  });

  it('a client sees only the sagas it started', () => {
    const page = sagaPage(table().sagas.values(), { ...all, owner: 'CN=bob' });
    expect(page.sagas.map((s) => s.sagaId)).toEqual(['s1', 's3', 's5', 's7', 's9']);
  });
});

describe('saga table state in snapshots and entries', () => {
  it('snapshots carry starters, tombstones and the horizon; the quota counts survive a restore', () => {
    const t = new SagaTable();
    t.apply(start('run-1', 'CN=alice'), 1);
    const s = t as unknown as { doneMax: number; tombstonesMax: number };
    s.doneMax = 1;
    s.tombstonesMax = 1;
    for (const [i, id] of [timed(1_000), timed(2_000), timed(3_000)].entries()) runToEnd(t, id, 10 + i * 3);
    const copy = new SagaTable();
    copy.restoreFrom(JSON.parse(JSON.stringify(t.toJSON())));
    expect(copy.horizonAtMs).toBe(t.horizonAtMs);
    expect([...copy.tombstones]).toEqual([...t.tombstones]);
    expect(copy.sagas.get('run-1')?.owner).toBe('CN=alice');
    expect(copy.runningOf('CN=alice')).toBe(1);
    expect(copy.runningBytes).toBe(t.runningBytes);
    expect(copy.endedBytes).toBe(t.endedBytes);
  });

  it('a snapshot of the earlier saga table (a bare list, no starters) is read', () => {
    const t = new SagaTable();
    t.apply({ t: 'saga.start', sagaId: 'old', steps: steps(2), pivot: null, atMs: 1 }, 1);
    const json = t.toJSON() as { s: SagaRecord[] };
    const earlier = json.s.map(({ owner: _, ...rest }) => rest);
    const copy = new SagaTable();
    copy.restoreFrom(JSON.parse(JSON.stringify(earlier)));
    expect(copy.sagas.get('old')).toMatchObject({ owner: '', state: 'running' });
    expect(copy.runningOf('')).toBe(1);
    expect(copy.horizonAtMs).toBeNull();
  });

  it('an entry with a starter the node could not have written is refused at the edge', () => {
    expect(checkedCommand(encodeCommand(start('x', 'CN=alice')), [new SagaTable()]).problem).toBeNull();
    expect(checkedCommand(encodeCommand(start('x', 'x'.repeat(300))), [new SagaTable()]).problem).toMatch(
      /saga.start needs .* a starter of at most 256 printable characters/,
    );
  });
});
