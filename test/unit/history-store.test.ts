// The transaction history's store (src/history/store.ts) and its search
// text (src/history/query.ts): records from applied changes, the time and
// participant indexes, the age and byte bounds (oldest first), the rebuild
// from a log re-applied after a crash, the lacking range after a snapshot,
// a person's bad flags refused with a reason; sagas kept after the saga
// table forgets them, and forced participant removals on the decisions
// they were owed (src/node/history-feed.ts, history-sagas.ts).

import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { applyChange, sagaKey, withSightingRows, type HistoryChange } from '../../src/history/record.ts';
import { HistoryQueryError, parseHistorySearch, parseTimeArg } from '../../src/history/query.ts';
import { decodeRecord, encodeRecord } from '../../src/history/codec.ts';
import { DAY_MS, decide, expectReplayMerged, historyStores, NOW_MS, waitUntil } from './history-fixture.ts';
import { encodeCommand } from '../../src/commit/state.ts';
import { HistoriedMachine, historyObserver } from '../../src/node/history-feed.ts';
import { SagaTable, type SagaCommand } from '../../src/saga/state.ts';
import { EntryType } from '../../src/raft/types.ts';

const { open, stores, dirs } = historyStores('verdict-history-');

describe('history records', () => {
  it("a TCC participant's YES with its reserve TTL is kept as its vote row, with the TTL, through the codec; a plain YES still folds", () => {
    const row = (participantId: string, detail: string): HistoryChange => ({
      t: 'row',
      txnId: 'tcc1',
      atMs: 7,
      kind: 'vote',
      participantId,
      detail,
    });
    let r = applyChange(null, row('seats', 'YES (reserve TTL 45000 ms)'));
    r = applyChange(r, row('shop', 'YES'));
    r = applyChange(r, decide('tcc1', 3, 10, ['seats', 'shop']));
    const back = decodeRecord('tcc1', encodeRecord(r));
    if (typeof back === 'string') throw new Error(back);
    expect(back.participants.map((p) => [p.participantId, p.vote])).toEqual([
      ['seats', 'yes'],
      ['shop', 'yes'],
    ]);
    const votes = back.rows.filter((x) => x.kind === 'vote').map((x) => [x.participantId, x.detail]);
    expect(votes.sort()).toEqual([
      ['seats', 'YES (reserve TTL 45000 ms)'],
      ['shop', 'YES'],
    ]);
  });

  it('a COMMIT implies every vote YES (AC2) and its Forget every ACK (R5); retries collapse into one row with a count and the last error', () => {
    let r = applyChange(null, { t: 'row', txnId: 'a', atMs: 1, kind: 'prepare', participantId: 'shop', detail: '' });
    r = applyChange(r, decide('a', 5, 10));
    expect(r.participants.map((p) => p.vote)).toEqual(['yes', 'yes']);
    for (let i = 0; i < 50; i++) {
      applyChange(r, {
        t: 'row',
        txnId: 'a',
        atMs: 20 + i,
        kind: 'decision-sent',
        participantId: 'bank',
        detail: 'COMMIT',
      });
      applyChange(r, {
        t: 'row',
        txnId: 'a',
        atMs: 20 + i,
        kind: 'no-ack',
        participantId: 'bank',
        detail: `connection refused ${i}`,
      });
    }
    applyChange(r, { t: 'row', txnId: 'a', atMs: 99, kind: 'ack', participantId: 'bank', detail: '' });
    const rows = withSightingRows(r).rows;
    const noAck = rows.find((x) => x.kind === 'no-ack');
    expect(noAck).toMatchObject({ count: 50, detail: 'connection refused 49', atMs: 20, lastAtMs: 69 });
    expect(rows.find((x) => x.kind === 'decision-sent')).toMatchObject({
      count: 50,
      detail: 'COMMIT',
      atMs: 20,
      lastAtMs: 69,
    });
    expect(rows.map((x) => x.kind)).toEqual(['prepare', 'decision-sent', 'no-ack', 'ack']);
    // Only what is not an ordinary sighting is a row in memory: the PREPARE and the ACK are folded into their
    // participants.
    expect(r.rows.map((x) => x.kind)).toEqual(['no-ack', 'decision-sent']);
    expect(r.participants.find((p) => p.participantId === 'bank')).toMatchObject({ acked: true, ackedAtMs: 99 });
    expect(r.participants.find((p) => p.participantId === 'shop')?.acked).toBe(false);
    applyChange(r, { t: 'forget', txnId: 'a', index: 9, atMs: 120 });
    expect(r.participants.every((p) => p.acked)).toBe(true);
    expect(r.forgottenIndex).toBe(9);
  });
});

