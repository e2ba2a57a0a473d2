// The participant engine against fakes: a resource, a journal whose sync the
// test releases by hand, a manual clock and scheduler, and a scripted cluster.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ParticipantEngine, type EngineOptions } from '../../src/participant/engine.ts';
import { URGENT_ASK_INTERVAL_MS, URGENT_ASKS_MAX } from '../../src/participant/in-doubt.ts';
import {
  fromBase64,
  type ClusterOutcome,
  type Journal,
  type ParticipantError,
  type Resource,
  type ResourceVote,
  type TxnRecord,
} from '../../src/participant/types.ts';
import type { Ack, Decide as Decision, Prepare, VoteAnswer as Vote } from '../../src/domain/protocol.ts';

const CLUSTER = 'alpha';
const ME = 'p1';

class FakeResource implements Resource {
  readonly calls: string[] = [];
  /** Per txn: the vote to give, or an error. Default yes. */
  readonly replies = new Map<string, ResourceVote | Error>();
  commitErr: Error | null = null;

  prepare(txnId: string, _payload: Uint8Array, cb: (err: Error | null, vote: ResourceVote) => void): void {
    this.calls.push(`prepare ${txnId}`);
    const r = this.replies.get(txnId) ?? { yes: true, reason: '' };
    if (r instanceof Error) cb(r, { yes: false, reason: '' });
    else cb(null, r);
  }
  commit(txnId: string, cb: (err: Error | null) => void): void {
    this.calls.push(`commit ${txnId}`);
    cb(this.commitErr);
  }
  abort(txnId: string, cb: (err: Error | null) => void): void {
    this.calls.push(`abort ${txnId}`);
    cb(null);
  }
}

class FakeJournal implements Journal {
  /** Synced records, in order. */
  readonly synced: TxnRecord[] = [];
  readonly held: { record: TxnRecord; cb: (err: Error | null) => void }[] = [];
  hold = false;
  fail: Error | null = null;

  append(record: TxnRecord, cb: (err: Error | null) => void): void {
    if (this.fail !== null) return cb(this.fail);
    if (this.hold) {
      this.held.push({ record, cb });
      return;
    }
    this.synced.push(record);
    cb(null);
  }
  release(): void {
    for (const h of this.held.splice(0)) {
      this.synced.push(h.record);
      h.cb(null);
    }
  }
  kinds(): string[] {
    return this.synced.map((r) => `${r.kind} ${r.txnId}`);
  }
}

/** Virtual time: timers run only when the test advances the clock. */
class FakeTime {
  nowMs = 0;
  private seq = 0;
  private readonly timers = new Map<number, { atMs: number; fn: () => void }>();
  schedule = (delayMs: number, fn: () => void): (() => void) => {
    const id = this.seq++;
    this.timers.set(id, { atMs: this.nowMs + delayMs, fn });
    return () => this.timers.delete(id);
  };
  advance(ms: number): void {
    const end = this.nowMs + ms;
    for (;;) {
      let next: [number, { atMs: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].atMs <= end && (next === undefined || e[1].atMs < next[1].atMs)) next = e;
      if (next === undefined) break;
      this.timers.delete(next[0]);
      this.nowMs = next[1].atMs;
      next[1].fn();
    }
    this.nowMs = end;
  }
}

/**
 * The cluster: answers GetOutcome from a script (one answer per question, the last repeated), or holds the question.
 */
class FakeCluster {
  readonly asks: { txnId: string; atMs: number }[] = [];
  script: (ClusterOutcome | Error)[] = [new Error('no leader')];
  /** When set, answers every question (the script is ignored). */
  answer: ((txnId: string) => ClusterOutcome | Error) | null = null;
  holdAnswers = false;
  readonly held: ((err: Error | null, o: ClusterOutcome) => void)[] = [];
  constructor(private readonly time: FakeTime) {}
  ask = (txnId: string, cb: (err: Error | null, o: ClusterOutcome) => void): void => {
    this.asks.push({ txnId, atMs: this.time.nowMs });
    if (this.holdAnswers) return void this.held.push(cb);
    const a =
      this.answer !== null ? this.answer(txnId) : this.script.length > 1 ? this.script.shift()! : this.script[0];
    if (a instanceof Error) cb(a, 'UNKNOWN');
    else cb(null, a);
  };
}

