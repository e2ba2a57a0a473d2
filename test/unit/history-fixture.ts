// What the history store's tests share (history-store.test.ts,
// history-pages.test.ts): a store opened in a temp directory at a fixed
// "now", closed and removed after each test, and a decision change.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect } from 'vitest';
import type { HistoryAnswer, HistoryChange } from '../../src/history/record.ts';
import { HistoryStore, type HistoryOptions } from '../../src/history/store.ts';

export const DAY_MS = 86_400_000;
export const NOW_MS = Date.UTC(2026, 11, 5, 12, 0, 0);

export type OpenStore = (
  dir?: string,
  o?: Partial<HistoryOptions>,
) => Promise<{ store: HistoryStore; dir: string; errors: string[] }>;

/**
 * Opens stores for a test file: each in a new temp directory named by `prefix` (or in `dir`), at NOW_MS, its errors
 * collected; after each test every store in `stores` is closed and every directory in `dirs` removed (a test that
 * crashes a store takes it out of `stores`; one that makes a directory of its own adds it to `dirs`). Call at the
 * file's top level.
 */
export function historyStores(prefix: string): { open: OpenStore; stores: HistoryStore[]; dirs: string[] } {
  const dirs: string[] = [];
  const stores: HistoryStore[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close().catch(() => {});
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });
  const open: OpenStore = async (dir, o = {}) => {
    const d = dir ?? (await mkdtemp(join(tmpdir(), prefix)));
    if (dir === undefined) dirs.push(d);
    const errors: string[] = [];
    const store = await HistoryStore.open(d, {
      retentionMs: 7 * DAY_MS,
      bytesMax: 1 << 30,
      nowMs: () => NOW_MS,
      decided: () => false,
      onError: (err) => errors.push(err.message),
      ...o,
    });
    stores.push(store);
    return { store, dir: d, errors };
  };
  return { open, stores, dirs };
}

/** A transaction's decision as the node feeds it (first: this node applied it now). */
export const decide = (
  txnId: string,
  index: number,
  atMs: number,
  participants = ['shop', 'bank'],
  outcome: 'commit' | 'abort' = 'commit',
): Extract<HistoryChange, { t: 'decide' }> => ({
  t: 'decide',
  txnId,
  outcome,
  reason: outcome === 'abort' ? 'bank voted NO' : '',
  participants,
  index,
  atMs,
  first: true,
});

/** Resolves once `cond` holds, checking every 5 ms; throws after timeoutMs. */
export async function waitUntil(cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * After a crash with `held` (decided first, unsettled) unwritten and `quick` (ACKed by bank at NOW_MS - 450, then
 * forgotten) on disk, and both decisions applied again: quick first, and its replayed decision merged into its record
 * on disk, the ACK its leader saw still there.
 */
export function expectReplayMerged(all: HistoryAnswer): void {
  expect(all.records.map((r) => r.txnId)).toEqual(['quick', 'held']);
  expect(all.records[0]?.rows.map((x) => x.kind)).toEqual(['ack']);
  expect(all.records[0]?.participants.find((p) => p.participantId === 'bank')).toMatchObject({
    acked: true,
    ackedAtMs: NOW_MS - 450,
  });
}
