// The Raft simulator: N production drivers (src/node/driver.ts) on one
// virtual clock, with simulated disks and a simulated network, every choice
// drawn from one seed. The checker below watches every Ready and every
// applied entry and records violations of Raft's safety properties.

import { COMMIT_NOTICE_MS_DEFAULT, Driver, snapshotStagger, type StateMachine } from '../../src/node/driver.ts';
import { ConfChangeType, type ConfChange } from '../../src/raft/confchange.ts';
import { RawNode } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import { emptyConfState, EMPTY, type ConfState, type Entry, type Message, type NodeId } from '../../src/raft/types.ts';
import { EventQueue } from './event-queue.ts';
import { SIM_RAFT_TUNING } from './raft-tuning.ts';
import { RaftChecker } from './raft-checker.ts';
import { SimCorruptLogError, SimDisk } from './sim-disk.ts';
import { SimNetwork } from './sim-network.ts';

export const TICK_MS = 100;
const ELECTION_TICKS = 10;

export type Fault =
  | { kind: 'crash'; at: number; node: number; downMs: number }
  | { kind: 'partition'; at: number; side: number[]; durMs: number }
  | { kind: 'isolate-leader'; at: number; durMs: number }
  | { kind: 'one-way'; at: number; from: number; to: number; durMs: number }
  | { kind: 'loss'; at: number; percent: number; durMs: number }
  | { kind: 'duplicate'; at: number; percent: number; durMs: number }
  | { kind: 'delay'; at: number; extraMs: number; durMs: number }
  | { kind: 'slow-disk'; at: number; node: number; extraMs: number; durMs: number }
  | { kind: 'transfer'; at: number; to: number }
  /** Crash, then the disk loses its last `records` synced entries (the high-water mark stays). */
  | { kind: 'lose-tail'; at: number; node: number; records: number; downMs: number }
  /** Crash, then a record of the log is corrupted: the node refuses to start until repaired. */
  | { kind: 'corrupt'; at: number; node: number; downMs: number };

/**
 * Operator acts, run one after another by a simulated operator that retries
 * (every 200 ms, against whoever leads) until each is done:
 * - add: a new node with an empty disk joins as a learner, is promoted once caught up;
 * - remove: a voter (`node` modulo the voters) or the leader itself;
 * - replace: a voter's disk is lost for good (crash, wiped, never restarted),
 *   then it is removed and a new node with an empty disk is added.
 * Removals keep at least two voters.
 */
export type MemberOp =
  | { kind: 'add'; at: number }
  | { kind: 'remove'; at: number; node: number; leader: boolean }
  | { kind: 'replace'; at: number; node: number };

export interface Scenario {
  seed: number;
  nodes: number;
  faults: Fault[];
  /** Faults happen before this time; afterwards the world is healthy. */
  healAtMs: number;
  /** After healing, a leader must commit a new entry on every node within this. */
  livenessMs: number;
  snapshotEntries: number;
  /** Membership changes during the faults (none: a fixed membership). */
  members?: MemberOp[];
  /** Checker self-test only: disks that acknowledge writes before they are durable. */
  lyingDisks?: boolean;
}

export interface SimResult {
  violations: string[];
  steps: number;
  committed: number;
  crashes: number;
  partitions: number;
  /** Membership changes that took effect (learner added, promoted, member removed). */
  confChanges: number;
  /** Lost synced tails and corrupted records injected; starts refused for a corrupted record. */
  diskFaults: number;
  refusals: number;
}

/** A state machine that remembers the order of what it applied. */
class LogMachine implements StateMachine<number> {
  applied: { index: number; term: number; data: string }[] = [];
  constructor(private readonly onConf: (index: number, term: number, data: string) => void = () => {}) {}
  apply(e: Entry): number {
    this.applied.push({ index: e.index, term: e.term, data: Buffer.from(e.data).toString() });
    return this.applied.length;
  }
  /** Membership changes are recorded like commands, so state machine safety covers them too. */
  applyConfChange(cc: ConfChange, e: Entry): void {
    const data = `conf:${ConfChangeType[cc.type]}:${cc.nodeId}`;
    this.applied.push({ index: e.index, term: e.term, data });
    this.onConf(e.index, e.term, data);
  }
  snapshot(): Uint8Array {
    return Buffer.from(JSON.stringify(this.applied));
  }
  restore(data: Uint8Array): void {
    this.applied = JSON.parse(Buffer.from(data).toString()) as LogMachine['applied'];
  }
}