/** setup runs before recover() and start(), e.g. to script the cluster's answers to the first questions. */
function world(opts: Partial<EngineOptions> = {}, recovered?: TxnRecord[], setup?: (c: FakeCluster) => void) {
  const resource = new FakeResource();
  const journal = new FakeJournal();
  const time = new FakeTime();
  const cluster = new FakeCluster(time);
  const logs: string[] = [];
  const engine = new ParticipantEngine({
    clusterId: CLUSTER,
    participantId: ME,
    resource,
    journal,
    clock: { nowMs: () => time.nowMs },
    schedule: time.schedule,
    askOutcome: cluster.ask,
    log: {
      info: (_o, m) => logs.push(`info ${m}`),
      warn: (_o, m) => logs.push(`warn ${m}`),
      error: (_o, m) => logs.push(`error ${m}`),
    },
    askBackoffMinMs: 100,
    askBackoffMaxMs: 1_000,
    ...opts,
  });
  setup?.(cluster);
  if (recovered !== undefined) engine.recover(recovered);
  engine.start();
  return { engine, resource, journal, time, cluster, logs };
}

function prepareReq(txnId: string, over: Partial<Prepare> = {}): Prepare {
  return {
    clusterId: CLUSTER,
    txnId,
    participantId: ME,
    participants: [ME, 'p2'],
    payload: new TextEncoder().encode(`{"set":{"k":"${txnId}"}}`),
    timeoutMs: 0,
    ...over,
  };
}

function decision(txnId: string, d: 'COMMIT' | 'ABORT', over: Partial<Decision> = {}): Decision {
  return {
    clusterId: CLUSTER,
    txnId,
    participantId: ME,
    outcome: d === 'COMMIT' ? 'commit' : 'abort',
    reason: '',
    ...over,
  };
}

type Answer<T> = { err: ParticipantError | null; value?: T } | undefined;

function prepare(engine: ParticipantEngine, req: Prepare): { get: () => Answer<Vote> } {
  let a: Answer<Vote>;
  engine.prepare(req, (err, value) => (a = { err, value }));
  return { get: () => a };
}

function decide(engine: ParticipantEngine, req: Decision): { get: () => Answer<Ack> } {
  let a: Answer<Ack>;
  engine.decide(req, (err, value) => (a = { err, value }));
  return { get: () => a };
}

const prepared = (txnId: string, atMs = 0): TxnRecord => ({
  kind: 'prepared',
  txnId,
  atMs,
  payloadB64: '',
  participants: [ME],
});

