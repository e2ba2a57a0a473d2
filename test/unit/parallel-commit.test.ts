// Parallel commit (src/commit/parallel-commit.ts) on the coordinator engine's
// fake world: when the client hears COMMITTED, and how a new leader decides a
// staged transaction it finds undecided.
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { CoordinatorEngine, type EngineIO, type OutcomeAnswer } from '../../src/commit/engine.ts';
import { FAULT_POINT_ENV, faultPointFromEnv } from '../../src/node/fault-point.ts';
import { InvariantError } from '../../src/util/assert.ts';
import { decodeDecisionBatch, encodeDecisionBatch } from '../../src/commit/decision-batch.ts';
import { EngineWorld } from './engine-fixture.ts';

const cfg = { parallelCommit: true, defaultTimeoutMs: 5_000 };
const enlist = (ids: string[]) => ids.map((participantId) => ({ participantId, payload: new Uint8Array() }));

function commit(
  w: EngineWorld,
  txnId: string,
  ids: string[],
  parallelCommit?: boolean,
): { answer: () => OutcomeAnswer | undefined; err: () => string } {
  let a: OutcomeAnswer | undefined;
  let e = '';
  w.engine.commit(
    txnId,
    enlist(ids),
    (err, ans) => ((a = ans), (e = err?.code ?? '')),
    { timeoutMs: 5_000 },
    parallelCommit,
  );
  return { answer: () => a, err: () => e };
}

/** A new leader (term 2) whose table holds T's STAGING record and no decision. */
function staged(ids: string[], txnId = 'T1'): EngineWorld {
  const w = new EngineWorld(ids, cfg);
  w.engine.setLeadership(0);
  w.table.apply({ t: 'stage', txnId, participants: ids, atMs: 1_000 }, ++w.index);
  w.engine.setLeadership(2);
  return w;
}

describe('parallel commit: the stager', () => {
  it('R2: COMMITTED once every YES is in and the STAGING record is applied, then COMMIT is logged', () => {
    const w = new EngineWorld(['a', 'b'], cfg);
    const c = commit(w, 'T1', ['a', 'b']);
    expect(w.proposals.map((p) => p.cmd.t)).toEqual(['stage']);
    w.vote('a', 'yes');
    w.vote('b', 'yes');
    // Every YES, but the STAGING record is not applied: no answer, no decision yet.
    expect(c.answer()).toBeUndefined();
    expect(w.proposals.map((p) => p.cmd.t)).toEqual(['stage']);
    const r = w.applyNext();
    expect(r.t === 'stage' && r.staging?.index).toBe(w.index);
    expect(c.answer()).toEqual({ txnId: 'T1', outcome: 'COMMITTED', reason: '', decisionIndex: w.index });
    expect(w.proposals.map((p) => (p.cmd.t === 'decide' ? `decide ${p.cmd.outcome}` : p.cmd.t))).toEqual([
      'decide commit',
    ]);
    // A client asking now hears COMMITTED; a participant hears it only from the log (R4).
    let client: OutcomeAnswer | undefined;
    let participant: OutcomeAnswer | undefined;
    w.engine.outcome('T1', '', (_e, a) => (client = a));
    w.engine.outcome('T1', 'a', (_e, a) => (participant = a));
    expect(client?.outcome).toBe('COMMITTED');
    expect(participant?.outcome).toBe('IN_PROGRESS');
    w.applyAll();
    expect(w.table.lookup('T1')?.outcome).toBe('commit');
    expect(w.table.staged.has('T1')).toBe(false);
  });

  it('the explicit COMMIT after an implied COMMITTED may linger for company; the Forgets it carries linger with it; a classic COMMIT never does', () => {
    const w = new EngineWorld(['a'], { ...cfg, explicitCommitLingerMs: 7 });
    commit(w, 'T0', ['a'], false);
    w.vote('a', 'yes');
    expect(w.proposals.map((p) => [p.cmd.t, p.lingerMs])).toEqual([['decide', 0]]);
    w.applyAll();
    w.decisions.shift()?.cb(null);
    // T0 is acknowledged: its Forget waits for the next decision's entry.
    const c = commit(w, 'T1', ['a']);
    expect(w.proposals.map((p) => [p.cmd.t, p.lingerMs])).toEqual([['stage', 0]]);
    w.vote('a', 'yes');
    w.applyNext();
    expect(c.answer()?.outcome).toBe('COMMITTED');
    expect(w.proposals.map((p) => [p.cmd.t, p.lingerMs])).toEqual([
      ['forget', 7],
      ['decide', 7],
    ]);
    w.applyAll();
    expect(w.table.lookup('T1')?.outcome).toBe('commit');
  });

  it('R2: a NO vote aborts through the log, as in the classic path, and nobody heard COMMITTED', () => {
    const w = new EngineWorld(['a', 'b'], cfg);
    const c = commit(w, 'T1', ['a', 'b']);
    w.applyNext();
    w.vote('a', 'yes');
    w.vote('b', 'no', 'full');
    expect(c.answer()).toBeUndefined();
    w.applyAll();
    expect(c.answer()?.outcome).toBe('ABORTED');
  });

  it('R2: a STAGING proposal that fails falls back to the classic path: COMMITTED only from the applied COMMIT', () => {
    const w = new EngineWorld(['a'], cfg);
    const c = commit(w, 'T1', ['a']);
    w.proposals.shift()?.cb(new Error('dropped'));
    w.vote('a', 'yes');
    expect(c.answer()).toBeUndefined();
    expect(w.proposals.map((p) => p.cmd.t)).toEqual(['decide']);
    w.applyAll();
    expect(c.answer()?.outcome).toBe('COMMITTED');
  });

  it('R2: classic per transaction on a parallel cluster writes no STAGING record', () => {
    const w = new EngineWorld(['a'], cfg);
    commit(w, 'T1', ['a'], false);
    expect(w.proposals).toEqual([]);
    w.vote('a', 'yes');
    expect(w.proposals.map((p) => p.cmd.t)).toEqual(['decide']);
  });
});

