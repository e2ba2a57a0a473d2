// What a node feeds its history (src/node/history-feed.ts): every applied
// entry moves the applied index, a decision goes in as the decision table's
// own value and a Forget as its ids, with no change value made for them.
// The records read back are the ones the same transactions give as changes
// (src/history/store.ts apply), and the index on disk still reaches the
// last entry applied when entries carry nothing for the history.

import { describe, expect, it } from 'vitest';
import type { ApplyResult, DecisionCommand } from '../../src/commit/state.ts';
import type { HistoryChange } from '../../src/history/record.ts';
import type { HistoryStore } from '../../src/history/store.ts';
import { HistoriedMachine, historyObserver, historyRow, openHistory } from '../../src/node/history-feed.ts';
import { EntryType } from '../../src/raft/types.ts';
import { DAY_MS, decide, expectReplayMerged, historyStores, NOW_MS, waitUntil } from './history-fixture.ts';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { NodeConfig } from '../../src/node/config.ts';

const { open, stores, dirs } = historyStores('verdict-history-feed-');

const entry = (index: number) => ({ term: 1, index, type: EntryType.Normal, data: new Uint8Array() });

/** A node's state machine and its feed into `store`: apply(cmd) applies the next entry as the node core does. */
function node(store: HistoryStore, shiftMs = 0) {
  const machine = new HistoriedMachine();
  machine.history = store;
  const feed = historyObserver(store, shiftMs);
  const row = historyRow(store, shiftMs);
  let index = 0;
  return {
    machine,
    row,
    /** An entry that carries nothing for the history (a leader's empty entry, a membership change). */
    empty: (): number => {
      feed.onEntryApplied?.(entry(++index), null);
      return index;
    },
    apply: (cmd: DecisionCommand): number => {
      const e = entry(++index);
      const result = machine.table.apply(cmd, index) as ApplyResult;
      feed.onEntryApplied?.(e, result);
      feed.onResult?.(e, result);
      return index;
    },
    at: (i: number) => {
      index = i;
    },
  };
}

/** Crashes `store` (no close: what was not written is lost). */
async function crash(store: HistoryStore): Promise<void> {
  stores.splice(stores.indexOf(store), 1);
  await (store as unknown as { db: { close(): Promise<void> } }).db.close();
}