describe('participant engine: PREPARE → VOTE', () => {
  it('R4: the YES vote is not given until the journal reports the prepared record synced', () => {
    const { engine, journal } = world();
    journal.hold = true;
    const v = prepare(engine, prepareReq('T1'));
    expect(journal.held.map((h) => h.record.kind)).toEqual(['prepared']);
    expect(v.get()).toBeUndefined();
    expect(engine.stateOf('T1')).toBeUndefined();
    journal.release();
    expect(v.get()).toEqual({ err: null, value: { txnId: 'T1', participantId: ME, vote: 'yes', reason: '' } });
    expect(engine.stateOf('T1')).toBe('prepared');
    const rec = journal.synced[0];
    expect(rec.kind === 'prepared' && new TextDecoder().decode(fromBase64(rec.payloadB64))).toBe('{"set":{"k":"T1"}}');
  });

  it('R7: a repeated PREPARE gets YES again without preparing or journaling twice', () => {
    const { engine, resource, journal } = world();
    expect(prepare(engine, prepareReq('T1')).get()?.value?.vote).toBe('yes');
    expect(prepare(engine, prepareReq('T1')).get()?.value?.vote).toBe('yes');
    expect(resource.calls).toEqual(['prepare T1']);
    expect(journal.kinds()).toEqual(['prepared T1']);
  });

  it('R7: a duplicate PREPARE that arrives while the first waits for the journal gets the same YES, after it', () => {
    const { engine, resource, journal } = world();
    journal.hold = true;
    const a = prepare(engine, prepareReq('T1'));
    const b = prepare(engine, prepareReq('T1'));
    expect([a.get(), b.get()]).toEqual([undefined, undefined]);
    journal.release();
    expect([a.get()?.value?.vote, b.get()?.value?.vote]).toEqual(['yes', 'yes']);
    expect(resource.calls).toEqual(['prepare T1']);
  });

  it('R7: PREPARE of a committed transaction votes YES again; of an aborted one, NO "already aborted"', () => {
    const { engine } = world();
    prepare(engine, prepareReq('T1'));
    decide(engine, decision('T1', 'COMMIT'));
    prepare(engine, prepareReq('T2'));
    decide(engine, decision('T2', 'ABORT'));
    expect(prepare(engine, prepareReq('T1')).get()?.value?.vote).toBe('yes');
    expect(prepare(engine, prepareReq('T2')).get()?.value).toMatchObject({ vote: 'no', reason: 'already aborted' });
  });

  it("votes NO with the resource's reason when it refuses, and journals nothing", () => {
    const { engine, resource, journal } = world();
    resource.replies.set('T1', { yes: false, reason: 'key k is locked by prepared transaction T0' });
    expect(prepare(engine, prepareReq('T1')).get()?.value).toMatchObject({
      vote: 'no',
      reason: 'key k is locked by prepared transaction T0',
    });
    resource.replies.set('T2', new Error('disk on fire'));
    expect(prepare(engine, prepareReq('T2')).get()?.value).toMatchObject({
      vote: 'no',
      reason: 'resource failed to prepare: disk on fire',
    });
    expect(journal.synced).toEqual([]);
    expect(engine.counts()).toMatchObject({ prepared: 0, preparing: 0, votesNo: 2 });
  });

  it('R4: votes NO when the journal fails, journals nothing as prepared and releases the resource', () => {
    const { engine, resource, journal, logs } = world();
    journal.fail = new Error('EIO');
    expect(prepare(engine, prepareReq('T1')).get()?.value).toMatchObject({
      vote: 'no',
      reason: 'journal write failed: EIO',
    });
    expect(journal.synced).toEqual([]);
    expect(resource.calls).toEqual(['prepare T1', 'abort T1']);
    expect(engine.stateOf('T1')).toBeUndefined();
    expect(logs).toContain('error vote NO: the prepared record could not be made durable');
  });

  it('R7: refuses requests for another cluster or another participant with FAILED_PRECONDITION', () => {
    const { engine, resource } = world();
    expect(prepare(engine, prepareReq('T1', { clusterId: 'beta' })).get()?.err).toMatchObject({
      code: 'FAILED_PRECONDITION',
      message: expect.stringMatching(/cluster id mismatch/),
    });
    expect(prepare(engine, prepareReq('T1', { participantId: 'p2' })).get()?.err).toMatchObject({
      code: 'FAILED_PRECONDITION',
      message: expect.stringMatching(/participant id mismatch/),
    });
    expect(decide(engine, decision('T1', 'ABORT', { clusterId: 'beta' })).get()?.err?.code).toBe('FAILED_PRECONDITION');
    expect(resource.calls).toEqual([]);
  });

  it('bounds: beyond preparedMax (prepared + preparing) PREPARE votes NO "too many prepared transactions"', () => {
    const { engine, journal } = world({ preparedMax: 2 });
    prepare(engine, prepareReq('T1'));
    journal.hold = true;
    prepare(engine, prepareReq('T2')); // preparing: counts toward the bound
    expect(prepare(engine, prepareReq('T3')).get()?.value).toMatchObject({
      vote: 'no',
      reason: 'too many prepared transactions',
    });
    journal.release();
    journal.hold = false;
    decide(engine, decision('T1', 'COMMIT'));
    expect(prepare(engine, prepareReq('T3')).get()?.value?.vote).toBe('yes');
  });

  it('bounds: requests queued behind one another for one transaction are limited', () => {
    const { engine, journal } = world({ txnOpsMax: 2 });
    journal.hold = true;
    prepare(engine, prepareReq('T1'));
    prepare(engine, prepareReq('T1'));
    prepare(engine, prepareReq('T1'));
    expect(prepare(engine, prepareReq('T1')).get()?.err?.code).toBe('RESOURCE_EXHAUSTED');
  });

  it('refuses requests before start() and after stop() with UNAVAILABLE', () => {
    const e = new ParticipantEngine({
      clusterId: CLUSTER,
      participantId: ME,
      resource: new FakeResource(),
      journal: new FakeJournal(),
      clock: { nowMs: () => 0 },
      schedule: () => () => {},
      askOutcome: () => {},
    });
    expect(prepare(e, prepareReq('T1')).get()?.err?.code).toBe('UNAVAILABLE');
    e.start();
    e.stop();
    expect(decide(e, decision('T1', 'ABORT')).get()?.err?.code).toBe('UNAVAILABLE');
  });
});

