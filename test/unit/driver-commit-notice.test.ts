// The driver's bound on a lazy commit notice (DriverOptions.commitNotice):
// with a Raft core of commitNoticeLazy, a moved commit index waits for the
// next append to carry it, and the driver sends it on its own once
// commitNotice.delayMs has passed. Three voters on the simulator's disks and
// clock; messages take 1 ms; no ticks after the election, so no heartbeat
// carries anything.
import { describe, expect, it } from 'vitest';
import type { Driver, StateMachine } from '../../src/node/driver.ts';
import { MessageType as MT, type Entry, type Message } from '../../src/raft/types.ts';
import type { EventQueue } from '../sim/event-queue.ts';
import { driverCluster, type DriverCluster } from './fixtures/driver-cluster.ts';

const IDS = ['a', 'b', 'c'];

/** Remembers when each command was applied, by its text. */
class Machine implements StateMachine<null> {
  readonly appliedAt = new Map<string, number>();
  constructor(private readonly nowMs: () => number) {}
  apply(e: Entry): null {
    this.appliedAt.set(new TextDecoder().decode(e.data), this.nowMs());
    return null;
  }
  snapshot(): Uint8Array {
    return new Uint8Array(0);
  }
  restore(): void {}
}

interface Cluster {
  q: EventQueue;
  drivers: Map<string, Driver<null>>;
  machines: Map<string, Machine>;
  sent: Message[];
  leader: Driver<null>;
  leaderId: string;
}

/** `delayMs` undefined: an eager core; a number: a lazy core and that bound in the driver. */
function cluster(delayMs: number | undefined): Cluster {
  const machines = new Map<string, Machine>();
  const c: DriverCluster<null> = driverCluster<null>({
    ids: IDS,
    seed: 11,
    ticks: 'none',
    tuning: { commitNoticeLazy: delayMs !== undefined },
    machine: (id): Machine => {
      const sm = new Machine(() => c.q.now);
      machines.set(id, sm);
      return sm;
    },
    options: () =>
      delayMs === undefined
        ? {}
        : {
            commitNotice: {
              delayMs,
              after: (ms, fn) => {
                let live = true;
                c.q.after(ms, () => live && fn());
                return () => {
                  live = false;
                };
              },
            },
          },
  });
  const { q, drivers, sent } = c;
  const leaderOf = (): [string, Driver<null>] | undefined => [...drivers].find(([, d]) => d.isLeader());
  for (let t = 0; t < 100 && leaderOf() === undefined; t++) {
    for (const d of drivers.values()) d.tick();
    q.runUntil(q.now + 100);
  }
  const found = leaderOf();
  expect(found).toBeDefined();
  const [leaderId, leader] = found!;
  // The leader's own first entry: let everyone learn it was committed.
  propose(leader, q, 'warm-up');
  q.runUntil(q.now + 1_000);
  for (const sm of machines.values()) expect(sm.appliedAt.has('warm-up')).toBe(true);
  return { q, drivers, machines, sent, leader, leaderId };
}

function propose(d: Driver<null>, q: EventQueue, text: string): void {
  d.propose(new TextEncoder().encode(text), (err) => {
    if (err) throw err;
  });
  q.runUntil(q.now + 200);
}

/** Runs the clock until the leader applied `text`; returns when. */
function appliedOnLeader(c: Cluster, text: string): number {
  c.q.runUntil(c.q.now + 500, () => c.machines.get(c.leaderId)!.appliedAt.has(text));
  const at = c.machines.get(c.leaderId)!.appliedAt.get(text);
  expect(at).toBeDefined();
  return at!;
}

const followers = (c: Cluster): Machine[] => IDS.filter((id) => id !== c.leaderId).map((id) => c.machines.get(id)!);
const emptyAppendsSince = (c: Cluster, mark: number): Message[] =>
  c.sent.slice(mark).filter((m) => m.type === MT.App && m.entries.length === 0);

describe('driver: the bound on a lazy commit notice', () => {
  it('alone, a committed entry reaches the followers after commitNotice.delayMs, in one empty append each', () => {
    const c = cluster(40);
    const mark = c.sent.length;
    c.leader.propose(new TextEncoder().encode('x'), () => {});
    const at = appliedOnLeader(c, 'x');
    c.q.runUntil(at + 39);
    for (const f of followers(c)) expect(f.appliedAt.has('x'), 'not before the bound').toBe(false);
    c.q.runUntil(at + 45);
    for (const f of followers(c)) {
      expect(f.appliedAt.has('x')).toBe(true);
      expect(f.appliedAt.get('x')!).toBeGreaterThanOrEqual(at + 40);
    }
    expect(emptyAppendsSince(c, mark)).toHaveLength(2);
  });

  it('a proposal within the bound carries it instead: the followers apply it with that append, and the timer sends nothing', () => {
    const c = cluster(40);
    const mark = c.sent.length;
    c.leader.propose(new TextEncoder().encode('x'), () => {});
    const at = appliedOnLeader(c, 'x');
    c.q.runUntil(at + 5);
    c.leader.propose(new TextEncoder().encode('y'), () => {});
    // A follower applies x once y's append (which carries x's commit) is synced: well inside the bound.
    c.q.runUntil(at + 39);
    for (const f of followers(c)) expect(f.appliedAt.get('x'), 'x applied').toBeLessThan(at + 39);
    // Past x's timer, which found the notice already sent; y's own timer has not fired yet.
    c.q.runUntil(at + 41);
    expect(emptyAppendsSince(c, mark)).toEqual([]);
  });

  it('control: an eager core sends the index at once, in an empty append each, with no bound in the driver', () => {
    const c = cluster(undefined);
    const mark = c.sent.length;
    c.leader.propose(new TextEncoder().encode('x'), () => {});
    const at = appliedOnLeader(c, 'x');
    c.q.runUntil(at + 3);
    for (const f of followers(c)) expect(f.appliedAt.has('x')).toBe(true);
    expect(emptyAppendsSince(c, mark)).toHaveLength(2);
  });
});
