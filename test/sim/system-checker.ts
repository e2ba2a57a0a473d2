// The atomic-commit checker of the whole-system simulation. The world reports
// what happens — votes as they are sent, decisions as the log applies them,
// decisions as participants apply them to their data, answers to clients,
// participant recoveries — and the checker holds each against the rules:
//
//   AC1 agreement      no two participants decide a transaction differently, and
//                      no participant changes its decision (across crashes too)
//   AC2 validity       a COMMIT is applied only if every enlisted participant voted YES
//   AC3 non-triviality on a run without faults, all YES ⇒ COMMIT
//   AC4 termination    after healing nothing stays in doubt and every decision is
//                      acknowledged (checked by the world, which knows when it is quiet)
//   R1                 the first Decide(T) applied is the same entry on every node
//   R4                 a participant's decision equals the log's; a YES survives a crash
//   clients            an answer given to a client is never reversed: every later
//                      answer about the same id (a retried Commit, the same id sent
//                      again as a new transaction, the table at the end) is the same
//   atomicity          at the end, a committed transaction's writes are at every
//                      participant, an aborted one's at none
//
// Every violation carries the virtual time at which it was seen.

import type { DecisionOutcome } from '../../src/domain/protocol.ts';
import type { Decision } from '../../src/commit/state.ts';
import type { Outcome } from '../../src/participant/types.ts';

export interface PlannedTxn {
  txnId: string;
  participants: string[];
  /** The participant told to vote NO, if any. */
  noVoter: string | null;
}

export const VIOLATIONS_MAX = 20;

export class SystemChecker {
  readonly violations: string[] = [];
  /** The run uses parallel commit: a COMMITTED answer may come before the log's COMMIT (see clientAnswered). */
  parallelCommit = false;
  private readonly planned = new Map<string, PlannedTxn>();
  /** txn → participant → the votes it sent. */
  private readonly votes = new Map<string, Map<string, Set<'yes' | 'no'>>>();
  /** txn → the first Decide applied for it (R1: the decision). */
  private readonly logDecision = new Map<string, { outcome: DecisionOutcome; index: number }>();
  /** txn → participant → decisions it applied to its data, in order. */
  private readonly applied = new Map<string, Map<string, Outcome[]>>();
  /** participant → transactions it voted YES on. */
  private readonly yesVoted = new Map<string, Set<string>>();
  private readonly clientAnswer = new Map<string, Outcome>();
  private readonly refusals = new Set<string>();

  constructor(private readonly now: () => number) {}

  violation(what: string): void {
    if (this.violations.length < VIOLATIONS_MAX) this.violations.push(`t=${this.now()}ms: ${what}`);
  }

  /** An exception out of a run: an invariant assertion of the production code fired, which is a finding too. */
  exception(err: unknown): void {
    this.violation(
      `exception: ${err instanceof Error ? (err.stack ?? err.message).split('\n').slice(0, 4).join(' | ') : String(err)}`,
    );
  }

  plan(t: PlannedTxn): void {
    this.planned.set(t.txnId, t);
  }

  decisionOf(txnId: string): DecisionOutcome | null {
    return this.logDecision.get(txnId)?.outcome ?? null;
  }

  // ---- observations ------------------------------------------------------

  voteSent(participant: string, txnId: string, vote: 'yes' | 'no'): void {
    let byP = this.votes.get(txnId);
    if (!byP) this.votes.set(txnId, (byP = new Map()));
    let s = byP.get(participant);
    if (!s) byP.set(participant, (s = new Set()));
    s.add(vote);
    if (vote === 'yes') {
      let y = this.yesVoted.get(participant);
      if (!y) this.yesVoted.set(participant, (y = new Set()));
      y.add(txnId);
    }
  }