describe('history record bytes', () => {
  it('reads back what it wrote, any text included, and refuses malformed bytes with the reason', () => {
    let r = applyChange(null, {
      t: 'row',
      txnId: 'x-1',
      atMs: NOW_MS - 5,
      kind: 'prepare',
      participantId: 'shop',
      detail: '',
    });
    r = applyChange(r, {
      ...decide('x-1', 7, NOW_MS, ['shop', 'bank'], 'abort'),
      reason: 'bank said "no"\n\u00e9\u2028 \\ done',
    });
    applyChange(r, {
      t: 'row',
      txnId: 'x-1',
      atMs: NOW_MS + 3,
      kind: 'no-ack',
      participantId: 'bank',
      detail: '14 UNAVAILABLE: {"a":1}',
    });
    applyChange(r, {
      t: 'row',
      txnId: 'x-1',
      atMs: NOW_MS + 6,
      kind: 'no-ack',
      participantId: 'bank',
      detail: 'deadline exceeded',
    });
    applyChange(r, {
      t: 'row',
      txnId: 'x-1',
      atMs: NOW_MS + 7,
      kind: 'a kind of its own',
      participantId: '',
      detail: '',
    });
    applyChange(r, { t: 'row', txnId: 'x-1', atMs: NOW_MS + 9, kind: 'ack', participantId: 'bank', detail: '' });
    expect(r.rows.find((x) => x.kind === 'no-ack')).toMatchObject({ count: 2, lastAtMs: NOW_MS + 6 });
    applyChange(r, {
      t: 'act',
      txnId: 'x-1',
      act: {
        kind: 'resolve',
        operator: 'ann@ops',
        reason: 'incident "7"',
        atMs: NOW_MS + 20,
        outcome: 'abort',
        effect: 'confirmed',
        participantId: '',
        gid: '',
        index: 9,
      },
    });
    applyChange(r, { t: 'forget', txnId: 'x-1', index: 11, atMs: NOW_MS + 30 });
    const text = encodeRecord(r);
    const read = withSightingRows(r);
    expect(decodeRecord('x-1', text)).toEqual(read);
    expect(read.rows.map((x) => x.kind)).toEqual(['prepare', 'no-ack', 'a kind of its own', 'ack']);
    // The forms before are still read: a JSON object, and the positional form without folded sightings.
    expect(decodeRecord('x-1', JSON.stringify(read))).toEqual(read);
    const form2 = '[2,"commit","",4,1000,0,5,300,0,[["shop",1,1,3],["bank",1,0]],[],[[-2,"p","shop"],[3,"a","shop"]]]';
    expect(decodeRecord('y', form2)).toMatchObject({
      decidedAtMs: 1000,
      forgottenAtMs: 1300,
      participants: [{ participantId: 'shop', ackedAtMs: 1003 }, { ackedAtMs: 0 }],
      rows: [
        { atMs: 998, kind: 'prepare' },
        { atMs: 1003, kind: 'ack' },
      ],
    });
    expect(decodeRecord('x-1', '[2,"commit"]')).toMatch(/not a record of form 3 or 2/);
    expect(
      decodeRecord('x-1', '[3,"commit","",4,1000,0,5,300,0,[["shop",1,1,null,null,null,null,1]],[],[],null,null,""]'),
    ).toMatch(/participant is malformed/);
    expect(decodeRecord('x-1', text.replace('"abort"', '"maybe"'))).toMatch(/outcome "maybe"/);
    expect(decodeRecord('x-1', '{')).toMatch(/does not parse/);
    expect(decodeRecord('x-1', text.replace('"a kind of its own"', '"Z"'))).toMatch(/kind "Z" is unknown/);
  });
});

