// Three-phase commit with timeouts in the simulator: the pure
// ThreePcCoordinator and ThreePcParticipant on the same network, fault
// schedules and checker as Verdict. Each participant holds its data in the
// production MemoryResource and syncs its prepared state to a simulated
// journal before it votes YES, as Verdict's participants do; what differs is
// the protocol — a participant decides alone when its timeout fires.
//
// Fault model: network faults only (partitions, one-way cuts, delay); every
// process stays up. That is 3PC's home ground — it was built not to block
// when processes crash — and the search shows a partition alone is enough to
// lose AC1. (Crashes are refused loudly: this model has no recovery
// protocol, so a schedule with a crash would test nothing true.)

import { memoryPayload, MemoryResource } from '../../../src/participant/memory.ts';
import { recordKindOf, type Outcome, type TxnRecord } from '../../../src/participant/types.ts';
import { Rng } from '../../../src/raft/rng.ts';
import { keyOf, valueOf } from '../system-checker.ts';
import { RecordingResource, SimJournal } from '../system-participant.ts';
import { ALWAYS } from '../system-rpc.ts';
import type { TxnPlan } from '../system-scenario.ts';
import {
  ThreePcCoordinator,
  ThreePcParticipant,
  type CoordinatorAction,
  type ParticipantDecision,
  type ThreePcConfig,
} from './three-pc.ts';
import { BaselineWorld, COORDINATOR, type BaselineScenario } from './world.ts';

const TICK_MS = 100;
const RPC_DEADLINE_MS = 1_000;

export const THREE_PC_CONFIG: ThreePcConfig = {
  ackTimeoutMs: 500,
  uncertainTimeoutMs: 1_000,
  precommitTimeoutMs: 1_000,
};

interface Part {
  id: string;
  model: ThreePcParticipant;
  journal: SimJournal;
  resource: MemoryResource;
  recording: RecordingResource;
}

export class ThreePcWorld extends BaselineWorld {
  private readonly coord = new ThreePcCoordinator(THREE_PC_CONFIG);
  private readonly parts: Part[] = [];
  private readonly noVoters = new Map<string, string | null>();

  constructor(sc: BaselineScenario) {
    super(sc, '3pc');
    for (const id of this.participantIds) {
      const resource = new MemoryResource();
      const recording = new RecordingResource(resource, (txnId, outcome) =>
        this.checker.participantApplied(id, txnId, outcome),
      );
      this.parts.push({
        id,
        model: new ThreePcParticipant(id, THREE_PC_CONFIG),
        journal: new SimJournal(this.q, new Rng(this.rng.u32())),
        resource,
        recording,
      });
    }
    const tick = (): void => {
      this.exec(this.coord.tick(this.q.now));
      for (const p of this.parts) for (const d of p.model.tick(this.q.now)) this.apply(p, d);
      this.q.after(TICK_MS, tick);
    };
    this.q.after(this.rng.int(TICK_MS), tick);
  }

  coordinatorUp(): boolean {
    return true;
  }

  protected beginTxn(txnId: string, participants: string[], plan: TxnPlan): void {
    this.noVoters.set(txnId, plan.no === null ? null : participants[plan.no % participants.length]);
    this.exec(this.coord.begin(txnId, participants, plan.timeoutMs, this.q.now));
  }

