// A node's history record of one decided transaction (docs/operations.md,
// "Transaction history"): what the applied log says of it — outcome, reason,
// decision index and time, participants, operator acts, heuristic outcomes,
// whether every participant acknowledged (the Forget) — and, where this node
// led, what it saw itself: each PREPARE, vote, DECISION sent and ACK, with
// repeated retries kept as one row with a count and the last error.
//
// A saga's record sits beside them, under the key `saga/<id>` (a "/" is in
// no transaction id, so the two never meet): its type, labels, state, each
// step's service, input, status and output, each call's failed attempts
// and last error, and its timeline, as the saga table applied them. It is
// kept after the saga ends and the table forgets it.
//
// Pure: the changes arrive as values (HistoryChange) with their times in
// them; the store (./store.ts) keeps the records on disk.

import type { DecisionOutcome } from '../domain/protocol.ts';

export interface HistoryParticipant {
  participantId: string;
  /**
   * 'yes' / 'no' as this node saw the vote, or as the log implies it (a COMMIT means every vote was YES, AC2); ''
   * unknown.
   */
  vote: '' | 'yes' | 'no';
  /** When this node saw its ACK (leader only); 0: not seen here. */
  ackedAtMs: number;
  /** True once the log says every participant acknowledged (the Forget), or this node saw its ACK. */
  acked: boolean;
  // This node's own sightings (the leader's), folded in as they arrive instead of a row each:
  // PREPARE sent, the vote received (YES or NO, no reason), the DECISION sent once (the
  // decision's outcome), the ACK received (at ackedAtMs). Absent or 0: not seen here, or kept
  // as a row. In memory and in the store's bytes only: a record read back has them as rows.
  preparedAtMs?: number;
  votedAtMs?: number;
  sentAtMs?: number;
  ackSeen?: boolean;
}

/**
 * An operator's act on the transaction: `verdict txn resolve`, a heuristic
 * outcome a participant reported (R4), or `verdict participant remove
 * --force` of a participant the decision was still owed to.
 */
export interface HistoryAct {
  kind: 'resolve' | 'heuristic' | 'removed';
  operator: string;
  reason: string;
  atMs: number;
  /** The outcome the act asked for, or what the participant did by hand; removed: '' (the decision stands). */
  outcome: DecisionOutcome | '';
  /**
   * resolve: 'decided' or 'confirmed'; heuristic: the XA kind (HEURCOM, HEURRB, HEURMIX, HEURHAZ); removed:
   * 'undelivered' (no longer delivered; still answered if it returns).
   */
  effect: string;
  /** heuristic: the participant that decided alone; removed: the participant removed; '' for a resolve. */
  participantId: string;
  /** heuristic: the participant's name of the transaction (a PostgreSQL gid). */
  gid: string;
  /** The log index of the act. */
  index: number;
}

/** What this node saw itself, as the leader's timeline shows it (src/console/timeline.ts kinds). */
export interface HistoryRow {
  /** The first time; for a repeated row, `lastAtMs` is the last. */
  atMs: number;
  lastAtMs: number;
  kind: string;
  participantId: string;
  /** A vote, an outcome; for a repeated row, the last error. */
  detail: string;
  /** How many times it happened (retries: DECISION sent, no ACK, status questions). */
  count: number;
}

export interface HistoryRecord {
  txnId: string;
  /** '' for a transaction known only by a heuristic report (no decision in the log when it came). */
  outcome: DecisionOutcome | '';
  reason: string;
  decisionIndex: number;
  /** The leader's clock when it proposed the decision (it rides in the log entry). */
  decidedAtMs: number;
  participants: HistoryParticipant[];
  /** The log index of the Forget (COMMIT: every participant acknowledged); 0 while not forgotten. */
  forgottenIndex: number;
  /** About when the Forget was applied: the latest leader time logged before it; 0 while not forgotten. */
  forgottenAtMs: number;
  acts: HistoryAct[];
  rows: HistoryRow[];
  /** Rows not kept past ROWS_MAX. */
  rowsDropped: number;
  // Folded sightings (as HistoryParticipant's): the transaction begun, its decision proposed and the outcome proposed.
  beganAtMs?: number;
  proposedAtMs?: number;
  proposed?: string;
  /**
   * A saga's record (key `saga/<id>`): then `decidedAtMs` is when it started, `outcome` is '' and the lists above are
   * empty.
   */
  saga?: HistorySaga;
}

