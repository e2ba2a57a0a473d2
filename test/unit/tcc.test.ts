// TCC (issue 16): the barrier rule, the memory TCC resource under every order
// of Try / Confirm / Cancel a network can deliver (duplicates included), bad
// TTLs and failing handlers, replay after a crash, the engine driving it
// (empty rollback, hanging Try), and the reserve watcher: an expired reserve
// asks the cluster and applies its answer, never cancels on its own.
import { describe, expect, it } from 'vitest';
import { ParticipantEngine } from '../../src/participant/engine.ts';
import { barrierStep, TccRefusal, type BarrierOp, type TccBranch } from '../../src/participant/tcc/barrier.ts';
import { ReserveWatcher, type AskAbort } from '../../src/participant/tcc/expiry.ts';
import {
  MemoryTccResource,
  replayTcc,
  type TccMemoryHandlers,
  type TccRecord,
} from '../../src/participant/tcc/memory.ts';
import type { ClusterOutcome, TxnRecord } from '../../src/participant/types.ts';
import type { Decide, DecisionOutcome, VoteAnswer } from '../../src/domain/protocol.ts';
import { voteFromWire, voteToWire } from '../../src/transport/protocol-wire.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTccParticipant } from '../../src/participant/tcc/setup.ts';
import { SILENT_LOG as SILENT } from '../../src/participant/types.ts';

/** Seats: `free` and, per transaction, the seats it holds; payload = the number of seats as text. */
interface Seats {
  free: number;
  held: Record<string, number>;
  sold: number;
}
const calls = { try: 0, confirm: 0, cancel: 0 };
function seatHandlers(o: { ttlMs?: number; confirmFails?: () => boolean } = {}): TccMemoryHandlers<Seats> {
  const n = (b: TccBranch): number => Number(new TextDecoder().decode(b.payload));
  return {
    initial: () => ({ free: 10, held: {}, sold: 0 }),
    try(s, b) {
      calls.try++;
      if (n(b) > s.free) throw new TccRefusal(`only ${s.free} seats left`);
      s.free -= n(b);
      s.held[b.txnId] = n(b);
      return o.ttlMs === undefined ? undefined : { ttlMs: o.ttlMs };
    },
    confirm(s, b) {
      if (o.confirmFails?.()) throw new Error('payment gateway down');
      calls.confirm++;
      s.sold += s.held[b.txnId] ?? 0;
      delete s.held[b.txnId];
    },
    cancel(s, b) {
      calls.cancel++;
      s.free += s.held[b.txnId] ?? 0;
      delete s.held[b.txnId];
    },
    encode: (s) => JSON.stringify(s),
    decode: (t) => JSON.parse(t) as Seats,
  };
}

/** A journal that is durable at once (synchronously), keeping what it wrote. */
function syncJournal(): { records: TccRecord[]; append: (r: TccRecord, cb: (err: Error | null) => void) => void } {
  const records: TccRecord[] = [];
  return { records, append: (r, cb) => (records.push(r), cb(null)) };
}

function seatResource(handlers = seatHandlers(), journal = syncJournal(), now = { ms: 0 }) {
  const resource = new MemoryTccResource({
    participantId: 'seats',
    handlers,
    live: replayTcc('seats', handlers, journal.records),
    journal,
    clock: { nowMs: () => now.ms },
  });
  return { resource, journal, handlers };
}

const seats = (k: number): Uint8Array => new TextEncoder().encode(String(k));
const run = (res: MemoryTccResource<Seats>, op: BarrierOp): string => {
  let out = '';
  if (op === 'try') res.prepare('T', seats(3), (_e, v) => (out = v.yes ? 'yes' : `no: ${v.reason}`));
  else res[op === 'confirm' ? 'commit' : 'abort']('T', (e) => (out = e === null ? 'ok' : `err: ${e.message}`));
  return out;
};

/** Every sequence of up to four operations over {try, confirm, cancel}. */
function sequences(len: number): BarrierOp[][] {
  if (len === 0) return [[]];
  const shorter = sequences(len - 1);
  return [
    ...shorter,
    ...shorter
      .filter((s) => s.length === len - 1)
      .flatMap((s) => (['try', 'confirm', 'cancel'] as const).map((op) => [...s, op])),
  ];
}

