// Driver.proposeBatch, the group commit the node uses for the commands
// proposed in one event-loop turn: consecutive entries, one append message
// per follower, each callback answered with its own entry's result.
import { describe, expect, it } from 'vitest';
import { Driver, NotLeaderError, type StateMachine } from '../../src/node/driver.ts';
import { MessageType, type Entry, type Message, type NodeId } from '../../src/raft/types.ts';
import { EventQueue } from '../sim/event-queue.ts';
import { driverCluster } from './fixtures/driver-cluster.ts';

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

function cluster(ids: NodeId[]): {
  q: EventQueue;
  drivers: Map<NodeId, Driver<string>>;
  machines: Map<NodeId, Machine>;
  sent: Message[];
} {
  const machines = new Map<NodeId, Machine>();
  const { q, drivers, sent } = driverCluster<string>({
    ids,
    seed: 11,
    ticks: 'periodic',
    machine: (id) => {
      const sm = new Machine();
      machines.set(id, sm);
      return sm;
    },
  });
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
