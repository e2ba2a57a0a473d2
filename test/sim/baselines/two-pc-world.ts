// Classic 2PC in the simulator: the pure TwoPcCoordinator with a synced local
// log (a SimJournal: a crash loses what was not yet synced) and the
// production participant engine — the same ParticipantEngine, MemoryResource
// and simulated journal SystemWorld runs under Verdict — on the same network
// and fault schedules. Only the other side of the participant's questions
// differs: here askOutcome asks the one coordinator.
//
// To give 2PC its best chance, participants also run the cooperative
// termination protocol: when the coordinator does not answer, a participant
// in doubt asks its peers. A peer that knows the outcome tells it; a peer that
// never voted aborts the transaction on the spot (it will vote NO if the
// PREPARE comes later) and says ABORT. What is left is the case Skeen and
// Stonebraker proved unavoidable: every participant voted YES, none has heard
// the decision, and the only one who knows is down — they block (AC4 lost).

import type { ParticipantEngine } from '../../../src/participant/engine.ts';
import { memoryPayload } from '../../../src/participant/memory.ts';
import type { ClusterOutcome, Outcome } from '../../../src/participant/types.ts';
import { Rng } from '../../../src/raft/rng.ts';
import type { Ack, VoteAnswer as Vote } from '../../../src/domain/protocol.ts';
import { keyOf, valueOf } from '../system-checker.ts';
import { crashSimParticipant, SimJournal, startSimParticipant, type SimParticipant } from '../system-participant.ts';
import { DEAD, type Inc, type Reply, type RpcError } from '../system-rpc.ts';
import type { TxnPlan } from '../system-scenario.ts';
import { TwoPcCoordinator, type TwoPcAction } from './two-pc.ts';
import { BaselineWorld, COORDINATOR, type BaselineScenario } from './world.ts';

const CLUSTER = '2pc';
const TICK_MS = 100;
const RPC_DEADLINE_MS = 1_000;
const RETRY_MS = 500;

/** The coordinator's log record: a COMMIT and who must hear it. Aborts are not logged (presumed abort). */
interface CommitRecord {
  txnId: string;
  participants: string[];
  atMs: number;
}

export class TwoPcWorld extends BaselineWorld {
  private coord: TwoPcCoordinator | null = null;
  private coordInc: Inc = DEAD;
  private readonly coordLog: SimJournal<CommitRecord>;
  private readonly parts: SimParticipant[] = [];
  private readonly noVoters = new Map<string, string | null>();

  constructor(sc: BaselineScenario) {
    super(sc, '2pc');
    this.coordLog = new SimJournal<CommitRecord>(this.q, new Rng(this.rng.u32()));
    for (const id of this.participantIds) {
      const p: SimParticipant = {
        id,
        journal: new SimJournal(this.q, new Rng(this.rng.u32())),
        up: false,
        inc: DEAD,
        engine: null,
        resource: null,
      };
      this.parts.push(p);
      this.startParticipant(p);
    }
    this.startCoordinator();
  }

  coordinatorUp(): boolean {
    return this.coord !== null;
  }

  // ---- the coordinator ---------------------------------------------------------

  private startCoordinator(): void {
    const inc: Inc = { alive: true };
    this.coordInc = inc;
    this.coord = new TwoPcCoordinator({ retryMs: RETRY_MS }, this.coordLog.durable);
    // A COMMIT record that reached the disk as the coordinator crashed (the disk
    // may have written it before the sync returned) is a decision all the same.
    for (const r of this.coordLog.durable)
      this.decided(r.txnId, 'commit', r.participants, 'COMMIT record found in the log after a restart', true);
    const tick = (): void => {
      if (!inc.alive || !this.coord) return;
      this.exec(this.coord.tick(this.q.now), inc);
      this.q.after(TICK_MS, tick);
    };
    this.q.after(this.rng.int(TICK_MS), tick);
  }

  protected beginTxn(txnId: string, participants: string[], plan: TxnPlan): void {
    this.noVoters.set(txnId, plan.no === null ? null : participants[plan.no % participants.length]);
    if (this.coord) this.exec(this.coord.begin(txnId, participants, plan.timeoutMs, this.q.now), this.coordInc);
  }

  /** Carries out the coordinator's actions, in order, while its incarnation lives (a crash point may end it midway). */
  private exec(actions: TwoPcAction[], inc: Inc): void {
    for (const a of actions) {
      if (!inc.alive) return;
      switch (a.t) {
        case 'prepare':
          this.sendPrepare(a, inc);
          break;
        case 'log-commit':
          this.timeline.add(a.txnId, `${COORDINATOR} writes COMMIT to its log and syncs it`);
          this.coordLog.append({ txnId: a.txnId, participants: a.participants, atMs: this.q.now }, () => {
            if (inc.alive && this.coord) this.exec(this.coord.onCommitLogged(a.txnId, this.q.now), inc);
          });
          this.point('commit-proposed', a.txnId, { coordinator: true });
          break;
        case 'decided':
          this.decided(a.txnId, a.outcome, a.participants, a.reason, a.outcome === 'commit');
          if (a.outcome === 'commit') this.point('commit-applied', a.txnId, { coordinator: true });
          break;
        case 'decision':
          this.sendDecision(a.txnId, a.to, a.outcome, inc);
          break;
      }
    }
  }

