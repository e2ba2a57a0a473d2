// The history store's pages (src/history/page.ts): a write turn's
// transactions kept as the changes that reached them, one LevelDB value,
// their records built when read. What a user relies on: a record read from
// a page is the record the changes make (texts of any kind, retries as one
// row with a count and the last error, acts); pages survive a restart and a
// snapshot's lacking range is still said; the age and byte bounds take the
// oldest transactions out of pages; an id is found through the Bloom
// filters, and one a filter wrongly answers for is decoded and not found; a
// late change to a transaction already in a page makes its record, which
// replaces the page's copy; a store of a newer form is refused.

import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { newTxnId } from '../../src/domain/txn-id.ts';
import { bloomHas, bloomOf, buildPage, decodePage, replayLine, type OpenTxn } from '../../src/history/page.ts';
import { applyChange, withSightingRows, type HistoryChange, type HistoryRecord } from '../../src/history/record.ts';
import { encodeRecord } from '../../src/history/codec.ts';
import { DAY_MS, decide, historyStores, NOW_MS } from './history-fixture.ts';

const { open, stores, dirs } = historyStores('verdict-history-pages-');

const row = (txnId: string, atMs: number, kind: string, participantId = '', detail = ''): HistoryChange => ({
  t: 'row',
  txnId,
  atMs,
  kind,
  participantId,
  detail,
});

/** A leader's transaction as the node feeds it: sightings around the decision, retries, an act, the Forget. */
function leaderChanges(id: string, index: number, atMs: number): HistoryChange[] {
  return [
    row(id, atMs - 9, 'begin'),
    row(id, atMs - 8, 'prepare', 'shop'),
    row(id, atMs - 8, 'prepare', 'bank'),
    row(id, atMs - 5, 'vote', 'shop', 'YES'),
    row(id, atMs - 4, 'vote', 'bank', 'YES (reserve TTL 45000 ms)'),
    row(id, atMs - 1, 'proposed', '', 'COMMIT'),
    { ...decide(id, index, atMs), reason: 'tab\there, comma, "quote" 100% \u00e9\u2028 \ud800 end' },
    row(id, atMs + 1, 'decision-sent', 'shop', 'COMMIT'),
    row(id, atMs + 1, 'decision-sent', 'bank', 'COMMIT'),
    row(id, atMs + 2, 'ack', 'shop'),
    ...Array.from({ length: 5 }, (_, i) => [
      row(id, atMs + 10 + i, 'decision-sent', 'bank', 'COMMIT'),
      row(id, atMs + 10 + i, 'no-ack', 'bank', `14 UNAVAILABLE: connect, refused\n${i}`),
    ]).flat(),
    row(id, atMs + 20, 'a kind, of its own', '', 'x'),
    {
      t: 'act',
      txnId: id,
      act: {
        kind: 'resolve',
        operator: 'ann@ops',
        reason: 'incident "7", room 3',
        atMs: atMs + 25,
        outcome: 'commit',
        effect: 'confirmed',
        participantId: '',
        gid: '',
        index: index + 1,
      },
    },
    row(id, atMs + 30, 'ack', 'bank'),
    { t: 'forget', txnId: id, index: index + 2, atMs: atMs + 40 },
  ];
}

/** A record as a page gives it back: a lone surrogate half cannot be written as text, and reads back as U+FFFD. */
const asWritten = (r: HistoryRecord): HistoryRecord => ({ ...r, reason: r.reason.replace('\ud800', '\ufffd') });

/** The record the changes make when folded in memory (./record.ts), as it is read back. */
function folded(changes: readonly HistoryChange[]): HistoryRecord {
  let r: HistoryRecord | null = null;
  for (const c of changes) r = applyChange(r, c);
  return withSightingRows(r as HistoryRecord);
}