/** One step of a saga: what it called and what it answered. */
export interface HistorySagaStep {
  step: number;
  service: string;
  name: string;
  /** The action's input, cut to SAGA_TEXT_CHARS_MAX. */
  input: string;
  /** pending, running, done, failed, compensating, compensated. */
  status: string;
  /** The action's output once DONE, cut to SAGA_TEXT_CHARS_MAX; '' before. */
  output: string;
}

/** The failed attempts of one call (a step's action or compensation). */
export interface HistorySagaCall {
  step: number;
  kind: 'action' | 'compensate';
  /** Failed attempts since the call became current or the operator's last retry (what the stuck flag counts). */
  attempts: number;
  /** Every failed attempt of the call, operator retries included. */
  attemptsTotal: number;
  /** The first failure (0 when none), the last, and its error. */
  firstFailureAtMs: number;
  lastFailureAtMs: number;
  lastError: string;
}

/** A line of a saga's timeline, as the saga table applied it. */
export interface HistorySagaEvent {
  atMs: number;
  index: number;
  what: string;
  /** -1: none. */
  step: number;
  kind: string;
  detail: string;
  operator: string;
}

export interface HistorySaga {
  sagaId: string;
  type: string;
  labels: Record<string, string>;
  /** Who started it (a client certificate's CN=, or the caller's address). */
  owner: string;
  /** running, compensating, finished, compensated. */
  state: string;
  startedAtMs: number;
  /** 0 while it runs. */
  endedAtMs: number;
  /** -1: no pivot. */
  pivot: number;
  steps: HistorySagaStep[];
  calls: HistorySagaCall[];
  timeline: HistorySagaEvent[];
  /** The log index of the last change recorded: a change below it (a log replayed) is skipped. */
  lastIndex: number;
}

/**
 * The key of a saga's record: a "/" is in no transaction id (src/domain/txn-id.ts), so it never names a transaction's.
 */
export const SAGA_KEY_PREFIX = 'saga/';
export const sagaKey = (sagaId: string): string => `${SAGA_KEY_PREFIX}${sagaId}`;
/** A saga's input, output and error texts are cut to this in its record. */
export const SAGA_TEXT_CHARS_MAX = 1_000;

/** A change to the history, from an applied entry (with its index) or from what this node saw (index 0). */
export type HistoryChange =
  | {
      t: 'decide';
      txnId: string;
      outcome: DecisionOutcome;
      reason: string;
      participants: readonly string[];
      index: number;
      atMs: number;
      first: boolean;
    }
  | { t: 'forget'; txnId: string; index: number; atMs: number }
  | { t: 'act'; txnId: string; act: HistoryAct }
  | { t: 'row'; txnId: string; atMs: number; kind: string; participantId: string; detail: string }
  // The saga as the saga table holds it after the entry at `index`; `txnId` is its record's key (sagaKey).
  | { t: 'saga'; txnId: string; saga: HistorySaga; index: number };

/** Whether a change makes a record of its own when none is kept (a row or a Forget of an unknown one does not). */
export function startsRecord(c: HistoryChange): boolean {
  return c.t === 'decide' || c.t === 'act' || c.t === 'saga';
}

/** Rows kept per record; a row repeated (retries) counts instead of adding. */
export const ROWS_MAX = 64;
/** Acts kept per record (the decision table keeps as many, src/commit/state.ts). */
export const ACTS_MAX = 64;
const DETAIL_CHARS_MAX = 200;
/** Row kinds that repeat while a participant is unreachable: one row each per participant, counted. */
const REPEATING = new Set(['decision-sent', 'no-ack', 'status']);

export function emptyRecord(txnId: string): HistoryRecord {
  return {
    txnId,
    outcome: '',
    reason: '',
    decisionIndex: 0,
    decidedAtMs: 0,
    participants: [],
    forgottenIndex: 0,
    forgottenAtMs: 0,
    acts: [],
    rows: [],
    rowsDropped: 0,
  };
}

