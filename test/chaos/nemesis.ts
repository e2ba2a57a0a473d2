// The nemesis: a seeded schedule of faults against real processes.
//
// One fault at a time, each held for a while and then undone, with a calm
// gap before the next: SIGKILL of the leader, of a follower or of a
// participant (restarted on the same data), SIGSTOP/SIGCONT of a node or a
// participant, and partitions through the link proxies — the leader
// isolated, a minority node isolated, and one-way cuts (the leader cannot
// send, or cannot hear). The seed fixes the sequence of choices (fault kind,
// which process, hold and gap lengths, drop or reset); what the processes do
// meanwhile is real and not replayable, so a seed replays the schedule, not
// the run.
import { Rng } from '../../src/raft/rng.ts';
import type { Cluster, NodeProc } from '../process/harness.ts';
import { sleep } from '../process/harness.ts';
import type { LinkTable } from './proxy.ts';

export type FaultKind =
  | 'kill-leader'
  | 'kill-follower'
  | 'kill-participant'
  | 'stop-node'
  | 'stop-participant'
  | 'isolate-leader'
  | 'isolate-minority'
  | 'one-way';

const KINDS: readonly FaultKind[] = [
  'kill-leader',
  'kill-follower',
  'kill-participant',
  'stop-node',
  'stop-participant',
  'isolate-leader',
  'isolate-minority',
  'one-way',
];

export interface FaultCounts {
  kills: number;
  stops: number;
  partitions: number;
}

export interface NemesisOptions {
  seed: number;
  cluster: Cluster;
  participants: NodeProc[];
  links: LinkTable;
  /** How long one fault is held: [min, max) ms. */
  holdMs?: [number, number];
  /** The calm gap after a fault is undone: [min, max) ms. */
  gapMs?: [number, number];
  log?: (line: string) => void;
}

export class Nemesis {
  readonly counts: FaultCounts = { kills: 0, stops: 0, partitions: 0 };
  /** One line per fault, in order: what was done to whom. */
  readonly history: string[] = [];
  private readonly rng: Rng;
  private readonly holdMs: [number, number];
  private readonly gapMs: [number, number];
  private readonly log: (line: string) => void;

  constructor(private readonly o: NemesisOptions) {
    this.rng = new Rng(o.seed);
    this.holdMs = o.holdMs ?? [1_000, 4_000];
    this.gapMs = o.gapMs ?? [500, 1_500];
    this.log = o.log ?? (() => {});
  }

  get total(): number {
    return this.counts.kills + this.counts.stops + this.counts.partitions;
  }

  /** Injects faults until `untilMs` (Date.now() clock), then heals everything. */
  async run(untilMs: number): Promise<void> {
    try {
      // Rounds of every kind in a seeded order, so even a short run sees most kinds.
      let round: FaultKind[] = [];
      while (Date.now() < untilMs) {
        if (round.length === 0) round = this.shuffle(KINDS);
        await this.one(round.pop() as FaultKind);
        await sleep(this.between(this.gapMs));
      }
    } finally {
      await this.healAll();
    }
  }

  /** Every link passes, every process runs and is not stopped. */
  async healAll(): Promise<void> {
    this.o.links.healAll();
    for (const p of this.procs()) {
      p.resume();
      if (!p.running) p.start();
    }
  }

  private procs(): NodeProc[] {
    return [...this.o.cluster.nodes, ...this.o.participants];
  }

  private between([lo, hi]: [number, number]): number {
    return lo + this.rng.int(Math.max(1, hi - lo));
  }

  private shuffle<T>(xs: readonly T[]): T[] {
    const out = [...xs];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.rng.int(i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  private pick<T>(xs: readonly T[]): T {
    return xs[this.rng.int(xs.length)];
  }

  /** The node that says it leads in the highest term, or null when none answers as leader now. */
  private async leader(): Promise<NodeProc | null> {
    let best: { node: NodeProc; term: number } | null = null;
    for (const [node, s] of await this.o.cluster.statuses()) {
      if (s instanceof Error || s.role !== 'leader') continue;
      if (best === null || s.term > best.term) best = { node, term: s.term };
    }
    return best?.node ?? null;
  }

  private async one(kind: FaultKind): Promise<void> {
    // Draw every choice up front, so the schedule depends on the seed alone, not on who turned out to lead.
    const hold = this.between(this.holdMs);
    const nodeIndex = this.rng.int(this.o.cluster.nodes.length);
    const participant = this.pick(this.o.participants);
    const mode = this.rng.chance(0.5) ? 'blackhole' : 'reset';
    const leaderSends = this.rng.chance(0.5);
    const stopLeader = this.rng.chance(0.5);
    const nodes = this.o.cluster.nodes;
    const leader = await this.leader();
    const followers = nodes.filter((n) => n !== leader);
    const someNode = nodes[nodeIndex];
    const someFollower = followers[nodeIndex % followers.length];
    const note = (what: string): void => {
      const line = `${kind}: ${what} for ${hold} ms`;
      this.history.push(line);
      this.log(line);
    };
    switch (kind) {
      case 'kill-leader':
      case 'kill-follower':
      case 'kill-participant': {
        const target =
          kind === 'kill-participant' ? participant : kind === 'kill-leader' ? (leader ?? someNode) : someFollower;
        note(`SIGKILL ${target.id}${kind === 'kill-leader' && leader === null ? ' (no leader known)' : ''}`);
        await target.kill('SIGKILL');
        this.counts.kills++;
        await sleep(hold);
        target.start();
        return;
      }
      case 'stop-node':
      case 'stop-participant': {
        const target = kind === 'stop-participant' ? participant : stopLeader && leader !== null ? leader : someNode;
        if (!target.running) return;
        note(`SIGSTOP ${target.id}`);
        target.pause();
        this.counts.stops++;
        await sleep(hold);
        target.resume();
        return;
      }
      case 'isolate-leader':
      case 'isolate-minority': {
        const target = kind === 'isolate-leader' ? (leader ?? someNode) : someFollower;
        const rest = nodes.filter((n) => n !== target).map((n) => n.id);
        note(`${mode} every link between ${target.id} and ${rest.join(',')}`);
        this.o.links.cut([target.id], rest, mode);
        this.counts.partitions++;
        await sleep(hold);
        this.o.links.healAll();
        return;
      }
      case 'one-way': {
        const target = leader ?? someNode;
        const rest = nodes.filter((n) => n !== target).map((n) => n.id);
        if (leaderSends) {
          note(`${mode} ${target.id} → ${rest.join(',')} (it hears them, they never hear it)`);
          this.o.links.cutOneWay([target.id], rest, mode);
        } else {
          note(`${mode} ${rest.join(',')} → ${target.id} (they hear it, it never hears them)`);
          this.o.links.cutOneWay(rest, [target.id], mode);
        }
        this.counts.partitions++;
        await sleep(hold);
        this.o.links.healAll();
        return;
      }
    }
  }
}
