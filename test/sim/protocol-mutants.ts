// Broken protocols for the whole-system checker's self-test: each one a subclass of the production engine that
// overrides one rule at the engine's named extension points (countVote, proposeAbort, mayForget, answerUndecided,
// prepareDurably, and the node core's route), or of the SDK's begin rule (keepsBegin). They live here, in test code, so
// nothing test-only ships; the simulator builds one in place of the production engine when a scenario names a mutant
// (test/sim/system-shard2.sim.test.ts shows each one caught).
import { BeginRule, type AttemptFailure } from '../../src/client/retry-policy.ts';
import { decodeDecisionBatch, type BatchDecoded } from '../../src/commit/decision-batch.ts';
import {
  CoordinatorEngine,
  type EngineConfig,
  type EngineIO,
  type Member,
  type OutcomeCallback,
  type Txn,
} from '../../src/commit/engine.ts';
import type { ApplyResult, DecisionTable } from '../../src/commit/state.ts';
import { NodeCore, type NodeCoreOptions } from '../../src/node/core.ts';
import type { Entry } from '../../src/raft/types.ts';
import {
  ParticipantEngine,
  type EngineOptions,
  type PrepareCallback,
  type StatusCallback,
} from '../../src/participant/engine.ts';
import { ParallelCommit, type ParallelHost, type Recovery } from '../../src/commit/parallel-commit.ts';
import type { PreparedRecord } from '../../src/participant/types.ts';
import type { PrepareRequest } from '../../src/transport/participant-rpc.ts';

/**
 * Broken coordinators the whole-system simulator must catch:
 *   presume-abort-unlogged  answer an in-doubt participant ABORTED without logging it (breaks R3)
 *   commit-on-majority      propose COMMIT on a majority of YES votes (breaks R2, AC2)
 *   forget-before-acks      forget a decision once any participant acknowledged it (breaks R5)
 *   abort-unlogged          answer a NO vote or a timeout ABORTED from memory and send ABORT
 *                           once (the presumed abort before answers were logged): after a
 *                           leader change the id can be begun again and COMMIT what a client
 *                           was told ABORTED
 *   committed-before-staging  (parallel) COMMITTED answered while the STAGING record is in flight
 *   recover-without-refusal   (parallel) recovery takes a participant's silence for a refusal
 *   stage-regardless          (parallel) a transaction is staged even when a participant does not serve
 *                             Status (built before it existed): a new leader's recovery waits for ever
 *                             on one that never prepared (breaks AC4)
 */
export type EngineMutant =
  | 'presume-abort-unlogged'
  | 'commit-on-majority'
  | 'forget-before-acks'
  | 'abort-unlogged'
  | 'committed-before-staging'
  | 'recover-without-refusal'
  | 'stage-regardless';

/**
 * Broken participants:
 *   vote-before-sync   vote YES before the prepared record is durable (breaks R4); a crash then loses a YES
 *   forget-yes         parallel commit's status question: answer "refused" for a transaction it holds
 *                      prepared (a participant that forgets its YES)
 */
export type ParticipantMutant = 'vote-before-sync' | 'forget-yes';

/**
 * begin-on-retry: the SDK's begin rule broken (src/client/retry-policy.ts): a
 * Commit that began its transaction is retried with begin even after an
 * attempt that may have reached a leader, so a new leader prepares afresh
 * what an earlier one began (breaks R2).
 */
export type ClientMutant = 'begin-on-retry';

class BeginOnRetry extends BeginRule {
  protected override keepsBegin(result: 'answered' | AttemptFailure): boolean {
    return result !== 'answered';
  }
}

/** The SDK's begin rule for the simulator's clients, or the named broken one. */
export function beginRule(mutant: ClientMutant | undefined): (begun: boolean) => BeginRule {
  return mutant === 'begin-on-retry' ? (begun) => new BeginOnRetry(begun) : (begun) => new BeginRule(begun);
}

