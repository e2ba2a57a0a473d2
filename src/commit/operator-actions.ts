// Operator actions on the coordinator engine: `verdict txn resolve`, a
// participant's heuristic report, registering and removing participants.
// They reach the protocol's state only through ProtocolPort
// (./commit-protocol.ts): they read transactions and the decision table,
// propose log entries, and change a transaction only through a protocol
// transition that asserts its preconditions. Every one checks its input
// first and refuses with an EngineError.

import { type DecisionOutcome, normalServes } from '../domain/protocol.ts';
import type { ProtocolPort } from './commit-protocol.ts';
import {
  type AbortClass,
  answerOf,
  decisionParticipants,
  EngineError,
  type HeuristicReport,
  type ResolveAnswer,
  type Txn,
  validateTxnId,
} from './engine-types.ts';
import type { HeuristicRecord, OperatorAct, ParticipantRecord } from './state.ts';

/**
 * A participant reports that its operator decided T by hand. The report is
 * compared with T's decision where every node sees it (the `heuristic`
 * command, src/commit/state.ts); an undecided T is first decided through
 * the log the way an in-doubt participant's question is (R3): ABORT, since
 * this leader cannot have every YES for a transaction it is not deciding.
 * A repeated report answers the first record (R7).
 */
export function reportHeuristic(
  p: ProtocolPort,
  r: HeuristicReport,
  cb: (err: EngineError | null, record?: HeuristicRecord) => void,
): void {
  try {
    p.requireLeader();
    validateTxnId(r.txnId);
  } catch (err) {
    return cb(err as EngineError);
  }
  if (!p.table.participants.has(r.participantId))
    return cb(new EngineError('precondition', `participant ${r.participantId} is not registered with this cluster`));
  p.heardFrom(r.participantId);
  const known = p.table.heuristics.get(r.txnId)?.find((h) => h.participantId === r.participantId);
  if (known) return cb(null, known);
  const record = (): void =>
    p.io.propose(
      {
        t: 'heuristic',
        txnId: r.txnId,
        participantId: r.participantId,
        outcome: r.outcome,
        gid: r.gid,
        operator: r.operator,
        reason: r.reason,
        atMs: r.atMs,
      },
      (err, res) => {
        if (err || !res || res.t !== 'heuristic')
          return cb(
            new EngineError(
              'outcome-unknown',
              `the heuristic report could not be logged (${err?.message ?? 'no result'}); retry`,
            ),
          );
        cb(null, res.record);
      },
    );
  decideFirst(
    p,
    r.txnId,
    `participant ${r.participantId} was resolved by hand (heuristic ${r.outcome.toUpperCase()} by ${r.operator}: ${r.reason}); no decision was logged, so the transaction is aborted`,
    'heuristic_report',
    (err) => (err ? cb(err) : record()),
  );
}

/**
 * Makes sure T has a logged decision, then calls back: a decided T at once;
 * a T whose COMMIT is being proposed when the log says; any other undecided
 * T after ABORT is logged (presumed abort, R3: this leader holds no YES
 * from every participant that it could still turn into COMMIT).
 */
function decideFirst(
  p: ProtocolPort,
  txnId: string,
  reason: string,
  why: AbortClass,
  cb: (err: EngineError | null) => void,
): void {
  if (p.table.lookup(txnId)) return cb(null);
  const t = p.txn(txnId);
  if (t) {
    // Deciding already: the log will tell. Otherwise ABORT is proposed now, and applied before cb.
    t.waiters.push((err) => cb(err));
    p.decideAbort(t, reason, why);
    return;
  }
  // Staged by an earlier leader (parallel commit): recovery decides it; a presumed ABORT could contradict an implied
  // COMMITTED.
  if (p.isStaged(txnId)) return p.awaitRecovery(txnId, (err) => cb(err));
  p.logAbort(txnId, reason, why, (err) => cb(err));
}

/**
 * `verdict txn resolve`: an operator asks for an outcome on the cluster
 * side, recorded in the log with who, when and why. ABORT of an undecided
 * T decides it (presumed abort needs no vote). COMMIT of an undecided T is
 * refused unless this leader is already committing it with every YES in
 * hand: AC2 (COMMIT only if every participant voted YES) is never traded
 * away. Against a decided T the same outcome is confirmed (and recorded);
 * the contrary one is refused: a decision is never reversed (R1).
 */