  /** A node applied a Decide; `first` says whether its table took it as T's decision (R1). */
  decisionApplied(node: string, d: Decision, first: boolean): void {
    if (!first) return;
    const prev = this.logDecision.get(d.txnId);
    if (prev) {
      if (prev.index !== d.index || prev.outcome !== d.outcome) {
        this.violation(
          `R1: ${node} took Decide(${d.txnId}, ${d.outcome}) at index ${d.index} as the decision, but Decide(${d.txnId}, ${prev.outcome}) at index ${prev.index} was the decision before`,
        );
      }
      return;
    }
    this.logDecision.set(d.txnId, { outcome: d.outcome, index: d.index });
    if (d.outcome === 'abort' && this.clientAnswer.get(d.txnId) === 'COMMITTED')
      this.violation(`client: ${d.txnId} was answered COMMITTED, the log decided ABORT at index ${d.index}`);
    if (d.outcome !== 'commit') return;
    const plan = this.planned.get(d.txnId);
    if (!plan) return this.violation(`AC2 validity: COMMIT of ${d.txnId}, which no client began`);
    const named = [...d.participants].sort().join(',');
    const enlisted = [...plan.participants].sort().join(',');
    if (named !== enlisted)
      this.violation(
        `AC2 validity: COMMIT of ${d.txnId} at index ${d.index} names participants [${named}], the client enlisted [${enlisted}]`,
      );
    for (const p of plan.participants) {
      const v = this.votes.get(d.txnId)?.get(p);
      if (!v?.has('yes'))
        this.violation(
          `AC2 validity: ${d.txnId} committed at index ${d.index} but ${p} ${v?.has('no') ? 'voted NO' : 'never voted'}`,
        );
      const seen = this.applied.get(d.txnId)?.get(p);
      if (seen?.includes('ABORTED'))
        this.violation(`AC1 agreement: ${d.txnId} committed at index ${d.index} after ${p} had aborted it`);
    }
    if (this.clientAnswer.get(d.txnId) === 'ABORTED')
      this.violation(`client: ${d.txnId} committed at index ${d.index} after its client was told ABORTED`);
  }

  /** A participant applied a decision to its data (a prepared transaction's commit or abort). */
  participantApplied(participant: string, txnId: string, outcome: Outcome): void {
    let byP = this.applied.get(txnId);
    if (!byP) this.applied.set(txnId, (byP = new Map()));
    const mine = byP.get(participant) ?? [];
    if (mine.length > 0 && mine[mine.length - 1] !== outcome)
      this.violation(`AC1 agreement: ${participant} decided ${txnId} ${mine[mine.length - 1]}, then ${outcome}`);
    mine.push(outcome);
    byP.set(participant, mine);
    for (const [q, theirs] of byP) {
      if (q !== participant && theirs.length > 0 && theirs[theirs.length - 1] !== outcome)
        this.violation(
          `AC1 agreement: ${participant} decided ${txnId} ${outcome}, ${q} decided it ${theirs[theirs.length - 1]}`,
        );
    }
    // R4: a participant learns its decision from the cluster, which answers from the log.
    const log = this.logDecision.get(txnId);
    if (outcome === 'COMMITTED' && log?.outcome !== 'commit')
      this.violation(
        `R4: ${participant} committed ${txnId} but the log ${log ? `decided ABORT at index ${log.index}` : 'has no decision'}`,
      );
    if (outcome === 'ABORTED' && log?.outcome === 'commit')
      this.violation(`R4: ${participant} aborted ${txnId} but the log decided COMMIT at index ${log.index}`);
  }

  /** A participant refused a DECISION that contradicts what it knows (the engine's own protocol check). */
  participantRefused(participant: string, txnId: string, decision: string, local: string): void {
    // The coordinator redelivers a refused decision forever; one report is enough.
    const key = `${participant}/${txnId}/${decision}`;
    if (this.refusals.has(key)) return;
    this.refusals.add(key);
    const yes = this.yesVoted.get(participant)?.has(txnId) === true;
    const rule = local === 'none' ? (yes ? 'R4' : 'AC2 validity') : 'AC1 agreement';
    this.violation(
      `${rule}: ${participant} refused ${decision} for ${txnId}: it is ${local === 'none' ? (yes ? 'unknown there although it voted YES' : 'unknown there, it never voted YES') : local} there`,
    );
  }

  /** R4 across a crash: every transaction it voted YES on is still prepared (or decided) after recovery. */
  participantRecovered(participant: string, stateOf: (txnId: string) => string | undefined): void {
    for (const txnId of this.yesVoted.get(participant) ?? []) {
      // A participant may drop an aborted transaction (EngineOptions.forgetAborts).
      const aborted = this.applied.get(txnId)?.get(participant)?.at(-1) === 'ABORTED';
      if (stateOf(txnId) === undefined && !aborted)
        this.violation(
          `R4: ${participant} voted YES on ${txnId} but after a crash its journal knows nothing of it (the prepared state was not durable before the vote)`,
        );
    }
  }