describe('history pages', () => {
  it("a page's line read back is the record its changes make: any text, retries counted with the last error, acts", () => {
    const changes = leaderChanges('p-1', 7, NOW_MS);
    const t: OpenTxn = { txnId: 'p-1', changes: [], t0: NOW_MS, atMs: NOW_MS, minIndex: 7, turn: 0, settled: true };
    for (const c of changes)
      if (c.t === 'row') t.changes.push(c.atMs - t.t0, c.kind, c.participantId, c.detail);
      else t.changes.push(c);
    const built = buildPage(1, 'g', [t]);
    const value = built.value.toString('utf8');
    expect(value).not.toMatch(/\n.*\n/);
    const page = decodePage(value);
    if (typeof page === 'string') throw new Error(page);
    const back = replayLine(page, page.lines[0] as (typeof page.lines)[0]);
    const want = folded(changes);
    // A lone surrogate cannot be written as text: it is read back as U+FFFD.
    expect(back).toEqual(asWritten(want));
    expect(back).toMatchObject({ forgottenIndex: 9, acts: [{ operator: 'ann@ops', reason: 'incident "7", room 3' }] });
    const rows = typeof back === 'string' ? [] : back.rows;
    expect(rows.find((x) => x.kind === 'no-ack')).toMatchObject({
      count: 5,
      detail: '14 UNAVAILABLE: connect, refused\n4',
    });
    // Malformed bytes are refused with the reason, never taken as a record.
    expect(decodePage('H9,0,0,')).toMatch(/not a page of form 4/);
    const broken = decodePage(value.replace('\tF,', '\tF,x'));
    if (typeof broken === 'string') throw new Error(broken);
    expect(replayLine(broken, broken.lines[0] as (typeof broken.lines)[0])).toMatch(/Forget is malformed/);
  });

  it('a Bloom filter answers yes for every id it holds, and rarely for others', () => {
    const ids = Array.from({ length: 2_000 }, (_, i) => `order-${i}`);
    const bits = new Uint8Array(Buffer.from(bloomOf(ids), 'base64'));
    expect(ids.every((id) => bloomHas(bits, id))).toBe(true);
    const others = Array.from({ length: 20_000 }, (_, i) => `other-${i}`).filter((id) => bloomHas(bits, id)).length;
    expect(others / 20_000).toBeLessThan(0.03);
  });

  it('keeps a leader’s transactions in one page across a restart, by id, time and participant, and writes one LevelDB value for them', async () => {
    const a = await open();
    for (let i = 1; i <= 200; i++)
      for (const c of leaderChanges(`t${i}`, i * 3, NOW_MS - 60_000 + i))
        a.store.apply(c.t === 'row' ? 0 : c.t === 'act' ? i * 3 + 1 : c.t === 'forget' ? i * 3 + 2 : i * 3, [c]);
    await a.store.flush();
    // 200 transactions: one page and a few index keys, not a key each.
    expect(a.store.writeStats().records).toBe(200);
    expect(a.store.writeStats().ops).toBeLessThan(20);
    await a.store.close();
    stores.splice(stores.indexOf(a.store), 1);
    const b = await open(a.dir);
    const one = (await b.store.query({ txnId: 't77' })).records[0];
    expect(one).toEqual(asWritten(folded(leaderChanges('t77', 231, NOW_MS - 60_000 + 77))));
    const page = await b.store.query({ sinceAtMs: NOW_MS - 60_000 + 100, participantId: 'bank', limit: 5 });
    expect(page.records.map((r) => r.txnId)).toEqual(['t200', 't199', 't198', 't197', 't196']);
    expect(page.truncated).toBe(true);
    expect((await b.store.query({ limit: 1000 })).records.length).toBe(200);
    expect((await b.store.query({ participantId: 'nobody' })).records).toEqual([]);
    expect(b.errors).toEqual([]);
  });

  it('an id a filter wrongly answers for is decoded and passed over; a timed id is found around its time', async () => {
    const { store, errors } = await open();
    const ids = Array.from({ length: 50 }, (_, i) => `bf-${i}`);
    ids.forEach((id, i) => store.apply(i + 1, [decide(id, i + 1, NOW_MS - 5_000)]));
    await store.flush();
    const bits = new Uint8Array(Buffer.from(bloomOf(ids), 'base64'));
    let liar = '';
    for (let i = 0; liar === ''; i++) if (bloomHas(bits, `absent-${i}`)) liar = `absent-${i}`;
    expect((await store.query({ txnId: liar })).records).toEqual([]);
    expect((await store.query({ txnId: 'bf-17' })).records[0]).toMatchObject({ txnId: 'bf-17', decisionIndex: 18 });
    const timed = newTxnId(NOW_MS - 2 * 3_600_000, new Uint8Array(10).fill(7));
    store.apply(60, [decide(timed, 60, NOW_MS - 2 * 3_600_000 + 300)]);
    await store.flush();
    expect((await store.query({ txnId: timed })).records[0]?.txnId).toBe(timed);
    expect(errors).toEqual([]);
  });

  it('a change after the page was written (a late Forget, a retry, an act) makes a record that replaces the copy, after a restart too', async () => {
    const a = await open(undefined, { flushMs: 10, holdTurns: 2, decided: () => true });
    a.store.apply(5, [decide('late', 5, NOW_MS - 3_000)]);
    a.store.apply(0, [row('late', NOW_MS - 2_999, 'decision-sent', 'bank', 'COMMIT')]);
    const deadline = Date.now() + 10_000;
    while (a.store.writeStats().records === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(a.store.durableIndex).toBe(5);
    a.store.apply(0, [row('late', NOW_MS - 2_000, 'decision-sent', 'bank', 'COMMIT')]);
    a.store.apply(0, [row('late', NOW_MS - 1_900, 'no-ack', 'bank', 'refused')]);
    await a.store.close();
    stores.splice(stores.indexOf(a.store), 1);
    const b = await open(a.dir, { decided: () => true });
    b.store.apply(6, [{ t: 'forget', txnId: 'late', index: 6, atMs: NOW_MS - 1_000 }]);
    const all = await b.store.query({});
    expect(all.records.map((r) => r.txnId)).toEqual(['late']);
    expect(all.records[0]).toMatchObject({ forgottenIndex: 6, decisionIndex: 5 });
    expect(all.records[0]?.rows.find((x) => x.kind === 'decision-sent')).toMatchObject({ count: 2 });
    expect(all.records[0]?.rows.find((x) => x.kind === 'no-ack')).toMatchObject({ detail: 'refused' });
    expect((await b.store.query({ txnId: 'late' })).records[0]).toEqual(all.records[0]);
  });

  it("a snapshot's lacking range is still said after a restart, beside its live decisions in a page", async () => {
    const a = await open();
    a.store.apply(3, [decide('before', 3, NOW_MS - 2_000)]);
    a.store.restored(40, [decide('live', 35, NOW_MS - 1_000)]);
    a.store.apply(41, [decide('after', 41, NOW_MS - 500)]);
    await a.store.close();
    stores.splice(stores.indexOf(a.store), 1);
    const b = await open(a.dir);
    const all = await b.store.query({});
    expect(all.lacks).toEqual([{ firstIndex: 4, lastIndex: 40 }]);
    expect(all.records.map((r) => r.txnId)).toEqual(['after', 'live', 'before']);
    expect(b.store.durableIndex).toBe(41);
  });

  it('bounds pages by age and bytes: the oldest transactions leave their pages, which keep the rest and their index', async () => {
    const { store } = await open();
    // Three pages: days 10..1 ago, two transactions a day, over the retention at first for days 10..8.
    let index = 0;
    for (let page = 0; page < 3; page++) {
      for (let d = 10 - page; d >= 1; d -= 3) {
        index++;
        store.apply(index, [decide(`d${d}a`, index, NOW_MS - d * DAY_MS, ['shop'])]);
        index++;
        store.apply(index, [decide(`d${d}b`, index, NOW_MS - d * DAY_MS + 1, ['bank'])]);
      }
      await store.flush();
    }
    expect(await store.prune()).toBe(6);
    const left = await store.query({ limit: 1000 });
    expect(left.records.length).toBe(14);
    expect(left.records.at(-1)?.txnId).toBe('d7a');
    expect((await store.query({ participantId: 'bank' })).records.map((r) => r.txnId).at(-1)).toBe('d7b');
    // Over the byte bound: the oldest go until it holds, the newest stay.
    const small = await open(undefined, { bytesMax: 600 });
    for (let i = 1; i <= 40; i++) small.store.apply(i, [decide(`b${i}`, i, NOW_MS - (41 - i) * 1000)]);
    await small.store.flush();
    await small.store.prune();
    const kept = await small.store.query({ limit: 1000 });
    expect(kept.bytes).toBeLessThanOrEqual(600);
    expect(kept.records.length).toBeGreaterThan(0);
    expect(kept.records.length).toBeLessThan(40);
    expect(kept.records[0]?.txnId).toBe('b40');
    expect(kept.records.some((r) => r.txnId === 'b1')).toBe(false);
  });

  it('refuses a store of a newer form with what to do, and reads one written before pages', async () => {
    const d = await mkdtemp(join(tmpdir(), 'verdict-history-pages-'));
    dirs.push(d);
    const db = new Level<string, string>(d, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    await db.put('m\u0000form', '9');
    await db.close();
    await expect(open(d)).rejects.toThrow(/of form 9, written by a newer version.*move the folder aside/);
    // A store written before pages (a record per transaction, form 3): read as it is, and written on with pages.
    const e = await mkdtemp(join(tmpdir(), 'verdict-history-pages-'));
    dirs.push(e);
    const old = new Level<string, string>(e, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await old.open();
    const r = applyChange(null, decide('o1', 1, NOW_MS - 5_000, ['shop']));
    await old.batch([
      { type: 'put', key: 'r\u0000o1', value: encodeRecord(r) },
      {
        type: 'put',
        key: `T\u0000${String(NOW_MS - 10_000).padStart(16, '0')}\u0000${'1'.padStart(12, '0')}`,
        value: `${NOW_MS - 5_000} o1`,
      },
      {
        type: 'put',
        key: `P\u0000shop\u0000${String(NOW_MS - 10_000).padStart(16, '0')}\u0000${'1'.padStart(12, '0')}`,
        value: `${NOW_MS - 5_000} o1`,
      },
      { type: 'put', key: 'm\u0000applied', value: '1' },
      { type: 'put', key: 'm\u0000seq', value: '1' },
    ]);
    await old.close();
    const { store } = await open(e);
    store.apply(2, [decide('n2', 2, NOW_MS - 1_000, ['shop'])]);
    expect((await store.query({ participantId: 'shop' })).records.map((x) => x.txnId)).toEqual(['n2', 'o1']);
    expect((await store.query({ txnId: 'o1' })).records[0]).toMatchObject({ outcome: 'commit', decisionIndex: 1 });
  });
});