  private exec(actions: CoordinatorAction[]): void {
    for (const a of actions) {
      switch (a.t) {
        case 'can-commit':
          this.timeline.once(a.txnId, `${COORDINATOR} sends CanCommit`);
          this.canCommit(a.txnId, this.part(a.to), a.timeoutMs);
          break;
        case 'pre-commit':
          this.timeline.once(a.txnId, `${COORDINATOR} has every YES: sends PreCommit`);
          this.rpc.call<boolean>(
            COORDINATOR,
            ALWAYS,
            a.to,
            THREE_PC_CONFIG.ackTimeoutMs,
            (reply) => {
              const p = this.part(a.to);
              const before = p.model.stateOf(a.txnId);
              const ack = p.model.preCommit(a.txnId, this.q.now);
              if (before === 'uncertain' && ack)
                this.timeline.add(a.txnId, `${p.id} gets PreCommit: precommitted, ACKs`);
              else if (!ack)
                this.timeline.add(a.txnId, `${p.id} gets PreCommit but has ${before ?? 'never voted'}: no ACK`);
              reply(null, ack);
            },
            (err, ack) => {
              if (!err && ack) this.exec(this.coord.onPreCommitAck(a.txnId, a.to));
            },
          );
          break;
        case 'do-commit':
        case 'abort': {
          const outcome: Outcome = a.t === 'do-commit' ? 'COMMITTED' : 'ABORTED';
          this.timeline.once(a.txnId, `${COORDINATOR} sends ${a.t === 'do-commit' ? 'DoCommit' : 'Abort'}`);
          this.rpc.call<true>(
            COORDINATOR,
            ALWAYS,
            a.to,
            RPC_DEADLINE_MS,
            (reply) => {
              const p = this.part(a.to);
              const d = p.model.onDecision(a.txnId, outcome);
              if (d) this.apply(p, d);
              reply(null, true);
            },
            () => {},
          );
          break;
        }
        case 'decided':
          this.decided(a.txnId, a.outcome, a.participants, a.reason, false);
          break;
      }
    }
  }

  /** CanCommit at participant p: the resource prepares, the prepared record is synced, then the vote goes back. */
  private canCommit(txnId: string, p: Part, timeoutMs: number): void {
    const no = this.noVoters.get(txnId) === p.id;
    const payload = no ? memoryPayload({}, 'told to vote NO') : memoryPayload({ [keyOf(txnId)]: valueOf(txnId, p.id) });
    this.rpc.call<'yes' | 'no'>(
      COORDINATOR,
      ALWAYS,
      p.id,
      timeoutMs,
      (reply) => {
        // A repeated CanCommit gets the vote the first one got.
        if (p.model.stateOf(txnId) !== undefined) return reply(null, p.model.vote(txnId, true, this.q.now));
        p.resource.prepare(txnId, payload, (err, rv) => {
          if (err || !rv.yes) {
            const vote = p.model.vote(txnId, false, this.q.now);
            this.voted(p.id, txnId, vote, err?.message ?? rv.reason);
            return reply(null, vote);
          }
          const record: TxnRecord = {
            kind: 'prepared',
            txnId,
            atMs: this.q.now,
            payloadB64: '',
            participants: this.members.get(txnId) ?? [],
          };
          p.journal.append(record, () => {
            const vote = p.model.vote(txnId, true, this.q.now);
            this.voted(p.id, txnId, vote, 'prepared state synced; uncertain now');
            reply(null, vote);
          });
        });
      },
      (err, vote) => this.exec(this.coord.onVote(txnId, p.id, err ? null : (vote ?? null), this.q.now)),
    );
  }

  /** A participant's decision, from the coordinator or from its own timeout, applied to its data. */
  private apply(p: Part, d: ParticipantDecision): void {
    this.timeline.add(d.txnId, `${p.id} ${d.outcome === 'COMMITTED' ? 'COMMITS' : 'ABORTS'}: ${d.why}`);
    p.journal.append({ kind: recordKindOf(d.outcome), txnId: d.txnId, atMs: this.q.now }, () => {});
    const done = (): void => {};
    if (d.outcome === 'COMMITTED') p.recording.commit(d.txnId, done);
    else p.recording.abort(d.txnId, done);
  }

  private part(id: string): Part {
    const p = this.parts.find((x) => x.id === id);
    if (!p) throw new Error(`3pc world: no participant ${id}`);
    return p;
  }

  // ---- faults -------------------------------------------------------------------

  crash(id: string): void {
    throw new Error(`3pc baseline: a crash of ${id} was scheduled, but this model has network faults only`);
  }

  restart(): void {}

  setSlowDisk(id: string): void {
    throw new Error(`3pc baseline: a slow disk at ${id} was scheduled, but this model has network faults only`);
  }

  protected restartAll(): void {}

  protected pendingAfterHeal(): string | null {
    const pending = this.parts
      .filter((p) => p.model.undecided().length > 0)
      .map((p) => `${p.id} undecided on ${p.model.undecided().join(' ')}`);
    return pending.length === 0 ? null : pending.join('; ');
  }

  protected valueAt(participant: string, key: string): string | undefined {
    return this.part(participant).resource.get(key);
  }
}
