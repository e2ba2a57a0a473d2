// Read views of the coordinator engine: `verdict txn list/show`, the
// console, the metrics. Pure functions of the leader's state (its in-memory
// transactions, the decision table, when each participant was last heard
// from) and the time of the read: nothing here changes anything.

import { outcomeOfDecision } from '../domain/protocol.ts';
import type { DecisionTable, Staging } from './state.ts';
import {
  isUndecidedPhase,
  txnAnswer,
  type ListFilter,
  type Member,
  type ParticipantActivity,
  type Phase,
  type Removal,
  type Txn,
  type TxnView,
} from './engine-types.ts';

/** What a read sees: the engine's state at one instant. */
export interface ViewState {
  txns: ReadonlyMap<string, Txn>;
  table: DecisionTable;
  lastSeenAtMs: ReadonlyMap<string, number>;
  nowMs: number;
  /** An undecided transaction older than this is listed as in doubt. */
  inDoubtAfterMs: number;
  /** A staged T under recovery: its participants that answered the status question UNIMPLEMENTED, by method. */
  recoveryGaps?: (txnId: string) => ReadonlyMap<string, string> | undefined;
}

/**
 * How many of the leader's transactions are in each phase: begun,
 * preparing and deciding are undecided; delivering ones (COMMIT or ABORT)
 * wait for ACKs (R5).
 */
export function phaseCounts(txns: ReadonlyMap<string, Txn>): Record<Phase, number> {
  const n: Record<Phase, number> = { begun: 0, preparing: 0, deciding: 0, delivering: 0 };
  for (const t of txns.values()) n[t.phase]++;
  return n;
}

/**
 * The transactions this leader knows, by filter: 'in-flight' those it is
 * working on (undecided, or decided and not acknowledged by all; staged
 * ones it recovers, undecided, included), 'in-doubt' the undecided ones
 * older than inDoubtAfterMs, 'unacked' the
 * decided ones some participant has not acknowledged, 'heuristic' every
 * transaction with a heuristic record or an operator's resolution (kept
 * after Forget), 'all' the in-flight ones and the decisions still in the
 * table.
 */
export function listTxns(s: ViewState, filter: ListFilter, limit: number): TxnView[] {
  const out: TxnView[] = [];
  const push = (v: TxnView | null): boolean => {
    if (v && out.length < limit) out.push(v);
    return out.length < limit;
  };
  if (filter === 'heuristic') {
    const ids = new Set([...s.table.heuristics.keys(), ...s.table.resolutions.keys()]);
    for (const id of ids) if (!push(viewTxn(s, id))) break;
    return out;
  }
  for (const t of s.txns.values()) {
    if (filter === 'in-doubt' && !(isUndecidedPhase(t.phase) && s.nowMs - t.startedAtMs >= s.inDoubtAfterMs)) continue;
    if (filter === 'unacked' && !(t.phase === 'delivering' && [...t.members.values()].some((m) => !m.acked))) continue;
    if (!push(viewOfTxn(s, t))) return out;
  }
  // Staged and undecided with no transaction of this leader's: a STAGING record whose stager is gone, being recovered.
  if (filter !== 'unacked') {
    for (const st of s.table.staged.values()) {
      if (s.txns.has(st.txnId)) continue;
      if (filter === 'in-doubt' && s.nowMs - st.atMs < s.inDoubtAfterMs) continue;
      if (!push(viewOfStaging(s, st))) return out;
    }
  }
  if (filter !== 'all') return out;
  for (const d of s.table.decisions.values()) {
    if (s.txns.has(d.txnId)) continue;
    if (!push(viewTxn(s, d.txnId))) break;
  }
  return out;
}

/** One transaction as this leader knows it, or null if it knows nothing of it. */
export function viewTxn(s: ViewState, txnId: string): TxnView | null {
  const t = s.txns.get(txnId);
  if (t) return viewOfTxn(s, t);
  const st = s.table.staged.get(txnId);
  if (st) return viewOfStaging(s, st);
  const d = s.table.lookup(txnId);
  const heuristics = s.table.heuristics.get(txnId) ?? [];
  const resolutions = s.table.resolutions.get(txnId) ?? [];
  if (!d && heuristics.length === 0 && resolutions.length === 0) return null;
  // A forgotten decision (a tombstone) has no decision time: its age is
  // that of the oldest heuristic report or resolution on record instead.
  const sinceAtMs =
    d && d.decidedAtMs > 0
      ? d.decidedAtMs
      : Math.min(...heuristics.map((h) => h.atMs), ...resolutions.map((r) => r.atMs), s.nowMs);
  return {
    txnId,
    phase: 'decided',
    outcome: d ? outcomeOfDecision(d.outcome) : 'UNKNOWN',
    reason: d?.reason ?? '',
    ageMs: Math.max(0, s.nowMs - sinceAtMs),
    decisionIndex: d?.index ?? 0,
    participants: (d?.participants ?? []).map((id) => ({
      id,
      vote: null,
      acked: false,
      retries: 0,
      unimplemented: '',
    })),
    heuristics: [...heuristics],
    resolutions: [...resolutions],
    removals: removalsOf(s, txnId),
  };
}

