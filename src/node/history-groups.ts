// A node's transaction history over its decision groups (docs/operations.md,
// "Transaction history" and "Decision groups"): each group's applied log
// feeds a history store of its own (src/history/store.ts keeps one applied
// index and one set of lacking ranges per store, and a group's log indexes
// are its own), and this is the one door the History RPC and the console
// read through. A question about one transaction or saga goes to the store
// of the group that decides it (groupOf of its id); a search asks every
// group's store for the same page and merges the answers by decision time,
// newest first, cut to the page's limit: each store returns its newest
// `limit` matches, so the merged newest `limit` are among them, and the page
// is truncated when any store was or when more than `limit` came back.
//
// Each record and each lacking range carries its group. With one group the
// door passes group 0's answer through, group 0 on every record.

import { groupOf } from '../domain/group.ts';
import {
  HISTORY_LIMIT_DEFAULT,
  HISTORY_LIMIT_MAX,
  SAGA_KEY_PREFIX,
  type HistoryAnswer,
  type HistoryQuery,
  type HistoryRecord,
  type LogRange,
} from '../history/record.ts';
import { indexAtMs, type HistoryStore } from '../history/store.ts';

/** A history record with the decision group whose applied log it came from. */
export type GroupedRecord = HistoryRecord & { group: number };

/** A history answer over every group: its records and lacking ranges carry their group. */
export interface GroupedAnswer extends Omit<HistoryAnswer, 'records' | 'lacks'> {
  records: GroupedRecord[];
  lacks: (LogRange & { group: number })[];
  /** The cluster's number of decision groups. */
  groups: number;
  /** Each group's highest log index whose changes are on disk, by group (0 for a group without a store). */
  appliedIndexes: number[];
}

export class GroupHistories {
  /** stores[g] is group g's history; null where it is off or could not be opened. */
  constructor(readonly stores: readonly (Pick<HistoryStore, 'query'> | null)[]) {}

  get groups(): number {
    return this.stores.length;
  }

  /** Whether any group keeps a history (all or none do: one config). */
  get enabled(): boolean {
    return this.stores.some((s) => s !== null);
  }

  /** The group that decides a record's key: a saga's by its saga id, a transaction's by its id. */
  groupOfKey(key: string): number {
    const id = key.startsWith(SAGA_KEY_PREFIX) ? key.slice(SAGA_KEY_PREFIX.length) : key;
    return this.stores.length === 1 ? 0 : groupOf(id, this.stores.length);
  }

  /** One record (q.txnId, a saga's key included) from its group's store, or a search merged over every group. */
  async query(q: HistoryQuery): Promise<GroupedAnswer> {
    if (q.txnId !== undefined && q.txnId !== '') {
      const g = this.groupOfKey(q.txnId);
      const answers = this.stores.map((s, group) => (group === g && s !== null ? s.query(q) : null));
      return this.merged(await Promise.all(answers), 1);
    }
    const limit = Math.min(Math.max(1, q.limit ?? HISTORY_LIMIT_DEFAULT), HISTORY_LIMIT_MAX);
    return this.merged(await Promise.all(this.stores.map((s) => (s === null ? null : s.query(q)))), limit);
  }

  private merged(answers: readonly (HistoryAnswer | null)[], limit: number): GroupedAnswer {
    const records: GroupedRecord[] = [];
    const lacks: GroupedAnswer['lacks'] = [];
    let truncated = false;
    let bytes = 0;
    let oldestAtMs = 0;
    const appliedIndexes = answers.map((a) => a?.appliedIndex ?? 0);
    answers.forEach((a, group) => {
      if (a === null) return;
      for (const r of a.records) records.push({ ...r, group });
      for (const r of a.lacks) lacks.push({ ...r, group });
      truncated ||= a.truncated;
      bytes += a.bytes;
      if (a.oldestAtMs > 0 && (oldestAtMs === 0 || a.oldestAtMs < oldestAtMs)) oldestAtMs = a.oldestAtMs;
    });
    // The store's own order: newest first, then by id (descending) at one time.
    if (answers.length > 1)
      records.sort((a, b) => indexAtMs(b) - indexAtMs(a) || (a.txnId < b.txnId ? 1 : a.txnId > b.txnId ? -1 : 0));
    if (records.length > limit) {
      records.length = limit;
      truncated = true;
    }
    return {
      records,
      truncated,
      lacks,
      appliedIndex: appliedIndexes[0] ?? 0,
      appliedIndexes,
      oldestAtMs,
      bytes,
      groups: this.stores.length,
    };
  }
}