describe('participant engine: DECISION → ACK', () => {
  it('COMMIT of a prepared transaction: resource commits, then `committed` is synced, then ACK', () => {
    const { engine, resource, journal } = world();
    prepare(engine, prepareReq('T1'));
    journal.hold = true;
    const ack = decide(engine, decision('T1', 'COMMIT'));
    expect(resource.calls).toEqual(['prepare T1', 'commit T1']);
    expect(ack.get()).toBeUndefined();
    journal.release();
    expect(ack.get()).toEqual({ err: null, value: { txnId: 'T1', participantId: ME } });
    expect(journal.kinds()).toEqual(['prepared T1', 'committed T1']);
    expect(engine.stateOf('T1')).toBe('COMMITTED');
  });

  it('ABORT of a prepared transaction: resource aborts, `aborted` is synced, ACK', () => {
    const { engine, resource, journal } = world();
    prepare(engine, prepareReq('T1'));
    expect(decide(engine, decision('T1', 'ABORT')).get()?.err).toBeNull();
    expect(resource.calls).toEqual(['prepare T1', 'abort T1']);
    expect(journal.kinds()).toEqual(['prepared T1', 'aborted T1']);
  });

  it('R7: a redelivered DECISION is ACKed again and not applied twice', () => {
    const { engine, resource, journal } = world();
    prepare(engine, prepareReq('T1'));
    decide(engine, decision('T1', 'COMMIT'));
    expect(decide(engine, decision('T1', 'COMMIT')).get()).toEqual({
      err: null,
      value: { txnId: 'T1', participantId: ME },
    });
    expect(resource.calls.filter((c) => c.startsWith('commit'))).toHaveLength(1);
    expect(journal.synced).toHaveLength(2);
  });

  it('AC2: COMMIT for a transaction this participant never prepared is refused with FAILED_PRECONDITION and never committed', () => {
    const { engine, resource, journal, logs } = world();
    const a = decide(engine, decision('T9', 'COMMIT')).get();
    expect(a?.err).toMatchObject({
      code: 'FAILED_PRECONDITION',
      message: 'COMMIT for transaction T9 refused: this participant never prepared it',
    });
    expect(resource.calls).toEqual([]);
    expect(journal.synced).toEqual([]);
    expect(logs).toContain('error protocol violation: COMMIT refused');
    expect(engine.counts().protocolViolations).toBe(1);
  });

  it('AC1: a decision contradicting one already applied is refused (COMMIT after ABORT, ABORT after COMMIT)', () => {
    const { engine, resource } = world();
    prepare(engine, prepareReq('T1'));
    decide(engine, decision('T1', 'ABORT'));
    expect(decide(engine, decision('T1', 'COMMIT')).get()?.err).toMatchObject({
      code: 'FAILED_PRECONDITION',
      message: expect.stringMatching(/already ABORTED here/),
    });
    prepare(engine, prepareReq('T2'));
    decide(engine, decision('T2', 'COMMIT'));
    expect(decide(engine, decision('T2', 'ABORT')).get()?.err?.code).toBe('FAILED_PRECONDITION');
    expect(resource.calls.filter((c) => c === 'commit T1' || c === 'abort T2')).toEqual([]);
  });

  it('R3: ABORT for an unknown transaction is ACKed (presumed abort), and a PREPARE arriving after it votes NO', () => {
    const { engine, resource, journal } = world();
    expect(decide(engine, decision('T1', 'ABORT')).get()?.err).toBeNull();
    expect(prepare(engine, prepareReq('T1')).get()?.value).toMatchObject({ vote: 'no', reason: 'already aborted' });
    expect(resource.calls).toEqual([]);
    expect(journal.synced).toEqual([]);
  });

  it('a failed resource commit is an error, and the transaction stays prepared for the redelivery', () => {
    const { engine, resource } = world();
    prepare(engine, prepareReq('T1'));
    resource.commitErr = new Error('constraint');
    expect(decide(engine, decision('T1', 'COMMIT')).get()?.err?.code).toBe('UNAVAILABLE');
    expect(engine.stateOf('T1')).toBe('prepared');
    resource.commitErr = null;
    expect(decide(engine, decision('T1', 'COMMIT')).get()?.err).toBeNull();
    expect(engine.stateOf('T1')).toBe('COMMITTED');
  });

  it('bounds: decided ids are forgotten beyond decidedMax and after decidedRetentionMs', () => {
    const { engine, time } = world({ decidedMax: 2, decidedRetentionMs: 60_000, sweepIntervalMs: 1_000 });
    for (const t of ['T1', 'T2', 'T3']) decide(engine, decision(t, 'ABORT'));
    expect([engine.stateOf('T1'), engine.stateOf('T2'), engine.stateOf('T3')]).toEqual([
      undefined,
      'ABORTED',
      'ABORTED',
    ]);
    time.advance(61_000);
    expect(engine.counts().decidedRemembered).toBe(0);
  });
});