describe('TCC barrier', () => {
  it('Confirm and Cancel run at most once each and never both, Trys after a Cancel are refused, in every order of up to four messages', () => {
    const all = sequences(4);
    expect(all.length).toBe(1 + 3 + 9 + 27 + 81);
    for (const seq of all) {
      calls.try = calls.confirm = calls.cancel = 0;
      const { resource } = seatResource();
      const answers = seq.map((op) => run(resource, op));
      const what = `${seq.join(',')} → ${answers.join(' | ')}`;
      expect(calls.confirm + calls.cancel, what).toBeLessThanOrEqual(1);
      expect(calls.try, what).toBeLessThanOrEqual(1);
      const firstCancel = seq.indexOf('cancel');
      for (const [i, op] of seq.entries()) {
        // Once a Cancel succeeded, every Try is refused and votes NO (no hanging reserve).
        const cancelledBefore = seq.slice(0, i).some((o, j) => o === 'cancel' && answers[j] === 'ok');
        if (op === 'try' && cancelledBefore) expect(answers[i], what).toMatch(/^no: .*hanging Try/);
        // Confirm succeeds only on a reserve that was tried and not cancelled.
        if (op === 'confirm' && answers[i] === 'ok')
          expect(
            seq.slice(0, i).some((o, j) => o === 'try' && answers[j] === 'yes'),
            what,
          ).toBe(true);
      }
      // An empty rollback (Cancel first) runs no handler, and nothing is ever held afterwards.
      if (firstCancel === 0) {
        expect(calls.cancel + calls.try + calls.confirm, what).toBe(0);
        expect(answers[0]).toBe('ok');
        expect(resource.heldReserves(), what).toEqual([]);
        expect(resource.tccCounts().emptyRollbacks, what).toBe(1);
      }
      // Seats are conserved whatever happened: free + held + sold = 10.
      const s = resource.state;
      expect(s.free + Object.values(s.held).reduce((a, b) => a + b, 0) + s.sold, what).toBe(10);
    }
  });

  it('the rule, state by state', () => {
    expect(barrierStep('T', undefined, 'cancel')).toEqual({ kind: 'record', next: 'empty-cancelled' });
    expect(barrierStep('T', 'empty-cancelled', 'try')).toMatchObject({ kind: 'refuse', hanging: true });
    expect(barrierStep('T', 'cancelled', 'try')).toMatchObject({ kind: 'refuse', hanging: true });
    expect(barrierStep('T', 'tried', 'confirm')).toEqual({ kind: 'run', next: 'confirmed' });
    expect(barrierStep('T', 'confirmed', 'confirm')).toEqual({ kind: 'done' });
    expect(barrierStep('T', 'confirmed', 'cancel')).toMatchObject({ kind: 'refuse', hanging: false });
    expect(barrierStep('T', 'cancelled', 'confirm')).toMatchObject({ kind: 'refuse', hanging: false });
    expect(barrierStep('T', undefined, 'confirm')).toMatchObject({
      kind: 'refuse',
      reason: expect.stringMatching(/no Try is on record/),
    });
  });
});

