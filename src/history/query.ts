// A history search as a person writes it — `--since 24h --until
// 2026-12-04T12:00Z --participant shop --outcome committed --limit 50`, or
// the console's `?since=24h&...` — checked and turned into a HistoryQuery,
// with a reason for every refusal. Pure: the time comes in as `nowMs`.

import { ID } from '../domain/id.ts';
import { HISTORY_LIMIT_MAX, type HistoryQuery } from './record.ts';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };
const RELATIVE = /^(\d{1,9})(ms|s|m|h|d|w)$/;
/** An ISO 8601 date or date-time, as Date.parse reads it (a date alone is midnight UTC). */
const ISO = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

export class HistoryQueryError extends Error {}

/** `24h` (that long ago), `2026-12-04T12:00:00Z` or `now`: Unix ms. */
export function parseTimeArg(name: string, raw: string, nowMs: number): number {
  const v = raw.trim();
  if (v === 'now') return nowMs;
  const rel = RELATIVE.exec(v);
  if (rel) return nowMs - Number(rel[1]) * (UNIT_MS[rel[2]] ?? 0);
  if (ISO.test(v)) {
    const ms = Date.parse(v);
    if (Number.isFinite(ms) && ms >= 0) return ms;
  }
  throw new HistoryQueryError(
    `${name} "${raw}" is not a time: give a duration ago (30m, 24h, 7d; units ms s m h d w) or an ISO time (2026-12-04T12:00:00Z)`,
  );
}

export interface HistorySearchText {
  since?: string;
  until?: string;
  participant?: string;
  outcome?: string;
  limit?: string;
}

/** The search's parts, checked; undefined parts are not filters. */
export function parseHistorySearch(
  s: HistorySearchText,
  nowMs: number,
  names: Record<keyof HistorySearchText, string>,
): HistoryQuery {
  const q: HistoryQuery = {};
  if (s.since !== undefined) q.sinceAtMs = parseTimeArg(names.since, s.since, nowMs);
  if (s.until !== undefined) q.untilAtMs = parseTimeArg(names.until, s.until, nowMs);
  if (q.sinceAtMs !== undefined && q.untilAtMs !== undefined && q.sinceAtMs >= q.untilAtMs)
    throw new HistoryQueryError(
      `${names.since} (${new Date(q.sinceAtMs).toISOString()}) must be before ${names.until} (${new Date(q.untilAtMs).toISOString()})`,
    );
  if (s.participant !== undefined) {
    if (!ID.test(s.participant))
      throw new HistoryQueryError(
        `${names.participant} "${s.participant}" is not a participant id (letters, digits, ".", "_" or "-", at most 64)`,
      );
    q.participantId = s.participant;
  }
  if (s.outcome !== undefined) {
    const o = s.outcome.trim().toLowerCase();
    if (o === 'commit' || o === 'committed') q.outcome = 'commit';
    else if (o === 'abort' || o === 'aborted') q.outcome = 'abort';
    else throw new HistoryQueryError(`${names.outcome} "${s.outcome}" is not an outcome: give committed or aborted`);
  }
  if (s.limit !== undefined) {
    const n = /^\d{1,7}$/.test(s.limit.trim()) ? Number(s.limit.trim()) : Number.NaN;
    if (!(n >= 1 && n <= HISTORY_LIMIT_MAX))
      throw new HistoryQueryError(`${names.limit} "${s.limit}" must be a whole number from 1 to ${HISTORY_LIMIT_MAX}`);
    q.limit = n;
  }
  return q;
}