export function resolve(
  p: ProtocolPort,
  txnId: string,
  outcome: DecisionOutcome,
  act: Omit<OperatorAct, 'atMs'> & { forceUnknown?: boolean },
  cb: (err: EngineError | null, r?: ResolveAnswer) => void,
): void {
  try {
    p.requireLeader();
    validateTxnId(txnId);
  } catch (err) {
    return cb(err as EngineError);
  }
  const want = outcome === 'commit' ? 'COMMIT' : 'ABORT';
  const contrary = (d: DecisionOutcome): EngineError =>
    new EngineError(
      'precondition',
      `transaction ${txnId} is decided ${d === 'commit' ? 'COMMIT' : 'ABORT'}; ${want} is refused: the cluster never reverses a decision (R1). ` +
        `If a participant cannot apply the decision and must be forced by hand while the cluster is unreachable, that is a heuristic act at the participant: verdict participant resolve ${txnId} --${outcome} --reason TEXT`,
    );
  const decided = p.table.lookup(txnId);
  if (decided && decided.outcome !== outcome) return cb(contrary(decided.outcome));
  const t = p.txn(txnId);
  // Staged by an earlier leader: recovery decides it (an operator's ABORT
  // could contradict an implied COMMITTED); the act is then recorded
  // against that decision, or refused.
  if (!decided && !t && p.isStaged(txnId))
    return p.awaitRecovery(txnId, (err) => (err ? cb(err) : resolve(p, txnId, outcome, act, cb)));
  const refused = decided ? null : undecidedRefusal(p, txnId, outcome, act, t);
  if (refused !== null) return cb(refused);
  const propose = (): void => proposeResolution(p, txnId, outcome, act, t, contrary, cb);
  if (t?.phase === 'deciding') {
    // COMMIT is already proposed: the log decides; then the act is recorded against what it says (or refused).
    t.waiters.push((err, a) => {
      if (err) return cb(err);
      const d = p.table.lookup(txnId);
      if (d && d.outcome !== outcome) return cb(contrary(d.outcome));
      propose();
      void a;
    });
    return;
  }
  if (t && !decided && (t.phase === 'begun' || t.phase === 'preparing')) {
    // The operator's own Decide entry is the ABORT: no other is proposed for it.
    p.operatorTakesOver(t, `aborted by operator ${act.operator}: ${act.reason}`);
  }
  propose();
}

/** Why an operator's act on undecided `txnId` is refused, or null when it may be logged. */
function undecidedRefusal(
  p: ProtocolPort,
  txnId: string,
  outcome: DecisionOutcome,
  act: { forceUnknown?: boolean },
  t: Txn | undefined,
): EngineError | null {
  // A mistyped id would otherwise be decided and listed as an operator's
  // act on a transaction nobody ran: an id with no trace here is refused
  // unless the operator says it is meant (a transaction begun on an earlier
  // leader leaves no trace on this one).
  if (!t && !p.table.heuristics.has(txnId) && !p.table.resolutions.has(txnId) && act.forceUnknown !== true) {
    return new EngineError(
      'precondition',
      `the cluster has no record of transaction ${txnId} (not in flight on this leader, no decision, no heuristic report): a mistyped id? See verdict txn list. ` +
        `A transaction begun on an earlier leader leaves no record here, and its prepared participants ask the cluster themselves (presumed abort); to decide it anyway, add --force-unknown`,
    );
  }
  if (outcome !== 'commit' || (t?.phase === 'deciding' && t.proposing === 'commit')) return null;
  const why = !t
    ? "this leader did not prepare it, so it does not hold every participant's YES vote (a new leader never resumes another leader's prepare, R2)"
    : t.phase === 'deciding'
      ? `it is being aborted (${t.reason})`
      : `not every participant voted YES (${[...t.members.values()].map((m) => `${m.record.id}: ${m.vote ?? 'no vote yet'}`).join(', ') || 'no PREPARE sent yet'})`;
  return new EngineError(
    'precondition',
    `COMMIT of undecided transaction ${txnId} refused: ${why}. AC2 — COMMIT only if every participant voted YES — is never traded away; use --abort, or wait for the transaction to be decided`,
  );
}

/** Logs the operator's Decide for `txnId` with who, when and why; answers what the log decided. */
function proposeResolution(
  p: ProtocolPort,
  txnId: string,
  outcome: DecisionOutcome,
  act: Omit<OperatorAct, 'atMs'>,
  t: Txn | undefined,
  contrary: (d: DecisionOutcome) => EngineError,
  cb: (err: EngineError | null, r?: ResolveAnswer) => void,
): void {
  const members = t ? decisionParticipants(t, outcome) : [];
  const now = p.io.nowMs();
  const reason = `resolved by operator ${act.operator}: ${act.reason}`;
  p.io.propose(
    {
      t: 'decide',
      txnId,
      outcome,
      reason,
      participants: members,
      atMs: now,
      operator: { operator: act.operator, reason: act.reason, atMs: now },
    },
    (err, r) => {
      if (err || !r || r.t !== 'decide') {
        // The transaction this act moved to deciding must still be decided: tick proposes ABORT again.
        if (t) p.reproposeLater(t);
        return cb(
          new EngineError(
            'outcome-unknown',
            `the resolution could not be logged (${err?.message ?? 'no result'}); retry`,
          ),
        );
      }
      if (r.decision.outcome !== outcome) return cb(contrary(r.decision.outcome));
      if (r.first && outcome === 'abort') p.countAbort('operator');
      cb(null, { answer: answerOf(r.decision), decided: r.first });
    },
  );
}

/**
 * `verdict participant remove`: unregisters a participant, logged like its
 * registration. Refused while the participant has transactions in doubt
 * (a YES vote waiting for a decision, or a decision it has not
 * acknowledged, R5), listing them; removing an id that is not registered
 * is a no-op (R7).
 */