  private sendPrepare(a: Extract<TwoPcAction, { t: 'prepare' }>, inc: Inc): void {
    this.point('prepare-send', a.txnId, { coordinator: true });
    if (!inc.alive) return;
    const p = this.part(a.to);
    const no = this.noVoters.get(a.txnId) === p.id;
    const payload = no
      ? memoryPayload({}, 'told to vote NO')
      : memoryPayload({ [keyOf(a.txnId)]: valueOf(a.txnId, p.id) });
    this.timeline.once(a.txnId, `${COORDINATOR} sends PREPARE to ${a.participants.join(', ')}`);
    this.callParticipant<Vote>(
      p,
      inc,
      (eng, r) =>
        eng.prepare(
          {
            clusterId: CLUSTER,
            txnId: a.txnId,
            participantId: p.id,
            participants: a.participants,
            payload,
            timeoutMs: a.timeoutMs,
          },
          (err, vote) => {
            if (err || !vote) return r({ code: err?.code ?? 'UNAVAILABLE', message: err?.message ?? 'no vote' });
            const yes = vote.vote === 'yes';
            this.voted(p.id, a.txnId, yes ? 'yes' : 'no', yes ? 'prepared state synced' : vote.reason);
            if (yes) this.point('some-prepared', a.txnId, { participant: p.id });
            r(null, vote);
          },
        ),
      (err, vote) => {
        if (!this.coord) return;
        if (err || !vote) return this.exec(this.coord.onVote(a.txnId, p.id, null), inc);
        const yes = vote.vote === 'yes';
        if (yes) this.point('some-prepared', a.txnId, { coordinator: true });
        if (inc.alive && this.coord) this.exec(this.coord.onVote(a.txnId, p.id, yes ? 'yes' : 'no'), inc);
      },
    );
  }

  private sendDecision(txnId: string, to: string, outcome: 'commit' | 'abort', inc: Inc): void {
    const p = this.part(to);
    const commit = outcome === 'commit';
    this.timeline.once(txnId, `${COORDINATOR} sends DECISION ${outcome.toUpperCase()} to ${to}`);
    this.callParticipant<Ack>(
      p,
      inc,
      (eng, r) =>
        eng.decide({ clusterId: CLUSTER, txnId, participantId: p.id, outcome, reason: '' }, (err, ack) => {
          if (err || !ack) return r({ code: err?.code ?? 'UNAVAILABLE', message: err?.message ?? 'no ack' });
          if (commit) this.point('some-decided', txnId, { participant: p.id });
          r(null, ack);
        }),
      (err) => {
        if (!this.coord || !commit) return;
        if (!err) this.point('some-decided', txnId, { coordinator: true });
        if (inc.alive && this.coord) this.coord.onAck(txnId, p.id, err === null);
      },
    );
  }

  // ---- participants: the production engine, wired as SystemWorld wires it -------

  private part(id: string): SimParticipant {
    const p = this.parts.find((x) => x.id === id);
    if (!p) throw new Error(`2pc world: no participant ${id}`);
    return p;
  }

  private startParticipant(p: SimParticipant): void {
    startSimParticipant(p, {
      clusterId: CLUSTER,
      q: this.q,
      checker: this.checker,
      applied: (txnId, outcome) =>
        this.timeline.add(txnId, `${p.id} ${outcome === 'COMMITTED' ? 'COMMITS' : 'ABORTS'} ${txnId}`),
      askOutcome: (inc, txnId, cb) => this.askOutcome(p, inc, txnId, cb),
    });
  }

  /** A coordinator RPC to participant p, served by its engine while p is up (the participant's gRPC service's role). */
  private callParticipant<T>(
    p: SimParticipant,
    inc: Inc,
    serve: (eng: ParticipantEngine, r: Reply<T>) => void,
    cb: Reply<T>,
  ): void {
    this.rpc.call<T>(
      COORDINATOR,
      inc,
      p.id,
      RPC_DEADLINE_MS,
      (reply) => {
        if (!p.up || !p.engine) return;
        const served = p.inc;
        serve(p.engine, (err, v) => served.alive && reply(err, v));
      },
      cb,
    );
  }

