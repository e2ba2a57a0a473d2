// The memory resource: payload format, key locks between prepared
// transactions, and rebuilding it from the journal's records.
import { describe, expect, it } from 'vitest';
import {
  MemoryResource,
  memoryPayload,
  parsePayload,
  KEYS_PER_TXN_MAX,
  PAYLOAD_BYTES_MAX,
} from '../../src/participant/memory.ts';
import { MemoryState } from '../../src/participant/memory-state.ts';
import { toBase64, type JournalRecord, type ResourceVote } from '../../src/participant/types.ts';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

function prepare(r: MemoryResource, txnId: string, payload: Uint8Array): ResourceVote {
  let vote: ResourceVote | undefined;
  r.prepare(txnId, payload, (err, v) => {
    expect(err).toBeNull();
    vote = v;
  });
  if (vote === undefined) throw new Error('prepare did not answer');
  return vote;
}

const commit = (r: MemoryResource, t: string): void => r.commit(t, (err) => expect(err).toBeNull());
const abort = (r: MemoryResource, t: string): void => r.abort(t, (err) => expect(err).toBeNull());

describe('memory resource: payload', () => {
  it('parses {"set": {...}} into writes; "set" may be empty or absent', () => {
    const p = parsePayload(memoryPayload({ a: '1', b: 'two' }));
    expect(p.ok && [...p.writes]).toEqual([
      ['a', '1'],
      ['b', 'two'],
    ]);
    expect(parsePayload(enc('{}'))).toEqual({ ok: true, writes: new Map() });
  });

  it('a payload with "fail" votes NO with that reason, holding nothing', () => {
    const r = new MemoryResource();
    expect(prepare(r, 'T1', memoryPayload({ a: '1' }, 'insufficient funds'))).toEqual({
      yes: false,
      reason: 'insufficient funds',
    });
    expect(r.lockedBy('a')).toBeUndefined();
  });

  it.each([
    ['not json', /payload is not valid JSON .*expected \{"set": \{"key": "value"\}\}/],
    ['[1,2]', /must be a JSON object/],
    ['{"set": {"a": 1}}', /payload "set.a" must be a string/],
    ['{"set": ["a"]}', /"set" must be an object/],
    ['{"put": {}}', /unknown field "put"/],
    ['{"fail": 7}', /"fail" must be a string/],
  ])('an invalid payload %s votes NO with a clear reason', (text, reason) => {
    const v = prepare(new MemoryResource(), 'T1', enc(text));
    expect(v.yes).toBe(false);
    expect(v.reason).toMatch(reason);
  });

  it('refuses payloads that are not UTF-8, too large, or write too many keys', () => {
    expect(parsePayload(Uint8Array.of(0xff, 0xfe))).toEqual({ ok: false, reason: 'payload is not UTF-8' });
    expect(parsePayload(new Uint8Array(PAYLOAD_BYTES_MAX + 1))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/bytes; at most/),
    });
    const many = Object.fromEntries(Array.from({ length: KEYS_PER_TXN_MAX + 1 }, (_, i) => [`k${i}`, 'v']));
    expect(parsePayload(memoryPayload(many))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/keys; at most/),
    });
  });
});

describe('memory resource: locks', () => {
  it('PREPARE locks the keys it writes; another transaction writing one of them votes NO naming the holder', () => {
    const r = new MemoryResource();
    expect(prepare(r, 'T1', memoryPayload({ a: '1', b: '1' })).yes).toBe(true);
    expect(prepare(r, 'T2', memoryPayload({ c: '2', b: '2' }))).toEqual({
      yes: false,
      reason: 'key b is locked by prepared transaction T1',
    });
    // A refused PREPARE holds nothing: c stays free.
    expect(r.lockedBy('c')).toBeUndefined();
    expect(prepare(r, 'T3', memoryPayload({ c: '3' })).yes).toBe(true);
  });

  it('values are invisible until COMMIT, which applies them and releases the locks', () => {
    const r = new MemoryResource();
    prepare(r, 'T1', memoryPayload({ a: '1' }));
    expect(r.get('a')).toBeUndefined();
    commit(r, 'T1');
    expect(r.get('a')).toBe('1');
    expect(r.lockedBy('a')).toBeUndefined();
    expect(prepare(r, 'T2', memoryPayload({ a: '2' })).yes).toBe(true);
  });

  it('ABORT releases the locks and applies nothing', () => {
    const r = new MemoryResource();
    prepare(r, 'T1', memoryPayload({ a: '1' }));
    abort(r, 'T1');
    expect(r.get('a')).toBeUndefined();
    expect(prepare(r, 'T2', memoryPayload({ a: '2' })).yes).toBe(true);
  });

  it('PREPARE again of a prepared transaction is YES; COMMIT and ABORT are idempotent', () => {
    const r = new MemoryResource();
    prepare(r, 'T1', memoryPayload({ a: '1' }));
    expect(prepare(r, 'T1', memoryPayload({ a: '1' })).yes).toBe(true);
    commit(r, 'T1');
    prepare(r, 'T2', memoryPayload({ a: '2' }));
    commit(r, 'T1'); // a redelivered COMMIT must not disturb T2's lock
    abort(r, 'T1');
    expect(r.lockedBy('a')).toBe('T2');
    expect(r.get('a')).toBe('1');
  });
});