interface SimNode {
  id: NodeId;
  disk: SimDisk;
  driver: Driver<number> | null;
  sm: LogMachine;
  up: boolean;
  /** Added by a membership change: starts with no configuration and waits for the leader. */
  joined: boolean;
  /** Its disk was lost: it must never run again under this id. */
  dead: boolean;
}

export class RaftWorld {
  readonly q = new EventQueue();
  readonly rng: Rng;
  readonly nodes: SimNode[] = [];
  readonly violations: string[] = [];
  private readonly conf: ConfState;
  private readonly net: SimNetwork;
  private readonly checker: RaftChecker;
  private clientSeq = 0;
  /** The highest log index of a write acknowledged to a client so far. */
  private ackedIndex = 0;
  reads = 0;
  crashes = 0;
  partitions = 0;
  confChanges = 0;
  /** Disk faults injected, and starts refused because of a corrupted record. */
  diskFaults = 0;
  refusals = 0;
  /**
   * The one node whose disk lies (the fault model: one node of three);
   * every disk fault of a schedule lands on it.
   */
  private diskFaultNode: number | null = null;

  constructor(readonly sc: Scenario) {
    this.rng = new Rng(sc.seed);
    this.net = new SimNetwork(this.q, this.rng);
    this.checker = new RaftChecker((what) => this.violation(what));
    const ids = Array.from({ length: sc.nodes }, (_, i) => `n${i + 1}`);
    this.conf = { voters: ids, learners: [], votersOutgoing: [] };
    for (const id of ids) {
      // The Raft shard keeps the store's other order (markBesideSegment) under its faults; the system shards run the
      // default.
      const node: SimNode = {
        id,
        disk: new SimDisk(this.q, new Rng(this.rng.u32()), sc.lyingDisks === true, true),
        driver: null,
        sm: new LogMachine(),
        up: false,
        joined: false,
        dead: false,
      };
      // The bootstrap act of a new cluster (`verdict cluster init`): every first member's store is founded before it
      // starts.
      node.disk.found();
      this.nodes.push(node);
      this.start(node);
    }
  }

  private violation(what: string): void {
    if (this.violations.length < 20) this.violations.push(`t=${this.q.now}ms: ${what}`);
  }

  // ---- nodes -------------------------------------------------------------

  private start(n: SimNode): void {
    const rawNode = RawNode.restart(
      // As a node runs: a moved commit index rides the next append, or goes on its own after COMMIT_NOTICE_MS.
      {
        id: n.id,
        random: new Rng(this.rng.u32()).asRandom(),
        electionTicks: ELECTION_TICKS,
        ...SIM_RAFT_TUNING,
        commitNoticeLazy: true,
      },
      n.disk.recover(),
      n.joined ? emptyConfState() : this.conf,
    );
    n.sm = new LogMachine((index, term, data) => {
      this.confChanges++;
      this.checker.onApplied(n.id, index, term, data);
    });
    this.checker.restarted(n.id);
    const driver: Driver<number> = new Driver<number>({
      node: rawNode,
      store: n.disk,
      transport: { send: (msgs) => this.send(n.id, msgs) },
      sm: n.sm,
      snapshotEntries: this.sc.snapshotEntries,
      // As a node runs: the log-size bound on, each node at its own share.
      snapshotLogRatio: 1,
      snapshotStagger: snapshotStagger(n.id),
      snapshotKeepEntries: 5,
      waitersMax: 1000,
      commitNotice: {
        delayMs: COMMIT_NOTICE_MS_DEFAULT,
        after: (ms, fn) => {
          this.q.after(ms, fn);
          return () => {};
        },
      },
      onFatal: (err) => this.violation(`${n.id} fatal: ${err.message}`),
      onApplied: (e) => this.checker.onApplied(n.id, e.index, e.term, Buffer.from(e.data).toString()),
      onPersisted: (rd) => this.checker.onReady(n.id, driver.node, n.disk, rd),
    });
    n.driver = driver;
    n.up = true;
    // The restored snapshot must be a prefix of what the cluster applied.
    for (const a of n.sm.applied) this.checker.onApplied(n.id, a.index, a.term, a.data);
    const phase = this.rng.int(TICK_MS);
    const tick = (): void => {
      if (n.driver !== driver || !n.up) return;
      driver.tick();
      this.q.after(TICK_MS, tick);
    };
    this.q.after(phase, tick);
  }

