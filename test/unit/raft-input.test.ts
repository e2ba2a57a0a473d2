// What a peer's message can still do once it passed the edge's field checks
// (test/unit/raft-edge.test.ts): the core refuses what needs the log to
// judge, before it changes anything; messages the core relays for another
// node leave through the transport instead of tripping its assertions; and a
// committed entry this node cannot apply stops it naming the index, on every
// restart the same way, instead of throwing out of the apply loop.
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeCommand } from '../../src/commit/state.ts';
import { Driver, UnappliableEntryError } from '../../src/node/driver.ts';
import { NodeStateMachine } from '../../src/node/machine.ts';
import { raftMembers } from '../../src/node/members.ts';
import { ConfChangeType, encodeConfChange } from '../../src/raft/confchange.ts';
import { MemoryStorage } from '../../src/raft/memory-storage.ts';
import { RawNode } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import { EntryType, message, MessageType as MT, Role, type Message } from '../../src/raft/types.ts';
import { GrpcTransport, SERVER_OPTIONS } from '../../src/transport/grpc.ts';
import type { RecoveredState } from '../../src/storage/types.ts';
import { EventQueue } from '../sim/event-queue.ts';
import { SimDisk } from '../sim/sim-disk.ts';

const VOTERS = ['n1', 'n2', 'n3'];

function node(id: string): RawNode {
  const storage = MemoryStorage.from(
    { term: 0, vote: '', commit: 0 },
    {
      metadata: { index: 0, term: 0, confState: { voters: VOTERS, learners: [], votersOutgoing: [] } },
      data: new Uint8Array(0),
    },
    [],
  );
  return new RawNode({ id, storage, random: () => 0 });
}

/** n1 as leader of term 2 (a pre-vote and a vote granted by n2). */
function leader(): RawNode {
  const n = node('n1');
  n.campaign();
  n.step(message({ type: MT.PreVoteResp, from: 'n2', to: 'n1', term: 1 }));
  n.step(message({ type: MT.VoteResp, from: 'n2', to: 'n1', term: n.raft.term }));
  expect(n.raft.role).toBe(Role.Leader);
  return n;
}

describe('the core refuses what the log shows to be impossible, before it changes anything', () => {
  it("state: a leader refuses an acknowledgement of an index past its own log, and keeps the follower's progress", () => {
    const n = leader();
    const last = n.raft.log.lastIndex();
    const match = n.raft.progress.get('n2')!.match;
    const why = n.step(message({ type: MT.AppResp, from: 'n2', to: 'n1', term: n.raft.term, index: last + 1_000 }));
    expect(why).toMatch(new RegExp(`acknowledges index ${last + 1_000} beyond the last index ${last}`));
    expect(n.raft.progress.get('n2')!.match).toBe(match);
    // The true acknowledgement still counts.
    expect(n.step(message({ type: MT.AppResp, from: 'n2', to: 'n1', term: n.raft.term, index: last }))).toBeNull();
    expect(n.raft.progress.get('n2')!.match).toBe(last);
  });

  it('refuses a message that claims to come from this node, and leaves the term alone', () => {
    const n = node('n2');
    expect(n.step(message({ type: MT.Heartbeat, from: 'n2', to: 'n2', term: 9 }))).toMatch(/from this node itself/);
    expect(n.raft.term).toBe(0);
  });
});