describe('participant engine: in doubt (R4: never decides alone)', () => {
  it('R4: after recover() with a prepared transaction it asks with capped exponential backoff while the answer is an error or IN_PROGRESS, then applies COMMIT', () => {
    const { engine, resource, journal, time, cluster } = world({}, [prepared('T1')], (c) => {
      c.script = [
        new Error('no leader'),
        'IN_PROGRESS',
        'UNKNOWN',
        new Error('deadline'),
        'IN_PROGRESS',
        'IN_PROGRESS',
        'COMMITTED',
      ];
    });
    // The first question goes out at start(), and nothing is decided on its (error) answer.
    expect(cluster.asks).toEqual([{ txnId: 'T1', atMs: 0 }]);
    expect(resource.calls).toEqual([]);
    time.advance(10_000);
    // Backoff 100, 200, 400, 800, then capped at 1000.
    expect(cluster.asks.map((a) => a.atMs)).toEqual([0, 100, 300, 700, 1_500, 2_500, 3_500]);
    expect(resource.calls).toEqual(['commit T1']);
    expect(journal.kinds()).toEqual(['committed T1']);
    expect(engine.inDoubt()).toEqual([]);
  });

  it('R4: learns ABORT from the cluster and applies it', () => {
    const { engine, resource, journal, cluster } = world({}, [prepared('T1', 5)], (c) => (c.script = ['ABORTED']));
    expect(cluster.asks).toHaveLength(1);
    expect(resource.calls).toEqual(['abort T1']);
    expect(journal.kinds()).toEqual(['aborted T1']);
    expect(engine.stateOf('T1')).toBe('ABORTED');
  });

  it('R4: with the cluster unreachable for an hour it keeps asking and never commits or aborts alone', () => {
    const { engine, resource, journal, time, cluster } = world({}, [prepared('T1', 42)]);
    cluster.script = [new Error('UNAVAILABLE')];
    time.advance(3_600_000);
    expect(resource.calls).toEqual([]);
    expect(journal.synced).toEqual([]);
    expect(engine.inDoubt()).toEqual([{ txnId: 'T1', preparedAtMs: 42 }]);
    // Capped at askBackoffMaxMs: about one question a second, not fewer, not a flood.
    expect(cluster.asks.length).toBeGreaterThan(3_500);
    expect(cluster.asks.length).toBeLessThan(3_700);
    cluster.script = ['ABORTED'];
    time.advance(1_000);
    expect(resource.calls).toEqual(['abort T1']);
    expect(engine.stateOf('T1')).toBe('ABORTED');
  });

  it('R4: a prepared transaction whose DECISION never comes is asked about after inDoubtAfterMs, whatever its PREPARE timeout', () => {
    const { engine, time, cluster } = world({ inDoubtAfterMs: 10_000, sweepIntervalMs: 1_000 });
    cluster.script = ['COMMITTED', 'ABORTED'];
    prepare(engine, prepareReq('T1'));
    time.advance(5_000);
    prepare(engine, prepareReq('T2', { timeoutMs: 30_000 }));
    time.advance(4_000);
    expect(cluster.asks).toEqual([]);
    time.advance(2_000);
    expect(cluster.asks.map((a) => a.txnId)).toEqual(['T1']);
    expect(engine.stateOf('T1')).toBe('COMMITTED');
    time.advance(5_000);
    expect(cluster.asks.map((a) => a.txnId)).toEqual(['T1', 'T2']);
    expect(engine.stateOf('T2')).toBe('ABORTED');
  });

  it("askNow (the leader's stream broke): asks at once, retries every URGENT_ASK_INTERVAL_MS while no leader answers, then backs off; never decides alone", () => {
    const { engine, time, cluster, resource } = world({ inDoubtAfterMs: 10_000, sweepIntervalMs: 1_000 });
    cluster.script = [new Error('UNAVAILABLE: no leader')];
    prepare(engine, prepareReq('T1'));
    prepare(engine, prepareReq('T2'));
    engine.decide(decision('T2', 'COMMIT'), () => {});
    time.advance(100);
    expect(cluster.asks).toEqual([]);
    // T2 is decided already, and T9 was never prepared here: only T1 is asked about.
    engine.askNow(['T1', 'T2', 'T9']);
    expect(cluster.asks).toEqual([{ txnId: 'T1', atMs: 100 }]);
    time.advance(URGENT_ASK_INTERVAL_MS * URGENT_ASKS_MAX);
    const times = cluster.asks.map((a) => a.atMs);
    expect(times).toHaveLength(URGENT_ASKS_MAX + 1);
    expect(times.every((t, i) => t === 100 + i * URGENT_ASK_INTERVAL_MS)).toBe(true);
    // Then the capped exponential backoff, from askBackoffMinMs.
    time.advance(100 + 200);
    expect(cluster.asks.map((a) => a.atMs).slice(-2)).toEqual([
      100 + URGENT_ASKS_MAX * URGENT_ASK_INTERVAL_MS + 100,
      100 + URGENT_ASKS_MAX * URGENT_ASK_INTERVAL_MS + 300,
    ]);
    expect(resource.calls).toEqual(['prepare T1', 'prepare T2', 'commit T2']);
    expect(engine.stateOf('T1')).toBe('prepared');
    cluster.script = ['ABORTED'];
    time.advance(1_000);
    expect(engine.stateOf('T1')).toBe('ABORTED');
  });

  it('askNow cuts short a backoff wait already under way (a new leader is asked at once)', () => {
    const { engine, time, cluster } = world(
      {},
      [prepared('T1')],
      (c) => (c.script = [new Error('no leader'), new Error('no leader'), new Error('no leader'), 'COMMITTED']),
    );
    time.advance(150);
    // Asked at 0 and 100; the next backoff waits until 300.
    expect(cluster.asks.map((a) => a.atMs)).toEqual([0, 100]);
    engine.askNow(['T1']);
    expect(cluster.asks.map((a) => a.atMs)).toEqual([0, 100, 150]);
    time.advance(URGENT_ASK_INTERVAL_MS);
    expect(cluster.asks.map((a) => a.atMs)).toEqual([0, 100, 150, 150 + URGENT_ASK_INTERVAL_MS]);
    expect(engine.stateOf('T1')).toBe('COMMITTED');
  });

  it('a DECISION that arrives while the engine is asking ends the questions', () => {
    const { engine, time, cluster, resource } = world({}, [prepared('T1')], (c) => (c.holdAnswers = true));
    expect(decide(engine, decision('T1', 'COMMIT')).get()?.err).toBeNull();
    cluster.held[0](null, 'COMMITTED'); // the late answer changes nothing
    time.advance(60_000);
    expect(cluster.asks).toHaveLength(1);
    expect(resource.calls).toEqual(['commit T1']);
    expect(engine.counts().resolving).toBe(0);
  });

  it('bounds: questions in flight are limited by asksInFlightMax; the rest wait their turn', () => {
    const recovered = Array.from({ length: 10 }, (_, i) => prepared(`T${i}`));
    const { engine, cluster } = world({ asksInFlightMax: 3 }, recovered, (c) => (c.holdAnswers = true));
    expect(cluster.asks.map((a) => a.txnId)).toEqual(['T0', 'T1', 'T2']);
    engine.resolveInDoubt();
    expect(cluster.asks).toHaveLength(3);
    expect(engine.counts().resolving).toBe(10);
    cluster.held[1](null, 'COMMITTED');
    expect(cluster.asks.map((a) => a.txnId)).toEqual(['T0', 'T1', 'T2', 'T3']);
    expect(engine.stateOf('T1')).toBe('COMMITTED');
  });

  it('recover() rebuilds prepared and decided transactions from the journal records', () => {
    const { engine } = world({}, [
      prepared('T1', 1),
      prepared('T2', 2),
      { kind: 'committed', txnId: 'T2', atMs: 3 },
      { kind: 'aborted', txnId: 'T3', atMs: 4 },
    ]);
    expect(engine.inDoubt()).toEqual([{ txnId: 'T1', preparedAtMs: 1 }]);
    expect([engine.stateOf('T2'), engine.stateOf('T3')]).toEqual(['COMMITTED', 'ABORTED']);
  });
});