describe('parallel commit only with participants that serve Status (docs/protocol.md, "Compatibility")', () => {
  it('AC4: a transaction with a participant built before Status runs classic 2PC on a parallel cluster, even when the client asks for parallel', () => {
    const w = new EngineWorld(['a', 'old'], cfg, ['old']);
    for (const [txnId, asked] of [
      ['T1', undefined],
      ['T2', true],
    ] as const) {
      const c = commit(w, txnId, ['a', 'old'], asked);
      // No STAGING record: a new leader could not recover it, since "old" cannot answer the status question.
      expect(w.proposals).toEqual([]);
      w.vote('a', 'yes');
      w.vote('old', 'yes');
      // Every YES, and still no answer: COMMITTED comes only from the applied COMMIT, the classic way.
      expect(c.answer()).toBeUndefined();
      expect(w.proposals.map((p) => (p.cmd.t === 'decide' ? `decide ${p.cmd.outcome}` : p.cmd.t))).toEqual([
        'decide commit',
      ]);
      w.applyAll();
      expect(c.answer()?.outcome).toBe('COMMITTED');
      expect(w.table.staged.has(txnId)).toBe(false);
    }
    // A transaction whose participants all serve Status still commits in parallel on the same cluster.
    commit(w, 'T3', ['a']);
    expect(w.proposals.map((p) => p.cmd.t)).toEqual(['stage']);
  });

  it('AC4: a leader change during a classic transaction with an old participant ends it by ABORT, with no status question', () => {
    const w = new EngineWorld(['a', 'old'], cfg, ['old']);
    commit(w, 'T1', ['a', 'old']);
    w.vote('a', 'yes');
    // The leader is gone before "old" voted; the new one finds nothing staged: nothing to recover, nobody to ask.
    w.engine.setLeadership(0);
    w.engine.setLeadership(2);
    expect(w.statuses).toEqual([]);
    let asked: OutcomeAnswer | undefined;
    w.engine.outcome('T1', 'a', (_e, a) => (asked = a));
    expect(w.proposals.map((p) => (p.cmd.t === 'decide' ? `decide ${p.cmd.outcome}` : p.cmd.t))).toEqual([
      'decide abort',
    ]);
    w.applyAll();
    expect(asked?.outcome).toBe('ABORTED');
  });

  it('a participant registered before serves existed (no field in its log entry or snapshot) serves nothing optional', () => {
    const w = new EngineWorld([], cfg);
    w.table.apply({ t: 'register', id: 'x', endpoint: '127.0.0.1:7', atMs: 0, kind: 'memory' }, ++w.index);
    expect(w.table.participants.get('x')?.serves).toEqual([]);
    const snap = JSON.parse(JSON.stringify(w.table.toJSON())) as { p: Record<string, unknown>[] };
    for (const p of snap.p) delete p.serves;
    w.table.restoreFrom(snap);
    expect(w.table.participants.get('x')?.serves).toEqual([]);
    commit(w, 'T1', ['x']);
    expect(w.proposals).toEqual([]);
  });
});