describe('messages a follower relays for another node leave through the transport', () => {
  const transports: GrpcTransport[] = [];
  const servers: grpc.Server[] = [];
  afterEach(async () => {
    await Promise.all(transports.map((t) => t.close()));
    for (const s of servers) s.forceShutdown();
    transports.length = 0;
    servers.length = 0;
  });

  it('a TransferLeader or ReadIndex sent to a follower by another member is relayed to the leader, naming the asker, and delivered there', async () => {
    const quiet = pino({ level: 'silent' });
    // n1 leads: it receives what n2 relays.
    const received: Message[] = [];
    const n1 = new GrpcTransport({
      clusterId: 'c1',
      selfId: 'n1',
      peers: new Map([
        ['n2', '127.0.0.1:1'],
        ['n3', '127.0.0.1:1'],
      ]),
      onMessages: (ms) => received.push(...ms),
      onUnreachable: () => {},
      logger: quiet,
    });
    const server = new grpc.Server(SERVER_OPTIONS);
    n1.register(server);
    servers.push(server);
    const port = await new Promise<number>((res, rej) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
    );
    const n2Transport = new GrpcTransport({
      clusterId: 'c1',
      selfId: 'n2',
      peers: new Map([['n1', `127.0.0.1:${port}`]]),
      onMessages: () => {},
      onUnreachable: () => {},
      logger: quiet,
    });
    transports.push(n1, n2Transport);

    // n2 follows n1 in term 1.
    const n2 = node('n2');
    expect(n2.step(message({ type: MT.Heartbeat, from: 'n1', to: 'n2', term: 1 }))).toBeNull();
    n2.advance(n2.ready());
    // n3 asks n2 (not the leader) to hand it leadership, and for a read.
    expect(n2.step(message({ type: MT.TransferLeader, from: 'n3', to: 'n2', term: 1 }))).toBeNull();
    expect(
      n2.step(message({ type: MT.ReadIndex, from: 'n3', to: 'n2', context: new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]) })),
    ).toBeNull();
    const rd = n2.ready();
    const relayed = [...rd.messagesNow, ...rd.messages].filter(
      (m) => m.type === MT.TransferLeader || m.type === MT.ReadIndex,
    );
    expect(relayed.map((m) => [MT[m.type], m.from, m.to])).toEqual([
      ['TransferLeader', 'n3', 'n1'],
      ['ReadIndex', 'n3', 'n1'],
    ]);
    // This threw RaftInvariantError ("outbound message is from this node") out of the follower's receive path.
    expect(() => n2Transport.send(relayed)).not.toThrow();
    const deadline = Date.now() + 10_000;
    while (received.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(received.map((m) => [MT[m.type], m.from])).toEqual([
      ['TransferLeader', 'n3'],
      ['ReadIndex', 'n3'],
    ]);
  });
});

describe('a committed entry this node cannot apply', () => {
  function singleNode(
    recovered: RecoveredState | null,
    q: EventQueue,
    disk: SimDisk,
  ): { d: Driver<unknown>; sm: NodeStateMachine; fatal: Error[] } {
    const raw = RawNode.restart(
      { id: 'a', random: new Rng(1).asRandom(), electionTicks: 10, heartbeatTicks: 1 },
      recovered ?? disk.recover(),
      { voters: ['a'], learners: [], votersOutgoing: [] },
    );
    const sm = new NodeStateMachine();
    const fatal: Error[] = [];
    const d = new Driver<unknown>({
      node: raw,
      store: disk,
      transport: { send: () => {} },
      sm,
      snapshotEntries: 1_000_000,
      snapshotKeepEntries: 10,
      waitersMax: 100,
      onFatal: (err) => void fatal.push(err),
    });
    const tick = (): void => {
      d.tick();
      q.after(10, tick);
    };
    q.after(10, tick);
    return { d, sm, fatal };
  }

  it('stops the node with an error naming the index, applies nothing after it, and does the same (no throw) on restart', () => {
    const q = new EventQueue();
    const disk = new SimDisk(q, new Rng(2));
    disk.found();
    const first = singleNode(null, q, disk);
    q.runUntil(q.now + 1_000, () => first.d.isLeader());
    expect(first.d.isLeader()).toBe(true);
    // The leader's own proposals do not pass the edge: this is how a damaged local log looks to the apply loop.
    const bad = new Uint8Array([127, 1, 2, 3]);
    const answers: string[] = [];
    const register = (id: string): Uint8Array =>
      encodeCommand({ t: 'register', id, endpoint: '127.0.0.1:7001', atMs: 1, kind: 'memory' });
    first.d.proposeBatch(
      [register('before'), bad, register('after')],
      [0, 1, 2].map((i) => (err) => void answers.push(`${i}:${err ? 'error' : 'ok'}`)),
    );
    expect(() => q.runUntil(q.now + 1_000, () => first.fatal.length > 0)).not.toThrow();
    expect(first.fatal).toHaveLength(1);
    const err = first.fatal[0] as UnappliableEntryError;
    expect(err).toBeInstanceOf(UnappliableEntryError);
    const badIndex = err.index;
    expect(err.message).toBe(`log entry ${badIndex} cannot be applied: unknown command tag 127`);
    expect([...first.sm.table.participants.keys()]).toEqual(['before']);
    expect(first.d.applied).toBeLessThan(badIndex);

    // Restarted from what reached the disk: the same stop, at the same index, still no exception.
    const again = singleNode(disk.recover(), q, disk);
    expect(() => q.runUntil(q.now + 2_000, () => again.fatal.length > 0)).not.toThrow();
    expect(again.fatal.map((e) => (e as UnappliableEntryError).index)).toEqual([badIndex]);
    expect(again.sm.table.participants.has('after')).toBe(false);
  });

  it('names the index of a malformed command and of a membership change that does not decode the same way', () => {
    const sm = new NodeStateMachine();
    expect(() =>
      sm.apply({ term: 1, index: 7, type: 0, data: encodeCommand({ t: 'forget', txnIds: 'x' } as never) }),
    ).toThrow(/log entry 7 cannot be applied: forget needs a list of txnIds/);
    expect(() =>
      sm.applyConfChange(
        { type: 0, nodeId: 'n4', base: { voters: [], learners: [], votersOutgoing: [] }, context: Buffer.from('{') },
        { term: 1, index: 9, type: 1, data: new Uint8Array(0) },
      ),
    ).toThrow(UnappliableEntryError);
  });
});

