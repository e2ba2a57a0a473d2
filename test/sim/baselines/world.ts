// What the 2PC and 3PC baseline worlds share with each other and with the
// whole-system simulator: one virtual clock (EventQueue), the simulated
// network (SimNetwork, through SimRpc), the fault schedule (scheduleFault
// over the same SysFault values fast-check generates for Verdict) and the
// atomic-commit checker (SystemChecker). A baseline world is one coordinator
// `c1` and participants p1..pN; faults happen before healAtMs, then the
// network heals and every participant restarts, and within livenessMs
// nothing may stay in doubt (AC4).
//
// The fault budget matches Verdict's: a crash point marked `forever` takes
// the coordinator down for good. For a three-node Verdict cluster that is
// one node of three; for classic 2PC it is the only coordinator.

import { Rng } from '../../../src/raft/rng.ts';
import { EventQueue } from '../event-queue.ts';
import { SimNetwork } from '../sim-network.ts';
import { SystemChecker } from '../system-checker.ts';
import { scheduleFault, type FaultWorld } from '../system-faults.ts';
import { SimRpc } from '../system-rpc.ts';
import type { CrashPoint, CrashPointName, FaultScenario, RunResult, SysFault, TxnPlan } from '../system-scenario.ts';
import { Timeline, txnOf } from './timeline.ts';

export const COORDINATOR = 'c1';
/** How often the world looks whether it has become quiet after healing. */
const QUIET_POLL_MS = 100;

/**
 * Verdict's scenario without its cluster: crash points with target 'leader'
 * crash the coordinator; `forever` keeps it down.
 */
export type BaselineScenario = FaultScenario;

export interface BaselineResult extends RunResult {
  timeline: Timeline;
  /** txn → participant → the vote it sent (the last one, if it sent more). */
  votes: Map<string, Map<string, 'yes' | 'no'>>;
  /** txn → its participants. */
  members: Map<string, string[]>;
  /** A `forever` crash point took the coordinator down for good. */
  coordinatorLost: boolean;
}

/** What each crash point means in a baseline, at the coordinator and at a participant. */
const POINT_MEANING: Record<CrashPointName, { coordinator: string; participant: string }> = {
  'prepare-send': { coordinator: 'about to send PREPARE', participant: '' },
  'some-prepared': { coordinator: 'a YES reached it', participant: 'prepared state synced, YES not yet sent' },
  'commit-proposed': { coordinator: 'COMMIT record written, not yet synced', participant: '' },
  'commit-applied': { coordinator: 'COMMIT record synced, no DECISION sent yet', participant: '' },
  'some-decided': { coordinator: 'an ACK reached it', participant: 'COMMIT applied, ACK not yet sent' },
  // A 2PC coordinator has no Forget step: these never fire in a baseline.
  'before-forget': { coordinator: '', participant: '' },
  'after-forget': { coordinator: '', participant: '' },
};

/** The simulated network, reporting every change of its cuts to the timeline (who can no longer reach whom). */
class ObservedNetwork extends SimNetwork {
  private pending = false;
  private last = 'network: every link open';

  constructor(
    private readonly queue: EventQueue,
    rng: Rng,
    private readonly endpoints: () => readonly string[],
    private readonly timeline: Timeline,
  ) {
    super(queue, rng);
  }

  override block(from: string, to: string): void {
    super.block(from, to);
    this.changed();
  }

  override unblock(from: string, to: string): void {
    super.unblock(from, to);
    this.changed();
  }

  override open(from: string, to: string): void {
    super.open(from, to);
    this.changed();
  }

  override openAll(): void {
    super.openAll();
    this.changed();
  }

  override heal(): void {
    super.heal();
    this.changed();
  }

  /** One timeline line per event that changed the cuts, however many links it touched. */
  private changed(): void {
    if (this.pending) return;
    this.pending = true;
    this.queue.after(0, () => {
      this.pending = false;
      const ids = this.endpoints();
      const cuts: string[] = [];
      for (let i = 0; i < ids.length; i++) {
        for (let j = i + 1; j < ids.length; j++) {
          const ab = this.isBlocked(ids[i], ids[j]);
          const ba = this.isBlocked(ids[j], ids[i]);
          if (ab && ba) cuts.push(`${ids[i]}–${ids[j]}`);
          else if (ab) cuts.push(`${ids[i]}→${ids[j]}`);
          else if (ba) cuts.push(`${ids[j]}→${ids[i]}`);
        }
      }
      const now = cuts.length === 0 ? 'network: every link open' : `network: links cut ${cuts.join(', ')}`;
      if (now !== this.last) this.timeline.add(null, now);
      this.last = now;
    });
  }
}

