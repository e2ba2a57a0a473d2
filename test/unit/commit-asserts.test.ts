// The commit layer's assertions: each transaction state change asserts its
// preconditions, so a broken internal call is a loud InvariantError; input
// from clients, participants and operators is refused with an EngineError
// (or ignored) and never reaches an assertion.

import { describe, expect, test } from 'vitest';
import { CoordinatorEngine, EngineError, type EngineIO, type Txn } from '../../src/commit/engine.ts';
import { DecisionTable } from '../../src/commit/state.ts';
import { InvariantError } from '../../src/util/assert.ts';
import { EngineWorld } from './engine-fixture.ts';

/** Reaches the protocol's own transitions the way a bug in Verdict would. */
class BrokenEngine extends CoordinatorEngine {
  txnOf(id: string): Txn {
    const t = this.txns.get(id);
    if (!t) throw new Error(`no txn ${id}`);
    return t;
  }
  commitNow(id: string): void {
    this.proposeCommit(this.txnOf(id));
  }
  abortNow(id: string): void {
    this.proposeAbort(this.txnOf(id));
  }
  operatorTakesOverNow(id: string): void {
    this.port.operatorTakesOver(this.txnOf(id), 'test');
  }
}

function brokenWorld(): { engine: BrokenEngine; table: DecisionTable } {
  const table = new DecisionTable();
  table.apply({ t: 'register', id: 'a', endpoint: '127.0.0.1:1', atMs: 0, kind: 'memory' }, 1);
  const io: EngineIO = {
    nowMs: () => 1_000,
    random: () => 0.5,
    propose: () => {},
    sendPrepare: () => {},
    sendDecision: () => {},
    sendStatus: () => {},
  };
  const engine = new BrokenEngine(table, io, {});
  engine.setLeadership(1);
  return { engine, table };
}

describe('asserted transitions (a broken internal call is an InvariantError)', () => {
  test('COMMIT proposed for a transaction that never sent PREPARE', () => {
    const { engine } = brokenWorld();
    engine.begin('t1', 0);
    expect(() => engine.commitNow('t1')).toThrow(InvariantError);
    expect(() => engine.commitNow('t1')).toThrow(/COMMIT is proposed from phase preparing, not begun/);
  });

  test('ABORT proposed twice for a transaction already deciding', () => {
    const { engine } = brokenWorld();
    engine.begin('t1', 0);
    engine.abortNow('t1');
    expect(engine.phases().deciding).toBe(1);
    expect(() => engine.abortNow('t1')).toThrow(/ABORT is proposed from phase begun or preparing, not deciding/);
  });

  test('an operator taking over a transaction that is already deciding', () => {
    const { engine } = brokenWorld();
    engine.begin('t1', 0);
    engine.abortNow('t1');
    expect(() => engine.operatorTakesOverNow('t1')).toThrow(InvariantError);
  });

  test('leadership going back to an earlier term, or a negative one', () => {
    const { engine } = brokenWorld();
    engine.setLeadership(5);
    expect(() => engine.setLeadership(3)).toThrow(/leadership moves from term 5/);
    expect(() => engine.setLeadership(-1)).toThrow(InvariantError);
  });

  test('the decision table: a command applied at no log index', () => {
    const table = new DecisionTable();
    expect(() => table.apply({ t: 'forget', txnIds: [] }, -1)).toThrow(InvariantError);
  });
});

describe('hostile input is refused, never asserted', () => {
  function world(): EngineWorld {
    return new EngineWorld(['a', 'b'], {});
  }
  function refusal(call: (cb: (err: EngineError | null) => void) => void): EngineError | null {
    let got: EngineError | null = null;
    call((err) => {
      got = err;
    });
    return got;
  }
  const payload = new Uint8Array([1]);

  test('client input: a bad id, an unregistered or doubled participant, a second COMMIT and ABORT', () => {
    const w = world();
    expect(refusal((cb) => w.engine.commit('', [{ participantId: 'a', payload }], cb))?.code).toBe('invalid');
    w.engine.begin('t1', 0);
    expect(refusal((cb) => w.engine.commit('t1', [{ participantId: 'zz', payload }], cb))?.code).toBe('precondition');
    const twice = [
      { participantId: 'a', payload },
      { participantId: 'a', payload },
    ];
    expect(refusal((cb) => w.engine.commit('t1', twice, cb))?.code).toBe('invalid');
    w.engine.commit('t1', [{ participantId: 'a', payload }], () => {});
    // A repeated Commit while preparing waits for the same outcome; nothing asserts.
    expect(() => w.engine.commit('t1', [{ participantId: 'b', payload }], () => {})).not.toThrow();
    w.vote('a', 'no');
    w.applyAll();
    // ABORT and Abort again of a decided transaction answer what the log says.
    let answer = '';
    w.engine.abort('t1', 'again', (_e, a) => (answer = a?.outcome ?? ''));
    expect(answer).toBe('ABORTED');
    expect(() => w.engine.setLeadership(1)).not.toThrow();
  });

  test('participant input: an unknown participant asking, a heuristic report from an unregistered id, a DECISION acknowledged after the leader moved on', () => {
    const w = world();
    expect(() => w.engine.outcome('t9', 'nobody', () => {})).not.toThrow();
    w.applyAll();
    const err = refusal((cb) =>
      w.engine.reportHeuristic(
        { txnId: 't9', participantId: 'nobody', outcome: 'commit', gid: 'g', operator: 'o', reason: 'r', atMs: 1 },
        (e) => cb(e),
      ),
    );
    expect(err?.code).toBe('precondition');
    w.engine.begin('t2', 0);
    w.engine.commit('t2', [{ participantId: 'a', payload }], () => {});
    w.vote('a', 'yes');
    w.applyAll();
    expect(w.decisions).toHaveLength(1);
    // Leadership changes while the DECISION is out; its late ACK is ignored.
    w.engine.setLeadership(0);
    expect(() => w.ackAll()).not.toThrow();
  });

  test('operator input: an unknown id, COMMIT of an undecided transaction, removing an unknown participant', () => {
    const w = world();
    const unknown = refusal((cb) => w.engine.resolve('t404', 'abort', { operator: 'o', reason: 'r' }, (e) => cb(e)));
    expect(unknown?.code).toBe('precondition');
    w.engine.begin('t3', 0);
    const commit = refusal((cb) => w.engine.resolve('t3', 'commit', { operator: 'o', reason: 'r' }, (e) => cb(e)));
    expect(commit?.message).toMatch(/AC2/);
    let removed: boolean | undefined = true;
    w.engine.unregisterParticipant('nobody', 'o', (_e, r) => (removed = r));
    expect(removed).toBe(false);
  });
});