describe('who may send this node Raft traffic', () => {
  const change = (type: ConfChangeType, nodeId: string, index: number) => ({
    term: 1,
    index,
    type: EntryType.ConfChange,
    data: encodeConfChange({
      type,
      nodeId,
      base: { voters: VOTERS, learners: [], votersOutgoing: [] },
      context: new Uint8Array(0),
    }),
  });
  const withLog = (voters: string[], entries: ReturnType<typeof change>[]): RawNode =>
    new RawNode({
      id: 'n2',
      storage: MemoryStorage.from(
        { term: 1, vote: '', commit: 0 },
        {
          metadata: { index: 0, term: 0, confState: { voters, learners: [], votersOutgoing: [] } },
          data: new Uint8Array(0),
        },
        entries,
      ),
      random: () => 0,
    });

  it('the configuration in effect, plus a node added by a change still unapplied in the log (it may lead before this node applies it); not one being removed', () => {
    const n = withLog(VOTERS, [change(ConfChangeType.AddLearner, 'n4', 1), change(ConfChangeType.Remove, 'n3', 2)]);
    expect([...raftMembers(n, () => new Set())()].sort()).toEqual(['n1', 'n2', 'n3', 'n4']);
    expect([...raftMembers(withLog(VOTERS, []), () => new Set())()].sort()).toEqual(['n1', 'n2', 'n3']);
  });

  it('one check kept across messages follows the log: a change appended adds its node, the same index overwritten by a new leader takes it away', () => {
    const n = withLog(VOTERS, []);
    const members = raftMembers(n, () => new Set());
    const first = members();
    expect([...first].sort()).toEqual(['n1', 'n2', 'n3']);
    n.raft.log.append([{ term: 1, index: 1, type: EntryType.Normal, data: new Uint8Array(0) }]);
    expect(members()).toBe(first);
    n.raft.log.append([change(ConfChangeType.AddLearner, 'n4', 2)]);
    expect([...members()].sort()).toEqual(['n1', 'n2', 'n3', 'n4']);
    n.raft.log.append([{ term: 2, index: 2, type: EntryType.Normal, data: new Uint8Array(0) }]);
    expect([...members()].sort()).toEqual(['n1', 'n2', 'n3']);
  });

  it('a joining node, with no configuration yet, hears from the peers it was given', () => {
    expect([...raftMembers(withLog([], []), () => new Set(['n1', 'n5']))()].sort()).toEqual(['n1', 'n5']);
  });
});