/**
 * Applies a change to a record (null: none yet); returns the record, new or
 * changed in place. A change seen twice (a log replayed after a restart)
 * leaves the record as once.
 */
export function applyChange(rec: HistoryRecord | null, c: HistoryChange): HistoryRecord {
  const r = rec ?? emptyRecord(c.txnId);
  switch (c.t) {
    case 'decide': {
      if (r.outcome === '' || (c.first && r.decisionIndex === 0)) {
        r.outcome = c.outcome;
        r.reason = c.reason;
        r.decisionIndex = c.index;
        r.decidedAtMs = c.atMs;
      }
      for (const id of c.participants) participant(r, id);
      inDecisionOrder(r, c.participants);
      // AC2: a COMMIT was decided only on a YES from every participant.
      if (r.outcome === 'commit') for (const p of r.participants) p.vote = 'yes';
      return r;
    }
    case 'forget':
      r.forgottenIndex ||= c.index;
      r.forgottenAtMs ||= c.atMs;
      // R5: a COMMIT is forgotten only once every participant acknowledged it.
      if (r.outcome === 'commit') for (const p of r.participants) p.acked = true;
      return r;
    case 'act':
      if (
        !r.acts.some((a) => a.index === c.act.index && a.kind === c.act.kind && a.participantId === c.act.participantId)
      ) {
        r.acts.push(c.act);
        if (r.acts.length > ACTS_MAX) r.acts.splice(0, r.acts.length - ACTS_MAX);
      }
      return r;
    case 'row':
      addSighting(r, c.atMs, c.kind, c.participantId, c.detail);
      return r;
    case 'saga':
      applySaga(r, c.saga);
      return r;
  }
}

/**
 * The saga's newer state replaces the record's: a change below the last
 * index recorded (a log replayed) is skipped, and one at it (a batch entry
 * may change a saga twice) leaves the state it carries. Failed attempts are
 * also summed over operator retries (the table counts them afresh); the
 * same state twice adds none.
 */
function applySaga(r: HistoryRecord, next: HistorySaga): void {
  const prev = r.saga;
  if (prev !== undefined && next.lastIndex < prev.lastIndex) return;
  const calls = next.calls.map((c) => {
    const before = prev?.calls.find((p) => p.step === c.step && p.kind === c.kind);
    const added =
      before === undefined ? c.attempts : c.attempts >= before.attempts ? c.attempts - before.attempts : c.attempts;
    return { ...c, attemptsTotal: (before?.attemptsTotal ?? 0) + added };
  });
  r.saga = { ...next, calls };
  r.decidedAtMs = next.startedAtMs;
}

function participant(r: HistoryRecord, id: string): HistoryParticipant {
  let p = r.participants.find((x) => x.participantId === id);
  if (p === undefined) {
    p = { participantId: id, vote: '', ackedAtMs: 0, acked: false };
    r.participants.push(p);
  }
  return p;
}

/**
 * Sightings of a participant seen before the decision (PREPAREs, votes) come first in the decision's order, as a
 * follower's record has them.
 */
function inDecisionOrder(r: HistoryRecord, ids: readonly string[]): void {
  const ps = r.participants;
  let same = true;
  for (let i = 0; i < ids.length && same; i++) same = ps[i]?.participantId === ids[i];
  if (same) return;
  const rank = (p: HistoryParticipant): number => {
    const i = ids.indexOf(p.participantId);
    return i < 0 ? ids.length : i;
  };
  ps.sort((a, b) => rank(a) - rank(b));
}

const UPPER = { commit: 'COMMIT', abort: 'ABORT', '': '' } as const;

/**
 * What this node saw itself (a row of the leader's timeline), into the
 * record: an ordinary sighting — the transaction begun, its decision
 * proposed, and per participant the PREPARE sent, a YES or NO received, the
 * DECISION sent once, the ACK received — is folded into a time on the record
 * or its participant, with no row of its own; anything else (a vote with a
 * reason, an error, a retry, a status question) is a row, and a repeated
 * one counts on its first row. Every node's leader sees about ten
 * sightings per transaction: folded, they cost a few numbers, not ten rows.
 */