export abstract class BaselineWorld implements FaultWorld {
  readonly q = new EventQueue();
  readonly rng: Rng;
  readonly net: SimNetwork;
  readonly rpc: SimRpc;
  readonly checker: SystemChecker;
  readonly timeline: Timeline;
  readonly nodeIds: readonly string[] = [COORDINATOR];
  readonly participantIds: readonly string[];
  healed = false;
  partitions = 0;
  crashes = 0;
  crashPointsFired = 0;
  /** txn → its participants, in plan order (crash points name them by index). */
  protected readonly members = new Map<string, string[]>();
  /** Transactions the coordinator began (a coordinator that is down when a client comes begins nothing). */
  protected readonly began = new Set<string>();
  private decisionIndex = 0;
  private readonly votes = new Map<string, Map<string, 'yes' | 'no'>>();
  private readonly armed: (CrashPoint & { fired: boolean })[];
  /** The coordinator was taken down for good by a `forever` crash point. */
  protected coordinatorLost = false;
  protected coordinatorDownSinceMs: number | null = null;
  /** A crash point is crashing a process: it has told the timeline already. */
  protected crashAtPoint = false;

  constructor(
    readonly sc: BaselineScenario,
    /** The protocol's name in timeline and violation lines. */
    readonly protocol: string,
  ) {
    this.rng = new Rng(sc.seed);
    this.timeline = new Timeline(() => this.q.now);
    this.participantIds = Array.from({ length: sc.participants }, (_, i) => `p${i + 1}`);
    this.net = new ObservedNetwork(this.q, this.rng, () => [COORDINATOR, ...this.participantIds], this.timeline);
    this.rpc = new SimRpc(this.q, this.net);
    this.checker = new SystemChecker(() => this.q.now);
    this.armed = sc.crashPoints.map((c) => ({ ...c, fired: false }));
  }

  // ---- what a protocol provides ---------------------------------------------

  protected abstract beginTxn(txnId: string, participants: string[], plan: TxnPlan): void;
  /** After healing: null when no participant is in doubt, else who is, on what. */
  protected abstract pendingAfterHeal(): string | null;
  protected abstract restartAll(): void;
  protected abstract valueAt(participant: string, key: string): string | undefined;
  abstract crash(id: string): void;
  abstract restart(id: string): void;
  abstract setSlowDisk(id: string, extraMs: number): void;
  abstract coordinatorUp(): boolean;

  // ---- FaultWorld -----------------------------------------------------------------

  leaderId(): string | null {
    return this.coordinatorUp() ? COORDINATOR : null;
  }

  /** One coordinator: there is no one to hand leadership to. */
  transferLeadership(): void {}

  /** scheduleFault's raw lines; the timeline tells faults from their effects instead. */
  log(): void {}

  // ---- observations shared by both protocols ----------------------------------

  /** The coordinator's decision, as the checker reads Verdict's first applied Decide (R1). */
  protected decided(
    txnId: string,
    outcome: 'commit' | 'abort',
    participants: string[],
    reason: string,
    logged: boolean,
  ): void {
    // Once per transaction: a restarted coordinator reads the same COMMIT record again.
    if (this.checker.decisionOf(txnId) !== null) return;
    this.decisionIndex++;
    this.checker.decisionApplied(
      COORDINATOR,
      { txnId, outcome, reason, participants, index: this.decisionIndex, decidedAtMs: this.q.now },
      true,
    );
    this.timeline.add(txnId, `${COORDINATOR} decides ${outcome.toUpperCase()}${logged ? ' (logged)' : ''}: ${reason}`);
  }

  /** A participant sends its vote (recorded as it is sent, for AC2). */
  protected voted(participant: string, txnId: string, vote: 'yes' | 'no', why: string): void {
    this.checker.voteSent(participant, txnId, vote);
    let byP = this.votes.get(txnId);
    if (!byP) this.votes.set(txnId, (byP = new Map()));
    byP.set(participant, vote);
    this.timeline.once(txnId, `${participant} votes ${vote.toUpperCase()} on ${txnId}${why ? ` (${why})` : ''}`);
  }

  protected noteCoordinatorDown(): void {
    this.crashes++;
    this.coordinatorDownSinceMs = this.q.now;
  }

