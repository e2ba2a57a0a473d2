// A node's history over its decision groups (src/node/history-groups.ts):
// one id is read from its group's store, a search is merged over every
// group's newest first with the page's limit, and each record says its group.
import { describe, expect, it } from 'vitest';
import { groupOf } from '../../src/domain/group.ts';
import { GroupHistories } from '../../src/node/history-groups.ts';
import { emptyRecord, sagaKey, type HistoryAnswer, type HistoryQuery } from '../../src/history/record.ts';

const G = 3;

/** A stand-in store holding `records` (id, decision time), answering a search newest first as the store does. */
function store(records: readonly [string, number][]): {
  query(q: HistoryQuery): Promise<HistoryAnswer>;
  asked: HistoryQuery[];
} {
  const asked: HistoryQuery[] = [];
  return {
    asked,
    query: async (q) => {
      asked.push(q);
      const all = records
        .map(([id, atMs]) => ({ ...emptyRecord(id), outcome: 'commit' as const, decidedAtMs: atMs }))
        .filter((r) => (q.txnId ? r.txnId === q.txnId : r.decidedAtMs >= (q.sinceAtMs ?? 0)))
        .sort((a, b) => b.decidedAtMs - a.decidedAtMs);
      const limit = q.limit ?? 100;
      return {
        records: all.slice(0, limit),
        truncated: all.length > limit,
        lacks: [{ firstIndex: 1, lastIndex: 2 }],
        appliedIndex: 10,
        oldestAtMs: all.at(-1)?.decidedAtMs ?? 0,
        bytes: 100,
      };
    },
  };
}

function idIn(g: number, tag: string): string {
  for (let i = 0; ; i++) if (groupOf(`${tag}-${i}`, G) === g) return `${tag}-${i}`;
}

describe('the history over decision groups', () => {
  it('merges a search over every group newest first, cut to the limit, truncated when any group had more', async () => {
    const a = idIn(0, 'a');
    const b = idIn(1, 'b');
    const c = idIn(2, 'c');
    const d = idIn(1, 'd');
    const stores = [
      store([[a, 1_000]]),
      store([
        [b, 3_000],
        [d, 500],
      ]),
      store([[c, 2_000]]),
    ];
    const h = new GroupHistories(stores);
    const page = await h.query({ sinceAtMs: 0, limit: 3 });
    expect(page.records.map((r) => [r.txnId, r.group])).toEqual([
      [b, 1],
      [c, 2],
      [a, 0],
    ]);
    expect(page.truncated).toBe(true);
    expect(page.groups).toBe(G);
    expect(page.bytes).toBe(300);
    expect(page.lacks.map((l) => l.group)).toEqual([0, 1, 2]);
    for (const s of stores) expect(s.asked.at(-1)?.limit).toBe(3);
    const all = await h.query({ sinceAtMs: 0, limit: 10 });
    expect(all.records.map((r) => r.txnId)).toEqual([b, c, a, d]);
    expect(all.truncated).toBe(false);
    expect(all.oldestAtMs).toBe(500);
  });

  it("reads one transaction or saga from its group's store only", async () => {
    const t = idIn(2, 't');
    const sagaId = idIn(1, 's');
    const stores = [store([]), store([[sagaKey(sagaId), 7]]), store([[t, 9]])];
    const h = new GroupHistories(stores);
    const one = await h.query({ txnId: t });
    expect(one.records.map((r) => [r.txnId, r.group])).toEqual([[t, 2]]);
    expect(stores[0].asked).toEqual([]);
    expect(stores[1].asked).toEqual([]);
    const saga = await h.query({ txnId: sagaKey(sagaId) });
    expect(saga.records.map((r) => [r.txnId, r.group])).toEqual([[sagaKey(sagaId), 1]]);
  });

  it('passes one group through, group 0 on every record', async () => {
    const h = new GroupHistories([
      store([
        ['x', 5],
        ['y', 6],
      ]),
    ]);
    const page = await h.query({ limit: 1 });
    expect(page.records.map((r) => [r.txnId, r.group])).toEqual([['y', 0]]);
    expect(page.truncated).toBe(true);
    expect(page.groups).toBe(1);
  });
});
