// Classic two-phase commit's coordinator, as a pure state machine: one
// process, one local log it syncs before a COMMIT leaves it, no replication.
// This is what Verdict is with a single acceptor (Gray & Lamport), written
// out on its own so the simulator can put it through the faults Verdict
// survives and show where it blocks.
//
//   begin ──PREPARE──▶ collecting ──every YES──▶ logging ──COMMIT synced──▶ committed ──ACKs──▶ done
//                          │ a NO, or the timeout
//                          ▼
//                       aborted (presumed abort: no log write, ABORT sent once)
//
// PURE: no timers, network or disk. Every input returns the actions the
// caller must carry out; time comes in as an argument. The caller syncs the
// COMMIT record and reports it with onCommitLogged() before any DECISION is
// sent, so a COMMIT is never delivered that a crash could make the
// coordinator forget.
//
// Presumed abort is the whole recovery story: after a restart the log's
// COMMIT records are the committed transactions (their DECISIONs are
// delivered again), and every other transaction is aborted. A participant
// that voted YES asks the coordinator and waits, however long, which is where
// the blocking lives: while the coordinator is down nobody can answer.

import type { DecisionOutcome } from '../../../src/domain/protocol.ts';
import type { Outcome } from '../../../src/participant/types.ts';

export type TwoPcAction =
  | { t: 'prepare'; txnId: string; to: string; participants: string[]; timeoutMs: number }
  /** Write the COMMIT record and sync it; report back with onCommitLogged(). */
  | { t: 'log-commit'; txnId: string; participants: string[] }
  /** The outcome is decided: a COMMIT record is durable, or the coordinator chose ABORT. */
  | { t: 'decided'; txnId: string; outcome: DecisionOutcome; participants: string[]; reason: string }
  | { t: 'decision'; txnId: string; to: string; outcome: DecisionOutcome };

export interface TwoPcConfig {
  /** How often an unanswered PREPARE or an unacknowledged COMMIT is sent again. */
  retryMs: number;
}

interface Collecting {
  phase: 'collecting' | 'logging';
  participants: string[];
  timeoutMs: number;
  votes: Map<string, 'yes' | 'no'>;
  /** Participants whose PREPARE went unanswered; sent again on the next tick. */
  resend: Set<string>;
  deadlineAtMs: number;
}

interface Committed {
  participants: string[];
  acked: Set<string>;
  redeliverAtMs: number;
}

/** Transactions the coordinator holds in memory at once; a bound like every map in Verdict. */
export const ACTIVE_MAX = 1_000;

export class TwoPcCoordinator {
  /** Invariant: a transaction is in at most one of active, committed, aborted. */
  private readonly active = new Map<string, Collecting>();
  /** Every COMMIT in the log (kept for the whole run: the simulated runs are short). */
  private readonly committed = new Map<string, Committed>();
  private readonly aborted = new Set<string>();

  /** Recovery: the log's COMMIT records, in log order. Their DECISIONs go out again on the first tick. */
  constructor(
    private readonly cfg: TwoPcConfig,
    logged: readonly { txnId: string; participants: string[] }[],
  ) {
    for (const r of logged)
      this.committed.set(r.txnId, { participants: r.participants, acked: new Set(), redeliverAtMs: 0 });
  }

  begin(txnId: string, participants: string[], timeoutMs: number, nowMs: number): TwoPcAction[] {
    if (this.active.has(txnId) || this.committed.has(txnId) || this.aborted.has(txnId)) return [];
    if (this.active.size >= ACTIVE_MAX)
      throw new Error(`2pc coordinator: more than ${ACTIVE_MAX} transactions at once`);
    this.active.set(txnId, {
      phase: 'collecting',
      participants,
      timeoutMs,
      votes: new Map(),
      resend: new Set(),
      deadlineAtMs: nowMs + timeoutMs,
    });
    return participants.map((to) => ({ t: 'prepare', txnId, to, participants, timeoutMs }));
  }

  /** A VOTE, or null when the PREPARE went unanswered (it is sent again on a tick). */
  onVote(txnId: string, from: string, vote: 'yes' | 'no' | null): TwoPcAction[] {
    const a = this.active.get(txnId);
    if (!a || a.phase !== 'collecting') return [];
    if (vote === null) {
      if (!a.votes.has(from)) a.resend.add(from);
      return [];
    }
    a.votes.set(from, vote);
    if (vote === 'no') return this.abort(txnId, a, `${from} voted NO`);
    if (!a.participants.every((p) => a.votes.get(p) === 'yes')) return [];
    a.phase = 'logging';
    return [{ t: 'log-commit', txnId, participants: a.participants }];
  }

  onCommitLogged(txnId: string, nowMs: number): TwoPcAction[] {
    const a = this.active.get(txnId);
    if (!a || a.phase !== 'logging')
      throw new Error(`2pc coordinator: COMMIT of ${txnId} logged, but it was not being logged`);
    this.active.delete(txnId);
    this.committed.set(txnId, {
      participants: a.participants,
      acked: new Set(),
      redeliverAtMs: nowMs + this.cfg.retryMs,
    });
    return [
      {
        t: 'decided',
        txnId,
        outcome: 'commit',
        participants: a.participants,
        reason: 'every participant voted YES; COMMIT record synced',
      },
      ...a.participants.map((to): TwoPcAction => ({ t: 'decision', txnId, to, outcome: 'commit' })),
    ];
  }

  /** The answer to a COMMIT DECISION: acknowledged, or not (sent again on a tick). */
  onAck(txnId: string, from: string, ok: boolean): void {
    if (ok) this.committed.get(txnId)?.acked.add(from);
  }

  tick(nowMs: number): TwoPcAction[] {
    const out: TwoPcAction[] = [];
    for (const [txnId, a] of this.active) {
      if (a.phase !== 'collecting') continue;
      if (nowMs >= a.deadlineAtMs) {
        out.push(
          ...this.abort(
            txnId,
            a,
            `no vote from ${a.participants.filter((p) => !a.votes.has(p)).join(', ')} within ${a.timeoutMs} ms`,
          ),
        );
        continue;
      }
      for (const to of a.resend)
        out.push({ t: 'prepare', txnId, to, participants: a.participants, timeoutMs: a.timeoutMs });
      a.resend.clear();
    }
    for (const [txnId, c] of this.committed) {
      if (c.acked.size === c.participants.length || nowMs < c.redeliverAtMs) continue;
      c.redeliverAtMs = nowMs + this.cfg.retryMs;
      for (const to of c.participants) if (!c.acked.has(to)) out.push({ t: 'decision', txnId, to, outcome: 'commit' });
    }
    return out;
  }

  /**
   * What a participant asking about T is told. Presumed abort: a transaction the log does not commit and nobody is
   * working on is aborted.
   */
  outcome(txnId: string): Outcome | 'IN_PROGRESS' {
    if (this.committed.has(txnId)) return 'COMMITTED';
    if (this.active.has(txnId)) return 'IN_PROGRESS';
    return 'ABORTED';
  }

  private abort(txnId: string, a: Collecting, reason: string): TwoPcAction[] {
    this.active.delete(txnId);
    this.aborted.add(txnId);
    return [
      { t: 'decided', txnId, outcome: 'abort', participants: a.participants, reason },
      // Best effort, once: a participant that misses it asks, and is told ABORT.
      ...a.participants.map((to): TwoPcAction => ({ t: 'decision', txnId, to, outcome: 'abort' })),
    ];
  }
}
