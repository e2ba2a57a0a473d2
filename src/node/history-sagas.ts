// Sagas into the node's history (src/history/record.ts, "a saga's record"):
// each applied saga.* entry that changed a saga gives the saga as the table
// then holds it, in the history's own words, so the record outlives the
// saga table's eviction (SAGAS_DONE_MAX) and a restart. Watching only, like
// ./history-feed.ts: nothing here changes the saga table or the engine.

import { SAGA_TEXT_CHARS_MAX, sagaKey, type HistoryChange, type HistorySaga } from '../history/record.ts';
import { isSagaResult, SagaTable, timelineRow, type SagaRecord } from '../saga/state.ts';
import { StartupError } from './startup-error.ts';

/**
 * A test-only bound on the ended sagas the saga table keeps, so that a test
 * sees a saga collected from the table and read from the history without
 * running ten thousand. The table's bound is part of the replicated state
 * machine: every node of a cluster must run with the same value (a test
 * gives it to all), and production leaves it unset.
 */
export const SAGAS_KEPT_ENV = 'VERDICT_TEST_SAGAS_KEPT';

/** The saga table for this node: the usual one, or with the test's bound (SAGAS_KEPT_ENV). */
export function sagaTableFromEnv(env: NodeJS.ProcessEnv = process.env): SagaTable {
  const raw = env[SAGAS_KEPT_ENV];
  if (raw === undefined || raw === '') return new SagaTable();
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new StartupError(
      `${SAGAS_KEPT_ENV}=${JSON.stringify(raw)} is not a whole number from 1 (for tests; unset it in production)`,
    );
  return new SagaTable(n);
}

/** The history's change for an applied result, or null when it is no saga's or changed nothing. */
export function sagaChange(
  result: { t: string; product?: string },
  index: number,
  shiftMs: number,
): HistoryChange | null {
  if (!isSagaResult(result) || !result.changed || result.saga === null) return null;
  return { t: 'saga', txnId: sagaKey(result.saga.id), saga: historySaga(result.saga, index, shiftMs), index };
}

/** The sagas a snapshot holds, as changes at the snapshot's index (their entries never pass through apply). */
export function restoredSagas(table: SagaTable, index: number, shiftMs: number): HistoryChange[] {
  return [...table.sagas.values()].map((s) => ({
    t: 'saga',
    txnId: sagaKey(s.id),
    saga: historySaga(s, index, shiftMs),
    index,
  }));
}

const cut = (text: string): string =>
  text.length > SAGA_TEXT_CHARS_MAX ? `${text.slice(0, SAGA_TEXT_CHARS_MAX)}… (${text.length} characters)` : text;
const shifted = (atMs: number, shiftMs: number): number => (atMs > 0 ? atMs + shiftMs : 0);

/** A copy of the saga in the history's words (the table's record changes in place after this). */
export function historySaga(s: SagaRecord, index: number, shiftMs: number): HistorySaga {
  return {
    sagaId: s.id,
    type: s.type ?? '',
    labels: { ...(s.labels ?? {}) },
    owner: s.owner,
    state: s.state,
    startedAtMs: shifted(s.startedAtMs, shiftMs),
    endedAtMs: shifted(s.endedAtMs ?? 0, shiftMs),
    pivot: s.pivot ?? -1,
    steps: s.steps.map((d, k) => ({
      step: k,
      service: d.service,
      name: d.name,
      input: cut(d.input),
      status: s.status[k] ?? 'pending',
      output: cut(s.outputs[k] ?? ''),
    })),
    calls: (s.tries ?? []).map((t) => ({
      step: t.step,
      kind: t.kind,
      attempts: t.attempts,
      attemptsTotal: t.attempts,
      firstFailureAtMs: shifted(t.firstFailureAtMs ?? 0, shiftMs),
      lastFailureAtMs: shifted(t.lastFailureAtMs, shiftMs),
      lastError: t.lastError,
    })),
    timeline: s.timeline.map((e) => ({ ...timelineRow(e), atMs: shifted(e.atMs, shiftMs) })),
    lastIndex: index,
  };
}