export function addSighting(
  r: HistoryRecord,
  atMs: number,
  kind: string,
  participantId: string,
  rawDetail: string,
): void {
  const detail = rawDetail.length > DETAIL_CHARS_MAX ? rawDetail.slice(0, DETAIL_CHARS_MAX) : rawDetail;
  if (participantId === '') {
    if (kind === 'begin' && detail === '' && !r.beganAtMs) r.beganAtMs = atMs;
    else if (kind === 'proposed' && !r.proposedAtMs) {
      r.proposedAtMs = atMs;
      r.proposed = detail;
    } else addRow(r, atMs, kind, '', detail);
    return;
  }
  const p = participant(r, participantId);
  switch (kind) {
    case 'prepare':
      if (detail === '' && !p.preparedAtMs) {
        p.preparedAtMs = atMs;
        return;
      }
      break;
    case 'vote':
      if ((detail === 'YES' || detail === 'NO') && !p.votedAtMs) {
        p.votedAtMs = atMs;
        p.vote = detail === 'YES' ? 'yes' : 'no';
        return;
      }
      break;
    case 'decision-sent':
      if (p.sentAtMs) {
        // Sent again (a retry): the first becomes the row the retries count on.
        pushRow(r, { atMs: p.sentAtMs, lastAtMs: p.sentAtMs, kind, participantId, detail: UPPER[r.outcome], count: 1 });
        p.sentAtMs = 0;
      } else if (
        r.decisionIndex > 0 &&
        detail === UPPER[r.outcome] &&
        !r.rows.some((x) => x.kind === kind && x.participantId === participantId)
      ) {
        p.sentAtMs = atMs;
        return;
      }
      break;
    case 'ack':
      if (detail === '' && !p.ackedAtMs) {
        p.acked = true;
        p.ackedAtMs = atMs;
        p.ackSeen = true;
        return;
      }
      break;
  }
  addRow(r, atMs, kind, participantId, detail);
}

function addRow(r: HistoryRecord, atMs: number, kind: string, participantId: string, detail: string): void {
  if (participantId !== '') {
    const p = participant(r, participantId);
    if (kind === 'vote') p.vote = /^YES/.test(detail) ? 'yes' : /^NO/.test(detail) ? 'no' : p.vote;
    if (kind === 'ack') {
      p.acked = true;
      p.ackedAtMs ||= atMs;
    }
  }
  if (REPEATING.has(kind)) {
    const same = r.rows.find((x) => x.kind === kind && x.participantId === participantId);
    if (same !== undefined) {
      same.count++;
      same.lastAtMs = atMs;
      if (detail !== '') same.detail = detail;
      return;
    }
  }
  pushRow(r, { atMs, lastAtMs: atMs, kind, participantId, detail, count: 1 });
}

function pushRow(r: HistoryRecord, row: HistoryRow): void {
  if (r.rows.length >= ROWS_MAX) r.rowsDropped++;
  else r.rows.push(row);
}

/** A row kind's place among rows of the same time: the order a transaction goes through them. */
const PHASE: Record<string, number> = {
  begin: 0,
  prepare: 1,
  vote: 2,
  proposed: 3,
  'decision-sent': 4,
  ack: 5,
  'no-ack': 5,
  status: 6,
};
const phaseOf = (kind: string): number => PHASE[kind] ?? 7;

/** Whether a record holds folded sightings (addSighting). */
export function hasSightings(r: HistoryRecord): boolean {
  return !!(
    r.beganAtMs ||
    r.proposedAtMs ||
    r.participants.some((p) => p.preparedAtMs || p.votedAtMs || p.sentAtMs || p.ackSeen)
  );
}

/**
 * The record as it is read: its folded sightings (addSighting) are rows
 * again, every row in time order (at one time, in the order a transaction
 * goes: begin, PREPARE, vote, proposed, DECISION, ACK), and the folded
 * fields gone. A record without any is returned as it is.
 */
