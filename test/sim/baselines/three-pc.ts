// Three-phase commit with timeouts (Skeen 1981), as two pure state machines:
// the coordinator and a participant. The extra phase is there so that a
// participant never has to wait for a coordinator that went away: it decides
// alone, by timeout, with the textbook rules
//
//   uncertain     (voted YES, no PreCommit yet) ── timeout ──▶ ABORT
//   precommitted  (got PreCommit, no DoCommit)  ── timeout ──▶ COMMIT
//
// and the coordinator, once every participant voted YES, sends PreCommit,
// then DoCommit when every ACK is in or its ACK timeout passes (a participant
// that does not ACK is taken for crashed; when it comes back it commits).
//
//   coordinator:  voting ──all YES──▶ precommitting ──ACKs or timeout──▶ committed
//                   │ a NO or no vote in time
//                   ▼
//                 aborted
//
// That is non-blocking when processes crash and messages arrive. A partition
// during the PreCommit round breaks it: a participant cut off before its
// PreCommit arrives times out uncertain and aborts, while the other side
// commits — AC1 lost. The simulator finds exactly that.
//
// PURE: time comes in as an argument; every input returns the actions the
// caller carries out.

import type { DecisionOutcome } from '../../../src/domain/protocol.ts';
import type { Outcome } from '../../../src/participant/types.ts';

export interface ThreePcConfig {
  /** The coordinator waits this long for every ACK of PreCommit, then commits. */
  ackTimeoutMs: number;
  /** A participant uncertain this long after its YES aborts. */
  uncertainTimeoutMs: number;
  /** A participant precommitted this long without DoCommit commits. */
  precommitTimeoutMs: number;
}

// ---- coordinator ------------------------------------------------------------

export type CoordinatorAction =
  | { t: 'can-commit'; txnId: string; to: string; timeoutMs: number }
  | { t: 'pre-commit'; txnId: string; to: string }
  | { t: 'do-commit'; txnId: string; to: string }
  | { t: 'abort'; txnId: string; to: string }
  | { t: 'decided'; txnId: string; outcome: DecisionOutcome; participants: string[]; reason: string };

interface CoordTxn {
  phase: 'voting' | 'precommitting' | 'committed' | 'aborted';
  participants: string[];
  votes: Map<string, 'yes' | 'no'>;
  acks: Set<string>;
  deadlineAtMs: number;
  timeoutMs: number;
}

export class ThreePcCoordinator {
  private readonly txns = new Map<string, CoordTxn>();

  constructor(private readonly cfg: ThreePcConfig) {}

  begin(txnId: string, participants: string[], timeoutMs: number, nowMs: number): CoordinatorAction[] {
    if (this.txns.has(txnId)) return [];
    this.txns.set(txnId, {
      phase: 'voting',
      participants,
      votes: new Map(),
      acks: new Set(),
      deadlineAtMs: nowMs + timeoutMs,
      timeoutMs,
    });
    return participants.map((to) => ({ t: 'can-commit', txnId, to, timeoutMs }));
  }

  /** A vote, or null when the CanCommit went unanswered: 3PC's coordinator aborts on a missing vote. */
  onVote(txnId: string, from: string, vote: 'yes' | 'no' | null, nowMs: number): CoordinatorAction[] {
    const x = this.txns.get(txnId);
    if (!x || x.phase !== 'voting') return [];
    if (vote !== 'yes') return this.abort(txnId, x, vote === 'no' ? `${from} voted NO` : `no vote from ${from}`);
    x.votes.set(from, 'yes');
    if (!x.participants.every((p) => x.votes.get(p) === 'yes')) return [];
    x.phase = 'precommitting';
    x.deadlineAtMs = nowMs + this.cfg.ackTimeoutMs;
    return x.participants.map((to) => ({ t: 'pre-commit', txnId, to }));
  }

  onPreCommitAck(txnId: string, from: string): CoordinatorAction[] {
    const x = this.txns.get(txnId);
    if (!x || x.phase !== 'precommitting') return [];
    x.acks.add(from);
    if (x.acks.size < x.participants.length) return [];
    return this.commit(txnId, x, 'every participant acknowledged PreCommit');
  }

  tick(nowMs: number): CoordinatorAction[] {
    const out: CoordinatorAction[] = [];
    for (const [txnId, x] of this.txns) {
      if (nowMs < x.deadlineAtMs) continue;
      if (x.phase === 'voting')
        out.push(
          ...this.abort(
            txnId,
            x,
            `no vote from ${x.participants.filter((p) => !x.votes.has(p)).join(', ')} within ${x.timeoutMs} ms`,
          ),
        );
      else if (x.phase === 'precommitting') {
        const missing = x.participants.filter((p) => !x.acks.has(p));
        out.push(
          ...this.commit(
            txnId,
            x,
            `ACK timeout: no ACK from ${missing.join(', ')} within ${this.cfg.ackTimeoutMs} ms, taken for crashed`,
          ),
        );
      }
    }
    return out;
  }