  crash(n: SimNode): void {
    if (!n.up) return;
    this.connectionsBroke(n);
    this.crashes++;
    n.up = false;
    n.driver?.stop();
    n.driver = null;
    n.disk.crash();
  }

  /**
   * A crashed process's sockets are reset by its kernel at once: every live
   * peer that can reach it sees its stream to it break, a millisecond later
   * (no randomness drawn, so every earlier schedule of a seed stays as it was).
   */
  private connectionsBroke(dead: SimNode): void {
    for (const peer of this.nodes) {
      const d = peer.driver;
      if (peer === dead || d === null || this.net.isBlocked(dead.id, peer.id)) continue;
      this.q.after(1, () => peer.driver === d && d.reportUnreachable(dead.id));
    }
  }

  restart(n: SimNode): void {
    if (n.up || n.dead) return;
    if (n.disk.corrupted) {
      // The real node refuses to start (src/storage/segment-log.ts); the
      // operator runs `verdict node repair` and starts it again, recovering.
      expectRefusal(() => n.disk.recover());
      this.refusals++;
      n.disk.repair();
    }
    this.start(n);
  }

  leader(): SimNode | null {
    let best: SimNode | null = null;
    for (const n of this.nodes) {
      if (!n.up || !n.driver?.isLeader()) continue;
      if (!best || n.driver.node.raft.term > (best.driver?.node.raft.term ?? 0)) best = n;
    }
    return best;
  }

  // ---- network -----------------------------------------------------------

  private send(from: NodeId, msgs: Message[]): void {
    for (const m of msgs) {
      this.net.send(from, m.to, () => {
        const to = this.nodes.find((x) => x.id === m.to);
        if (!to || !to.up || !to.driver) return;
        to.driver.receive([m]);
      });
    }
  }

  // ---- faults ----------------------------------------------------------

  private schedule(f: Fault): void {
    const node = (i: number): SimNode => this.nodes[i % this.nodes.length];
    switch (f.kind) {
      case 'crash':
        this.q.at(f.at, () => this.crash(node(f.node)));
        this.q.at(f.at + f.downMs, () => this.restart(node(f.node)));
        return;
      case 'lose-tail':
      case 'corrupt': {
        // A recovering node withholds its vote until caught up. With a voter
        // removed or lost for good beside it, that is two faulty nodes, and
        // the cluster rightly waits for an operator: no liveness to check.
        if ((this.sc.members?.length ?? 0) > 0) return;
        this.diskFaultNode ??= f.node % this.nodes.length;
        const n = this.nodes[this.diskFaultNode];
        this.q.at(f.at, () => {
          if (!n.up) return;
          this.crash(n);
          this.diskFaults++;
          if (f.kind === 'lose-tail') n.disk.loseSyncedTail(f.records);
          else n.disk.corrupt();
        });
        this.q.at(f.at + f.downMs, () => this.restart(n));
        return;
      }
      case 'partition':
        this.q.at(f.at, () => {
          this.partitions++;
          for (const a of this.nodes)
            for (const b of this.nodes) {
              const sa = f.side[this.nodes.indexOf(a)] ?? 0;
              const sb = f.side[this.nodes.indexOf(b)] ?? 0;
              if (sa !== sb) this.net.block(a.id, b.id);
            }
        });
        this.q.at(f.at + f.durMs, () => this.net.openAll());
        return;
      case 'isolate-leader':
        this.q.at(f.at, () => {
          const l = this.leader();
          if (!l) return;
          this.partitions++;
          for (const b of this.nodes) if (b !== l) this.net.block(l.id, b.id), this.net.block(b.id, l.id);
        });
        this.q.at(f.at + f.durMs, () => this.net.openAll());
        return;
      case 'one-way':
        this.q.at(f.at, () => {
          this.partitions++;
          this.net.block(node(f.from).id, node(f.to).id);
        });
        this.q.at(f.at + f.durMs, () => this.net.open(node(f.from).id, node(f.to).id));
        return;
      case 'loss':
        this.q.at(f.at, () => (this.net.lossPercent = f.percent));
        this.q.at(f.at + f.durMs, () => (this.net.lossPercent = 0));
        return;
      case 'duplicate':
        this.q.at(f.at, () => (this.net.dupPercent = f.percent));
        this.q.at(f.at + f.durMs, () => (this.net.dupPercent = 0));
        return;
      case 'delay':
        this.q.at(f.at, () => (this.net.extraDelayMs = f.extraMs));
        this.q.at(f.at + f.durMs, () => (this.net.extraDelayMs = 0));
        return;
      case 'slow-disk':
        this.q.at(f.at, () => (node(f.node).disk.slowMs = f.extraMs));
        this.q.at(f.at + f.durMs, () => (node(f.node).disk.slowMs = 0));
        return;
      case 'transfer':
        this.q.at(f.at, () => this.leader()?.driver?.transferLeadership(node(f.to).id));
        return;
    }
  }