describe('TCC memory resource: bad input', () => {
  for (const ttlMs of [0, -5, 1.5, Number.NaN]) {
    it(`a Try giving ttlMs ${ttlMs} votes NO with the reason, and leaves nothing reserved or recorded`, () => {
      const { resource, journal } = seatResource(seatHandlers({ ttlMs }));
      let vote = { yes: true, reason: '' };
      resource.prepare('T', seats(4), (_e, v) => (vote = v));
      expect(vote.yes).toBe(false);
      expect(vote.reason).toMatch(/TTL must be a positive whole number of milliseconds/);
      expect(resource.state.free).toBe(10);
      expect(resource.heldReserves()).toEqual([]);
      expect(journal.records).toEqual([]);
    });
  }

  it('a Try handler that throws votes NO with its message', () => {
    const { resource } = seatResource();
    let vote = { yes: true, reason: '' };
    resource.prepare('T', seats(11), (_e, v) => (vote = v));
    expect(vote).toEqual({ yes: false, reason: 'Try failed: only 10 seats left' });
    expect(resource.tccCounts().handlerFailures).toBe(1);
  });

  it('a Confirm that keeps failing stays a pending Confirm (an error each time, retried), never a Cancel', () => {
    let failing = true;
    const { resource, journal } = seatResource(seatHandlers({ confirmFails: () => failing }));
    resource.prepare('T', seats(2), () => {});
    const errors: string[] = [];
    for (let i = 0; i < 5; i++) resource.commit('T', (e) => errors.push(e?.message ?? 'ok'));
    expect(errors.every((e) => /Confirm handler failed for T: payment gateway down/.test(e))).toBe(true);
    expect(resource.branchState('T')).toBe('tried');
    expect(resource.state).toMatchObject({ free: 8, sold: 0 });
    failing = false;
    resource.commit('T', (e) => errors.push(e?.message ?? 'ok'));
    expect(errors.at(-1)).toBe('ok');
    expect(resource.state).toMatchObject({ free: 8, sold: 2 });
    expect(journal.records.map((r) => (r.kind === 'tcc' ? r.state : r.kind))).toEqual(['tried', 'confirmed']);
  });
});

describe('TCC memory resource: durability', () => {
  it('replaying the journal rebuilds the state and the barrier; a crash loses only a suffix, and with it only unacknowledged effects', () => {
    const { resource, journal, handlers } = seatResource(seatHandlers({ ttlMs: 5_000 }));
    resource.prepare('A', seats(2), () => {});
    resource.prepare('B', seats(3), () => {});
    resource.commit('A', () => {});
    resource.abortUnprepared('C', () => {});
    const full = replayTcc('seats', handlers, journal.records);
    expect(full.state).toEqual(resource.state);
    expect(full.branchState('C')).toBe('empty-cancelled');
    expect([...full.held].map(([id, b]) => [id, b.expiresAtMs])).toEqual([['B', 5_000]]);
    // A compaction's snapshot replays to the same.
    const again = replayTcc('seats', handlers, full.snapshot());
    expect(again.state).toEqual(full.state);
    expect(again.branchState('C')).toBe('empty-cancelled');
    // Prefixes: every prefix replays without complaint, and conserves the seats.
    for (let k = 0; k <= journal.records.length; k++) {
      const s = replayTcc('seats', handlers, journal.records.slice(0, k)).state;
      expect(s.free + Object.values(s.held).reduce((a, b) => a + b, 0) + s.sold).toBe(10);
    }
  });
});