describe('parallel commit: recovery by a new leader', () => {
  it('R3: a prepared participant asking about a staged transaction waits for recovery, which commits when every participant is prepared', () => {
    const w = staged(['a', 'b']);
    expect(w.statuses.map((s) => `${s.to} ${s.txnId}`)).toEqual(['a T1', 'b T1']);
    let asked: OutcomeAnswer | undefined;
    w.engine.outcome('T1', 'a', (_e, a) => (asked = a));
    // No presumed ABORT is proposed while recovery runs.
    expect(w.proposals).toEqual([]);
    for (const s of w.statuses.splice(0)) s.cb(null, s.to === 'a' ? 'prepared' : 'committed');
    expect(
      w.proposals.map((p) => (p.cmd.t === 'decide' ? `${p.cmd.outcome} ${p.cmd.participants.join(',')}` : p.cmd.t)),
    ).toEqual(['commit a,b']);
    w.applyAll();
    expect(asked?.outcome).toBe('COMMITTED');
    expect(w.decisions.map((d) => `${d.to} ${d.req.outcome}`).sort()).toEqual(['a commit', 'b commit']);
  });

  it('R3: a participant that does not serve Status is counted prepared once it asks for the outcome in doubt, so recovery ends', () => {
    const w = staged(['a', 'old']);
    const [sa, sold] = w.statuses.splice(0);
    sa.cb(null, 'prepared');
    // Built before Status existed: the question fails (UNIMPLEMENTED), and would forever.
    sold.cb(new Error('UNIMPLEMENTED: unknown method Status'));
    expect(w.proposals).toEqual([]);
    // In doubt, it asks the cluster: only a prepared participant does (R4).
    let asked: OutcomeAnswer | undefined;
    w.engine.outcome('T1', 'old', (_e, a) => (asked = a));
    expect(
      w.proposals.map((p) => (p.cmd.t === 'decide' ? `${p.cmd.outcome} ${p.cmd.participants.join(',')}` : p.cmd.t)),
    ).toEqual(['commit a,old']);
    w.applyAll();
    expect(asked?.outcome).toBe('COMMITTED');
  });

  it('R3: silence is not a refusal; ABORT is logged only after a participant refused durably', () => {
    const w = staged(['a', 'b']);
    let client: OutcomeAnswer | undefined;
    w.engine.commit('T1', enlist(['a', 'b']), (_e, a) => (client = a));
    const [sa, sb] = w.statuses.splice(0);
    sa.cb(null, 'prepared');
    sb.cb(new Error('unreachable'));
    expect(w.proposals).toEqual([]);
    w.now += 60_000;
    w.engine.tick();
    expect(w.statuses.map((s) => s.to)).toEqual(['b']);
    w.statuses.shift()?.cb(null, 'refused');
    expect(w.proposals.map((p) => (p.cmd.t === 'decide' ? p.cmd.outcome : p.cmd.t))).toEqual(['abort']);
    w.applyAll();
    expect(client?.outcome).toBe('ABORTED');
    expect(w.engine.counters().aborted.staging_recovery).toBe(1);
  });

  it('a staged transaction under recovery is listed and shown: deciding, in progress, its participants; in doubt once old enough; decided after', () => {
    const w = staged(['a', 'b']);
    const ids = (f: 'all' | 'in-flight' | 'in-doubt' | 'unacked') =>
      w.engine.list(f, 10).map((v) => `${v.txnId} ${v.phase} ${v.outcome}`);
    expect(ids('in-flight')).toEqual(['T1 deciding IN_PROGRESS']);
    expect(ids('all')).toEqual(['T1 deciding IN_PROGRESS']);
    expect(ids('unacked')).toEqual([]);
    // Staged at 1,000 ms and the clock still there: not in doubt yet (inDoubtAfterMs 2,000).
    expect(ids('in-doubt')).toEqual([]);
    const v = w.engine.view('T1');
    expect(v?.participants.map((p) => `${p.id} ${p.vote}`)).toEqual(['a null', 'b null']);
    expect(v?.reason).toMatch(/staged by an earlier leader/);
    w.now += 2_000;
    expect(ids('in-doubt')).toEqual(['T1 deciding IN_PROGRESS']);
    expect(w.engine.view('T1')?.ageMs).toBe(2_000);
    // A limit of 0 lists nothing, staged or not.
    expect(w.engine.list('in-flight', 0)).toEqual([]);
    for (const st of w.statuses.splice(0)) st.cb(null, 'prepared');
    w.applyAll();
    expect(w.table.staged.has('T1')).toBe(false);
    expect(w.engine.view('T1')?.outcome).toBe('COMMITTED');
    expect(ids('in-doubt')).toEqual([]);
  });

  it('R3: Begin of a staged id is refused, an operator abort waits for recovery and is refused if it committed', () => {
    const w = staged(['a']);
    expect(() => w.engine.begin('T1', 1_000)).toThrow(/staged/);
    let err = '';
    w.engine.resolve('T1', 'abort', { operator: 'ops', reason: 'stuck' }, (e) => (err = e?.message ?? 'none'));
    w.statuses.shift()?.cb(null, 'prepared');
    w.applyAll();
    expect(err).toMatch(/decided COMMIT/);
  });
});