describe('memory resource: waiting for a lock', () => {
  /** A manual clock for the resource's timers: run(ms) fires what is due, in order. */
  function timers(): { schedule: (ms: number, fn: () => void) => () => void; run(ms: number): void } {
    let now = 0;
    const due: { at: number; fn: () => void; live: boolean }[] = [];
    return {
      schedule: (ms, fn) => {
        const t = { at: now + ms, fn, live: true };
        due.push(t);
        return () => {
          t.live = false;
        };
      },
      run(ms) {
        const until = now + ms;
        for (;;) {
          const next = due.filter((t) => t.live && t.at <= until).sort((a, b) => a.at - b.at)[0];
          if (next === undefined) break;
          next.live = false;
          now = next.at;
          next.fn();
        }
        now = until;
      },
    };
  }
  const later = (r: MemoryResource, txnId: string, payload: Uint8Array): { vote: ResourceVote | null } => {
    const out: { vote: ResourceVote | null } = { vote: null };
    r.prepare(txnId, payload, (err, v) => {
      expect(err).toBeNull();
      out.vote = v;
    });
    return out;
  };

  it('a PREPARE that finds a key locked waits for the holder and votes YES once it commits', () => {
    const t = timers();
    const r = new MemoryResource();
    r.waitForLocks(t.schedule, 1_000);
    expect(prepare(r, 'T1', memoryPayload({ a: '1' }))).toEqual({ yes: true, reason: '' });
    const second = later(r, 'T2', memoryPayload({ a: '2', b: '2' }));
    t.run(200);
    expect(second.vote).toBeNull(); // still waiting, holding nothing
    expect(r.lockedBy('b')).toBeUndefined();
    commit(r, 'T1');
    expect(second.vote).toBeNull(); // woken after COMMIT returns, not inside it
    t.run(0);
    expect(second.vote).toEqual({ yes: true, reason: '' });
    expect(r.lockedBy('a')).toBe('T2');
    expect(r.get('a')).toBe('1');
    commit(r, 'T2');
    expect(r.get('a')).toBe('2');
  });

  it('votes NO naming the holder and the wait when the holder is not decided in time; an ABORT wakes it too', () => {
    const t = timers();
    const r = new MemoryResource();
    r.waitForLocks(t.schedule, 300);
    prepare(r, 'T1', memoryPayload({ a: '1' }));
    const second = later(r, 'T2', memoryPayload({ a: '2' }));
    t.run(299);
    expect(second.vote).toBeNull();
    t.run(1);
    expect(second.vote).toEqual({ yes: false, reason: 'key a is locked by prepared transaction T1 (waited 300 ms)' });
    // Its timer and its watch are gone: a later release wakes nobody twice.
    const third = later(r, 'T3', memoryPayload({ a: '3' }));
    abort(r, 'T1');
    t.run(0);
    expect(third.vote).toEqual({ yes: true, reason: '' });
    expect(second.vote).toEqual({ yes: false, reason: 'key a is locked by prepared transaction T1 (waited 300 ms)' });
    expect(r.lockedBy('a')).toBe('T3');
  });

  it('two waiters for one key: the first woken takes it, the other waits on for the new holder', () => {
    const t = timers();
    const r = new MemoryResource();
    r.waitForLocks(t.schedule, 1_000);
    prepare(r, 'T1', memoryPayload({ a: '1' }));
    const w2 = later(r, 'T2', memoryPayload({ a: '2' }));
    const w3 = later(r, 'T3', memoryPayload({ a: '3' }));
    commit(r, 'T1');
    t.run(0);
    expect(w2.vote).toEqual({ yes: true, reason: '' });
    expect(w3.vote).toBeNull();
    commit(r, 'T2');
    t.run(0);
    expect(w3.vote).toEqual({ yes: true, reason: '' });
  });

  it('without waitForLocks (or with 0 ms) a locked key is NO at once', () => {
    const t = timers();
    const r = new MemoryResource();
    prepare(r, 'T1', memoryPayload({ a: '1' }));
    expect(prepare(r, 'T2', memoryPayload({ a: '2' }))).toEqual({
      yes: false,
      reason: 'key a is locked by prepared transaction T1',
    });
    r.waitForLocks(t.schedule, 0);
    expect(prepare(r, 'T3', memoryPayload({ a: '3' }))).toEqual({
      yes: false,
      reason: 'key a is locked by prepared transaction T1',
    });
  });
});

