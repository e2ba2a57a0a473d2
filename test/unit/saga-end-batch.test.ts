// End notices in batches (docs/sagas.md, "The end of a saga"): the leader
// tells each step service about every saga due for it in one EndSagas call,
// at most endNoticeBatchMax, one call in flight per service; a saga whose end
// a service did not take is sent again after a backoff, and saga.ended is
// logged only once every step service took it. A step service from before
// EndSagas (it answers EndSagasUnsupported) is sent End one saga at a time,
// and remembered so until END_BATCH_REPROBE_MS passed.

import { describe, expect, it } from 'vitest';
import { END_BATCH_REPROBE_MS } from '../../src/saga/engine.ts';
import { DONE, SagaWorld } from './saga-fixture.ts';

/** Starts `ids`, each one step at svc0 and one at svc1, and runs them to FINISHED. */
function finish(w: SagaWorld, ids: string[]): void {
  const two = [
    { service: 'svc0', name: 'a', input: '' },
    { service: 'svc1', name: 'b', input: '' },
  ];
  for (const id of ids) w.engine.start(id, two, null, () => {});
  w.applyAll();
  while (w.calls.length > 0) {
    while (w.calls.length > 0) w.answer(DONE);
    w.applyAll();
  }
}

const batchesOf = (w: SagaWorld): string[] => w.endBatches.map((b) => `${b.to}:${b.sagaIds.join(',')}`).sort();
const ended = (w: SagaWorld, id: string): boolean => w.sagas.sagas.get(id)?.ended === true;

/** Ticks past the ended batch's delay and applies saga.ended. */
function logEnded(w: SagaWorld): void {
  w.now += 1_000;
  w.engine.tick();
  w.applyAll();
}

describe('saga end notices in batches', () => {
  it('sends one EndSagas call per step service for every saga due in the tick, and logs saga.ended once all took it', () => {
    const w = new SagaWorld({ endNoticeDelayMs: 50 });
    finish(w, ['s1', 's2', 's3']);
    w.now += 50;
    w.engine.tick();
    expect(batchesOf(w)).toEqual(['svc0:s1,s2,s3', 'svc1:s1,s2,s3']);
    expect(w.ends).toEqual([]);
    // svc0 takes all three; svc1 only s2: s1 and s3 stay owed to svc1.
    const [b0, b1] = w.endBatches.splice(0).sort((a, b) => a.to.localeCompare(b.to));
    b0.cb(null, b0.sagaIds);
    b1.cb(null, ['s2', 'not-asked']);
    logEnded(w);
    expect(['s1', 's2', 's3'].map((id) => ended(w, id))).toEqual([false, true, false]);
    // Sent again after a backoff (retryMinMs 100 doubling, jitter 0.5 here), only to svc1.
    expect(batchesOf(w)).toEqual(['svc1:s1,s3']);
    w.ackEnds();
    logEnded(w);
    expect(['s1', 's2', 's3'].map((id) => ended(w, id))).toEqual([true, true, true]);
  });

  it('retries a batch whose call failed (a lost End is sent again) and never logs its sagas ended before', () => {
    const w = new SagaWorld({ endNoticeDelayMs: 0 });
    finish(w, ['s1']);
    expect(batchesOf(w)).toEqual(['svc0:s1', 'svc1:s1']);
    for (const b of w.endBatches.splice(0)) b.cb(new Error('deadline exceeded'));
    logEnded(w);
    expect(ended(w, 's1')).toBe(false);
    expect(batchesOf(w)).toEqual(['svc0:s1', 'svc1:s1']);
    for (const b of w.endBatches.splice(0)) b.cb(b.to === 'svc0' ? null : new Error('unavailable'), b.sagaIds);
    logEnded(w);
    expect(ended(w, 's1')).toBe(false);
    expect(batchesOf(w)).toEqual(['svc1:s1']);
    w.ackEnds();
    logEnded(w);
    expect(ended(w, 's1')).toBe(true);
  });

  it('keeps one call in flight per step service, bounded by endNoticeBatchMax; what came due meanwhile goes on its answer', () => {
    const w = new SagaWorld({ endNoticeDelayMs: 0, endNoticeBatchMax: 2 });
    finish(w, ['s1']);
    expect(batchesOf(w)).toEqual(['svc0:s1', 'svc1:s1']);
    finish(w, ['s2', 's3', 's4']);
    w.engine.tick();
    // Still the first calls only.
    expect(batchesOf(w)).toEqual(['svc0:s1', 'svc1:s1']);
    const first = w.endBatches.splice(0);
    for (const b of first) b.cb(null, b.sagaIds);
    // On each answer the next batch goes at once, at most two sagas.
    expect(batchesOf(w)).toEqual(['svc0:s2,s3', 'svc1:s2,s3']);
    w.ackEnds();
    expect(batchesOf(w)).toEqual(['svc0:s4', 'svc1:s4']);
    w.ackEnds();
    logEnded(w);
    expect(['s1', 's2', 's3', 's4'].every((id) => ended(w, id))).toBe(true);
  });

  it('sends single Ends to a step service from before EndSagas, remembers it, and tries EndSagas again later', () => {
    const w = new SagaWorld({ endNoticeDelayMs: 0 });
    w.oldServices.add('svc1');
    finish(w, ['s1', 's2']);
    // svc0 got a batch; svc1 answered EndSagasUnsupported once and got one End per saga at once.
    expect(batchesOf(w)).toEqual(['svc0:s1']);
    expect(w.ends.map((e) => `${e.to}:${e.sagaId}`).sort()).toEqual(['svc1:s1', 'svc1:s2']);
    expect(w.unsupportedAnswers).toBe(1);
    finish(w, ['s3']);
    w.engine.tick();
    // Remembered: s3's End goes to svc1 alone, without asking EndSagas again.
    expect(w.unsupportedAnswers).toBe(1);
    expect(w.ends.map((e) => `${e.to}:${e.sagaId}`).sort()).toEqual(['svc1:s1', 'svc1:s2', 'svc1:s3']);
    for (const b of w.endBatches.splice(0)) b.cb(null, b.sagaIds);
    expect(batchesOf(w)).toEqual(['svc0:s2,s3']);
    w.ackEnds();
    logEnded(w);
    expect(['s1', 's2', 's3'].every((id) => ended(w, id))).toBe(true);
    // Upgraded: after END_BATCH_REPROBE_MS the leader tries EndSagas again.
    w.oldServices.delete('svc1');
    w.now += END_BATCH_REPROBE_MS;
    finish(w, ['s4']);
    expect(batchesOf(w)).toEqual(['svc0:s4', 'svc1:s4']);
    expect(w.ends).toEqual([]);
  });

  it('a new leader sends the notices its predecessor left unacknowledged, batched', () => {
    const w = new SagaWorld({ endNoticeDelayMs: 50 });
    finish(w, ['s1', 's2']);
    w.now += 50;
    w.engine.tick();
    expect(w.endBatches.length).toBe(2);
    // The leader stops before any answer; the calls it made answer nothing it acts on.
    const lost = w.endBatches.splice(0);
    w.engine.setLeadership(0);
    w.engine = w.newEngine({ endNoticeDelayMs: 50 });
    w.engine.setLeadership(2);
    for (const b of lost) b.cb(null, b.sagaIds);
    w.now += 50;
    w.engine.tick();
    expect(batchesOf(w)).toEqual(['svc0:s1,s2', 'svc1:s1,s2']);
  });
});
