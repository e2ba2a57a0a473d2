// Driver.proposeBatch, the group commit the node uses for the commands
// proposed in one event-loop turn: consecutive entries, one append message
// per follower, each callback answered with its own entry's result.
import { describe, expect, it } from 'vitest';
import { Driver, NotLeaderError, type StateMachine } from '../../src/node/driver.ts';
import { RawNode } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import { MessageType, type Entry, type Message, type NodeId } from '../../src/raft/types.ts';
import { EventQueue } from '../sim/event-queue.ts';
import { SimDisk } from '../sim/sim-disk.ts';

class Machine implements StateMachine<string> {
  readonly data: string[] = [];
  apply(e: Entry): string {
    const s = Buffer.from(e.data).toString();
    this.data.push(s);
    return `applied ${s}`;
  }
  snapshot(): Uint8Array {
    return Buffer.from(JSON.stringify(this.data));
  }
  restore(): void {}
}

function cluster(ids: NodeId[]): { q: EventQueue; drivers: Map<NodeId, Driver<string>>; machines: Map<NodeId, Machine>; sent: Message[] } {
  const q = new EventQueue();
  const rng = new Rng(11);
  const drivers = new Map<NodeId, Driver<string>>();
  const machines = new Map<NodeId, Machine>();
  const sent: Message[] = [];
  for (const id of ids) {
    const disk = new SimDisk(q, new Rng(rng.u32()));
    const raw = RawNode.restart({ id, random: new Rng(rng.u32()).asRandom(), electionTicks: 10, heartbeatTicks: 1 }, disk.recover(), { voters: ids, learners: [], votersOutgoing: [] });
    const sm = new Machine();
    const d = new Driver<string>({
      node: raw,
      store: disk,
      transport: {
        send: (msgs) => {
          for (const m of msgs) {
            sent.push(m);
            q.after(1, () => drivers.get(m.to)?.receive([m]));
          }
        },
      },
      sm,
      snapshotEntries: 1_000_000,
      snapshotKeepEntries: 2,
      waitersMax: 100,
      onFatal: (err) => {
        throw err;
      },
    });
    drivers.set(id, d);
    machines.set(id, sm);
    const tick = (): void => {
      d.tick();
      q.after(100, tick);
    };
    q.after(rng.int(100), tick);
  }
  return { q, drivers, machines, sent };
}

describe('driver group commit', () => {
  it('proposeBatch appends the commands as consecutive entries in one append per follower; each callback gets its own entry', () => {
    const { q, drivers, machines, sent } = cluster(['a', 'b', 'c']);
    let leader: Driver<string> | undefined;
    for (let i = 0; i < 100 && leader === undefined; i++) {
      q.runUntil(q.now + 100);
      leader = [...drivers.values()].find((d) => d.isLeader());
    }
    if (leader === undefined) throw new Error('no leader elected within 10 s of virtual time');
    q.runUntil(q.now + 500);
    const answers: { index: number; result: string }[] = [];
    const cmds = ['c1', 'c2', 'c3', 'c4', 'c5'];
    sent.length = 0;
    leader.proposeBatch(
      cmds.map((c) => Buffer.from(c)),
      cmds.map(() => (err, r) => {
        if (err) throw err;
        answers.push(r as { index: number; result: string });
      }),
    );
    q.runUntil(q.now + 1_000);
    expect(answers.map((a) => a.result)).toEqual(cmds.map((c) => `applied ${c}`));
    const first = answers[0].index;
    expect(answers.map((a) => a.index)).toEqual(cmds.map((_, i) => first + i));
    for (const m of machines.values()) expect(m.data.slice(-5)).toEqual(cmds);
    // One append per follower carried all five entries.
    const appends = sent.filter((m) => m.type === MessageType.App && m.entries.length > 0);
    expect(appends).toHaveLength(2);
    for (const m of appends) expect(m.entries.map((e) => Buffer.from(e.data).toString())).toEqual(cmds);

    // A follower refuses the whole batch, naming the leader.
    const follower = [...drivers.values()].find((d) => !d.isLeader()) as Driver<string>;
    const errs: (Error | null)[] = [];
    follower.proposeBatch([Buffer.from('x'), Buffer.from('y')], [(e) => errs.push(e), (e) => errs.push(e)]);
    expect(errs).toHaveLength(2);
    for (const e of errs) expect(e).toBeInstanceOf(NotLeaderError);
  });
});