  private commit(txnId: string, x: CoordTxn, reason: string): CoordinatorAction[] {
    x.phase = 'committed';
    return [
      { t: 'decided', txnId, outcome: 'commit', participants: x.participants, reason },
      ...x.participants.map((to): CoordinatorAction => ({ t: 'do-commit', txnId, to })),
    ];
  }

  private abort(txnId: string, x: CoordTxn, reason: string): CoordinatorAction[] {
    x.phase = 'aborted';
    return [
      { t: 'decided', txnId, outcome: 'abort', participants: x.participants, reason },
      ...x.participants.map((to): CoordinatorAction => ({ t: 'abort', txnId, to })),
    ];
  }
}

// ---- participant --------------------------------------------------------------

export type ParticipantState = 'uncertain' | 'precommitted' | Outcome;

/** A decision the participant took: apply it to the data. `why` says which rule took it. */
export interface ParticipantDecision {
  txnId: string;
  outcome: Outcome;
  why: string;
}

interface PartTxn {
  state: ParticipantState;
  /** When the current state's timeout fires (uncertain and precommitted only). */
  deadlineAtMs: number;
}

export class ThreePcParticipant {
  private readonly txns = new Map<string, PartTxn>();

  constructor(
    readonly id: string,
    private readonly cfg: ThreePcConfig,
  ) {}

  stateOf(txnId: string): ParticipantState | undefined {
    return this.txns.get(txnId)?.state;
  }

  /** Transactions voted YES on and not decided. */
  undecided(): string[] {
    return [...this.txns].filter(([, x]) => x.state === 'uncertain' || x.state === 'precommitted').map(([id]) => id);
  }

  /**
   * The vote on CanCommit, once the resource said whether it can (and, for a
   * YES, the prepared state is durable). A repeated CanCommit gets the same vote.
   */
  vote(txnId: string, resourceYes: boolean, nowMs: number): 'yes' | 'no' {
    const x = this.txns.get(txnId);
    if (x) return x.state === 'ABORTED' ? 'no' : 'yes';
    if (!resourceYes) {
      this.txns.set(txnId, { state: 'ABORTED', deadlineAtMs: Infinity });
      return 'no';
    }
    this.txns.set(txnId, { state: 'uncertain', deadlineAtMs: nowMs + this.cfg.uncertainTimeoutMs });
    return 'yes';
  }

  /** PreCommit: true for an ACK. An aborted participant does not ACK. */
  preCommit(txnId: string, nowMs: number): boolean {
    const x = this.txns.get(txnId);
    if (!x || x.state === 'ABORTED') return false;
    if (x.state === 'uncertain') {
      x.state = 'precommitted';
      x.deadlineAtMs = nowMs + this.cfg.precommitTimeoutMs;
    }
    return true;
  }

  /** DoCommit or Abort from the coordinator. A participant that already decided keeps its decision. */
  onDecision(txnId: string, outcome: Outcome): ParticipantDecision | null {
    const x = this.txns.get(txnId);
    if (!x || x.state === 'COMMITTED' || x.state === 'ABORTED') {
      // Never voted YES: nothing held. Remember an ABORT so a late CanCommit gets NO.
      if (!x && outcome === 'ABORTED') this.txns.set(txnId, { state: 'ABORTED', deadlineAtMs: Infinity });
      return null;
    }
    return this.decide(
      txnId,
      x,
      outcome,
      outcome === 'COMMITTED' ? 'DoCommit from the coordinator' : 'Abort from the coordinator',
    );
  }

  /** The timeout rules. */
  tick(nowMs: number): ParticipantDecision[] {
    const out: ParticipantDecision[] = [];
    for (const [txnId, x] of this.txns) {
      if (nowMs < x.deadlineAtMs) continue;
      if (x.state === 'uncertain')
        out.push(
          this.decide(
            txnId,
            x,
            'ABORTED',
            `timed out uncertain (${this.cfg.uncertainTimeoutMs} ms after its YES, no PreCommit)`,
          ),
        );
      else if (x.state === 'precommitted')
        out.push(
          this.decide(
            txnId,
            x,
            'COMMITTED',
            `timed out precommitted (${this.cfg.precommitTimeoutMs} ms after PreCommit, no DoCommit)`,
          ),
        );
    }
    return out;
  }

  private decide(txnId: string, x: PartTxn, outcome: Outcome, why: string): ParticipantDecision {
    x.state = outcome;
    x.deadlineAtMs = Infinity;
    return { txnId, outcome, why };
  }
}