describe('history store', () => {
  it('finds records by time and by participant, newest first, with outcome and limit', async () => {
    const { store } = await open();
    store.apply(1, [decide('old', 1, NOW_MS - DAY_MS)]);
    store.apply(2, [decide('mid', 2, NOW_MS - 3_600_000, ['shop'])]);
    store.apply(3, [decide('new', 3, NOW_MS - 60_000, ['bank'], 'abort')]);
    const all = await store.query({ sinceAtMs: NOW_MS - 2 * DAY_MS });
    expect(all.records.map((r) => r.txnId)).toEqual(['new', 'mid', 'old']);
    expect(
      (await store.query({ sinceAtMs: NOW_MS - 2 * DAY_MS, untilAtMs: NOW_MS - 2 * 3_600_000 })).records.map(
        (r) => r.txnId,
      ),
    ).toEqual(['old']);
    expect((await store.query({ participantId: 'shop' })).records.map((r) => r.txnId)).toEqual(['mid', 'old']);
    expect((await store.query({ outcome: 'abort' })).records.map((r) => r.txnId)).toEqual(['new']);
    const one = await store.query({ limit: 1 });
    expect(one.records.map((r) => r.txnId)).toEqual(['new']);
    expect(one.truncated).toBe(true);
    expect((await store.query({ txnId: 'mid' })).records[0]).toMatchObject({
      txnId: 'mid',
      outcome: 'commit',
      decisionIndex: 2,
    });
    expect(all.appliedIndex).toBe(3);
  });

  it('keeps records across a close and an open; a change to a record no longer in memory reaches it on disk', async () => {
    const a = await open(undefined, { decided: () => true });
    a.store.apply(1, [decide('t1', 1, NOW_MS - 1000)]);
    await a.store.close();
    const b = await open(a.dir, { decided: () => true });
    expect(b.store.durableIndex).toBe(1);
    b.store.apply(2, [{ t: 'forget', txnId: 't1', index: 2, atMs: NOW_MS }]);
    b.store.apply(3, [
      {
        t: 'act',
        txnId: 't1',
        act: {
          kind: 'resolve',
          operator: 'alice@ops',
          reason: 'incident 7',
          atMs: NOW_MS,
          outcome: 'commit',
          effect: 'confirmed',
          participantId: '',
          gid: '',
          index: 3,
        },
      },
    ]);
    const r = (await b.store.query({ txnId: 't1' })).records[0];
    expect(r).toMatchObject({ forgottenIndex: 2, acts: [{ operator: 'alice@ops', reason: 'incident 7' }] });
    expect(r?.participants.every((p) => p.acked)).toBe(true);
  });

  it('rebuild: entries at or below the index on disk are skipped, the ones above (lost in a crash) are applied again, once', async () => {
    const a = await open();
    a.store.apply(1, [decide('t1', 1, NOW_MS - 1000)]);
    await a.store.flush();
    // A crash: t2 was applied in memory and never written (no close).
    a.store.apply(2, [decide('t2', 2, NOW_MS - 500)]);
    stores.splice(stores.indexOf(a.store), 1);
    await (a.store as unknown as { db: { close(): Promise<void> } }).db.close();
    const b = await open(a.dir);
    expect((await b.store.query({ txnId: 't2' })).records).toEqual([]);
    // The node re-applies its retained log from the snapshot on: entries 1 and 2.
    b.store.apply(1, [{ ...decide('t1', 1, NOW_MS - 1000), participants: ['someone-else'] }]);
    b.store.apply(2, [decide('t2', 2, NOW_MS - 500)]);
    b.store.apply(2, [decide('t2', 2, NOW_MS - 500)]);
    const all = await b.store.query({});
    expect(all.records.map((r) => r.txnId)).toEqual(['t2', 't1']);
    // Entry 1 was on disk already: its replay is not applied again.
    expect(all.records[1]?.participants.map((p) => p.participantId)).toEqual(['shop', 'bank']);
    expect(all.records[0]?.participants.length).toBe(2);
  });

  it('writes a settled transaction once: its decision, sightings, ACKs and Forget in one record write', async () => {
    const { store } = await open(undefined, { flushMs: 10, holdTurns: 1_000 });
    const row = (kind: string, participantId = '', detail = ''): HistoryChange => ({
      t: 'row',
      txnId: 'w1',
      atMs: NOW_MS,
      kind,
      participantId,
      detail,
    });
    store.apply(0, [row('begin'), row('prepare', 'shop'), row('prepare', 'bank')]);
    store.apply(0, [row('vote', 'shop', 'YES'), row('vote', 'bank', 'YES')]);
    store.apply(4, [decide('w1', 4, NOW_MS)]);
    store.apply(0, [
      row('decision-sent', 'shop', 'COMMIT'),
      row('decision-sent', 'bank', 'COMMIT'),
      row('ack', 'shop'),
      row('ack', 'bank'),
    ]);
    // Several write turns pass while it waits for its Forget: nothing of it is written, and the log from its decision
    // on is not on disk.
    await new Promise((r) => setTimeout(r, 100));
    expect(store.writeStats().records).toBe(0);
    store.apply(5, [{ t: 'forget', txnId: 'w1', index: 5, atMs: NOW_MS + 300 }]);
    await waitUntil(() => store.writeStats().records > 0);
    expect(store.writeStats().records).toBe(1);
    expect(store.durableIndex).toBe(5);
    const r = (await store.query({ txnId: 'w1' })).records[0];
    expect(r?.rows.map((x) => x.kind)).toEqual([
      'begin',
      'prepare',
      'prepare',
      'vote',
      'vote',
      'decision-sent',
      'decision-sent',
      'ack',
      'ack',
    ]);
    expect(r).toMatchObject({
      forgottenIndex: 5,
      decisionIndex: 4,
      participants: [
        { participantId: 'shop', vote: 'yes', acked: true, ackedAtMs: NOW_MS },
        { participantId: 'bank', vote: 'yes', acked: true },
      ],
    });
  });

  it('a transaction not settled in time is written anyway; one held keeps the index on disk below its decision until it is', async () => {
    const a = await open(undefined, { flushMs: 20, holdTurns: 50 });
    a.store.apply(10, [decide('held', 10, NOW_MS - 900)]);
    a.store.apply(0, [{ t: 'row', txnId: 'held', atMs: NOW_MS - 800, kind: 'ack', participantId: 'shop', detail: '' }]);
    a.store.apply(11, [decide('quick', 11, NOW_MS - 500)]);
    a.store.apply(0, [
      { t: 'row', txnId: 'quick', atMs: NOW_MS - 450, kind: 'ack', participantId: 'bank', detail: '' },
    ]);
    a.store.apply(12, [{ t: 'forget', txnId: 'quick', index: 12, atMs: NOW_MS - 400 }]);
    await waitUntil(() => a.store.writeStats().records >= 1);
    // quick is on disk; held (decided at 10) is not, so entries from 10 on are not.
    expect(a.store.durableIndex).toBe(9);
    // A crash now (no close): the node re-applies its log from 10 on.
    stores.splice(stores.indexOf(a.store), 1);
    await (a.store as unknown as { db: { close(): Promise<void> } }).db.close();
    const b = await open(a.dir, { flushMs: 20, holdTurns: 50 });
    expect(b.store.durableIndex).toBe(9);
    b.store.apply(10, [decide('held', 10, NOW_MS - 900)]);
    b.store.apply(11, [decide('quick', 11, NOW_MS - 500)]);
    b.store.apply(12, [{ t: 'forget', txnId: 'quick', index: 12, atMs: NOW_MS - 400 }]);
    const all = await b.store.query({});
    expectReplayMerged(all);
    expect(all.records[1]?.outcome).toBe('commit');
    // Not settled, still written once its hold is over.
    const c = await open(undefined, { flushMs: 10, holdTurns: 3 });
    c.store.apply(1, [decide('slow', 1, NOW_MS)]);
    await waitUntil(() => c.store.writeStats().records > 0);
    expect(c.store.durableIndex).toBe(1);
  });

  it('bounds what waits: past the held bound the oldest are written without waiting for their Forget', async () => {
    const { store } = await open(undefined, { flushMs: 10, holdTurns: 1_000, heldMax: 5 });
    for (let i = 1; i <= 8; i++) store.apply(i, [decide(`h${i}`, i, NOW_MS - 1000 + i)]);
    await waitUntil(() => store.writeStats().records >= 3);
    await new Promise((r) => setTimeout(r, 50));
    expect(store.writeStats().records).toBe(3);
    // h1..h3 written; h4 is the oldest still held.
    expect(store.durableIndex).toBe(3);
  });

  it('indexes a write turn under one key per time bucket and participant, and finds a record whose time moved only at its new time', async () => {
    const { store } = await open();
    for (let i = 1; i <= 50; i++) store.apply(i, [decide(`k${i}`, i, NOW_MS - 60_000 + i)]);
    await store.flush();
    // 50 records, one key each, and their index in a few keys, not 150.
    expect(store.writeStats().ops).toBeLessThan(50 + 10);
    // Known only by a heuristic report at first (indexed by the report's time), then decided a day later.
    const act = {
      kind: 'heuristic' as const,
      operator: 'p',
      reason: 'r',
      atMs: NOW_MS - DAY_MS,
      outcome: 'commit' as const,
      effect: 'HEURCOM',
      participantId: 'shop',
      gid: 'g',
      index: 60,
    };
    store.apply(60, [{ t: 'act', txnId: 'moved', act }]);
    await store.flush();
    expect(
      (await store.query({ untilAtMs: NOW_MS - DAY_MS + 1, sinceAtMs: NOW_MS - 2 * DAY_MS })).records.map(
        (r) => r.txnId,
      ),
    ).toEqual(['moved']);
    store.apply(61, [{ ...decide('moved', 61, NOW_MS - 1_000), first: false }]);
    await store.flush();
    expect((await store.query({ untilAtMs: NOW_MS - DAY_MS + 1, sinceAtMs: NOW_MS - 2 * DAY_MS })).records).toEqual([]);
    const recent = await store.query({ sinceAtMs: NOW_MS - 2_000, participantId: 'shop' });
    expect(recent.records.map((r) => r.txnId)).toEqual(['moved']);
    expect((await store.query({ limit: 1000 })).records.length).toBe(51);
  });

  it('reads a store written with a key per record in its indexes (the first form): by time and by participant', async () => {
    const d = await mkdtemp(join(tmpdir(), 'verdict-history-'));
    dirs.push(d);
    const old = new Level<string, string>(d, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await old.open();
    const ops: { type: 'put'; key: string; value: string }[] = [];
    for (const [id, atMs, ps] of [
      ['o1', NOW_MS - DAY_MS, ['shop']],
      ['o2', NOW_MS - 3_600_000, ['shop', 'bank']],
    ] as const) {
      const r = applyChange(null, decide(id, 1, atMs, [...ps]));
      const time = String(atMs).padStart(16, '0');
      ops.push(
        { type: 'put', key: `r\u0000${id}`, value: JSON.stringify(r) },
        { type: 'put', key: `t\u0000${time}\u0000${id}`, value: '' },
      );
      for (const p of ps) ops.push({ type: 'put', key: `p\u0000${p}\u0000${time}\u0000${id}`, value: '' });
    }
    ops.push({ type: 'put', key: 'm\u0000applied', value: '2' });
    await old.batch(ops);
    await old.close();
    const { store } = await open(d);
    expect((await store.query({ sinceAtMs: NOW_MS - 2 * DAY_MS })).records.map((r) => r.txnId)).toEqual(['o2', 'o1']);
    expect((await store.query({ participantId: 'bank' })).records.map((r) => r.txnId)).toEqual(['o2']);
    expect((await store.query({ txnId: 'o1' })).records[0]).toMatchObject({
      outcome: 'commit',
      participants: [{ participantId: 'shop' }],
    });
    store.apply(3, [decide('n3', 3, NOW_MS - 60_000, ['bank'])]);
    expect((await store.query({ participantId: 'bank' })).records.map((r) => r.txnId)).toEqual(['n3', 'o2']);
  });

  it('a snapshot installed past what the store holds is said as a lacking range; its live decisions are kept', async () => {
    const { store } = await open();
    store.apply(3, [decide('t3', 3, NOW_MS - 1000)]);
    store.restored(40, [decide('live', 35, NOW_MS - 500)]);
    store.apply(41, [decide('t41', 41, NOW_MS - 100)]);
    const a = await store.query({});
    expect(a.lacks).toEqual([{ firstIndex: 4, lastIndex: 40 }]);
    expect(a.records.map((r) => r.txnId)).toEqual(['t41', 'live', 't3']);
    // A restore at or below what the store holds (its own snapshot at start) lacks nothing.
    store.restored(41, []);
    expect((await store.query({})).lacks).toEqual([{ firstIndex: 4, lastIndex: 40 }]);
  });

  it('bounds: past the retention the oldest go; over the byte bound the oldest go until it holds', async () => {
    let nowMs = NOW_MS;
    const { store } = await open(undefined, { nowMs: () => nowMs, bytesMax: 1 << 20 });
    for (let i = 1; i <= 10; i++) store.apply(i, [decide(`d${i}`, i, NOW_MS - (11 - i) * DAY_MS)]);
    await store.flush();
    const deleted = await store.prune();
    // Days 10..8 ago are past 7 days.
    expect(deleted).toBe(3);
    expect((await store.query({})).records.map((r) => r.txnId).at(-1)).toBe('d4');
    expect((await store.query({ participantId: 'shop' })).records.length).toBe(7);
    nowMs += 0;
    const before = (await store.query({})).bytes;
    expect(before).toBeGreaterThan(0);
    const small = await open(undefined, { bytesMax: 1_000 });
    for (let i = 1; i <= 40; i++) small.store.apply(i, [decide(`b${i}`, i, NOW_MS - (41 - i) * 1000)]);
    await small.store.flush();
    await small.store.prune();
    const left = await small.store.query({ limit: 1000 });
    expect(left.bytes).toBeLessThanOrEqual(1_000);
    expect(left.records.length).toBeGreaterThan(0);
    expect(left.records.length).toBeLessThan(40);
    // Newest kept, oldest gone.
    expect(left.records[0]?.txnId).toBe('b40');
    expect(left.records.some((r) => r.txnId === 'b1')).toBe(false);
  });
});

describe('history search text', () => {
  const names = {
    since: '--since',
    until: '--until',
    participant: '--participant',
    outcome: '--outcome',
    limit: '--limit',
  };
  it('reads relative and ISO times, outcomes in either spelling, a bounded limit', () => {
    expect(parseTimeArg('--since', '24h', NOW_MS)).toBe(NOW_MS - DAY_MS);
    expect(parseTimeArg('--since', '2026-12-04T12:00:00Z', NOW_MS)).toBe(NOW_MS - DAY_MS);
    expect(
      parseHistorySearch(
        { since: '2d', until: '1d', outcome: 'COMMITTED', limit: '5', participant: 'shop' },
        NOW_MS,
        names,
      ),
    ).toEqual({
      sinceAtMs: NOW_MS - 2 * DAY_MS,
      untilAtMs: NOW_MS - DAY_MS,
      outcome: 'commit',
      limit: 5,
      participantId: 'shop',
    });
  });
  it.each([
    [{ since: 'yesterday' }, /--since "yesterday" is not a time/],
    [{ since: '-5h' }, /not a time/],
    [{ since: '1h', until: '2h' }, /must be before --until/],
    [{ limit: '0' }, /--limit "0" must be a whole number from 1 to 1000/],
    [{ limit: '5000' }, /from 1 to 1000/],
    [{ outcome: 'maybe' }, /give committed or aborted/],
    [{ participant: 'no spaces' }, /not a participant id/],
  ])('refuses %j with the reason', (s, why) => {
    expect(() => parseHistorySearch(s, NOW_MS, names)).toThrow(HistoryQueryError);
    expect(() => parseHistorySearch(s, NOW_MS, names)).toThrow(why);
  });
});

describe('a node that installs a snapshot', () => {
  it("keeps the snapshot's live decisions and operator acts, and says which log range its history lacks", async () => {
    const { store } = await open();
    const leader = new HistoriedMachine();
    leader.apply({
      term: 1,
      index: 7,
      type: EntryType.Normal,
      data: encodeCommand({
        t: 'decide',
        txnId: 'live-1',
        outcome: 'abort',
        reason: 'shop voted NO',
        participants: ['shop'],
        atMs: NOW_MS - 5_000,
        operator: { operator: 'bob@ops', reason: 'cleanup', atMs: NOW_MS - 5_000 },
      }),
    });
    const follower = new HistoriedMachine();
    follower.history = store;
    follower.restore(leader.snapshot(), 30);
    const a = await store.query({});
    expect(a.lacks).toEqual([{ firstIndex: 1, lastIndex: 30 }]);
    expect(a.records[0]).toMatchObject({
      txnId: 'live-1',
      outcome: 'abort',
      decisionIndex: 7,
      reason: 'shop voted NO',
      acts: [{ kind: 'resolve', operator: 'bob@ops', effect: 'decided' }],
    });
  });
});

describe('sagas and forced removals in the history', () => {
  it('keeps a saga after the saga table forgot it: steps, outputs, each call’s failed attempts (summed over an operator’s retry) and the timeline; a replayed entry leaves it as once', async () => {
    const { store, dir } = await open();
    // One ended saga kept: the next one that ends evicts the first from the table.
    const table = new SagaTable(1);
    const feed = historyObserver(store, 0);
    let index = 0;
    const run = (cmd: SagaCommand): void => {
      index++;
      const entry = { term: 1, index, type: EntryType.Normal, data: new Uint8Array() };
      feed.onResult?.(entry, table.apply(cmd, index));
    };
    const twoSteps = [
      { service: 'pay', name: 'debit', input: '{"amount":30}' },
      { service: 'ship', name: 'send', input: 'ORD-7731' },
    ];
    run({
      t: 'saga.start',
      sagaId: 'refund-7731',
      steps: twoSteps,
      pivot: null,
      atMs: NOW_MS - 9_000,
      type: 'order-refund',
      labels: { order: 'ORD-7731' },
    });
    run({
      t: 'saga.result',
      sagaId: 'refund-7731',
      step: 0,
      kind: 'action',
      outcome: 'done',
      output: 'debited 30',
      reason: '',
      atMs: NOW_MS - 8_000,
    });
    for (let i = 0; i < 3; i++)
      run({
        t: 'saga.attempt',
        sagaId: 'refund-7731',
        step: 1,
        kind: 'action',
        error: `UNAVAILABLE: ship down ${i}`,
        atMs: NOW_MS - 7_000 + i,
      });
    run({
      t: 'saga.stuck',
      sagaId: 'refund-7731',
      step: 1,
      kind: 'action',
      attempts: 3,
      lastError: 'UNAVAILABLE: ship down 2',
      atMs: NOW_MS - 6_900,
    });
    run({
      t: 'saga.retry',
      sagaId: 'refund-7731',
      operator: 'alice@ops',
      reason: 'ship is back',
      atMs: NOW_MS - 6_000,
    });
    run({
      t: 'saga.attempt',
      sagaId: 'refund-7731',
      step: 1,
      kind: 'action',
      error: 'DEADLINE_EXCEEDED: slow',
      atMs: NOW_MS - 5_000,
    });
    run({
      t: 'saga.result',
      sagaId: 'refund-7731',
      step: 1,
      kind: 'action',
      outcome: 'done',
      output: 'sent',
      reason: '',
      atMs: NOW_MS - 4_000,
    });
    run({ t: 'saga.ended', sagaIds: ['refund-7731'] });
    run({ t: 'saga.start', sagaId: 'other', steps: twoSteps.slice(0, 1), pivot: null, atMs: NOW_MS - 3_000 });
    run({
      t: 'saga.result',
      sagaId: 'other',
      step: 0,
      kind: 'action',
      outcome: 'done',
      output: 'ok',
      reason: '',
      atMs: NOW_MS - 2_000,
    });
    run({ t: 'saga.ended', sagaIds: ['other'] });
    expect(table.sagas.has('refund-7731')).toBe(false);
    await store.close();

    const { store: again } = await open(dir);
    const r = (await again.query({ txnId: sagaKey('refund-7731') })).records[0];
    expect(r?.decidedAtMs).toBe(NOW_MS - 9_000);
    expect(r?.saga).toMatchObject({
      sagaId: 'refund-7731',
      type: 'order-refund',
      labels: { order: 'ORD-7731' },
      state: 'finished',
      startedAtMs: NOW_MS - 9_000,
      endedAtMs: NOW_MS - 4_000,
      steps: [
        { step: 0, service: 'pay', name: 'debit', input: '{"amount":30}', status: 'done', output: 'debited 30' },
        { step: 1, service: 'ship', name: 'send', status: 'done', output: 'sent' },
      ],
      calls: [
        {
          step: 1,
          kind: 'action',
          attempts: 1,
          attemptsTotal: 4,
          firstFailureAtMs: NOW_MS - 5_000,
          lastFailureAtMs: NOW_MS - 5_000,
          lastError: 'DEADLINE_EXCEEDED: slow',
        },
      ],
    });
    expect(r?.saga?.timeline.map((e) => e.what)).toEqual([
      'started',
      'sent',
      'done',
      'sent',
      'stuck',
      'retry',
      'done',
      'finished',
    ]);
    expect(r?.saga?.timeline.find((e) => e.what === 'retry')).toMatchObject({
      operator: 'alice@ops',
      detail: 'ship is back',
    });
    // Searches: sagas apart from transactions.
    again.apply(index + 1, [decide('t-1', index + 1, NOW_MS - 1_000)]);
    expect((await again.query({ kind: 'saga' })).records.map((x) => x.txnId)).toEqual([
      sagaKey('other'),
      sagaKey('refund-7731'),
    ]);
    expect((await again.query({ kind: 'txn' })).records.map((x) => x.txnId)).toEqual(['t-1']);
    // The same state again (a replayed entry) adds no attempts.
    const same = r?.saga;
    if (same === undefined) throw new Error('no saga');
    again.apply(0, [
      {
        t: 'saga',
        txnId: sagaKey('refund-7731'),
        saga: { ...same, calls: same.calls.map((c) => ({ ...c, attemptsTotal: c.attempts })) },
        index: same.lastIndex,
      },
    ]);
    expect((await again.query({ txnId: sagaKey('refund-7731') })).records[0]?.saga?.calls[0]?.attemptsTotal).toBe(4);
  });

  it('finds a saga by each step service it called, beside the transactions of that participant, across a restart', async () => {
    const { store, dir } = await open();
    const table = new SagaTable();
    const feed = historyObserver(store, 0);
    let index = 0;
    const run = (cmd: SagaCommand): void => {
      index++;
      feed.onResult?.({ term: 1, index, type: EntryType.Normal, data: new Uint8Array() }, table.apply(cmd, index));
    };
    const steps = [
      { service: 'pay', name: 'debit', input: '' },
      { service: 'ship', name: 'send', input: '' },
      { service: 'pay', name: 'receipt', input: '' },
    ];
    run({ t: 'saga.start', sagaId: 'order-1', steps, pivot: null, atMs: NOW_MS - 5_000 });
    run({
      t: 'saga.result',
      sagaId: 'order-1',
      step: 0,
      kind: 'action',
      outcome: 'done',
      output: 'ok',
      reason: '',
      atMs: NOW_MS - 4_000,
    });
    run({ t: 'saga.start', sagaId: 'order-2', steps: steps.slice(1, 2), pivot: null, atMs: NOW_MS - 3_000 });
    store.apply(++index, [decide('t-pay', index, NOW_MS - 2_000, ['pay', 'bank'])]);
    await store.close();
    const { store: again } = await open(dir);
    expect((await again.query({ participantId: 'pay' })).records.map((x) => x.txnId)).toEqual([
      't-pay',
      sagaKey('order-1'),
    ]);
    expect((await again.query({ participantId: 'ship' })).records.map((x) => x.txnId)).toEqual([
      sagaKey('order-2'),
      sagaKey('order-1'),
    ]);
    expect((await again.query({ participantId: 'pay', kind: 'saga' })).records.map((x) => x.txnId)).toEqual([
      sagaKey('order-1'),
    ]);
    expect((await again.query({ participantId: 'bank' })).records.map((x) => x.txnId)).toEqual(['t-pay']);
    expect(
      (await again.query({ participantId: 'ship', sinceAtMs: NOW_MS - 4_000 })).records.map((x) => x.txnId),
    ).toEqual([sagaKey('order-2')]);
  });

  it('participant remove --force names who removed it, when and why on each decision it was owed; a snapshot carries it', async () => {
    const { store } = await open();
    const leader = new HistoriedMachine();
    leader.table.apply(
      { t: 'register', id: 'gone', endpoint: '127.0.0.1:1', atMs: NOW_MS - 10_000, kind: 'memory' },
      1,
    );
    leader.table.apply(
      { t: 'decide', txnId: 'owed-1', outcome: 'commit', reason: '', participants: ['gone'], atMs: NOW_MS - 9_000 },
      2,
    );
    const feed = historyObserver(store, 0);
    const index = 3;
    const removal = leader.table.apply(
      {
        t: 'unregister',
        id: 'gone',
        operator: 'alice@ops',
        atMs: NOW_MS - 5_000,
        acked: [],
        force: true,
        reason: 'host decommissioned',
      },
      index,
    );
    store.apply(2, [decide('owed-1', 2, NOW_MS - 9_000, ['gone'])]);
    feed.onResult?.({ term: 1, index, type: EntryType.Normal, data: new Uint8Array() }, removal);
    const act = {
      kind: 'removed',
      operator: 'alice@ops',
      reason: 'host decommissioned',
      atMs: NOW_MS - 5_000,
      participantId: 'gone',
      effect: 'undelivered',
      index,
    };
    expect((await store.query({ txnId: 'owed-1' })).records[0]?.acts).toEqual([{ ...act, outcome: '', gid: '' }]);

    const { store: other } = await open();
    const follower = new HistoriedMachine();
    follower.history = other;
    follower.restore(leader.snapshot(), index);
    expect((await other.query({ txnId: 'owed-1' })).records[0]?.acts).toMatchObject([act]);
  });

  it("a node that installs a snapshot keeps the snapshot's sagas as records", async () => {
    const { store } = await open();
    const leaderSagas = new SagaTable();
    const leader = new HistoriedMachine([leaderSagas]);
    leaderSagas.apply(
      {
        t: 'saga.start',
        sagaId: 'trip-1',
        steps: [{ service: 'hotel', name: 'book', input: '2 nights' }],
        pivot: null,
        atMs: NOW_MS - 60_000,
        type: 'trip',
      },
      4,
    );
    const followerSagas = new SagaTable();
    const follower = new HistoriedMachine([followerSagas]);
    follower.sagas = followerSagas;
    follower.history = store;
    follower.restore(leader.snapshot(), 9);
    const r = (await store.query({ kind: 'saga' })).records[0];
    expect(r?.saga).toMatchObject({
      sagaId: 'trip-1',
      type: 'trip',
      state: 'running',
      lastIndex: 9,
      steps: [{ service: 'hotel', name: 'book', input: '2 nights', status: 'running' }],
    });
    expect((await store.query({})).lacks).toEqual([{ firstIndex: 1, lastIndex: 9 }]);
  });
});