  /**
   * Called at each protocol step; crashes the armed target synchronously, at
   * most once per crash point, as SystemWorld's crash points do.
   */
  protected point(point: CrashPointName, txnId: string, at: { coordinator: true } | { participant: string }): void {
    if (this.healed) return;
    for (const cp of this.armed) {
      if (cp.fired || cp.point !== point) continue;
      const members = this.members.get(txnId);
      if (!members) continue;
      if (cp.target === 'leader') {
        if (!('coordinator' in at) || !this.coordinatorUp()) continue;
        cp.fired = true;
        this.crashPointsFired++;
        this.timeline.add(
          txnId,
          `crash point ${point} (${POINT_MEANING[point].coordinator}): ${COORDINATOR} crashes ${cp.forever ? 'and stays down for good' : `for ${cp.downMs} ms`}`,
        );
        if (cp.forever) this.coordinatorLost = true;
        this.crashAtPoint = true;
        this.crash(COORDINATOR);
        this.crashAtPoint = false;
        if (!cp.forever) this.q.after(cp.downMs, () => !this.healed && this.restart(COORDINATOR));
      } else {
        const pid = members[cp.target % members.length];
        if (!('participant' in at) || at.participant !== pid) continue;
        cp.fired = true;
        this.crashPointsFired++;
        this.timeline.add(
          txnId,
          `crash point ${point} (${POINT_MEANING[point].participant}): ${pid} crashes for ${cp.downMs} ms`,
        );
        this.crashAtPoint = true;
        this.crash(pid);
        this.crashAtPoint = false;
        this.q.after(cp.downMs, () => !this.healed && this.restart(pid));
      }
    }
  }

  // ---- a run ------------------------------------------------------------------------

  run(): BaselineResult {
    try {
      this.runPhases();
    } catch (err) {
      this.checker.exception(err);
    }
    let committed = 0;
    for (const t of this.members.keys()) if (this.checker.decisionOf(t) === 'commit') committed++;
    // The AC4 line closes the story of the transaction it names.
    for (const v of this.checker.violations)
      if (v.includes('AC4')) this.timeline.add(txnOf(v), v.replace(/^t=\d+ms: /, ''));
    return {
      violations: this.checker.violations,
      timeline: this.timeline,
      steps: this.q.steps,
      crashes: this.crashes,
      partitions: this.partitions,
      txns: this.sc.txns.length,
      committed,
      crashPointsFired: this.crashPointsFired,
      votes: this.votes,
      members: this.members,
      coordinatorLost: this.coordinatorLost,
    };
  }

  private runPhases(): void {
    const t0 = 0;
    for (const f of this.sc.faults) {
      if (f.at >= this.sc.healAtMs) continue;
      scheduleFault(this, f, t0);
      const what = describeFault(f);
      if (what) this.q.at(t0 + f.at, () => !this.healed && this.timeline.add(null, what));
    }
    for (const [i, plan] of this.sc.txns.entries()) {
      const members = [...new Set(plan.members.map((m) => m % this.sc.participants))].map(
        (m) => this.participantIds[m],
      );
      const txnId = `t${i + 1}`;
      const noVoter = plan.no === null ? null : members[plan.no % members.length];
      this.members.set(txnId, members);
      this.checker.plan({ txnId, participants: members, noVoter });
      this.q.at(t0 + plan.atMs, () => {
        if (!this.coordinatorUp())
          return this.timeline.add(
            txnId,
            `a client asks ${COORDINATOR} to commit ${txnId}, but ${COORDINATOR} is down`,
          );
        this.began.add(txnId);
        this.timeline.add(
          txnId,
          `${COORDINATOR} begins ${txnId} with ${members.join(', ')} (vote timeout ${plan.timeoutMs} ms${noVoter ? `, ${noVoter} will vote NO` : ''})`,
        );
        this.beginTxn(txnId, members, plan);
      });
    }
    this.q.runUntil(t0 + this.sc.healAtMs);
    this.healed = true;
    this.net.heal();
    this.restartAll();
    this.timeline.add(
      null,
      `faults stop: the network heals, every participant is up${this.coordinatorLost ? `, ${COORDINATOR} stays down (lost for good)` : `, ${COORDINATOR} is up`}`,
    );
    // AC4: once healed, nothing may stay in doubt past livenessMs.
    if (!this.q.runUntilQuiet(this.sc.livenessMs, QUIET_POLL_MS, () => this.pendingAfterHeal() === null)) {
      const down = this.coordinatorUp()
        ? ''
        : `; ${COORDINATOR} has been down since t=${this.coordinatorDownSinceMs}ms`;
      this.checker.violation(
        `AC4 termination: ${this.sc.livenessMs} ms after healing, ${this.pendingAfterHeal()}${down}`,
      );
      return;
    }
    this.checker.final({
      faultFree: this.sc.faults.length === 0 && this.sc.crashPoints.length === 0,
      valueAt: (pid, key) => this.valueAt(pid, key),
      began: (txnId) => this.began.has(txnId),
    });
  }
}

/** A timeline line for faults that are not cuts (cuts are told by the network itself, crashes by the world). */
function describeFault(f: SysFault): string | null {
  switch (f.kind) {
    case 'loss':
      return `network: ${f.percent}% of messages lost for ${f.durMs} ms`;
    case 'duplicate':
      return `network: ${f.percent}% of messages duplicated for ${f.durMs} ms`;
    case 'delay':
      return `network: messages delayed up to ${f.extraMs} ms more for ${f.durMs} ms`;
    case 'slow-disk':
      return `a disk is ${f.extraMs} ms slower for ${f.durMs} ms`;
    default:
      return null;
  }
}