export function unregisterParticipant(
  p: ProtocolPort,
  id: string,
  operator: string,
  cb: (err: EngineError | null, removed?: boolean, owed?: string[]) => void,
  force?: { reason: string },
): void {
  if (!p.isLeader()) return cb(new EngineError('not-leader', 'not the leader'));
  if (!p.table.participants.has(id)) return cb(null, false, []);
  if (force !== undefined) return forceUnregister(p, id, operator, force.reason, cb);
  const pending = new Set<string>();
  const acked: string[] = [];
  for (const t of p.txns()) {
    const m = t.members.get(id);
    if (m === undefined) continue;
    if (t.phase !== 'delivering' || !m.acked) pending.add(t.id);
    else acked.push(t.id);
  }
  for (const d of p.table.decisions.values())
    if (d.participants.includes(id) && !p.txn(d.txnId)?.members.get(id)?.acked) pending.add(d.txnId);
  if (pending.size > 0) return cb(inDoubtRefusal(id, [...pending]));
  p.io.propose({ t: 'unregister', id, operator, atMs: p.io.nowMs(), acked }, (err, r) => {
    if (err || !r || r.t !== 'unregister')
      return cb(
        new EngineError('outcome-unknown', `the removal could not be logged (${err?.message ?? 'no result'}); retry`),
      );
    if (r.refusedBy.length > 0) return cb(inDoubtRefusal(id, r.refusedBy));
    p.forgetSeen(id);
    cb(null, r.removed, []);
  });
}

/**
 * `verdict participant remove ID --force --reason WHY`: a participant gone
 * for good leaves the registry although decisions still name it. Every
 * decision it has not acknowledged stays in the table, owed to it (R5: a
 * COMMIT is never forgotten unacknowledged), and is answered to it by
 * GetOutcome if it returns; the leader stops delivering them (onApplied).
 * Refused while it is in an undecided transaction: an operator decides that
 * first (`verdict txn resolve ID --abort`), so recovery never waits on a
 * participant that can no longer be asked.
 */
function forceUnregister(
  p: ProtocolPort,
  id: string,
  operator: string,
  reason: string,
  cb: (err: EngineError | null, removed?: boolean, owed?: string[]) => void,
): void {
  const undecided: string[] = [];
  for (const t of p.txns()) if (t.members.has(id) && t.phase !== 'delivering') undecided.push(t.id);
  for (const st of p.table.staged.values())
    if (st.participants.includes(id) && !p.table.lookup(st.txnId)) undecided.push(st.txnId);
  if (undecided.length > 0) {
    const shown = undecided.slice(0, LISTED_TXNS_MAX).join(', ');
    return cb(
      new EngineError(
        'precondition',
        `participant ${id} is in ${undecided.length} undecided transaction(s): ${shown}. Decide them first (verdict txn resolve ID --abort --reason WHY), then remove it with --force`,
      ),
    );
  }
  const acked: string[] = [];
  for (const t of p.txns()) if (t.members.get(id)?.acked === true) acked.push(t.id);
  p.io.propose({ t: 'unregister', id, operator, atMs: p.io.nowMs(), acked, force: true, reason }, (err, r) => {
    if (err || !r || r.t !== 'unregister')
      return cb(
        new EngineError('outcome-unknown', `the removal could not be logged (${err?.message ?? 'no result'}); retry`),
      );
    p.forgetSeen(id);
    cb(null, r.removed, r.forced?.owed ?? []);
  });
}

/**
 * `kind`: the resource kind, already checked against RESOURCE_KIND by the
 * caller (the edge); `serves`: the optional methods it serves, checked by
 * servesProblem there (src/domain/protocol.ts), logged in their one spelling.
 */
export function registerParticipant(
  p: ProtocolPort,
  id: string,
  endpoint: string,
  kind: string,
  serves: readonly string[],
  cb: (err: EngineError | null, p?: ParticipantRecord) => void,
): void {
  if (!p.isLeader()) return cb(new EngineError('not-leader', 'not the leader'));
  p.io.propose({ t: 'register', id, endpoint, kind, serves: normalServes(serves), atMs: p.io.nowMs() }, (err, r) => {
    if (err || !r || r.t !== 'register')
      return cb(
        new EngineError('outcome-unknown', `registration not committed: ${err?.message ?? 'no result'}; retry`),
      );
    p.heardFrom(id);
    cb(null, r.participant);
  });
}

/** Transactions listed in a refusal, at most; the count says how many more. */
const LISTED_TXNS_MAX = 20;

function inDoubtRefusal(participantId: string, txnIds: string[]): EngineError {
  const shown = txnIds.slice(0, LISTED_TXNS_MAX).join(', ');
  const more = txnIds.length > LISTED_TXNS_MAX ? ` and ${txnIds.length - LISTED_TXNS_MAX} more` : '';
  return new EngineError(
    'precondition',
    `participant ${participantId} has ${txnIds.length} transaction(s) in doubt: ${shown}${more}. They must be decided and acknowledged by it first ` +
      `(verdict txn show ID: an undecided one can be ended with verdict txn resolve ID --abort; a decided one needs the participant running to acknowledge it); then remove it`,
  );
}