  clientAnswered(txnId: string, outcome: Outcome): void {
    const told = this.clientAnswer.get(txnId);
    if (told !== undefined && told !== outcome)
      this.violation(`client: ${txnId} was answered ${told.toUpperCase()}, later ${outcome.toUpperCase()}`);
    if (told === undefined) this.clientAnswer.set(txnId, outcome);
    const log = this.logDecision.get(txnId);
    // Parallel commit answers COMMITTED before the explicit decision is applied: then the log must
    // never decide ABORT (decisionApplied), and must decide COMMIT by the end (final).
    if (outcome === 'COMMITTED' && log === undefined && this.parallelCommit) return;
    if (outcome === 'COMMITTED' && log?.outcome !== 'commit')
      this.violation(
        `client: ${txnId} answered COMMITTED but the log ${log ? `decided ABORT at index ${log.index}` : 'has no decision'}`,
      );
    if (outcome === 'ABORTED' && log?.outcome === 'commit')
      this.violation(`client: ${txnId} answered ABORTED but the log decided COMMIT at index ${log.index}`);
  }

  /** The cluster refused to begin `txnId` again as already decided, naming the outcome it recorded. */
  clientRefusedAsDecided(txnId: string, recorded: Outcome | undefined): void {
    const told = this.clientAnswer.get(txnId);
    if (recorded === undefined)
      return this.violation(`client: ${txnId} refused as already decided without the recorded outcome`);
    if (told !== undefined && told !== recorded)
      this.violation(
        `client: ${txnId} was answered ${told.toUpperCase()}, later refused as already decided ${recorded.toUpperCase()}`,
      );
  }

  // ---- at the end ---------------------------------------------------------

  /**
   * Once the world is quiet after healing: atomicity of the data, AC3 on
   * runs without faults, and every client answered consistently.
   */
  final(o: {
    faultFree: boolean;
    valueAt: (participant: string, key: string) => string | undefined;
    began: (txnId: string) => boolean;
    /** The outcome the leader's table answers for txnId now; null if none, undefined if it may have been forgotten. */
    outcomeNow?: (txnId: string) => Outcome | null | undefined;
  }): void {
    for (const [txnId, told] of this.clientAnswer) {
      const now = o.outcomeNow?.(txnId);
      if (now !== undefined && now !== told)
        this.violation(
          `client: ${txnId} was answered ${told.toUpperCase()}, the cluster now answers ${now === null ? 'no outcome' : now.toUpperCase()}`,
        );
    }
    for (const t of this.planned.values()) {
      const log = this.logDecision.get(t.txnId);
      const committed = log?.outcome === 'commit';
      for (const p of t.participants) {
        if (p === t.noVoter) continue;
        const v = o.valueAt(p, keyOf(t.txnId));
        if (committed && v !== valueOf(t.txnId, p))
          this.violation(`atomicity: ${t.txnId} committed at index ${log?.index} but ${p} does not hold its write`);
        if (!committed && v !== undefined)
          this.violation(`atomicity: ${t.txnId} did not commit but ${p} holds its write`);
      }
      const answer = this.clientAnswer.get(t.txnId);
      if (!committed && answer === 'COMMITTED')
        this.violation(
          `client: ${t.txnId} was answered COMMITTED, the log ${log ? 'decided ABORT' : 'has no decision'}`,
        );
      if (committed && answer === 'ABORTED')
        this.violation(`client: ${t.txnId} answered ABORTED, the log decided COMMIT`);
      if (!o.faultFree || !o.began(t.txnId)) continue;
      const votes = this.votes.get(t.txnId);
      const allYes = t.participants.every((p) => votes?.get(p)?.has('yes') === true && !votes.get(p)?.has('no'));
      if (allYes && !committed)
        this.violation(
          `AC3 non-triviality: no faults and every participant of ${t.txnId} voted YES, but it ${log ? 'was decided ABORT' : 'has no COMMIT'} (client: ${answer ?? 'no answer'})`,
        );
    }
  }
}

/** The memory-resource key a transaction writes at each participant, and the value. */
export function keyOf(txnId: string): string {
  return `k-${txnId}`;
}

export function valueOf(txnId: string, participant: string): string {
  return `${txnId}@${participant}`;
}