/** batch-drops-last: a decision batch decoder that loses the last Decide of every entry it reads. */
export type BatchMutant = 'batch-drops-last';

/** The state machine's batch decoder for a batch mutant (handed to NodeStateMachine). */
export function batchDecoder(_m: BatchMutant): (data: Uint8Array) => BatchDecoded {
  return (data) => {
    const d = decodeDecisionBatch(data);
    if (d.cmds === null) return d;
    let i = d.cmds.length - 1;
    while (i >= 0 && d.cmds[i].t !== 'decide') i--;
    return i < 0 ? d : { cmds: d.cmds.filter((_, k) => k !== i), problem: null };
  };
}

/**
 * route-first-of-entry: the node core (src/node/core.ts) hands the engines only the first
 * result of each applied entry, as a wiring written before decision batches would: the other
 * Decides and Forgets of a batch entry apply everywhere but never reach the commit engine.
 */
export type CoreMutant = 'route-first-of-entry';

export const CORE_MUTANTS: readonly CoreMutant[] = ['route-first-of-entry'];

class RouteFirstOfEntryCore extends NodeCore {
  private lastIndex = 0;

  protected override route(entry: Entry, result: ApplyResult): void {
    if (entry.index === this.lastIndex) return;
    this.lastIndex = entry.index;
    super.route(entry, result);
  }
}

/** The production node core, or the named broken one. */
export function nodeCore(o: NodeCoreOptions, mutant: CoreMutant | undefined): NodeCore {
  return mutant === undefined ? new NodeCore(o) : new RouteFirstOfEntryCore(o);
}

export const ENGINE_MUTANTS: readonly EngineMutant[] = [
  'presume-abort-unlogged',
  'commit-on-majority',
  'forget-before-acks',
  'abort-unlogged',
  'committed-before-staging',
  'recover-without-refusal',
  'stage-regardless',
];
export const PARTICIPANT_MUTANTS: readonly ParticipantMutant[] = ['vote-before-sync', 'forget-yes'];

/** committed-before-staging: the stager treats a STAGING record still in flight as applied. */
class EarlyStager extends ParallelCommit {
  protected override stagingCommitted(t: Txn): boolean {
    return t.parallel !== undefined && t.parallel.staged !== 'failed';
  }
}

/** recover-without-refusal: silence counts as a refusal. */
class HastyRecovery extends ParallelCommit {
  protected override unanswered(r: Recovery, id: string): void {
    this.answered(r, id, 'refused');
  }
}

class MutantCoordinatorEngine extends CoordinatorEngine {
  constructor(
    table: DecisionTable,
    io: EngineIO,
    cfg: Partial<EngineConfig>,
    private readonly mutant: EngineMutant,
  ) {
    super(table, io, cfg);
  }

  protected override parallelCommit(host: ParallelHost): ParallelCommit {
    // Called from the base constructor, before this.mutant is set: the choice rides the config.
    const m = (host.cfg as EngineConfig & { mutant?: EngineMutant }).mutant;
    if (m === 'committed-before-staging') return new EarlyStager(host);
    if (m === 'recover-without-refusal') return new HastyRecovery(host);
    return super.parallelCommit(host);
  }

  override begin(txnId: string, timeoutMs: number): { deadlineAtMs: number } {
    // abort-unlogged: a transaction told ABORTED from memory answers a repeated Begin on this leader as the first did.
    const t = this.txns.get(txnId);
    if (this.mutant === 'abort-unlogged' && t !== undefined && t.outcome !== null && this.isLeader())
      return { deadlineAtMs: t.deadlineAtMs };
    return super.begin(txnId, timeoutMs);
  }

  protected override answerUndecided(txnId: string, participantId: string, cb: OutcomeCallback): void {
    if (this.mutant === 'presume-abort-unlogged' && participantId !== '')
      return cb(null, { txnId, outcome: 'ABORTED', reason: 'mutant: presumed abort, not logged', decisionIndex: 0 });
    super.answerUndecided(txnId, participantId, cb);
  }