describe('participant engine: properties', () => {
  it('R4/AC1/AC2: under any interleaving, YES follows a synced prepared record, and only the decided outcome is ever applied', () => {
    const op = fc.oneof(
      fc.record({ t: fc.constant('prepare' as const), txn: fc.nat(3), no: fc.boolean() }),
      fc.record({ t: fc.constant('decide' as const), txn: fc.nat(3), commit: fc.boolean() }),
      fc.record({ t: fc.constant('journal' as const), hold: fc.boolean(), fail: fc.boolean() }),
      fc.record({ t: fc.constant('release' as const) }),
      fc.record({ t: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 5_000 }) }),
      fc.record({ t: fc.constant('reachable' as const), up: fc.boolean() }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        // The cluster's log: the first decision for T is T's outcome (R1).
        const truth = new Map<string, 'COMMITTED' | 'ABORTED'>();
        let up = false;
        const { engine, resource, journal, time } = world(
          { inDoubtAfterMs: 2_000, sweepIntervalMs: 500 },
          undefined,
          (c) => {
            c.answer = (txn) => (!up ? new Error('UNAVAILABLE') : (truth.get(txn) ?? 'IN_PROGRESS'));
          },
        );
        for (const o of ops) {
          if (o.t === 'prepare') {
            const txn = `T${o.txn}`;
            resource.replies.set(txn, o.no ? { yes: false, reason: 'no' } : { yes: true, reason: '' });
            engine.prepare(prepareReq(txn), (_err, vote) => {
              if (vote?.vote === 'yes')
                expect(journal.synced.some((r) => r.kind === 'prepared' && r.txnId === txn)).toBe(true);
            });
          } else if (o.t === 'decide') {
            const txn = `T${o.txn}`;
            // The coordinator commits only after a YES (here: the participant is prepared).
            if (!truth.has(txn))
              truth.set(txn, o.commit && engine.stateOf(txn) === 'prepared' ? 'COMMITTED' : 'ABORTED');
            engine.decide(decision(txn, truth.get(txn) === 'COMMITTED' ? 'COMMIT' : 'ABORT'), () => {});
          } else if (o.t === 'journal') {
            journal.hold = o.hold;
            journal.fail = o.fail ? new Error('EIO') : null;
          } else if (o.t === 'release') journal.release();
          else if (o.t === 'tick') time.advance(o.ms);
          else up = o.up;
          for (const c of resource.calls) {
            if (!c.startsWith('commit ')) continue;
            const txn = c.slice('commit '.length);
            expect(journal.synced.some((r) => r.kind === 'prepared' && r.txnId === txn)).toBe(true);
            expect(truth.get(txn)).toBe('COMMITTED');
          }
          for (let i = 0; i < 4; i++) {
            const st = engine.stateOf(`T${i}`);
            if (st === 'COMMITTED' || st === 'ABORTED') expect(st).toBe(truth.get(`T${i}`) ?? 'ABORTED');
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('participant engine: the status question of parallel commit', () => {
  const question = (engine: ParticipantEngine, txnId: string): { get: () => Answer<string> } => {
    let a: Answer<string>;
    engine.status({ clusterId: CLUSTER, txnId, participantId: ME }, (err, value) => (a = { err, value }));
    return { get: () => a };
  };

  it('R4: a prepared transaction answers PREPARED (its YES), a decided one its outcome, with nothing journaled', () => {
    const { engine, journal } = world();
    prepare(engine, prepareReq('T1'));
    prepare(engine, prepareReq('T2'));
    decide(engine, decision('T2', 'COMMIT'));
    expect(question(engine, 'T1').get()).toEqual({ err: null, value: 'prepared' });
    expect(question(engine, 'T2').get()).toEqual({ err: null, value: 'committed' });
    expect(journal.kinds()).toEqual(['prepared T1', 'prepared T2', 'committed T2']);
  });

  it('R4: not prepared here, the refusal is synced before the answer, and a later PREPARE gets NO, also after a restart', () => {
    const { engine, journal, resource } = world();
    journal.hold = true;
    const a = question(engine, 'T1');
    expect(journal.held.map((h) => `${h.record.kind} ${h.record.txnId}`)).toEqual(['refused T1']);
    expect(a.get()).toBeUndefined();
    journal.release();
    expect(a.get()).toEqual({ err: null, value: 'refused' });
    journal.hold = false;
    expect(prepare(engine, prepareReq('T1')).get()?.value).toMatchObject({ vote: 'no', reason: 'already aborted' });
    expect(resource.calls).not.toContain('prepare T1');
    // A new incarnation from the same journal still refuses (forgetAborts does not drop a refusal).
    const again = world({ forgetAborts: true }, journal.synced);
    expect(prepare(again.engine, prepareReq('T1')).get()?.value).toMatchObject({
      vote: 'no',
      reason: 'already aborted',
    });
    expect(question(again.engine, 'T1').get()).toEqual({ err: null, value: 'aborted' });
  });

  it('R4: a refusal that cannot be made durable is not an answer', () => {
    const { engine, journal } = world();
    journal.fail = new Error('disk full');
    expect(question(engine, 'T1').get()?.err?.code).toBe('UNAVAILABLE');
    journal.fail = null;
    expect(prepare(engine, prepareReq('T1')).get()?.value?.vote).toBe('yes');
  });

  it('R4: a question that arrives while PREPARE waits for its sync is answered after it, PREPARED', () => {
    const { engine, journal } = world();
    journal.hold = true;
    const v = prepare(engine, prepareReq('T1'));
    const a = question(engine, 'T1');
    expect(a.get()).toBeUndefined();
    journal.release();
    expect(v.get()?.value?.vote).toBe('yes');
    expect(a.get()).toEqual({ err: null, value: 'prepared' });
  });

  it('R7: the question is refused for another cluster or another participant', () => {
    const { engine } = world();
    let code = '';
    engine.status({ clusterId: 'other', txnId: 'T1', participantId: ME }, (err) => (code = err?.code ?? ''));
    expect(code).toBe('FAILED_PRECONDITION');
    engine.status({ clusterId: CLUSTER, txnId: 'T1', participantId: 'p9' }, (err) => (code = err?.code ?? ''));
    expect(code).toBe('FAILED_PRECONDITION');
  });
});

/**
 * A resource whose own prepare is durable and found again by T's id (the PostgreSQL resource, readable gids): ids
 * starting with "L" stand for long ones (hashed gids).
 */
class DbLikeResource extends FakeResource {
  /** What committed here (the commit markers). */
  readonly committed = new Set<string>();
  override commit(txnId: string, cb: (err: Error | null) => void): void {
    this.calls.push(`commit ${txnId}`);
    this.committed.add(txnId);
    cb(null);
  }
  durableAtPrepare(txnId: string): boolean {
    return !txnId.startsWith('L');
  }
}

describe('participant engine: a resource durable at prepare (R4 kept by the database)', () => {
  function dbWorld(recovered?: TxnRecord[], resource = new DbLikeResource()) {
    const w = world({ resource }, recovered);
    return { ...w, resource };
  }

  it('R4: votes YES as soon as the resource prepared, without waiting for the journal; the prepared record is still journaled', () => {
    const { engine, journal } = dbWorld();
    journal.hold = true;
    const v = prepare(engine, prepareReq('T1'));
    expect(v.get()?.value?.vote).toBe('yes');
    expect(engine.stateOf('T1')).toBe('prepared');
    expect(journal.held.map((h) => `${h.record.kind} ${h.record.txnId}`)).toEqual(['prepared T1']);
    // A DECISION still waits for its record's sync before the ACK.
    const a = decide(engine, decision('T1', 'COMMIT'));
    expect(a.get()).toBeUndefined();
    journal.release();
    expect(a.get()?.err).toBeNull();
    expect(journal.kinds()).toEqual(['prepared T1', 'committed T1']);
  });

  it('R4: a transaction the resource cannot name by its id alone (hashed gid) still waits for the journal before YES', () => {
    const { engine, journal } = dbWorld();
    journal.hold = true;
    const v = prepare(engine, prepareReq('L1'));
    expect(v.get()).toBeUndefined();
    journal.release();
    expect(v.get()?.value?.vote).toBe('yes');
  });

  it("a journal that fails after a YES given on the resource's durability keeps the transaction prepared", () => {
    const { engine, journal, logs } = dbWorld();
    journal.fail = new Error('disk full');
    expect(prepare(engine, prepareReq('T1')).get()?.value?.vote).toBe('yes');
    expect(engine.stateOf('T1')).toBe('prepared');
    expect(logs).toContain('warn could not journal the prepared record; the resource holds the prepared state');
  });

  it('a COMMIT redelivered after a crash that lost both records is answered from what the resource committed: ACK, not a violation', () => {
    // Before the crash: prepared and committed in the resource, neither record synced.
    const resource = new DbLikeResource();
    resource.committed.add('T1');
    const { engine, journal } = dbWorld([], resource);
    const a = decide(engine, decision('T1', 'COMMIT'));
    expect(a.get()).toEqual({ err: null, value: { txnId: 'T1', participantId: ME } });
    expect(resource.calls).toEqual(['commit T1']);
    expect(journal.kinds()).toEqual(['committed T1']);
    expect(engine.counts().protocolViolations).toBe(0);
    expect(engine.stateOf('T1')).toBe('COMMITTED');
  });

  it('a COMMIT for a transaction the resource never committed nor prepared is refused as before (the resource says why)', () => {
    const resource = new DbLikeResource();
    resource.commit = (txnId, cb) => {
      resource.calls.push(`commit ${txnId}`);
      cb(new Error('HEURRB hazard: not prepared and no commit marker'));
    };
    const { engine } = dbWorld([], resource);
    const a = decide(engine, decision('T1', 'COMMIT'));
    expect(a.get()?.err?.code).toBe('FAILED_PRECONDITION');
    expect(a.get()?.err?.message).toMatch(/refused: .*HEURRB hazard/);
    expect(engine.counts().protocolViolations).toBe(1);
    // For a hashed id the journal's synced record is the only way T is known: never asked of the resource.
    const b = decide(engine, decision('L1', 'COMMIT'));
    expect(b.get()?.err?.code).toBe('FAILED_PRECONDITION');
    expect(resource.calls).toEqual(['commit T1']);
  });
});