  // ---- clients -----------------------------------------------------------

  private propose(): void {
    const l = this.leader();
    if (!l?.driver) return;
    const data = `c${++this.clientSeq}`;
    l.driver.propose(Buffer.from(data), (err, r) => {
      if (!err && r) this.ackedIndex = Math.max(this.ackedIndex, r.index);
    });
  }

  /**
   * A linearizable read (ReadIndex) at a random live node: when it returns,
   * that node must have applied every write acknowledged before it began.
   */
  private read(): void {
    const up = this.nodes.filter((n) => n.up && n.driver);
    if (up.length === 0) return;
    const n = up[this.rng.int(up.length)];
    const d = n.driver as Driver<number>;
    const mustSee = this.ackedIndex;
    this.reads++;
    d.read((err) => {
      if (err || n.driver !== d) return;
      const seen = n.sm.applied.length > 0 ? n.sm.applied[n.sm.applied.length - 1].index : 0;
      if (d.applied < mustSee)
        this.violation(
          `linearizable read: ${n.id} answered a read at applied ${d.applied} (state machine at ${seen}) but write ${mustSee} was acknowledged before the read began`,
        );
    });
  }

  // ---- a run -------------------------------------------------------------

  run(): SimResult {
    for (const f of this.sc.faults) if (f.at < this.sc.healAtMs) this.schedule(f);
    // Client load until healing, a proposal every few tens of ms.
    const client = (): void => {
      if (this.q.now >= this.sc.healAtMs) return;
      if (this.rng.chance(0.2)) this.read();
      else this.propose();
      this.q.after(10 + this.rng.int(60), client);
    };
    this.q.after(0, client);
    this.scheduleMembers();
    this.q.runUntil(this.sc.healAtMs);
    // Heal: everybody up, the network clean.
    this.net.heal();
    for (const n of this.nodes) {
      n.disk.slowMs = 0;
      this.restart(n);
    }
    this.checkLiveness();
    return {
      violations: this.violations,
      steps: this.q.steps,
      committed: this.checker.committed,
      crashes: this.crashes,
      partitions: this.partitions,
      confChanges: this.confChanges,
      diskFaults: this.diskFaults,
      refusals: this.refusals,
    };
  }

  // ---- membership ------------------------------------------------------

  private scheduleMembers(): void {
    const ops = [...(this.sc.members ?? [])].filter((op) => op.at < this.sc.healAtMs).sort((a, b) => a.at - b.at);
    let busy = false;
    const queue: MemberOp[] = [];
    const next = (): void => {
      const op = queue.shift();
      if (!op) {
        busy = false;
        return;
      }
      busy = true;
      this.runMemberOp(op, next);
    };
    for (const op of ops)
      this.q.at(op.at, () => {
        queue.push(op);
        if (!busy) next();
      });
  }

  private addNode(): SimNode {
    const id = `n${this.nodes.length + 1}`;
    const n: SimNode = {
      id,
      disk: new SimDisk(this.q, new Rng(this.rng.u32()), false),
      driver: null,
      sm: new LogMachine(),
      up: false,
      joined: true,
      dead: false,
    };
    this.nodes.push(n);
    this.start(n);
    return n;
  }