  protected override countVote(t: Txn, m: Member): void {
    if (this.mutant !== 'commit-on-majority') return super.countVote(t, m);
    // COMMIT once more than half voted YES, ABORT once that is impossible.
    const votes = [...t.members.values()];
    const yes = votes.filter((x) => x.vote === 'yes').length;
    if (yes * 2 > votes.length) return this.proposeCommit(t);
    if (votes.every((x) => x.vote !== null)) this.decideAbort(t, 'mutant: no majority of YES votes', 'vote_no');
  }

  protected override proposeAbort(t: Txn): void {
    if (this.mutant !== 'abort-unlogged') return super.proposeAbort(t);
    // ABORTED from this leader's memory, which a leader change wipes; ABORT sent once.
    t.phase = 'deciding';
    t.outcome = 'abort';
    const a = this.answerFor(t);
    for (const w of t.waiters.splice(0)) w(null, a);
    for (const m of t.members.values())
      if (m.vote !== 'no')
        this.io.sendDecision(
          m.record,
          { txnId: t.id, participantId: m.record.id, outcome: 'abort', reason: t.reason },
          this.cfg.rpcTimeoutMs,
          () => {},
        );
  }

  protected override recoverable(t: Txn): boolean {
    return this.mutant === 'stage-regardless' || super.recoverable(t);
  }

  protected override mayForget(t: Txn): boolean {
    if (this.mutant !== 'forget-before-acks') return super.mayForget(t);
    return [...t.members.values()].some((m) => m.acked) || t.members.size === 0;
  }
}

/** The production coordinator engine, or the named broken one. */
export function coordinatorEngine(
  table: DecisionTable,
  io: EngineIO,
  cfg: Partial<EngineConfig>,
  mutant: EngineMutant | undefined,
): CoordinatorEngine {
  return mutant === undefined
    ? new CoordinatorEngine(table, io, cfg)
    : new MutantCoordinatorEngine(table, io, { ...cfg, mutant } as Partial<EngineConfig>, mutant);
}

class VoteBeforeSyncEngine extends ParticipantEngine {
  /** Each PREPARE's timeout, by transaction, for when the YES is sent. */
  private readonly timeoutsMs = new Map<string, number>();

  override prepare(req: PrepareRequest, cb: PrepareCallback): void {
    // The first PREPARE's, as the engine acts on the first (a repeated one is answered from its state).
    if (!this.timeoutsMs.has(req.txnId)) this.timeoutsMs.set(req.txnId, req.timeoutMs);
    super.prepare(req, cb);
  }

  protected override prepareDurably(record: PreparedRecord, vote: (yes: boolean, reason?: string) => void): void {
    const preparedAtMs = record.atMs;
    const timeoutMs = this.timeoutsMs.get(record.txnId) ?? 0;
    this.timeoutsMs.delete(record.txnId);
    this.prepared.set(record.txnId, {
      preparedAtMs,
      askAtMs: preparedAtMs + Math.max(this.o.inDoubtAfterMs, timeoutMs),
    });
    vote(true);
    this.o.journal.append(record, () => (this.preparing -= 1));
  }
}

/** forget-yes: the status question finds no YES where there is one. */
class ForgetYesEngine extends ParticipantEngine {
  protected override statusOf(txnId: string, cb: StatusCallback): void {
    if (this.stateOf(txnId) === 'prepared') return cb(null, 'refused');
    super.statusOf(txnId, cb);
  }
}

/** The production participant engine, or the named broken one. */
export function participantEngine(o: EngineOptions, mutant: ParticipantMutant | undefined): ParticipantEngine {
  if (mutant === 'vote-before-sync') return new VoteBeforeSyncEngine(o);
  if (mutant === 'forget-yes') return new ForgetYesEngine(o);
  return new ParticipantEngine(o);
}