describe('the STAGING record in the decision batch entry', () => {
  it('round-trips beside Decides and Forgets, and a truncated one is refused with a reason', () => {
    const cmds = [
      { t: 'stage' as const, txnId: 'T1', participants: ['a', 'b'], atMs: 12.5 },
      { t: 'decide' as const, txnId: 'T0', outcome: 'commit' as const, reason: '', participants: ['a'], atMs: 3 },
      { t: 'forget' as const, txnIds: ['T9'] },
    ];
    const bytes = encodeDecisionBatch(cmds);
    expect(decodeDecisionBatch(bytes)).toEqual({ cmds, problem: null });
    expect(decodeDecisionBatch(bytes.subarray(0, 10)).problem).toMatch(/record 0's time|runs past/);
    const empty = encodeDecisionBatch([{ t: 'stage', txnId: 'x', participants: [], atMs: 0 }]);
    empty[14] = 0; // the txn id's length byte: an empty id
    expect(decodeDecisionBatch(empty).problem).not.toBeNull();
  });
});

describe('parallel commit: the stager after a failed STAGING proposal, the asserts, the test fault point', () => {
  it('R2: every YES in while the STAGING proposal fails: COMMIT the classic way at once, answered from the log', () => {
    const w = new EngineWorld(['a', 'b'], cfg);
    const c = commit(w, 'T1', ['a', 'b']);
    w.vote('a', 'yes');
    w.vote('b', 'yes');
    const stage = w.proposals.shift();
    stage?.cb(new Error('no quorum'));
    expect(c.answer()).toBeUndefined();
    expect(w.proposals.map((p) => (p.cmd.t === 'decide' ? `decide ${p.cmd.outcome}` : p.cmd.t))).toEqual([
      'decide commit',
    ]);
    w.applyAll();
    expect(c.answer()?.outcome).toBe('COMMITTED');
  });

  it('an ABORT after an implied COMMITTED is an InvariantError, never a proposal', () => {
    class Broken extends CoordinatorEngine {
      abortNow(id: string): void {
        const t = this.txns.get(id);
        if (t) this.proposeAbort(t);
      }
    }
    const w = new EngineWorld(['a'], cfg);
    const engine = new Broken(w.table, (w.engine as unknown as { io: EngineIO }).io, cfg);
    engine.setLeadership(1);
    let answer = '';
    engine.commit('T1', enlist(['a']), (_e, a) => (answer = a?.outcome ?? ''), { timeoutMs: 5_000 });
    w.vote('a', 'yes');
    w.applyNext();
    expect(answer).toBe('COMMITTED');
    expect(() => engine.abortNow('T1')).toThrow(InvariantError);
  });

  it("the test fault point 'halt': COMMITTED is answered, no COMMIT is proposed; a new leader recovers T to COMMIT", () => {
    const w = new EngineWorld(['a', 'b'], cfg);
    w.faultPoint = () => 'halt';
    const c = commit(w, 'T1', ['a', 'b']);
    w.vote('a', 'yes');
    w.vote('b', 'yes');
    w.applyNext();
    expect(c.answer()?.outcome).toBe('COMMITTED');
    expect(w.proposals).toEqual([]);
    expect(w.engine.phases().deciding).toBe(1);
    // The next leader finds the STAGING record undecided and asks.
    w.engine.setLeadership(0);
    w.engine.setLeadership(2);
    expect(w.statuses.map((s) => s.to).sort()).toEqual(['a', 'b']);
    for (const s of w.statuses.splice(0)) s.cb(null, 'prepared');
    w.applyAll();
    expect(w.table.lookup('T1')?.outcome).toBe('commit');
  });
});

describe('the test fault point comes from the environment only', () => {
  const log = pino({ level: 'silent' });
  it('unset: no fault point at all; an unknown value is refused with its name', () => {
    expect(faultPointFromEnv({}, log)).toBeUndefined();
    expect(faultPointFromEnv({ [FAULT_POINT_ENV]: '' }, log)).toBeUndefined();
    expect(() => faultPointFromEnv({ [FAULT_POINT_ENV]: 'crash-anywhere' }, log)).toThrow(
      /VERDICT_TEST_FAULT_POINT="crash-anywhere" is not a fault point/,
    );
    expect(typeof faultPointFromEnv({ [FAULT_POINT_ENV]: 'crash-before-explicit-commit' }, log)).toBe('function');
  });
});