/**
 * A staged transaction this leader recovers (docs/protocol.md, parallel
 * commit): undecided, so 'deciding', in progress; its participants are the
 * STAGING record's, their votes not known here (recovery asks them).
 */
function viewOfStaging(s: ViewState, st: Staging): TxnView {
  return {
    txnId: st.txnId,
    phase: 'deciding',
    outcome: 'IN_PROGRESS',
    reason: 'staged by an earlier leader; recovering its outcome from the participants',
    ageMs: Math.max(0, s.nowMs - st.atMs),
    decisionIndex: 0,
    participants: st.participants.map((id) => ({
      id,
      vote: null,
      acked: false,
      retries: 0,
      unimplemented: s.recoveryGaps?.(st.txnId)?.get(id) ?? '',
    })),
    heuristics: [...(s.table.heuristics.get(st.txnId) ?? [])],
    resolutions: [...(s.table.resolutions.get(st.txnId) ?? [])],
    removals: removalsOf(s, st.txnId),
  };
}

function viewOfTxn(s: ViewState, t: Txn): TxnView {
  return {
    txnId: t.id,
    phase: t.phase,
    outcome: txnAnswer(t).outcome,
    reason: t.reason,
    ageMs: s.nowMs - t.startedAtMs,
    decisionIndex: t.decisionIndex,
    participants: [...t.members.values()].map((m) => ({
      id: m.record.id,
      vote: m.vote,
      acked: m.acked,
      retries: m.retries,
      unimplemented: m.unimplemented ?? '',
    })),
    heuristics: [...(s.table.heuristics.get(t.id) ?? [])],
    resolutions: [...(s.table.resolutions.get(t.id) ?? [])],
    removals: removalsOf(s, t.id),
  };
}

/**
 * The participants removed with --force that the decision of `txnId` is still owed to, with who removed each, when and
 * why.
 */
function removalsOf(s: ViewState, txnId: string): Removal[] {
  return s.table.owedToRemoved(txnId).flatMap((id) => {
    const r = s.table.removed.get(id);
    return r === undefined
      ? []
      : [{ participantId: id, operator: r.operator, reason: r.reason, atMs: r.atMs, index: r.index }];
  });
}

/**
 * Whether member `m` of `t` voted YES and waits for the decision or has not acknowledged it: prepared there (a TCC
 * participant: its reserve is held).
 */
function holds(t: Txn, m: Member): boolean {
  return t.phase === 'delivering' ? !m.acked && m.vote !== 'no' : m.vote === 'yes';
}

/** What one participant holds prepared for one transaction, as this leader knows it (the console's TCC reserves). */
export interface HeldView {
  participantId: string;
  txnId: string;
  phase: Phase;
  outcome: TxnView['outcome'];
  /** Since the transaction began (the leader's clock). */
  ageMs: number;
  /** Undecided: when the leader aborts it if still undecided; null once decided. */
  deadlineAtMs: number | null;
  /** What the client enlisted it with, sent in PREPARE (for a TCC participant: what its Try reserved). */
  payload: Uint8Array;
  /** DECISION deliveries that failed so far. */
  retries: number;
  /**
   * When the reserve's TTL runs out: its vote's arrival plus the TTL the vote carried, on the leader's clock.
   * null: unknown.
   */
  reserveExpiresAtMs: number | null;
}

/** What the participants `ids` hold prepared for this leader's transactions, oldest first, at most `limit`. */
export function heldBy(s: Pick<ViewState, 'txns' | 'nowMs'>, ids: ReadonlySet<string>, limit: number): HeldView[] {
  const out: HeldView[] = [];
  for (const t of s.txns.values()) {
    for (const m of t.members.values()) {
      if (!ids.has(m.record.id) || !holds(t, m)) continue;
      if (out.length >= limit) return out;
      out.push({
        participantId: m.record.id,
        txnId: t.id,
        phase: t.phase,
        outcome: txnAnswer(t).outcome,
        ageMs: Math.max(0, s.nowMs - t.startedAtMs),
        deadlineAtMs: isUndecidedPhase(t.phase) && t.deadlineAtMs > 0 ? t.deadlineAtMs : null,
        payload: m.payload,
        retries: m.retries,
        reserveExpiresAtMs: m.reserveExpiresAtMs ?? null,
      });
    }
  }
  return out;
}

/**
 * Every registered participant as this leader sees it: last heard from, and its YES votes still waiting for a decision
 * or an ACK.
 */
export function participantActivity(s: Pick<ViewState, 'txns' | 'table' | 'lastSeenAtMs'>): ParticipantActivity[] {
  const inDoubt = new Map<string, number>();
  for (const t of s.txns.values()) {
    for (const m of t.members.values()) {
      // Prepared there and not yet told (or not yet acknowledged) the outcome.
      if (holds(t, m)) inDoubt.set(m.record.id, (inDoubt.get(m.record.id) ?? 0) + 1);
    }
  }
  return [...s.table.participants.keys()].map((id) => ({
    id,
    lastSeenAtMs: s.lastSeenAtMs.get(id) ?? 0,
    inDoubt: inDoubt.get(id) ?? 0,
  }));
}