/** A fake scheduler: tasks run when the test advances the clock. */
class Timers {
  now = 0;
  private tasks: { at: number; fn: () => void; live: boolean }[] = [];
  schedule = (delayMs: number, fn: () => void): (() => void) => {
    const t = { at: this.now + delayMs, fn, live: true };
    this.tasks.push(t);
    return () => (t.live = false);
  };
  advance(ms: number): void {
    const end = this.now + ms;
    for (;;) {
      const next = this.tasks.filter((t) => t.live && t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      next.live = false;
      this.now = next.at;
      next.fn();
    }
    this.now = end;
  }
}

function engineWith(
  resource: MemoryTccResource<Seats>,
  timers: Timers,
  ask: (cb: (err: Error | null, o: ClusterOutcome) => void) => void,
  forgetAborts = false,
) {
  const journal: TxnRecord[] = [];
  const engine = new ParticipantEngine({
    clusterId: 'c',
    participantId: 'seats',
    resource,
    journal: { append: (r, cb) => (journal.push(r), cb(null)) },
    clock: { nowMs: () => timers.now },
    schedule: timers.schedule,
    askOutcome: (_txnId, cb) => ask(cb),
    inDoubtAfterMs: 60_000,
    forgetAborts,
  });
  engine.recover([]);
  engine.start();
  return engine;
}

const prepareReq = (txnId: string, k = 2) => ({
  clusterId: 'c',
  participantId: 'seats',
  txnId,
  participants: ['seats', 'pay'],
  payload: seats(k),
  timeoutMs: 60_000,
});
const decision = (txnId: string, d: DecisionOutcome): Decide => ({
  clusterId: 'c',
  participantId: 'seats',
  txnId,
  outcome: d,
  reason: '',
});

describe('TCC under the participant engine', () => {
  it('an ABORT before the PREPARE is an empty rollback; the late PREPARE is refused (hanging Try) and votes NO, even once the engine forgot the ABORT', () => {
    const timers = new Timers();
    const { resource } = seatResource();
    const engine = engineWith(resource, timers, (cb) => cb(null, 'IN_PROGRESS'), true);
    let acked = false;
    engine.decide(decision('T', 'abort'), (err) => (acked = err === null));
    expect(acked).toBe(true);
    expect(resource.branchState('T')).toBe('empty-cancelled');
    let vote = '';
    engine.prepare(prepareReq('T'), (_e, v) => (vote = `${v?.vote} ${v?.reason}`));
    expect(vote).toMatch(/^no .*hanging Try/);
    expect(resource.state.free).toBe(10);
    expect(resource.tccCounts()).toMatchObject({ emptyRollbacks: 1, hangingRefused: 1, held: 0 });
  });

  it("a late PREPARE refused from the engine's own memory of the ABORT (forgetAborts off) counts as a refused hanging Try too", () => {
    const timers = new Timers();
    const { resource } = seatResource();
    const engine = engineWith(resource, timers, (cb) => cb(null, 'IN_PROGRESS'), false);
    engine.decide(decision('T', 'abort'), () => {});
    engine.prepare(prepareReq('T'), () => {});
    let vote = '';
    engine.prepare(prepareReq('T'), (_e, v) => (vote = v?.vote ?? ''));
    expect(vote).toBe('no');
    expect(resource.state.free).toBe(10);
    expect(resource.tccCounts()).toMatchObject({ emptyRollbacks: 1, hangingRefused: 2, held: 0 });
  });

  it('a COMMIT delivered twice confirms once', () => {
    const timers = new Timers();
    calls.confirm = 0;
    const { resource } = seatResource();
    const engine = engineWith(resource, timers, (cb) => cb(null, 'IN_PROGRESS'));
    engine.prepare(prepareReq('T'), () => {});
    engine.decide(decision('T', 'commit'), () => {});
    engine.decide(decision('T', 'commit'), () => {});
    resource.commit('T', () => {}); // a redelivery that reaches the resource (the engine forgot, or restarted)
    expect(calls.confirm).toBe(1);
    expect(resource.state).toMatchObject({ free: 8, sold: 2 });
  });
});

describe("a TCC participant's YES carries its reserve's TTL (the console shows when it runs out)", () => {
  it('what is left of the TTL as the vote leaves, less on a repeated PREPARE; none without a TTL, none on a NO; and it crosses the wire as reserve_ttl_ms', () => {
    const timers = new Timers();
    const now = { ms: 0 };
    const { resource } = seatResource(seatHandlers({ ttlMs: 30_000 }), syncJournal(), now);
    const engine = engineWith(resource, timers, (cb) => cb(null, 'IN_PROGRESS'));
    const votes: VoteAnswer[] = [];
    const take = (_e: unknown, v?: VoteAnswer): void => void (v && votes.push(v));
    engine.prepare(prepareReq('T'), take);
    now.ms += 12_000;
    engine.prepare(prepareReq('T'), take); // a repeat (a new leader asks again): 18 s are left
    engine.prepare(prepareReq('U', 20), take); // 20 seats of 8 left: NO, nothing held
    expect(votes.map((v) => [v.vote, v.reserveTtlMs])).toEqual([
      ['yes', 30_000],
      ['yes', 18_000],
      ['no', undefined],
    ]);
    const wire = voteToWire(votes[0] as VoteAnswer);
    expect(wire.reserveTtlMs).toBe(30_000);
    expect(voteFromWire(wire)?.reserveTtlMs).toBe(30_000);
    // Past its TTL and still held (the cluster not reached yet): 1 ms, so the leader shows it expired, never "unknown".
    now.ms += 60_000;
    engine.prepare(prepareReq('T'), take);
    expect(votes.at(-1)?.reserveTtlMs).toBe(1);

    const plain = seatResource(seatHandlers(), syncJournal(), now).resource;
    const noTtl: VoteAnswer[] = [];
    engineWith(plain, new Timers(), (cb) => cb(null, 'IN_PROGRESS')).prepare(prepareReq('T'), (_e, v) => {
      if (v) noTtl.push(v);
    });
    expect(noTtl.map((v) => [v.vote, 'reserveTtlMs' in v])).toEqual([['yes', false]]);
    expect(voteToWire(noTtl[0] as VoteAnswer).reserveTtlMs).toBe(0); // 0 on the wire: not given
    expect(voteFromWire(voteToWire(noTtl[0] as VoteAnswer))).not.toHaveProperty('reserveTtlMs');
  });
});

describe('TCC reserve watcher (TTL)', () => {
  function setup(answer: (n: number) => Error | ClusterOutcome) {
    const timers = new Timers();
    const now = {
      get ms() {
        return timers.now;
      },
    };
    const { resource } = seatResource(seatHandlers({ ttlMs: 1_000 }), syncJournal(), now);
    const engine = engineWith(resource, timers, (cb) => cb(null, 'IN_PROGRESS'));
    const asked: string[] = [];
    const askAbort: AskAbort = (txnId, reason, cb) => {
      asked.push(`${txnId}: ${reason}`);
      const a = answer(asked.length);
      if (a instanceof Error) cb(a, 'UNKNOWN');
      else cb(null, a);
    };
    const watcher = new ReserveWatcher({
      clusterId: 'c',
      participantId: 'seats',
      reserves: resource,
      resource,
      engine,
      askAbort,
      clock: { nowMs: () => timers.now },
      schedule: timers.schedule,
      sweepIntervalMs: 100,
      askBackoffMinMs: 100,
      askBackoffMaxMs: 400,
    });
    watcher.start();
    return { timers, resource, engine, asked, watcher };
  }

  it('before the TTL nothing is asked; once it runs out the cluster is asked and its ABORT cancels the reserve', () => {
    const { timers, resource, engine, asked, watcher } = setup(() => 'ABORTED');
    engine.prepare(prepareReq('T'), () => {});
    timers.advance(900);
    expect(asked).toEqual([]);
    timers.advance(300);
    expect(asked).toEqual(['T: the TCC reserve of participant seats expired']);
    expect(resource.branchState('T')).toBe('cancelled');
    expect(engine.stateOf('T')).toBe('ABORTED');
    expect(resource.state.free).toBe(10);
    expect(watcher.expired).toBe(1);
  });

  it('when the cluster had decided COMMIT, the expired reserve is confirmed, not cancelled (AC1)', () => {
    const { timers, resource, engine } = setup(() => 'COMMITTED');
    engine.prepare(prepareReq('T'), () => {});
    timers.advance(1_500);
    expect(resource.branchState('T')).toBe('confirmed');
    expect(engine.stateOf('T')).toBe('COMMITTED');
    expect(resource.state).toMatchObject({ free: 8, sold: 2 });
  });

  it('while the cluster cannot answer the reserve stays held and the question is repeated with backoff; it never cancels alone', () => {
    const { timers, resource, engine, asked } = setup((n) => (n < 6 ? new Error('no leader') : 'ABORTED'));
    engine.prepare(prepareReq('T'), () => {});
    timers.advance(999);
    expect(asked.length).toBe(0);
    timers.advance(201);
    expect(asked.length).toBeGreaterThanOrEqual(1);
    expect(resource.branchState('T')).toBe('tried');
    timers.advance(500);
    expect(resource.branchState('T')).toBe('tried');
    const soFar = asked.length;
    expect(soFar).toBeGreaterThan(1);
    expect(soFar).toBeLessThan(6);
    timers.advance(5_000);
    expect(asked.length).toBe(6);
    expect(resource.branchState('T')).toBe('cancelled');
  });

  it('a reserve whose YES never left (the engine does not hold it) is settled on the resource with the answer', () => {
    const { timers, resource } = setup(() => 'ABORTED');
    resource.prepare('orphan', seats(1), () => {});
    timers.advance(1_500);
    expect(resource.branchState('orphan')).toBe('cancelled');
  });

  it('a reserve with no TTL is never asked about', () => {
    const timers = new Timers();
    const { resource } = seatResource(seatHandlers());
    const engine = engineWith(resource, timers, (cb) => cb(null, 'IN_PROGRESS'));
    let asked = 0;
    new ReserveWatcher({
      clusterId: 'c',
      participantId: 'seats',
      reserves: resource,
      resource,
      engine,
      askAbort: () => asked++,
      clock: { nowMs: () => timers.now },
      schedule: timers.schedule,
    }).start();
    engine.prepare(prepareReq('T'), () => {});
    timers.advance(100_000);
    expect(asked).toBe(0);
    expect(resource.branchState('T')).toBe('tried');
  });
});

describe('TCC memory handlers are folded (docs/tcc.md)', () => {
  it("each event runs its handler twice (the live copy, then the journal's fold once synced) and once more per record at every start", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'verdict-tcc-fold-'));
    const handlers = seatHandlers();
    const open = () =>
      openTccParticipant({
        clusterId: 'c',
        participantId: 'seats',
        dataDir: dir,
        log: SILENT,
        memory: handlers as TccMemoryHandlers<unknown>,
      });
    let setup = await open();
    try {
      calls.try = 0;
      calls.confirm = 0;
      const vote = await new Promise<boolean>((resolve, reject) =>
        setup.resource.prepare('T', seats(2), (err, v) => (err ? reject(err) : resolve(v.yes))),
      );
      expect(vote).toBe(true);
      expect(calls.try).toBe(2);
      await new Promise<void>((resolve, reject) =>
        setup.resource.commit('T', (err) => (err ? reject(err) : resolve())),
      );
      expect(calls.confirm).toBe(2);
      await setup.close();
      await setup.journal.close();
      setup = await open();
      expect(calls).toMatchObject({ try: 3, confirm: 3 });
      expect(((setup.resource as MemoryTccResource<unknown>).state as Seats).sold).toBe(2);
    } finally {
      await setup.close();
      await setup.journal.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a reserve whose Try was recorded but whose vote never left (the process died in between)', () => {
  it('R3: is adopted as prepared at the next start, so the engine asks the cluster and its ABORT releases it', async () => {
    const { openTccParticipant } = await import('../../src/participant/tcc/setup.ts');
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dataDir = mkdtempSync(join(tmpdir(), 'verdict-tcc-adopt-'));
    const kv: TccMemoryHandlers<{ held: string[] }> = {
      initial: () => ({ held: [] }),
      try: (s, b) => void s.held.push(b.txnId),
      confirm: (s, b) => void (s.held = s.held.filter((t) => t !== b.txnId)),
      cancel: (s, b) => void (s.held = s.held.filter((t) => t !== b.txnId)),
      encode: (s) => JSON.stringify(s),
      decode: (t) => JSON.parse(t) as { held: string[] },
    };
    const log = { info: () => {}, warn: () => {}, error: () => {} };
    const open = () =>
      openTccParticipant({
        memory: kv as TccMemoryHandlers<unknown>,
        clusterId: 'c',
        participantId: 'seats',
        dataDir,
        log,
      });
    try {
      const first = await open();
      // The Try runs and its barrier record is synced; the engine's prepared record never is.
      await new Promise<void>((resolve, reject) =>
        first.resource.prepare('t-orphan', new TextEncoder().encode('x'), (err, vote) =>
          err ? reject(err) : vote.yes ? resolve() : reject(new Error(vote.reason)),
        ),
      );
      expect(first.records).toEqual([]);
      await first.close();
      await first.journal.close();
      const second = await open();
      expect(second.records).toEqual([expect.objectContaining({ kind: 'prepared', txnId: 't-orphan' })]);
      expect([...second.resource.heldReserves()].map((h) => h.txnId)).toEqual(['t-orphan']);
      await second.close();
      await second.journal.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