  /** The participant in doubt asks the coordinator; if it does not answer, its peers (cooperative termination). */
  private askOutcome(
    p: SimParticipant,
    inc: Inc,
    txnId: string,
    cb: (err: Error | null, o: ClusterOutcome) => void,
  ): void {
    this.rpc.call<Outcome | 'IN_PROGRESS'>(
      p.id,
      inc,
      COORDINATOR,
      RPC_DEADLINE_MS,
      (reply) => {
        if (this.coord) reply(null, this.coord.outcome(txnId));
      },
      (err, o) => {
        if (!err && o) {
          this.timeline.once(txnId, `${p.id} asks ${COORDINATOR} about ${txnId}: ${o}`);
          return cb(null, o);
        }
        this.timeline.once(
          txnId,
          `${p.id} asks ${COORDINATOR} about ${txnId}: no answer within ${RPC_DEADLINE_MS} ms; asks its peers (cooperative termination)`,
        );
        this.askPeers(p, inc, txnId, cb);
      },
    );
  }

  private askPeers(
    p: SimParticipant,
    inc: Inc,
    txnId: string,
    cb: (err: Error | null, o: ClusterOutcome) => void,
  ): void {
    const peers = (this.members.get(txnId) ?? []).filter((q) => q !== p.id);
    if (peers.length === 0) return cb(null, 'UNKNOWN');
    const heard: string[] = [];
    let final: ClusterOutcome = 'UNKNOWN';
    let left = peers.length;
    for (const q of peers) {
      this.rpc.call<ClusterOutcome>(
        p.id,
        inc,
        q,
        RPC_DEADLINE_MS,
        (reply) => this.peerAnswer(this.part(q), txnId, reply),
        (err, o) => {
          heard.push(`${q}: ${err ? 'no answer' : o === 'UNKNOWN' ? 'in doubt too' : o}`);
          if (!err && (o === 'COMMITTED' || o === 'ABORTED')) final = o;
          if (--left > 0) return;
          this.timeline.once(txnId, `${p.id} hears from its peers about ${txnId}: ${heard.sort().join(', ')}`);
          cb(null, final);
        },
      );
    }
  }

  /** A peer's side of cooperative termination. */
  private peerAnswer(q: SimParticipant, txnId: string, reply: Reply<ClusterOutcome>): void {
    if (!q.up || !q.engine) return;
    const inc = q.inc;
    const state = q.engine.stateOf(txnId);
    if (state === 'COMMITTED' || state === 'ABORTED') return reply(null, state);
    // Prepared, or a PREPARE on its way to a YES: it may not decide alone.
    if (state === 'prepared' || q.engine.counts().preparing > 0) return reply(null, 'UNKNOWN');
    this.timeline.once(txnId, `${q.id} never voted on ${txnId}: aborts it (a later PREPARE gets NO)`);
    q.engine.decide(
      {
        clusterId: CLUSTER,
        txnId,
        participantId: q.id,
        outcome: 'abort',
        reason: 'cooperative termination: never voted',
      },
      (err) => {
        if (!inc.alive) return;
        if (err) reply({ code: err.code, message: err.message } satisfies RpcError);
        else reply(null, 'ABORTED');
      },
    );
  }

  // ---- faults -------------------------------------------------------------------

  crash(id: string): void {
    if (id === COORDINATOR) {
      if (!this.coord) return;
      if (!this.crashAtPoint) this.timeline.add(null, `${COORDINATOR} crashes`);
      this.coordInc.alive = false;
      this.coordLog.crash();
      this.coord = null;
      this.noteCoordinatorDown();
      return;
    }
    const p = this.part(id);
    if (!p.up) return;
    if (!this.crashAtPoint) this.timeline.add(null, `${p.id} crashes`);
    this.crashes++;
    crashSimParticipant(p);
  }

  restart(id: string): void {
    if (id === COORDINATOR) {
      if (this.coord || this.coordinatorLost) return;
      this.timeline.add(null, `${COORDINATOR} restarts (${this.coordLog.durable.length} COMMIT records in its log)`);
      this.coordinatorDownSinceMs = null;
      this.startCoordinator();
      return;
    }
    const p = this.part(id);
    if (p.up) return;
    this.timeline.add(null, `${p.id} restarts`);
    this.startParticipant(p);
  }

  setSlowDisk(id: string, extraMs: number): void {
    if (id === COORDINATOR) this.coordLog.slowMs = extraMs;
    else this.part(id).journal.slowMs = extraMs;
  }

  protected restartAll(): void {
    this.coordLog.slowMs = 0;
    this.restart(COORDINATOR);
    for (const p of this.parts) {
      p.journal.slowMs = 0;
      this.restart(p.id);
    }
  }

  protected pendingAfterHeal(): string | null {
    const pending: string[] = [];
    for (const p of this.parts) {
      if (!p.up || !p.engine) pending.push(`${p.id} is down`);
      else {
        const doubt = p.engine.inDoubt().map((d) => d.txnId);
        if (doubt.length > 0)
          pending.push(`${p.id} is still in doubt on ${doubt.join(' ')} (it voted YES and may not decide alone)`);
        if (p.engine.counts().preparing > 0) pending.push(`${p.id} is still preparing`);
      }
    }
    return pending.length === 0 ? null : pending.join('; ');
  }

  protected valueAt(participant: string, key: string): string | undefined {
    return this.part(participant).resource?.get(key);
  }
}