  /**
   * One operator act, retried every 200 ms against the current leader until
   * its effect shows in the leader's configuration. Each attempt looks at
   * that configuration first, so a retry after a lost answer is harmless.
   */
  private runMemberOp(op: MemberOp, done: () => void): void {
    const giveUpAt = this.sc.healAtMs + this.sc.livenessMs / 2;
    let target: NodeId | null = null;
    let phase: 'remove' | 'add' = op.kind === 'add' ? 'add' : 'remove';
    const attempt = (): void => {
      if (this.q.now > giveUpAt) return done();
      const l = this.leader();
      if (!l?.driver) return void this.q.after(200, attempt);
      const d = l.driver;
      const cs = d.node.confState();
      const isMember = (id: NodeId): boolean => cs.voters.includes(id) || cs.learners.includes(id);
      const propose = (type: ConfChangeType, nodeId: NodeId): void =>
        d.proposeConfChange({ type, nodeId, context: EMPTY }, () => {});
      if (phase === 'remove') {
        if (target === null) {
          if (cs.voters.length <= 2) return done();
          if (op.kind === 'remove' && op.leader) target = l.id;
          else {
            const node = op.kind === 'add' ? 0 : op.node;
            target = cs.voters[node % cs.voters.length];
          }
          if (op.kind === 'replace') {
            // The disk is gone: this id never runs again.
            const victim = this.nodes.find((n) => n.id === target) as SimNode;
            this.crash(victim);
            victim.dead = true;
          }
        }
        if (isMember(target)) {
          propose(ConfChangeType.Remove, target);
          return void this.q.after(200, attempt);
        }
        if (op.kind === 'remove') return done();
        phase = 'add';
        target = null;
      }
      if (target === null) target = this.addNode().id;
      if (cs.voters.includes(target)) return done();
      if (!cs.learners.includes(target)) propose(ConfChangeType.AddLearner, target);
      else {
        // Promote once the learner holds everything committed so far.
        const pr = d.node.raft.progress.get(target);
        if (pr && pr.match >= d.node.raft.log.committed) propose(ConfChangeType.AddVoter, target);
      }
      this.q.after(200, attempt);
    };
    attempt();
  }

  /** After healing, a new proposal must be applied on every node within livenessMs. */
  private checkLiveness(): void {
    const probe = `probe-${this.sc.seed}`;
    const deadline = this.q.now + this.sc.livenessMs;
    // Every member (voter or learner) in the leader's configuration; removed and dead nodes are out.
    const everywhere = (): boolean => {
      const l = this.leader();
      if (!l?.driver) return false;
      const cs = l.driver.node.confState();
      return [...cs.voters, ...cs.learners].every(
        (id) => this.nodes.find((n) => n.id === id)?.sm.applied.some((a) => a.data === probe) === true,
      );
    };
    let proposed = false;
    let proposedAt = 0;
    const tryPropose = (): void => {
      if (everywhere() || this.q.now > deadline) return;
      const l = this.leader();
      // Like a real client: retry after an error or after 3 s without an answer.
      if (l?.driver && (!proposed || this.q.now - proposedAt > 3_000)) {
        proposed = true;
        proposedAt = this.q.now;
        l.driver.propose(Buffer.from(probe), (err) => {
          if (err) proposed = false;
        });
      }
      this.q.after(TICK_MS, tryPropose);
    };
    this.q.after(0, tryPropose);
    let done = false;
    this.q.runUntil(deadline, () => (done = everywhere()));
    if (!done) {
      const states = this.nodes
        .map(
          (n) =>
            `${n.id}:${n.driver?.node.raft.role}/t${n.driver?.node.raft.term}/c${n.driver?.node.raft.log.committed}`,
        )
        .join(' ');
      this.violation(
        `liveness: ${this.sc.livenessMs}ms after healing, the probe entry is not applied everywhere (${states})`,
      );
    }
  }
}

/** A corrupted disk must refuse to start: anything else is a simulator bug. */
function expectRefusal(recover: () => unknown): void {
  try {
    recover();
  } catch (err) {
    if (err instanceof SimCorruptLogError) return;
    throw err;
  }
  throw new Error('sim: a corrupted disk recovered without refusing');
}