export function withSightingRows(r: HistoryRecord): HistoryRecord {
  if (!hasSightings(r)) return r;
  const rows: HistoryRow[] = [];
  const row = (atMs: number, kind: string, participantId: string, detail: string): void => {
    rows.push({ atMs, lastAtMs: atMs, kind, participantId, detail, count: 1 });
  };
  if (r.beganAtMs) row(r.beganAtMs, 'begin', '', '');
  if (r.proposedAtMs) row(r.proposedAtMs, 'proposed', '', r.proposed ?? '');
  const participants: HistoryParticipant[] = [];
  for (const p of r.participants) {
    if (p.preparedAtMs) row(p.preparedAtMs, 'prepare', p.participantId, '');
    if (p.votedAtMs) row(p.votedAtMs, 'vote', p.participantId, p.vote === 'no' ? 'NO' : 'YES');
    if (p.sentAtMs) row(p.sentAtMs, 'decision-sent', p.participantId, UPPER[r.outcome]);
    if (p.ackSeen) row(p.ackedAtMs, 'ack', p.participantId, '');
    participants.push({ participantId: p.participantId, vote: p.vote, ackedAtMs: p.ackedAtMs, acked: p.acked });
  }
  rows.push(...r.rows);
  // Stable: at one time and phase, the order above (the participants' order), then the rows kept as rows.
  rows.sort((a, b) => a.atMs - b.atMs || phaseOf(a.kind) - phaseOf(b.kind));
  const { beganAtMs: _b, proposedAtMs: _p, proposed: _d, ...rest } = r;
  return { ...rest, participants, rows };
}

/** Why a value read back from the store is not a record, or null (the store's own bytes, checked as any read). */
export function recordProblem(v: unknown): string | null {
  if (v === null || typeof v !== 'object') return 'not an object';
  const r = v as Partial<HistoryRecord>;
  if (typeof r.txnId !== 'string' || r.txnId === '') return 'no transaction id';
  if (r.outcome !== '' && r.outcome !== 'commit' && r.outcome !== 'abort')
    return `outcome ${JSON.stringify(r.outcome)}`;
  for (const k of ['decisionIndex', 'decidedAtMs', 'forgottenIndex', 'forgottenAtMs', 'rowsDropped'] as const)
    if (typeof r[k] !== 'number') return `${k} is not a number`;
  for (const k of ['participants', 'acts', 'rows'] as const) if (!Array.isArray(r[k])) return `${k} is not a list`;
  if (r.saga !== undefined) {
    const g = r.saga as Partial<HistorySaga> | null;
    if (g === null || typeof g !== 'object' || typeof g.sagaId !== 'string' || r.txnId !== sagaKey(g.sagaId))
      return 'a saga record without its saga id';
    for (const k of ['steps', 'calls', 'timeline'] as const) if (!Array.isArray(g[k])) return `saga ${k} is not a list`;
  }
  return null;
}

export interface HistoryQuery {
  txnId?: string;
  /** Decided at or after; 0: no lower bound. */
  sinceAtMs?: number;
  /** Decided before; 0: no upper bound. */
  untilAtMs?: number;
  participantId?: string;
  outcome?: 'commit' | 'abort';
  /** Transactions only, or sagas only; absent: both. */
  kind?: HistoryKind;
  /** Newest first, at most this many (1..HISTORY_LIMIT_MAX). */
  limit?: number;
}

export type HistoryKind = 'txn' | 'saga';

/** Whether a record is a transaction's or a saga's. */
export function kindOf(r: Pick<HistoryRecord, 'saga'>): HistoryKind {
  return r.saga === undefined ? 'txn' : 'saga';
}

export interface LogRange {
  firstIndex: number;
  lastIndex: number;
}

export interface HistoryAnswer {
  records: HistoryRecord[];
  /** More records matched than `limit`. */
  truncated: boolean;
  /** Log ranges whose transactions this node's history does not hold (it installed a snapshot covering them). */
  lacks: LogRange[];
  /** The highest log index whose changes are on disk. */
  appliedIndex: number;
  /** The oldest record's time; 0 when none. */
  oldestAtMs: number;
  bytes: number;
}

export const HISTORY_RETENTION_MS_DEFAULT = 7 * 24 * 3_600_000;
export const HISTORY_BYTES_MAX_DEFAULT = 1024 * 1024 * 1024;
export const HISTORY_LIMIT_DEFAULT = 100;
export const HISTORY_LIMIT_MAX = 1_000;