describe("a node's feed into its history", () => {
  it('gives the records the same transactions give as changes: decision, sightings, operator act, heuristic, Forget', async () => {
    const fed = await open();
    const n = node(fed.store);
    const byChanges = await open();
    const c = byChanges.store;
    const seen = (txnId: string, kind: string, participantId = '', detail = ''): HistoryChange => ({
      t: 'row',
      txnId,
      atMs: NOW_MS - 800,
      kind,
      participantId,
      detail,
    });
    // t1: the leader's sightings around its decision, then its Forget; t2: decided by an operator, and a heuristic.
    for (const [kind, p, d] of [['begin'], ['prepare', 'shop'], ['prepare', 'bank'], ['vote', 'shop', 'YES']]) {
      n.row('t1', { atMs: NOW_MS - 800, kind: kind as string, participantId: p, detail: d });
      c.apply(0, [seen('t1', kind as string, p, d)]);
    }
    const participants = ['shop', 'bank'];
    const i1 = n.apply({ t: 'decide', txnId: 't1', outcome: 'commit', reason: '', participants, atMs: NOW_MS - 700 });
    c.apply(i1, [decide('t1', i1, NOW_MS - 700)]);
    n.row('t1', { atMs: NOW_MS - 800, kind: 'ack', participantId: 'shop' });
    c.apply(0, [seen('t1', 'ack', 'shop')]);
    const operator = { operator: 'alice@ops', reason: 'stuck', atMs: NOW_MS - 650 };
    const i2 = n.apply({ t: 'decide', txnId: 't2', outcome: 'abort', reason: 'x', participants, atMs: 0, operator });
    const act = {
      kind: 'resolve',
      ...operator,
      outcome: 'abort',
      effect: 'decided',
      participantId: '',
      gid: '',
    } as const;
    c.apply(i2, [
      { ...decide('t2', i2, 0, participants, 'abort'), reason: 'x' },
      { t: 'act', txnId: 't2', act: { ...act, index: i2 } },
    ]);
    const heuristic = {
      t: 'heuristic',
      txnId: 't2',
      participantId: 'bank',
      outcome: 'commit',
      gid: 'g-2',
      operator: 'dba',
      reason: 'by hand',
      atMs: NOW_MS - 600,
    } as DecisionCommand;
    const i3 = n.apply(heuristic);
    const h = (n.machine.table.heuristics.get('t2') ?? [])[0];
    expect(h).toBeDefined();
    c.apply(i3, [
      {
        t: 'act',
        txnId: 't2',
        act: {
          kind: 'heuristic',
          operator: 'dba',
          reason: 'by hand',
          atMs: NOW_MS - 600,
          outcome: 'commit',
          effect: h?.kind ?? '',
          participantId: 'bank',
          gid: 'g-2',
          index: i3,
        },
      },
    ]);
    const i4 = n.apply({ t: 'forget', txnIds: ['t1'] });
    // A Forget's time is the latest logged before it: the heuristic's.
    c.apply(i4, [{ t: 'forget', txnId: 't1', index: i4, atMs: NOW_MS - 600 }]);
    const a = await fed.store.query({});
    const b = await c.query({});
    // t2 has no decision time: it is found by its act's, the newer.
    expect(a.records.map((r) => r.txnId)).toEqual(['t2', 't1']);
    expect(a.records).toEqual(b.records);
    expect(a.records[1]).toMatchObject({ decisionIndex: i1, forgottenIndex: i4, forgottenAtMs: NOW_MS - 600 });
    expect(a.records[1]?.rows.map((r) => r.kind)).toEqual(['begin', 'prepare', 'prepare', 'vote', 'ack']);
    expect(a.records[0]?.acts.map((x) => x.kind)).toEqual(['resolve', 'heuristic']);
    expect(a.appliedIndex).toBe(i4);
  });

  it("keeps a row's time whatever its distance from the transaction's first row (past a small integer's range too)", async () => {
    const { store } = await open();
    const n = node(store);
    const firstAtMs = NOW_MS - 20 * DAY_MS;
    n.row('far', { atMs: firstAtMs, kind: 'begin' });
    n.row('far', { atMs: firstAtMs + 3, kind: 'prepare', participantId: 'shop' });
    n.apply({ t: 'decide', txnId: 'far', outcome: 'commit', reason: '', participants: ['shop'], atMs: NOW_MS });
    n.row('far', { atMs: NOW_MS + 5, kind: 'ack', participantId: 'shop' });
    n.apply({ t: 'forget', txnIds: ['far'] });
    const r = (await store.query({ txnId: 'far' })).records[0];
    expect(r?.rows.map((x) => [x.kind, x.atMs])).toEqual([
      ['begin', firstAtMs],
      ['prepare', firstAtMs + 3],
      ['ack', NOW_MS + 5],
    ]);
  });

  it('takes the applied index to disk when the entries applied carry nothing for the history', async () => {
    const a = await open(undefined, { flushMs: 10 });
    const n = node(a.store);
    const decided = n.apply({
      t: 'decide',
      txnId: 'd1',
      outcome: 'commit',
      reason: '',
      participants: ['shop'],
      atMs: NOW_MS,
    });
    n.apply({ t: 'forget', txnIds: ['d1'] });
    await waitUntil(() => a.store.durableIndex === decided + 1);
    // Empty entries only (a leader's first entry, membership changes): the index on disk still follows them.
    let last = 0;
    for (let k = 0; k < 5; k++) last = n.empty();
    await waitUntil(() => a.store.durableIndex === last);
    // And it is the index on disk: a node restarted from here re-applies nothing of them.
    await crash(a.store);
    const b = await open(a.dir);
    expect(b.store.durableIndex).toBe(last);
    expect((await b.store.query({ txnId: 'd1' })).records[0]?.forgottenIndex).toBe(decided + 1);
  });

  it('a decision replayed after a crash merges into what is on disk; the ones lost are applied again, once', async () => {
    const a = await open(undefined, { flushMs: 20, holdTurns: 50 });
    const n = node(a.store);
    const ids = { participants: ['shop', 'bank'], reason: '', outcome: 'commit' as const };
    const iHeld = n.apply({ t: 'decide', txnId: 'held', atMs: NOW_MS - 900, ...ids, participants: ['shop'] });
    const iQuick = n.apply({ t: 'decide', txnId: 'quick', atMs: NOW_MS - 500, ...ids });
    n.row('quick', { atMs: NOW_MS - 450, kind: 'ack', participantId: 'bank' });
    n.apply({ t: 'forget', txnIds: ['quick'] });
    await waitUntil(() => a.store.writeStats().records >= 1);
    // quick is on disk; held (decided at iHeld) is not, so entries from it on are not.
    expect(a.store.durableIndex).toBe(iHeld - 1);
    await crash(a.store);
    const b = await open(a.dir, { flushMs: 20, holdTurns: 50 });
    // The node re-applies its log from iHeld on, on a state machine rebuilt from its snapshot.
    const m = node(b.store);
    m.at(iHeld - 1);
    m.apply({ t: 'decide', txnId: 'held', atMs: NOW_MS - 900, ...ids, participants: ['shop'] });
    expect(m.apply({ t: 'decide', txnId: 'quick', atMs: NOW_MS - 500, ...ids })).toBe(iQuick);
    m.apply({ t: 'forget', txnIds: ['quick'] });
    const all = await b.store.query({});
    expectReplayMerged(all);
    expect(all.records[1]).toMatchObject({ outcome: 'commit', decisionIndex: iHeld, forgottenIndex: 0 });
  });

  it("writes each group's store at G > 1 once a write turn G times as long (one store's LevelDB writes a second per node)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'verdict-history-turn-'));
    dirs.push(dir);
    const cfg = { history: true, dataDir: dir, historyRetentionMs: 7 * DAY_MS, historyBytesMax: 1 << 30 } as NodeConfig;
    const machine = new HistoriedMachine();
    const log = pino({ level: 'silent' });
    const one = await openHistory(cfg, machine, log, 0, 1);
    const four = await openHistory(cfg, machine, log, 1, 4);
    if (one === null || four === null) throw new Error('a history did not open');
    stores.push(one, four);
    const t0 = Date.now();
    for (const [i, s] of [one, four].entries())
      node(s).apply({
        t: 'decide',
        txnId: `t${i}`,
        outcome: 'commit',
        reason: '',
        participants: ['shop'],
        atMs: NOW_MS,
      });
    await waitUntil(() => one.writeStats().batches > 0);
    const waitedMs = Date.now() - t0;
    // One write turn (200 ms) has passed; four groups' turn (800 ms) has not, unless the machine stalled past it.
    if (waitedMs < 600) expect(four.writeStats().batches).toBe(0);
    await waitUntil(() => four.writeStats().batches > 0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(4 * 200 - 20);
  });
});