describe('memory resource: rebuilt from the journal', () => {
  const rec = (
    kind: 'prepared' | 'committed' | 'aborted',
    txnId: string,
    set?: Record<string, string>,
  ): JournalRecord =>
    kind === 'prepared'
      ? { kind, txnId, atMs: 0, payloadB64: toBase64(memoryPayload(set ?? {})), participants: ['p1'] }
      : { kind, txnId, atMs: 0 };

  it("has the committed writes and the prepared transactions' locks", () => {
    const s = new MemoryState();
    for (const r of [
      rec('prepared', 'T1', { a: '1' }),
      rec('committed', 'T1'),
      rec('prepared', 'T2', { b: '2' }),
      rec('aborted', 'T2'),
      rec('prepared', 'T3', { a: '3', c: '3' }),
    ])
      s.add(r);
    const r = MemoryResource.restore(s.data, s.preparedWrites());
    expect([r.get('a'), r.get('b'), r.get('c')]).toEqual(['1', undefined, undefined]);
    expect(r.lockedBy('a')).toBe('T3');
    expect(prepare(r, 'T4', memoryPayload({ c: '4' }))).toEqual({
      yes: false,
      reason: 'key c is locked by prepared transaction T3',
    });
    commit(r, 'T3');
    expect(r.get('a')).toBe('3');
  });

  it('the fold applies the writes the resource handed over at PREPARE, without parsing the payload again', () => {
    const s = new MemoryState();
    const r = MemoryResource.restore(s.data, s.preparedWrites(), (txnId, writes) => s.offerWrites(txnId, writes));
    const payload = memoryPayload({ a: '1' });
    expect(prepare(r, 'T1', payload)).toEqual({ yes: true, reason: '' });
    // The journal's copy of the payload is not read while the handed-over writes are there.
    s.add({
      kind: 'prepared',
      txnId: 'T1',
      atMs: 0,
      payloadB64: toBase64(memoryPayload({ other: 'x' })),
      participants: ['p1'],
    });
    s.add(rec('committed', 'T1'));
    expect([...s.data]).toEqual([['a', '1']]);
    // Without a hand-over (replay on open) the payload is parsed.
    s.add(rec('prepared', 'T2', { b: '2' }));
    s.add(rec('committed', 'T2'));
    expect(s.data.get('b')).toBe('2');
  });

  it('a snapshot replayed into an empty state gives the same state', () => {
    const s = new MemoryState(2);
    for (let i = 0; i < 2_500; i++) {
      s.add(rec('prepared', `T${i}`, { [`k${i}`]: `v${i}` }));
      if (i % 3 !== 0) s.add(rec(i % 3 === 1 ? 'committed' : 'aborted', `T${i}`));
    }
    const copy = new MemoryState(2);
    const snap = s.snapshot();
    for (const r of snap) copy.add(r);
    expect(copy.data).toEqual(s.data);
    expect(copy.prepared).toEqual(s.prepared);
    expect(copy.decided).toEqual(s.decided);
    expect(s.decided.size).toBe(2);
    // Data travels in bounded chunks.
    expect(snap.filter((r) => r.kind === 'data').length).toBeGreaterThan(0);
    for (const r of snap) if (r.kind === 'data') expect(r.entries.length).toBeLessThanOrEqual(1_000);
  });
});
