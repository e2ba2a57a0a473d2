// The Raft simulator: N production drivers (src/node/driver.ts) on one
// virtual clock, with simulated disks and a simulated network, every choice
// drawn from one seed. The checker below watches every Ready and every
// applied entry and records violations of Raft's safety properties.

import { Driver, type StateMachine } from '../../src/node/driver.ts';
import { RawNode } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import type { ConfState, Entry, Message, NodeId } from '../../src/raft/types.ts';
import { EventQueue } from './event-queue.ts';
import { RaftChecker } from './raft-checker.ts';
import { SimDisk } from './sim-disk.ts';
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
  | { kind: 'transfer'; at: number; to: number };

export interface Scenario {
  seed: number;
  nodes: number;
  faults: Fault[];
  /** Faults happen before this time; afterwards the world is healthy. */
  healAtMs: number;
  /** After healing, a leader must commit a new entry on every node within this. */
  livenessMs: number;
  snapshotEntries: number;
  /** Checker self-test only: disks that acknowledge writes before they are durable. */
  lyingDisks?: boolean;
}

export interface SimResult {
  violations: string[];
  steps: number;
  committed: number;
  crashes: number;
  partitions: number;
}

/** A state machine that remembers the order of what it applied. */
class LogMachine implements StateMachine<number> {
  applied: { index: number; term: number; data: string }[] = [];
  apply(e: Entry): number {
    this.applied.push({ index: e.index, term: e.term, data: Buffer.from(e.data).toString() });
    return this.applied.length;
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

  constructor(readonly sc: Scenario) {
    this.rng = new Rng(sc.seed);
    this.net = new SimNetwork(this.q, this.rng);
    this.checker = new RaftChecker((what) => this.violation(what));
    const ids = Array.from({ length: sc.nodes }, (_, i) => `n${i + 1}`);
    this.conf = { voters: ids, learners: [], votersOutgoing: [] };
    for (const id of ids) {
      const node: SimNode = { id, disk: new SimDisk(this.q, new Rng(this.rng.u32()), sc.lyingDisks === true), driver: null, sm: new LogMachine(), up: false };
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
      { id: n.id, random: new Rng(this.rng.u32()).asRandom(), electionTicks: ELECTION_TICKS, heartbeatTicks: 1, inflightMsgsMax: 8, inflightBytesMax: 1 << 20, appendBytesMax: 4096 },
      n.disk.recover(),
      this.conf,
    );
    n.sm = new LogMachine();
    this.checker.restarted(n.id);
    const driver: Driver<number> = new Driver<number>({
      node: rawNode,
      store: n.disk,
      transport: { send: (msgs) => this.send(n.id, msgs) },
      sm: n.sm,
      snapshotEntries: this.sc.snapshotEntries,
      snapshotKeepEntries: 5,
      waitersMax: 1000,
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
    this.crashes++;
    n.up = false;
    n.driver?.stop();
    n.driver = null;
    n.disk.crash();
  }

  restart(n: SimNode): void {
    if (n.up) return;
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
          for (const b of this.nodes) if (b !== l) (this.net.block(l.id, b.id), this.net.block(b.id, l.id));
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
      if (d.applied < mustSee) this.violation(`linearizable read: ${n.id} answered a read at applied ${d.applied} (state machine at ${seen}) but write ${mustSee} was acknowledged before the read began`);
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
    this.q.runUntil(this.sc.healAtMs);
    // Heal: everybody up, the network clean.
    this.net.heal();
    for (const n of this.nodes) {
      n.disk.slowMs = 0;
      this.restart(n);
    }
    this.checkLiveness();
    return { violations: this.violations, steps: this.q.steps, committed: this.checker.committed, crashes: this.crashes, partitions: this.partitions };
  }

  /** After healing, a new proposal must be applied on every node within livenessMs. */
  private checkLiveness(): void {
    const probe = `probe-${this.sc.seed}`;
    const deadline = this.q.now + this.sc.livenessMs;
    const everywhere = (): boolean => this.nodes.every((n) => n.sm.applied.some((a) => a.data === probe));
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
      const states = this.nodes.map((n) => `${n.id}:${n.driver?.node.raft.role}/t${n.driver?.node.raft.term}/c${n.driver?.node.raft.log.committed}`).join(' ');
      this.violation(`liveness: ${this.sc.livenessMs}ms after healing, the probe entry is not applied everywhere (${states})`);
    }
  }
}
