// The Raft core driven by hand: a few RawNodes, a tiny in-test network that
// carries Ready.messagesNow / Ready.messages between them, and "persistence"
// that is just advance() (MemoryStorage is updated there). Every Ready is
// checked against R6, every applied prefix against the other nodes', and every
// leader against the other leaders of its term.

import { describe, expect, it } from 'vitest';
import {
  LEADER_LOST_CAMPAIGNS_MAX,
  LEADER_LOST_JITTER_TICKS,
  LEADER_LOST_RANK_TICKS,
  ProposalDroppedError,
} from '../../src/raft/raft.ts';
import { foundingHardState, RawNode, type RawNodeConfig, type Ready } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import {
  EntryType,
  MessageType as MT,
  REJOINING_VOTE,
  Role,
  emptySnapshot,
  entryBytes,
  message,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type ReadState,
  type Snapshot,
} from '../../src/raft/types.ts';

type Overrides = Partial<Omit<RawNodeConfig, 'id' | 'random' | 'storage'>>;

interface Recovered {
  hardState: HardState;
  snapshot: Snapshot;
  entries: Entry[];
  recoverIndex?: number;
}

const ELECTION_TICKS = 10;
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

/** A founding member's state: what `verdict cluster init` writes before a new cluster's first start. */
function freshState(): Recovered {
  return { hardState: foundingHardState(), snapshot: emptySnapshot(), entries: [] };
}

/** A log from a list of terms: terms[k] is the term of entry k+1. */
function logOf(terms: number[]): Entry[] {
  return terms.map((term, k) => ({ term, index: k + 1, type: EntryType.Normal, data: enc(`t${term}i${k + 1}`) }));
}

function run(term: number, n: number): number[] {
  return Array.from({ length: n }, () => term);
}

function cloneMessage(m: Message): Message {
  return { ...m, entries: m.entries.map((e) => ({ ...e })) };
}

class Net {
  readonly nodes = new Map<NodeId, RawNode>();
  /** Messages on the wire, not yet delivered. */
  inflight: Message[] = [];
  /** Every message that left a node, in order. */
  readonly sent: Message[] = [];
  readonly applied = new Map<NodeId, Entry[]>();
  readonly readStates = new Map<NodeId, ReadState[]>();
  readonly snapshots = new Map<NodeId, Snapshot[]>();
  /** Links "from->to" that drop everything. */
  readonly cut = new Set<string>();
  /** Returns false to drop a message. */
  filter: (m: Message) => boolean = () => true;
  readonly readys = new Map<NodeId, Ready[]>();
  /** Nodes whose Ready the test holds (a write in flight): pump() leaves them alone. */
  readonly held = new Set<NodeId>();
  private readonly durable = new Map<NodeId, HardState>();
  private readonly leaderOfTerm = new Map<number, NodeId>();
  private readonly everApplied = new Map<number, string>();

  private readonly rng: Rng;

  constructor(
    readonly ids: NodeId[],
    seed: number,
    private readonly overrides: Overrides = {},
    recovered: Record<NodeId, Recovered> = {},
  ) {
    this.rng = new Rng(seed);
    for (const id of ids) {
      this.start(id, recovered[id] ?? freshState());
      this.readStates.set(id, []);
      this.snapshots.set(id, []);
      this.readys.set(id, []);
    }
  }

  private start(id: NodeId, rec: Recovered): void {
    const node = RawNode.restart(
      { id, electionTicks: ELECTION_TICKS, heartbeatTicks: 1, random: this.rng.asRandom(), ...this.overrides },
      rec,
      {
        voters: [...this.ids],
        learners: [],
        votersOutgoing: [],
      },
    );
    this.nodes.set(id, node);
    this.durable.set(id, { ...rec.hardState });
    // The state machine restarts from the snapshot; entries after it are applied again.
    const snapIndex = rec.snapshot.metadata.index;
    this.applied.set(
      id,
      snapIndex > 0
        ? [{ term: rec.snapshot.metadata.term, index: snapIndex, type: EntryType.Normal, data: new Uint8Array(0) }]
        : [],
    );
    this.held.delete(id);
  }

  /**
   * Crashes `id` and restarts it from what its storage holds. With
   * `midWrite`, the node first takes a Ready and sends its early messages but
   * dies before the write lands (R6 allows exactly that for a leader).
   */
  crash(id: NodeId, midWrite: boolean): void {
    const n = this.node(id);
    this.writing.delete(id); // a write in flight is lost
    if (midWrite && !this.held.has(id) && n.hasReady()) {
      const rd = n.ready();
      this.check(id, n, rd);
      this.send(rd.messagesNow);
    }
    const st = n.raft.log.storage;
    const entries =
      st.lastIndex() >= st.firstIndex() ? st.entries(st.firstIndex(), st.lastIndex() + 1, Number.MAX_SAFE_INTEGER) : [];
    this.start(id, { hardState: { ...st.hardState }, snapshot: st.snapshot(), entries });
  }

  /**
   * Crashes `id` and restarts it with its disk cut after `keepLast`: synced,
   * acknowledged entries are gone. With `noticed`, the restart carries the
   * high-water mark (what the real store finds), so the node starts recovering.
   */
  crashLosingTail(id: NodeId, keepLast: number, noticed: boolean): void {
    const st = this.node(id).raft.log.storage;
    const lastIndex = st.lastIndex();
    const entries = st.entries(st.firstIndex(), keepLast + 1, Number.MAX_SAFE_INTEGER);
    const hardState = { ...st.hardState, commit: Math.min(st.hardState.commit, keepLast) };
    this.writing.delete(id);
    this.start(id, { hardState, snapshot: st.snapshot(), entries, recoverIndex: noticed ? lastIndex : 0 });
  }

  /** Crashes `id` and restarts it on an empty data directory: everything it held and promised is gone. */
  crashWiped(id: NodeId): void {
    this.writing.delete(id);
    this.start(id, { hardState: { term: 0, vote: '', commit: 0 }, snapshot: emptySnapshot(), entries: [] });
  }

  /** Control for crashWiped: the emptied node is started as if it founded the cluster again (what no tooling does). */
  crashRefounded(id: NodeId): void {
    this.writing.delete(id);
    this.start(id, freshState());
  }

  node(id: NodeId): RawNode {
    const n = this.nodes.get(id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  isolate(id: NodeId): void {
    for (const other of this.ids) {
      if (other === id) continue;
      this.cut.add(`${id}->${other}`);
      this.cut.add(`${other}->${id}`);
    }
  }

  heal(): void {
    this.cut.clear();
    this.filter = () => true;
  }

  leaders(): NodeId[] {
    return this.ids.filter((id) => this.node(id).raft.role === Role.Leader);
  }

  /** Checks one Ready against R6 before anything of it is sent. */
  private check(id: NodeId, n: RawNode, rd: Ready): void {
    const durable = this.durable.get(id)!;
    const hs = rd.hardState;
    if (hs && (hs.term !== durable.term || hs.vote !== durable.vote)) {
      expect(rd.messagesNow, `${id}: term/vote not durable, nothing may leave early`).toEqual([]);
      expect(rd.mustSync).toBe(true);
    }
    if (n.raft.role !== Role.Leader)
      expect(rd.messagesNow, `${id} is ${n.raft.role}: nothing may leave early`).toEqual([]);
    // Nothing is handed out for applying before it is durable here (log.ts invariant).
    for (const e of rd.committedEntries)
      expect(
        rd.entries.some((x) => x.index === e.index),
        `${id} applies unsynced entry ${e.index}`,
      ).toBe(false);
    for (const m of rd.messagesNow) {
      // An acknowledgement or a vote promises durable state: never early.
      expect([MT.AppResp, MT.VoteResp, MT.PreVoteResp].includes(m.type) && !m.reject && m.index > 0).toBe(false);
    }
    if (n.raft.role === Role.Leader) {
      const other = this.leaderOfTerm.get(n.raft.term);
      expect(other === undefined || other === id, `two leaders in term ${n.raft.term}: ${other} and ${id}`).toBe(true);
      this.leaderOfTerm.set(n.raft.term, id);
    }
  }

  /** The driver loop for one Ready: send early, persist (advance), send the rest, apply. */
  private handle(id: NodeId, n: RawNode, rd: Ready): void {
    this.begin(id, n, rd);
    this.finish(id, n, rd);
  }

  /** The Ready is taken: what may leave before the sync leaves now. */
  private begin(id: NodeId, n: RawNode, rd: Ready): void {
    this.check(id, n, rd);
    this.readys.get(id)!.push(rd);
    this.send(rd.messagesNow);
  }

  /** The write landed: the rest is sent, committed entries applied, the node advanced. */
  private finish(id: NodeId, n: RawNode, rd: Ready): void {
    if (rd.snapshot) {
      this.snapshots.get(id)!.push(rd.snapshot);
      // The state machine restored from the snapshot: what it applied is now the snapshot.
      this.applied.set(id, [
        {
          term: rd.snapshot.metadata.term,
          index: rd.snapshot.metadata.index,
          type: EntryType.Normal,
          data: new Uint8Array(0),
        },
      ]);
    }
    this.send(rd.messages);
    const applied = this.applied.get(id)!;
    for (const e of rd.committedEntries) {
      const last = applied[applied.length - 1];
      if (last) expect(e.index, `${id} applies out of order`).toBe(last.index + 1);
      applied.push(e);
      // State Machine Safety, across crashes: one entry per index, ever.
      const seen = this.everApplied.get(e.index);
      const mine = `${e.term}/${dec(e.data)}`;
      if (seen === undefined) this.everApplied.set(e.index, mine);
      else expect(mine, `${id} applied a different entry at ${e.index}`).toBe(seen);
    }
    this.readStates.get(id)!.push(...rd.readStates);
    if (rd.hardState) this.durable.set(id, { ...rd.hardState });
    n.advance(rd);
  }

  /** Nodes with a slow disk: pump() takes their Ready and leaves the write in flight until completeWrite(). */
  readonly slow = new Set<NodeId>();
  private readonly writing = new Map<NodeId, Ready>();

  completeWrite(id: NodeId): void {
    const rd = this.writing.get(id);
    if (!rd) return;
    this.writing.delete(id);
    this.held.delete(id);
    this.finish(id, this.node(id), rd);
    this.pump();
  }

  send(msgs: Message[]): void {
    for (const m of msgs) {
      this.sent.push(m);
      this.inflight.push(cloneMessage(m));
    }
  }

  pump(): void {
    for (let changed = true; changed; ) {
      changed = false;
      for (const [id, n] of this.nodes) {
        if (this.writing.has(id)) {
          // A write is in flight: a leader with a durable term may still send (R6).
          const early = n.takeMessagesNow();
          if (early.length > 0) {
            const d = this.durable.get(id)!;
            expect(n.raft.role, `${id} sent while writing`).toBe(Role.Leader);
            expect([n.raft.term, n.raft.vote]).toEqual([d.term, d.vote]);
            this.send(early);
          }
          continue;
        }
        if (this.held.has(id)) continue;
        if (this.slow.has(id)) {
          if (!n.hasReady()) continue;
          const rd = n.ready();
          this.begin(id, n, rd);
          this.writing.set(id, rd);
          this.held.add(id);
          continue;
        }
        while (n.hasReady()) {
          changed = true;
          this.handle(id, n, n.ready());
        }
      }
    }
  }

  /** Delivers every message now on the wire (those matching `which`), then runs the Ready loops. */
  deliver(which: (m: Message) => boolean = () => true): number {
    const now = this.inflight.filter(which);
    this.inflight = this.inflight.filter((m) => !which(m));
    for (const m of now) {
      if (this.cut.has(`${m.from}->${m.to}`) || !this.filter(m)) continue;
      this.node(m.to).step(m);
    }
    this.pump();
    return now.length;
  }

  stabilize(maxRounds = 200): void {
    this.pump();
    for (let r = 0; r < maxRounds && this.inflight.length > 0; r++) this.deliver();
    expect(this.inflight.length, 'network did not settle').toBe(0);
  }

  tick(ids: NodeId[] = this.ids, times = 1): void {
    for (let t = 0; t < times; t++) {
      for (const id of ids) this.node(id).tick();
      this.stabilize();
    }
  }

  /** Makes `id` the leader by campaigning (PreVote, then Vote). */
  elect(id: NodeId): void {
    this.node(id).campaign();
    this.stabilize();
    expect(this.node(id).raft.role).toBe(Role.Leader);
  }

  propose(id: NodeId, data: string): void {
    this.node(id).propose([enc(data)]);
    this.pump();
  }

  appliedData(id: NodeId): string[] {
    return this.applied
      .get(id)!
      .filter((e) => e.data.byteLength > 0)
      .map((e) => dec(e.data));
  }

  sentSince(mark: number, pred: (m: Message) => boolean): Message[] {
    return this.sent.slice(mark).filter(pred);
  }
}

// ---- elections and replication ------------------------------------------------

describe('raft core: election and replication', () => {
  it('a 3-node cluster elects exactly one leader by PreVote then Vote, and a proposal is applied on all three', () => {
    for (let seed = 1; seed <= 25; seed++) {
      const net = new Net(['n1', 'n2', 'n3'], seed);
      for (let t = 0; t < 5 * ELECTION_TICKS && net.leaders().length === 0; t++) net.tick();
      const leaders = net.leaders();
      expect(leaders, `seed ${seed}`).toHaveLength(1);
      const leader = leaders[0];
      const term = net.node(leader).raft.term;
      for (const id of net.ids) {
        expect(net.node(id).raft.term).toBe(term);
        expect(net.node(id).raft.lead).toBe(leader);
      }
      // PreVote comes first, and a PreVote round does not bump the term by itself.
      const firstPre = net.sent.findIndex((m) => m.type === MT.PreVote);
      const firstVote = net.sent.findIndex((m) => m.type === MT.Vote);
      expect(firstPre).toBeGreaterThanOrEqual(0);
      expect(firstPre).toBeLessThan(firstVote);
      // Founding members start at term 1; the first election is for term 2.
      expect(net.sent.find((m) => m.type === MT.PreVote)!.term).toBe(2);

      net.propose(leader, `x${seed}`);
      net.stabilize();
      const index = net.node(leader).raft.log.lastIndex();
      for (const id of net.ids) {
        expect(net.appliedData(id)).toEqual([`x${seed}`]);
        expect(net.applied.get(id)!.at(-1)!.index).toBe(index);
      }
    }
  });

  it('a follower refuses proposals (the driver redirects clients)', () => {
    const net = new Net(['n1', 'n2', 'n3'], 7);
    net.elect('n1');
    expect(() => net.node('n2').propose([enc('x')])).toThrow(ProposalDroppedError);
  });
});

// ---- R6 ------------------------------------------------------------------------

describe('raft core: R6 persistence before counting and sending', () => {
  it('R6: a single-node cluster does not commit a proposal before advance() of the Ready holding it', () => {
    const net = new Net(['n1'], 1);
    const n1 = net.node('n1');
    n1.campaign();
    const rd0 = n1.ready();
    expect(n1.raft.role).toBe(Role.Leader);
    expect(rd0.entries).toHaveLength(1);
    expect(rd0.committedEntries).toEqual([]);
    expect(n1.raft.log.committed).toBe(0);
    n1.advance(rd0);
    expect(n1.raft.log.committed).toBe(1);

    n1.propose([enc('a')]);
    const rd1 = n1.ready();
    const index = rd1.entries.at(-1)!.index;
    expect(dec(rd1.entries.at(-1)!.data)).toBe('a');
    // Ticks and more proposals while the write is in flight must not commit it.
    for (let t = 0; t < 3; t++) n1.tick();
    n1.propose([enc('b')]);
    expect(n1.raft.log.committed).toBeLessThan(index);
    expect(rd1.committedEntries.map((e) => e.index)).not.toContain(index);
    n1.advance(rd1);
    expect(n1.raft.log.committed).toBe(index);
    const rd2 = n1.ready();
    expect(rd2.committedEntries.map((e) => dec(e.data))).toContain('a');
    // 'b' arrived after rd1 was made: it is not durable yet, so not committed.
    expect(rd2.committedEntries.map((e) => dec(e.data))).not.toContain('b');
    n1.advance(rd2);
    const rd3 = n1.ready();
    expect(rd3.committedEntries.map((e) => dec(e.data))).toEqual(['b']);
  });

  function leaderWithHeldWrite(): { net: Net; rd: Ready; index: number } {
    const net = new Net(['n1', 'n2', 'n3'], 3);
    net.elect('n1');
    const n1 = net.node('n1');
    n1.propose([enc('x')]);
    const rd = n1.ready();
    const index = rd.entries.at(-1)!.index;
    // Term and vote are durable: the appends may travel while the leader writes.
    expect(rd.messages).toEqual([]);
    const apps = rd.messagesNow.filter((m) => m.type === MT.App && m.entries.some((e) => e.index === index));
    expect(apps.map((m) => m.to).sort()).toEqual(['n2', 'n3']);
    net.send(rd.messagesNow);
    net.held.add('n1');
    return { net, rd, index };
  }

  /** Delivers the leader's append to `id` and `id`'s acknowledgement back, leaving the leader's Ready outstanding. */
  function ackFrom(net: Net, id: NodeId): void {
    net.deliver((m) => m.from === 'n1' && m.to === id);
    const acks = net.inflight.filter((m) => m.from === id && m.to === 'n1' && m.type === MT.AppResp && !m.reject);
    expect(acks.length).toBeGreaterThan(0);
    net.inflight = net.inflight.filter((m) => !acks.includes(m));
    for (const m of acks) net.node('n1').step(m);
  }

  it('R6: one follower ack with the leader unsynced does not commit; the leader sync then does', () => {
    const { net, rd, index } = leaderWithHeldWrite();
    const n1 = net.node('n1');
    ackFrom(net, 'n2');
    expect(n1.raft.log.committed).toBeLessThan(index);
    n1.advance(rd);
    expect(n1.raft.log.committed).toBe(index);
  });

  it('R6: two follower acks commit while the leader is unsynced, but the leader applies only after its sync', () => {
    const { net, rd, index } = leaderWithHeldWrite();
    const n1 = net.node('n1');
    ackFrom(net, 'n2');
    ackFrom(net, 'n3');
    expect(n1.raft.log.committed).toBe(index);
    expect(rd.committedEntries.map((e) => e.index)).not.toContain(index);
    n1.advance(rd);
    expect(n1.ready().committedEntries.map((e) => e.index)).toContain(index);
  });

  it("R6: a Ready that changes term or vote sends nothing early, even a new leader's appends", () => {
    // Votes arrive before the candidate's Ready is taken (a driver bug could do
    // that): the new leader's appends share a Ready with its new term and vote.
    const net = new Net(['n1', 'n2', 'n3'], 4, { preVote: false });
    const n1 = net.node('n1');
    n1.campaign();
    expect(n1.raft.role).toBe(Role.Candidate);
    for (const from of ['n2', 'n3']) n1.step(message({ type: MT.VoteResp, from, to: 'n1', term: n1.raft.term }));
    expect(n1.raft.role).toBe(Role.Leader);
    const rd = n1.ready();
    expect(rd.hardState).toMatchObject({ term: 2, vote: 'n1' });
    expect(rd.messagesNow).toEqual([]);
    expect(rd.messages.filter((m) => m.type === MT.Vote)).toHaveLength(2);
    expect(rd.messages.filter((m) => m.type === MT.App)).toHaveLength(2);
  });

  it('R6: while a write is in flight, only a leader with a durable term may take messages early', () => {
    const { net, rd } = leaderWithHeldWrite();
    const n1 = net.node('n1');
    n1.propose([enc('next')]);
    const early = n1.takeMessagesNow();
    expect(
      early
        .filter((m) => m.type === MT.App && m.entries.some((e) => dec(e.data) === 'next'))
        .map((m) => m.to)
        .sort(),
    ).toEqual(['n2', 'n3']);
    // A follower with a write in flight keeps its acknowledgement.
    net.deliver((m) => m.to === 'n2');
    net.node('n2').step(
      message({
        type: MT.App,
        from: 'n1',
        to: 'n2',
        term: n1.raft.term,
        index: early[0].index,
        logTerm: early[0].logTerm,
        entries: early[0].entries,
        commit: 0,
      }),
    );
    expect(net.node('n2').takeMessagesNow()).toEqual([]);
    // A candidate whose new term is not durable sends nothing early.
    n1.advance(rd);
    const cand = new Net(['n1', 'n2', 'n3'], 27, { preVote: false });
    cand.node('n1').campaign();
    expect(cand.node('n1').takeMessagesNow()).toEqual([]);
    expect(
      cand
        .node('n1')
        .ready()
        .messages.filter((m) => m.type === MT.Vote),
    ).toHaveLength(2);
  });

  it('R6: votes, vote grants and follower acknowledgements go in messages, never messagesNow', () => {
    const net = new Net(['n1', 'n2', 'n3'], 5);
    net.elect('n1');
    net.propose('n1', 'y');
    net.stabilize();
    const kinds = new Set<MT>();
    for (const id of net.ids) {
      for (const rd of net.readys.get(id)!) {
        for (const m of rd.messagesNow) kinds.add(m.type);
        if (id !== 'n1') expect(rd.messagesNow).toEqual([]);
      }
    }
    expect([...kinds].sort()).toEqual([MT.App]);
    const followerAcks = net.readys
      .get('n2')!
      .flatMap((rd) => rd.messages)
      .filter((m) => m.type === MT.AppResp);
    expect(followerAcks.length).toBeGreaterThan(0);
    const grants = net.readys
      .get('n2')!
      .flatMap((rd) => rd.messages)
      .filter((m) => m.type === MT.VoteResp && !m.reject);
    expect(grants).toHaveLength(1);
  });
});

// ---- commitment by current-term entries ------------------------------------------

describe('raft core: commitment', () => {
  it('an old-term entry replicated on every node by a new leader commits only with a current-term entry (§5.4.2)', () => {
    // n1 led term 2, wrote entry 2 only locally, and restarts.
    const hs: HardState = { term: 2, vote: 'n1', commit: 1 };
    const net = new Net(
      ['n1', 'n2', 'n3'],
      6,
      { appendBytesMax: 1 },
      {
        n1: { hardState: hs, snapshot: emptySnapshot(), entries: logOf([1, 2]) },
        n2: { hardState: hs, snapshot: emptySnapshot(), entries: logOf([1]) },
        n3: { hardState: hs, snapshot: emptySnapshot(), entries: logOf([1]) },
      },
    );
    // appendBytesMax = 1: one entry per append, so entry 2 can travel without
    // entry 3. Entry 3 is dropped once the receiver holds entry 2 (the probes
    // before that must be rejected for the leader to back up).
    net.filter = (m) =>
      !(m.type === MT.App && m.entries.some((e) => e.index === 3) && net.node(m.to).raft.log.term(2) === 2);
    net.elect('n1');
    const n1 = net.node('n1');
    expect(n1.raft.term).toBe(3);
    net.stabilize();
    for (const id of ['n2', 'n3']) {
      expect(net.node(id).raft.log.term(2)).toBe(2);
      expect(n1.raft.progress.get(id)!.match).toBe(2);
    }
    expect(n1.raft.log.committed).toBe(1);
    for (const id of net.ids) expect(net.applied.get(id)!.map((e) => e.index)).toEqual([1]);

    net.filter = () => true;
    net.tick(['n1']);
    for (const id of net.ids) {
      expect(net.node(id).raft.log.committed).toBe(3);
      expect(net.applied.get(id)!.map((e) => [e.index, e.term])).toEqual([
        [1, 1],
        [2, 2],
        [3, 3],
      ]);
    }
  });

  it('Figure 8: an old-term entry on a majority is not committed by it, and a later leader may rightly overwrite it', () => {
    // Raft paper, Figure 8 (c)-(d). n1 (S1) leads term 4 and replicates its
    // term-2 entry 2 to n2 and n3: a majority of five. n5 (S5) holds a term-3
    // entry 2. Counting replicas would commit entry 2 and apply it; n5 can
    // still win term 5 (with votes of n2, n3, n4) and overwrite it. The
    // harness would see two different entries applied at index 2.
    const five = ['n1', 'n2', 'n3', 'n4', 'n5'];
    const logs: Record<NodeId, number[]> = { n1: [1, 2], n2: [1], n3: [1], n4: [1], n5: [1, 3] };
    const rec: Record<NodeId, Recovered> = {};
    for (const id of five)
      rec[id] = { hardState: { term: 3, vote: '', commit: 1 }, snapshot: emptySnapshot(), entries: logOf(logs[id]) };
    const net = new Net(five, 8, { appendBytesMax: 1, checkQuorum: false }, rec);
    net.isolate('n4');
    net.isolate('n5');
    // n1's term-4 entry 3 does not get out: only entry 2 reaches n2 and n3.
    net.filter = (m) =>
      !(m.type === MT.App && m.entries.some((e) => e.index === 3) && net.node(m.to).raft.log.term(2) === 2);
    net.elect('n1');
    expect(net.node('n1').raft.term).toBe(4);
    net.tick(['n1'], 2);
    for (const id of ['n2', 'n3']) expect(net.node(id).raft.log.term(2)).toBe(2);
    expect(net.node('n1').raft.log.committed).toBe(1);

    // (d): n1 is cut off; n5 wins term 5 and overwrites entry 2 everywhere.
    net.heal();
    net.isolate('n1');
    for (let k = 0; k < 3 && net.node('n5').raft.role !== Role.Leader; k++) {
      net.node('n5').campaign();
      net.stabilize();
    }
    expect(net.node('n5').raft.role).toBe(Role.Leader);
    expect(net.node('n5').raft.term).toBe(5);
    net.heal();
    net.tick(['n5'], 2);
    for (const id of five) {
      expect(net.node(id).raft.log.term(2)).toBe(3);
      expect(net.applied.get(id)!.map((e) => e.term)).toEqual([1, 3, 5]);
    }
  });
});

// ---- fast backtracking ------------------------------------------------------------

describe('raft core: fast backtracking', () => {
  it('repairs a long divergent suffix in O(terms) rejected appends, not O(entries)', () => {
    const leaderLog = [1, ...run(3, 10), ...run(5, 10)]; // 21 entries
    const staleLog = [1, ...run(2, 10), ...run(4, 20)]; // 31 entries, 30 divergent
    const hs: HardState = { term: 5, vote: '', commit: 1 };
    const net = new Net(
      ['n1', 'n2', 'n3'],
      9,
      {},
      {
        n1: { hardState: hs, snapshot: emptySnapshot(), entries: logOf(leaderLog) },
        n2: { hardState: hs, snapshot: emptySnapshot(), entries: logOf(staleLog) },
        n3: { hardState: hs, snapshot: emptySnapshot(), entries: logOf(leaderLog) },
      },
    );
    const mark = net.sent.length;
    // First n2 hears only heartbeats: its divergent entries must not commit,
    // though the leader commits up to 22 with n3.
    net.filter = (m) => !(m.type === MT.App && m.to === 'n2');
    net.elect('n1');
    net.tick(['n1'], 2);
    expect(net.node('n1').raft.log.committed).toBe(22);
    expect(net.node('n2').raft.log.committed).toBe(1);
    net.filter = () => true;
    net.tick(['n1']);
    const rejects = net.sentSince(mark, (m) => m.type === MT.AppResp && m.from === 'n2' && m.reject);
    expect(rejects.length).toBeGreaterThan(0);
    expect(rejects.length).toBeLessThanOrEqual(3);
    const n1 = net.node('n1').raft.log;
    const n2 = net.node('n2').raft.log;
    expect(n2.lastIndex()).toBe(n1.lastIndex());
    for (let i = 1; i <= n1.lastIndex(); i++) expect(n2.term(i)).toBe(n1.term(i));
    expect(n2.committed).toBe(n1.lastIndex());
  });
});

// ---- flow control and batching ------------------------------------------------------

describe('raft core: flow control', () => {
  it('a follower that never answers has at most inflightMsgsMax appends outstanding', () => {
    const net = new Net(['n1', 'n2', 'n3'], 10, { inflightMsgsMax: 4 });
    net.elect('n1');
    net.stabilize();
    net.cut.add('n3->n1');
    const mark = net.sent.length;
    for (let k = 0; k < 12; k++) {
      net.propose('n1', `p${k}`);
      net.stabilize();
    }
    net.tick(['n1'], 3);
    const toN3 = net.sentSince(mark, (m) => m.type === MT.App && m.to === 'n3' && m.entries.length > 0);
    expect(toN3).toHaveLength(4);
    const pr = net.node('n1').raft.progress.get('n3')!;
    expect(pr.inflights.count()).toBe(4);
    expect(pr.isPaused()).toBe(true);
    // The other follower is a quorum with the leader: everything committed.
    expect(net.appliedData('n2')).toHaveLength(12);
  });

  it('proposals queued behind a full window leave in few appends, each within appendBytesMax', () => {
    const appendBytesMax = 2000;
    const net = new Net(['n1', 'n2', 'n3'], 11, { inflightMsgsMax: 2, appendBytesMax });
    net.elect('n1');
    net.stabilize();
    const mark = net.sent.length;
    // Hold every acknowledgement while 60 proposals arrive one by one.
    net.filter = (m) => m.type !== MT.AppResp;
    for (let k = 0; k < 60; k++) net.propose('n1', `proposal-${String(k).padStart(3, '0')}-${'z'.repeat(40)}`);
    net.deliver();
    const early = net.sentSince(mark, (m) => m.type === MT.App && m.to === 'n2' && m.entries.length > 0);
    expect(early).toHaveLength(2);
    net.heal();
    net.stabilize();
    // Let the held acknowledgements be lost: a heartbeat round restarts the stream.
    net.tick(['n1'], 2);
    const apps = net.sentSince(mark, (m) => m.type === MT.App && m.to === 'n2' && m.entries.length > 0);
    for (const m of apps) {
      const bytes = m.entries.reduce((s, e) => s + entryBytes(e), 0);
      if (m.entries.length > 1) expect(bytes).toBeLessThanOrEqual(appendBytesMax);
    }
    expect(Math.max(...apps.map((m) => m.entries.length))).toBeGreaterThan(10);
    expect(apps.length).toBeLessThan(20);
    expect(net.appliedData('n2')).toHaveLength(60);
  });
});

describe('raft core: a moved commit index rides the next append (commitNoticeLazy)', () => {
  const emptyAppends = (net: Net, mark: number): Message[] =>
    net.sentSince(mark, (m) => m.type === MT.App && m.entries.length === 0);

  /** Since `mark` one empty append went to each follower, and both applied 'a'. */
  function expectNoticed(net: Net, mark: number): void {
    expect(
      emptyAppends(net, mark)
        .map((m) => m.to)
        .sort(),
    ).toEqual(['n2', 'n3']);
    expect(net.appliedData('n2')).toEqual(['a']);
    expect(net.appliedData('n3')).toEqual(['a']);
    expect(net.node('n1').commitNoticeDue()).toBe(false);
  }

  /** A leader n1 whose followers know every commit so far. */
  function settled(lazy: boolean, overrides: Overrides = {}): Net {
    const net = new Net(['n1', 'n2', 'n3'], 21, { commitNoticeLazy: lazy, ...overrides });
    net.elect('n1');
    net.node('n1').noticeCommit();
    net.stabilize();
    expect(net.node('n1').commitNoticeDue()).toBe(false);
    return net;
  }

  it('an entry that commits sends no append of its own: the next proposal carries the commit index, and the followers apply it then', () => {
    const net = settled(true);
    const mark = net.sent.length;
    net.propose('n1', 'a');
    net.stabilize();
    expect(net.appliedData('n1')).toEqual(['a']);
    expect(net.appliedData('n2')).toEqual([]);
    expect(net.appliedData('n3')).toEqual([]);
    expect(emptyAppends(net, mark)).toEqual([]);
    expect(net.node('n1').commitNoticeDue()).toBe(true);
    net.propose('n1', 'b');
    net.stabilize();
    expect(net.appliedData('n2')).toEqual(['a']);
    expect(net.appliedData('n3')).toEqual(['a']);
    expect(emptyAppends(net, mark)).toEqual([]);
  });

  it('noticeCommit() sends the index at once, one empty append per follower, and only while it is due', () => {
    const net = settled(true);
    net.propose('n1', 'a');
    net.stabilize();
    const mark = net.sent.length;
    net.node('n1').noticeCommit();
    net.stabilize();
    expectNoticed(net, mark);
    const again = net.sent.length;
    net.node('n1').noticeCommit();
    net.stabilize();
    expect(net.sent.length).toBe(again);
  });

  it('a heartbeat carries it too, and the notice is no longer due', () => {
    const net = settled(true);
    net.propose('n1', 'a');
    net.stabilize();
    net.tick(['n1']);
    expect(net.appliedData('n2')).toEqual(['a']);
    expect(net.appliedData('n3')).toEqual(['a']);
    expect(net.node('n1').commitNoticeDue()).toBe(false);
  });

  it('control: an eager leader sends the index in an append of its own as soon as the entry commits', () => {
    const net = settled(false);
    const mark = net.sent.length;
    net.propose('n1', 'a');
    net.stabilize();
    expectNoticed(net, mark);
  });

  it('an acknowledgement that moves the commit index still opens its follower window: entries waiting behind it go at once, without a tick', () => {
    const net = settled(true, { inflightMsgsMax: 1 });
    for (let k = 0; k < 5; k++) net.propose('n1', `p${k}`);
    net.stabilize();
    const last = net.node('n1').raft.log.lastIndex();
    expect(net.appliedData('n1')).toHaveLength(5);
    for (const id of ['n2', 'n3']) expect(net.node(id).raft.log.lastIndex(), `${id} holds every entry`).toBe(last);
  });
});

// ---- PreVote and CheckQuorum ----------------------------------------------------------

describe('raft core: PreVote and CheckQuorum', () => {
  it("a partitioned node that rejoins does not bump the cluster's term (PreVote)", () => {
    const net = new Net(['n1', 'n2', 'n3'], 12);
    net.elect('n1');
    const term = net.node('n1').raft.term;
    net.isolate('n3');
    net.tick(net.ids, 8 * ELECTION_TICKS);
    expect(net.node('n3').raft.term).toBe(term);
    expect(net.node('n3').raft.role).toBe(Role.PreCandidate);
    net.heal();
    net.tick(net.ids, 3 * ELECTION_TICKS);
    expect(net.leaders()).toEqual(['n1']);
    for (const id of net.ids) {
      expect(net.node(id).raft.term).toBe(term);
      expect(net.node(id).raft.lead).toBe('n1');
    }
  });

  it('without PreVote the same rejoin does disturb the term (the check above can fail)', () => {
    const net = new Net(['n1', 'n2', 'n3'], 12, { preVote: false, checkQuorum: false });
    net.elect('n1');
    const term = net.node('n1').raft.term;
    net.isolate('n3');
    net.tick(net.ids, 8 * ELECTION_TICKS);
    expect(net.node('n3').raft.term).toBeGreaterThan(term);
  });

  it('a leader that cannot hear a quorum for an election timeout steps down (CheckQuorum)', () => {
    const net = new Net(['n1', 'n2', 'n3'], 13);
    net.elect('n1');
    net.tick(net.ids, 5 * ELECTION_TICKS);
    expect(net.leaders()).toEqual(['n1']);
    net.isolate('n1');
    let ticks = 0;
    while (net.node('n1').raft.role === Role.Leader && ticks < 5 * ELECTION_TICKS) {
      net.tick(['n1']);
      ticks++;
    }
    expect(net.node('n1').raft.role).toBe(Role.Follower);
    expect(ticks).toBeLessThanOrEqual(2 * ELECTION_TICKS);
    // The majority side elects a new leader in a later term.
    const old = net.node('n1').raft.term;
    net.tick(['n2', 'n3'], 4 * ELECTION_TICKS);
    const leaders = net.leaders();
    expect(leaders).toHaveLength(1);
    expect(['n2', 'n3']).toContain(leaders[0]);
    expect(net.node(leaders[0]).raft.term).toBeGreaterThan(old);
  });
});

describe("raft core: a broken stream to the leader (the transport's Unreachable)", () => {
  /** n1 leads, every follower just heard its heartbeat; then n1 dies. */
  function leaderDied(seed: number): Net {
    const net = new Net(['n1', 'n2', 'n3'], seed);
    net.elect('n1');
    net.tick(net.ids, 2 * ELECTION_TICKS);
    net.isolate('n1');
    return net;
  }

  it('followers told that the stream to their dead leader broke elect a new one within a few ticks, not an election timeout', () => {
    const net = leaderDied(40);
    const term = net.node('n2').raft.term;
    for (const id of ['n2', 'n3']) net.node(id).reportUnreachable('n1');
    net.tick(['n2', 'n3'], LEADER_LOST_JITTER_TICKS + 2);
    const leaders = net.leaders().filter((id) => id !== 'n1');
    expect(leaders).toHaveLength(1);
    expect(net.node(leaders[0]).raft.term).toBe(term + 1);
  });

  it('without the report the same few ticks elect nobody (the check above can fail)', () => {
    const net = leaderDied(40);
    net.tick(['n2', 'n3'], LEADER_LOST_JITTER_TICKS + 2);
    expect(net.leaders().filter((id) => id !== 'n1')).toEqual([]);
  });

  it('a report about a node that is not the leader changes nothing', () => {
    const net = leaderDied(41);
    for (const id of ['n2', 'n3']) net.node(id).reportUnreachable(id === 'n2' ? 'n3' : 'n2');
    net.tick(['n2', 'n3'], LEADER_LOST_JITTER_TICKS + 2);
    expect(net.leaders().filter((id) => id !== 'n1')).toEqual([]);
  });

  it('followers that lose the leader in the same tick never split the vote: the first by id campaigns, one term later there is one leader (200 seeds)', () => {
    for (let seed = 100; seed < 300; seed++) {
      const net = leaderDied(seed);
      const term = net.node('n2').raft.term;
      for (const id of ['n2', 'n3']) net.node(id).reportUnreachable('n1');
      net.tick(['n2', 'n3'], LEADER_LOST_JITTER_TICKS + 1);
      expect(
        net.leaders().filter((id) => id !== 'n1'),
        `seed ${seed}`,
      ).toEqual(['n2']);
      for (const id of ['n2', 'n3']) expect(net.node(id).raft.term, `seed ${seed}`).toBe(term + 1);
    }
  });

  it('5 nodes: the survivors campaign in turn, 1 + rank × LEADER_LOST_RANK_TICKS ticks after the report, and elect the first in one term', () => {
    const net = new Net(['n1', 'n2', 'n3', 'n4', 'n5'], 43);
    net.elect('n3');
    net.tick(net.ids, 2 * ELECTION_TICKS);
    net.isolate('n3');
    const term = net.node('n1').raft.term;
    const rest = ['n1', 'n2', 'n4', 'n5'];
    for (const id of rest) net.node(id).reportUnreachable('n3');
    let ticks = 0;
    while (net.leaders().filter((id) => id !== 'n3').length === 0 && ticks < ELECTION_TICKS) {
      net.tick(rest);
      ticks++;
      // Only n1 (rank 0) may have campaigned before rank 1's turn.
      if (ticks < 1 + LEADER_LOST_RANK_TICKS)
        for (const id of ['n2', 'n4', 'n5']) expect(net.node(id).raft.role).toBe(Role.Follower);
    }
    expect(ticks).toBeLessThanOrEqual(LEADER_LOST_JITTER_TICKS);
    expect(net.leaders().filter((id) => id !== 'n3')).toEqual(['n1']);
    for (const id of rest) expect(net.node(id).raft.term).toBe(term + 1);
  });

  it('two survivors that pre-vote at the same moment do not split: the first in the order refuses the other, which grants and steps back', () => {
    const net = leaderDied(44);
    const term = net.node('n2').raft.term;
    for (const id of ['n2', 'n3']) net.node(id).reportUnreachable('n1');
    net.node('n2').campaign();
    net.node('n3').campaign();
    net.stabilize();
    expect(net.leaders().filter((id) => id !== 'n1')).toEqual(['n2']);
    for (const id of ['n2', 'n3']) expect(net.node(id).raft.term).toBe(term + 1);
    expect(net.sent.some((m) => m.from === 'n2' && m.to === 'n3' && m.type === MT.PreVoteResp && m.reject)).toBe(true);
  });

  it('the first in the order yields when its log is behind: the rival with the newer log wins', () => {
    const net = leaderDied(47);
    net.heal();
    // n2 misses an entry that n1 and n3 hold; then n1 dies.
    net.cut.add('n1->n2');
    net.propose('n1', 'only-n1-n3');
    net.stabilize();
    net.isolate('n1');
    const term = net.node('n3').raft.term;
    for (const id of ['n2', 'n3']) net.node(id).reportUnreachable('n1');
    net.node('n2').campaign();
    net.node('n3').campaign();
    net.stabilize();
    expect(net.leaders().filter((id) => id !== 'n1')).toEqual(['n3']);
    expect(net.node('n3').raft.term).toBe(term + 1);
  });

  it('quick campaigns are bounded: a follower cut off from everyone falls back to the randomized election timeout', () => {
    const net = leaderDied(45);
    net.isolate('n2');
    net.node('n2').reportUnreachable('n1');
    net.tick(['n2'], 8 * ELECTION_TICKS);
    const preVotes = net.sent.filter((m) => m.from === 'n2' && m.type === MT.PreVote && m.to === 'n3').length;
    // 8 election timeouts allow at most 8 ordinary campaigns, plus the quick ones.
    expect(preVotes).toBeLessThanOrEqual(8 + LEADER_LOST_CAMPAIGNS_MAX);
    expect(preVotes).toBeGreaterThanOrEqual(LEADER_LOST_CAMPAIGNS_MAX);
    // Pre-votes that nobody answers never raise the term.
    expect(net.node('n2').raft.term).toBe(net.node('n3').raft.term);
  });

  it('a follower whose stream to a live leader broke (a blip, reported again and again) does not depose it: the other follower still hears the leader and ignores the pre-votes', () => {
    const net = new Net(['n1', 'n2', 'n3'], 46);
    net.elect('n1');
    net.tick(net.ids, 2 * ELECTION_TICKS);
    const term = net.node('n1').raft.term;
    // n2 and n1 cannot reach each other; n1 and n3 can. The transport repeats its report every tick.
    net.cut.add('n1->n2');
    net.cut.add('n2->n1');
    for (let t = 0; t < 6 * ELECTION_TICKS; t++) {
      net.node('n2').reportUnreachable('n1');
      net.tick(net.ids);
    }
    expect(net.leaders()).toEqual(['n1']);
    for (const id of net.ids) expect(net.node(id).raft.term).toBe(term);
    // n2 did campaign (the check above can fail only because it tried).
    expect(net.sent.some((m) => m.from === 'n2' && m.type === MT.PreVote)).toBe(true);
    net.heal();
    net.tick(net.ids, 2);
    expect(net.node('n2').raft.lead).toBe('n1');
  });

  it('a live leader is not disrupted when one follower loses its stream: the other follower is in lease and refuses the pre-vote', () => {
    const net = new Net(['n1', 'n2', 'n3'], 42);
    net.elect('n1');
    net.tick(net.ids, 2 * ELECTION_TICKS);
    const term = net.node('n1').raft.term;
    net.node('n2').reportUnreachable('n1');
    // Only n2 ticks, so no heartbeat resets it: it campaigns, and is refused.
    net.tick(['n2'], LEADER_LOST_JITTER_TICKS + 2);
    expect(net.node('n2').raft.role).toBe(Role.PreCandidate);
    net.tick(net.ids, 2 * ELECTION_TICKS);
    expect(net.leaders()).toEqual(['n1']);
    for (const id of net.ids) expect(net.node(id).raft.term).toBe(term);
  });
});

describe('raft core: quiescence (RaftConfig.quiesce)', () => {
  /** Whether `id`'s frames name the group as led quiesced (WireBatch.quiescedGroups): it leads it and is quiesced. */
  function leadsQuiesced(net: Net, id: NodeId): boolean {
    const n = net.node(id);
    return n.raft.role === Role.Leader && n.quiesced();
  }

  /**
   * Ticks `ids` `times` times; before each tick every node hears from the other nodes (the group host's report of any
   * frame from them, with whether it names the group as led quiesced), except from those in `silent`.
   */
  function tickHeard(net: Net, times: number, silent: ReadonlySet<NodeId> = new Set(), ids = net.ids): void {
    for (let t = 0; t < times; t++) {
      for (const id of ids)
        for (const peer of net.ids)
          if (peer !== id && !silent.has(peer)) net.node(id).heard(peer, leadsQuiesced(net, peer));
      net.tick(ids);
    }
  }

  /** n1 leads three nodes that quiesce, and the group has gone quiet. */
  function quietGroup(seed: number): Net {
    const net = new Net(['n1', 'n2', 'n3'], seed, { quiesce: true });
    net.elect('n1');
    tickHeard(net, 3);
    for (const id of net.ids) expect(net.node(id).quiesced(), `${id} quiesced`).toBe(true);
    return net;
  }

  it('an idle group quiesces within a few ticks, then sends nothing at all while its nodes are heard', () => {
    const net = quietGroup(60);
    const mark = net.sent.length;
    tickHeard(net, 5 * ELECTION_TICKS);
    expect(net.sentSince(mark, () => true)).toEqual([]);
    expect(net.leaders()).toEqual(['n1']);
  });

  it('control: without quiescence the same group sends a heartbeat and an answer per follower per tick', () => {
    const net = new Net(['n1', 'n2', 'n3'], 60);
    net.elect('n1');
    tickHeard(net, 3);
    const mark = net.sent.length;
    tickHeard(net, 10);
    expect(net.sentSince(mark, () => true).length).toBeGreaterThanOrEqual(10 * 2 * 2);
    for (const id of net.ids) expect(net.node(id).quiesced()).toBe(false);
  });

  it('a proposal wakes the group: its entry is applied on every node, then the group quiesces again', () => {
    const net = quietGroup(61);
    net.propose('n1', 'x');
    expect(net.node('n1').quiesced()).toBe(false);
    tickHeard(net, 3);
    for (const id of net.ids) expect(net.appliedData(id)).toEqual(['x']);
    for (const id of net.ids) expect(net.node(id).quiesced(), `${id} quiesced again`).toBe(true);
  });

  it('no election while quiesced and the leader node is heard: a rival pre-vote is refused (the leader lease), nobody changes term', () => {
    const net = quietGroup(62);
    const term = net.node('n1').raft.term;
    tickHeard(net, 5 * ELECTION_TICKS);
    net.node('n3').campaign();
    net.stabilize();
    tickHeard(net, 3 * ELECTION_TICKS);
    expect(net.leaders()).toEqual(['n1']);
    for (const id of net.ids) expect(net.node(id).raft.term).toBe(term);
  });

  it('followers of a quiesced group whose leader node falls silent campaign after an election timeout and elect one leader', () => {
    const net = quietGroup(63);
    const term = net.node('n1').raft.term;
    net.isolate('n1');
    tickHeard(net, 3 * ELECTION_TICKS, new Set(['n1']), ['n2', 'n3']);
    const leaders = net.leaders().filter((id) => id !== 'n1');
    expect(leaders).toHaveLength(1);
    expect(net.node(leaders[0]).raft.term).toBeGreaterThan(term);
  });

  it('a quiesced follower told that the stream to its leader broke (Unreachable) campaigns within a few ticks', () => {
    const net = quietGroup(64);
    net.isolate('n1');
    for (const id of ['n2', 'n3']) net.node(id).reportUnreachable('n1');
    tickHeard(net, LEADER_LOST_JITTER_TICKS + 2, new Set(['n1']), ['n2', 'n3']);
    expect(net.leaders().filter((id) => id !== 'n1')).toHaveLength(1);
  });

  it('a quiesced follower whose leader asks for votes grants them at once: that node no longer leads (the lease ends)', () => {
    const net = quietGroup(65);
    // n1 restarted quickly (its node is heard again at once) and campaigns; its followers still hear its node.
    net.crash('n1', false);
    net.node('n1').campaign();
    net.stabilize();
    expect(net.leaders()).toEqual(['n1']);
  });

  // Found by the simulator (G = 2): the leader's node crashed and restarted at once with a disk that lost entries (so
  // it may not campaign); its node was heard again at once, and a quiesced follower that took any frame of it as its
  // heartbeat stayed in its lease for ever, refusing the third node's votes: no leader again.
  it("a quiesced follower whose leader's node restarted (and leads nothing) campaigns after an election timeout, though that node is heard", () => {
    const net = quietGroup(68);
    const term = net.node('n1').raft.term;
    net.crash('n1', false);
    // n1 is heard every tick but does not tick itself (it would campaign, and its pre-vote would end the lease).
    tickHeard(net, 3 * ELECTION_TICKS, new Set(), ['n2', 'n3']);
    const leaders = net.leaders().filter((id) => id !== 'n1');
    expect(leaders).toHaveLength(1);
    expect(net.node(leaders[0]).raft.term).toBeGreaterThan(term);
  });

  it('a quiesced leader stays while its members are heard, and steps down (CheckQuorum) within two election timeouts once they are not', () => {
    const net = quietGroup(66);
    tickHeard(net, 5 * ELECTION_TICKS);
    expect(net.leaders()).toEqual(['n1']);
    net.isolate('n1');
    let ticks = 0;
    while (net.node('n1').raft.role === Role.Leader && ticks < 5 * ELECTION_TICKS) {
      tickHeard(net, 1, new Set(['n2', 'n3']), ['n1']);
      ticks++;
    }
    expect(net.node('n1').raft.role).toBe(Role.Follower);
    expect(ticks).toBeLessThanOrEqual(2 * ELECTION_TICKS);
  });

  it("a late answer to an earlier round's quiesce request does not count: only this round's answers quiesce the leader", () => {
    const net = new Net(['n1', 'n2', 'n3'], 67, { quiesce: true });
    net.elect('n1');
    net.stabilize();
    const isAnswer = (from: NodeId) => (m: Message) => m.type === MT.HeartbeatResp && m.from === from;
    /** One tick of n1: its quiesce requests reach both followers; their answers stay on the wire. */
    const requestRound = (): void => {
      net.node('n1').tick();
      net.pump();
      expect(net.inflight.filter((m) => m.type === MT.Heartbeat).every((m) => m.context.length === 9)).toBe(true);
      net.deliver((m) => m.type === MT.Heartbeat);
    };
    requestRound();
    const late = net.inflight.filter(isAnswer('n2'));
    expect(late).toHaveLength(1);
    net.inflight = net.inflight.filter((m) => !isAnswer('n2')(m));
    // Something happens (a proposal) and is done with: every node has it, the followers are awake again.
    net.propose('n1', 'x');
    net.stabilize();
    expect(net.node('n2').quiesced()).toBe(false);
    // The next round: n3's answer arrives, n2's answer to the earlier round arrives late.
    requestRound();
    const current = net.inflight.filter(isAnswer('n2'));
    net.inflight = net.inflight.filter((m) => !isAnswer('n2')(m));
    net.deliver();
    net.node('n1').step(late[0]);
    net.pump();
    expect(net.node('n1').quiesced(), 'a late answer quiesced the leader').toBe(false);
    net.inflight.push(...current);
    net.deliver();
    expect(net.node('n1').quiesced()).toBe(true);
  });
});

describe('raft core: elections with uneven logs and stale leaders', () => {
  it('a node whose log is behind cannot win an election (its pre-votes are refused)', () => {
    const net = new Net(['n1', 'n2', 'n3'], 30);
    net.elect('n1');
    net.isolate('n3');
    for (let k = 0; k < 3; k++) net.propose('n1', `c${k}`);
    net.stabilize();
    net.heal();
    // n1 goes away; n3 (behind) campaigns first, n2 (up to date) refuses it.
    net.isolate('n1');
    const term = net.node('n3').raft.term;
    net.node('n3').campaign();
    net.stabilize();
    expect(net.node('n3').raft.role).not.toBe(Role.Leader);
    expect(net.node('n3').raft.term).toBe(term);
    net.node('n2').campaign();
    net.stabilize();
    expect(net.node('n2').raft.role).toBe(Role.Leader);
  });

  it('a stale leader cut off without CheckQuorum steps down when it hears the newer term, and its uncommitted entry is dropped', () => {
    const net = new Net(['n1', 'n2', 'n3'], 31, { checkQuorum: false });
    net.elect('n1');
    net.stabilize();
    net.isolate('n1');
    net.propose('n1', 'orphan'); // never reaches a quorum
    net.stabilize();
    net.elect('n2');
    net.propose('n2', 'kept');
    net.stabilize();
    expect(net.node('n1').raft.role).toBe(Role.Leader);
    net.heal();
    // n1's own heartbeat reaches n3, which answers with its newer term.
    net.tick(['n1']);
    expect(net.node('n1').raft.role).toBe(Role.Follower);
    expect(net.node('n1').raft.term).toBe(net.node('n2').raft.term);
    net.tick(['n2']);
    for (const id of net.ids) expect(net.appliedData(id)).toEqual(['kept']);
  });
});

describe('raft core: recovering after the disk lost acknowledged entries (protocol-aware recovery)', () => {
  /** n1 leads; n3 is cut off while c0..c2 commit on n1 and n2; then n2's disk loses them and n1 goes away. */
  function lostTailScenario(noticed: boolean): { net: Net; committedLast: number } {
    const net = new Net(['n1', 'n2', 'n3'], 40);
    net.elect('n1');
    net.stabilize();
    const before = net.node('n2').raft.log.lastIndex();
    net.isolate('n3');
    for (let k = 0; k < 3; k++) net.propose('n1', `c${k}`);
    net.stabilize();
    expect(net.appliedData('n1')).toEqual(['c0', 'c1', 'c2']);
    const committedLast = net.node('n1').raft.log.committed;
    net.crashLosingTail('n2', before, noticed);
    net.heal();
    net.isolate('n1');
    return { net, committedLast };
  }

  it('a recovering node refuses its vote to a candidate that lacks the entries it lost, so no leader can drop them', () => {
    const { net } = lostTailScenario(true);
    expect(net.node('n2').raft.recoverIndex).toBeGreaterThan(0);
    net.node('n3').campaign();
    net.stabilize();
    expect(net.node('n3').raft.role).not.toBe(Role.Leader);
    // Not with a real vote either (a transfer skips PreVote).
    net.node('n3').step(message({ type: MT.TimeoutNow, from: 'n1', to: 'n3', term: net.node('n3').raft.term }));
    net.stabilize();
    expect(net.node('n3').raft.role).not.toBe(Role.Leader);
  });

  it('control: without the high-water mark the same node votes, and a leader without the committed entries is elected', () => {
    const { net } = lostTailScenario(false);
    // The net's State Machine Safety check catches the new leader's entries replacing c0 at its index.
    expect(() => {
      net.node('n3').campaign();
      net.stabilize();
    }).toThrow(/applied a different entry at/);
    expect(net.node('n3').raft.role).toBe(Role.Leader);
  });

  it('a follower that lost acknowledged entries without noticing is sent them again, and the leader does not loop on its refusals', () => {
    // The disk's blind spot (docs/storage.md): the mark did not see the loss,
    // so n2 restarts with no recovering flag, below what n1 counts as its match.
    const net = new Net(['n1', 'n2', 'n3'], 41);
    net.elect('n1');
    net.stabilize();
    const before = net.node('n2').raft.log.lastIndex();
    for (let k = 0; k < 3; k++) net.propose('n1', `c${k}`);
    net.stabilize();
    const matched = net.node('n1').raft.progress.get('n2')?.match ?? 0;
    expect(matched).toBeGreaterThan(before);
    net.crashLosingTail('n2', before, false);
    expect(net.node('n2').raft.recoverIndex).toBe(0);
    // The broken stream puts n2's progress in Probe at its old match: n2 refuses that probe.
    net.node('n1').reportUnreachable('n2');
    net.propose('n1', 'c3');
    net.stabilize(); // a leader that re-sent the same probe for each refusal would never settle
    expect(net.node('n2').raft.log.lastIndex()).toBe(net.node('n1').raft.log.lastIndex());
    expect(net.appliedData('n2').slice(-4)).toEqual(['c0', 'c1', 'c2', 'c3']);
  });

  it('a recovering node never campaigns, however long it hears no leader', () => {
    const { net } = lostTailScenario(true);
    const term = net.node('n2').raft.term;
    net.tick(['n2'], ELECTION_TICKS * 5);
    net.node('n2').campaign();
    net.stabilize();
    expect(net.node('n2').raft.role).toBe(Role.Follower);
    expect(net.node('n2').raft.term).toBe(term);
  });

  it('the leader stops counting the lost acknowledgements at the first heartbeat, sends the missing entries, and the node votes again once caught up', () => {
    const { net, committedLast } = lostTailScenario(true);
    net.heal();
    const leader = net.node('n1');
    expect(leader.raft.progress.get('n2')!.match).toBe(committedLast);
    net.tick(['n1']);
    net.stabilize();
    const n2 = net.node('n2').raft;
    expect(n2.recoverIndex).toBe(0);
    expect(n2.log.lastIndex()).toBe(leader.raft.log.lastIndex());
    expect(net.appliedData('n2')).toEqual(['c0', 'c1', 'c2']);
    // Whole again: it may lead (a transfer, so n3's leader lease does not ignore it).
    net.isolate('n1');
    net.node('n2').step(message({ type: MT.TimeoutNow, from: 'n1', to: 'n2', term: n2.term }));
    net.stabilize();
    expect(net.node('n2').raft.role).toBe(Role.Leader);
  });
});

describe('raft core: a voter restarted on an empty data directory (rejoining)', () => {
  /**
   * The schedule of issue 39, finding 7: n1 away, n2 and n3 commit c0..c2,
   * n3's data directory is replaced by an empty one, n2 goes down, n1 comes back.
   */
  function wipedVoterSchedule(restart: (net: Net) => void): Net {
    const net = new Net(['n1', 'n2', 'n3'], 50);
    net.elect('n2');
    net.stabilize();
    net.isolate('n1');
    for (let k = 0; k < 3; k++) net.propose('n2', `c${k}`);
    net.stabilize();
    expect(net.appliedData('n3')).toEqual(['c0', 'c1', 'c2']);
    restart(net);
    net.heal();
    net.isolate('n2');
    return net;
  }

  it('the wiped voter grants no vote and no pre-vote: n1, which lacks the commits, is not elected, however long it tries', () => {
    const net = wipedVoterSchedule((n) => n.crashWiped('n3'));
    const wipedAt = net.sent.length;
    expect(net.node('n3').raft.rejoining).toBe(true);
    net.tick(['n1', 'n3'], ELECTION_TICKS * 6);
    net.node('n1').campaign();
    net.stabilize();
    // Not with a real vote either (a transfer skips PreVote).
    net.node('n1').step(message({ type: MT.TimeoutNow, from: 'n2', to: 'n1', term: net.node('n1').raft.term }));
    net.stabilize();
    expect(net.node('n1').raft.role).not.toBe(Role.Leader);
    expect(
      net.sentSince(
        wipedAt,
        (m) => m.from === 'n3' && (m.type === MT.VoteResp || m.type === MT.PreVoteResp) && !m.reject,
      ),
    ).toEqual([]);
    // n2 returns: it is elected (n1 grants it, its log is longer) and catches n3 up; nothing was lost.
    net.heal();
    net.tick(['n2'], ELECTION_TICKS * 4);
    net.stabilize();
    expect(net.leaders()).toEqual(['n2']);
    expect(net.appliedData('n3')).toEqual(['c0', 'c1', 'c2']);
    expect(net.appliedData('n1')).toEqual(['c0', 'c1', 'c2']);
  });

  it('control: the same node started as if it founded the cluster again votes for n1, and a leader without the committed entries is elected', () => {
    const net = wipedVoterSchedule((n) => n.crashRefounded('n3'));
    expect(() => {
      net.node('n1').campaign();
      net.stabilize();
      net.propose('n1', 'x');
      net.stabilize();
      net.heal();
      net.tick(net.ids, 2);
    }).toThrow(/applied a different entry at|two leaders/);
  });

  it('a stale leader of an older term, which the wiped node no longer knows to refuse, cannot commit with its acknowledgements', () => {
    const net = new Net(['n1', 'n2', 'n3'], 51);
    net.elect('n1');
    net.stabilize();
    // n1 is cut off but never ticks, so it still believes it leads (no CheckQuorum round).
    net.isolate('n1');
    net.tick(['n3'], ELECTION_TICKS);
    net.elect('n2');
    for (let k = 0; k < 3; k++) net.propose('n2', `c${k}`);
    net.stabilize();
    expect(net.appliedData('n3')).toEqual(['c0', 'c1', 'c2']);
    net.crashWiped('n3');
    net.heal();
    net.isolate('n2');
    expect(net.node('n1').raft.role).toBe(Role.Leader);
    net.propose('n1', 'stale');
    net.stabilize();
    // n3 took n1's entries (it cannot tell n1 is stale) but n1 does not count it: nothing commits.
    expect(net.node('n3').raft.log.lastIndex()).toBe(net.node('n1').raft.log.lastIndex());
    expect(net.appliedData('n1')).not.toContain('stale');
    expect(net.node('n3').raft.rejoining).toBe(true);
    // n2 returns: its newer term deposes n1, and every node ends with c0..c2, never 'stale'.
    net.heal();
    for (let t = 0; t < ELECTION_TICKS * 6 && net.leaders().length !== 1; t++) net.tick(net.ids, 1);
    net.propose(net.leaders()[0], 'after');
    net.stabilize();
    net.tick(net.ids, 2);
    for (const id of net.ids) expect(net.appliedData(id)).toEqual(['c0', 'c1', 'c2', 'after']);
  });

  it('with a quorum besides it, the leader fences it, catches it up and proves it whole: it votes again, its vote in this term is that leader', () => {
    const net = new Net(['n1', 'n2', 'n3'], 52);
    net.elect('n2');
    for (let k = 0; k < 3; k++) net.propose('n2', `c${k}`);
    net.stabilize();
    const before = net.node('n2').raft.log.lastIndex();
    net.crashWiped('n3');
    expect(net.node('n3').raft.rejoining).toBe(true);
    net.tick(['n2']);
    net.stabilize();
    const n3 = net.node('n3').raft;
    expect(n3.rejoining).toBe(false);
    expect(n3.vote).toBe('n2');
    expect(n3.term).toBe(net.node('n2').raft.term);
    // The fence: one empty entry the leader appended after it heard n3 was rejoining.
    expect(net.node('n2').raft.log.lastIndex()).toBe(before + 1);
    expect(n3.log.lastIndex()).toBe(before + 1);
    expect(net.appliedData('n3')).toEqual(['c0', 'c1', 'c2']);
    // Whole again, it counts: with n1 gone, n2 and n3 commit.
    net.isolate('n1');
    net.propose('n2', 'c3');
    net.stabilize();
    expect(net.appliedData('n3')).toEqual(['c0', 'c1', 'c2', 'c3']);
    // And it may lead (a transfer, so no leader lease ignores it).
    net.node('n2').transferLeadership('n3');
    net.stabilize();
    expect(net.node('n3').raft.role).toBe(Role.Leader);
  });

  it('its rejoining state is durable before it answers anything: restarted from what it wrote, it is still rejoining', () => {
    const net = new Net(['n1', 'n2', 'n3'], 53);
    net.elect('n1');
    net.stabilize();
    net.isolate('n2');
    const mark = net.readys.get('n3')!.length;
    net.crashWiped('n3');
    net.pump();
    const rd = net.readys.get('n3')![mark];
    expect(rd.hardState?.vote).toBe(REJOINING_VOTE);
    expect(rd.mustSync).toBe(true);
    expect(rd.messages).toEqual([]);
    // n1 alone cannot prove it whole (the fence needs a quorum without n3); it restarts from its disk.
    net.tick(['n1'], 3);
    net.stabilize();
    expect(net.node('n3').raft.log.lastIndex()).toBeGreaterThan(0);
    net.crash('n3', false);
    expect(net.node('n3').raft.rejoining).toBe(true);
    net.heal();
    net.tick(['n1'], 2);
    expect(net.node('n3').raft.rejoining).toBe(false);
  });

  it("an append proving an earlier start of the node whole does not end a later start's rejoin (the nonce)", () => {
    const net = new Net(['n1', 'n2', 'n3'], 54);
    net.elect('n1');
    net.stabilize();
    net.crashWiped('n3');
    const proofs: Message[] = [];
    // Keep every append that proves n3 whole from reaching it; remember them.
    net.filter = (m) => {
      if (m.to === 'n3' && m.type === MT.App && m.context.length > 0) {
        proofs.push(cloneMessage(m));
        return false;
      }
      return true;
    };
    net.tick(['n1'], 2);
    expect(proofs.length).toBeGreaterThan(0);
    net.crashWiped('n3');
    net.filter = () => true;
    net.isolate('n2');
    for (const p of proofs) net.node('n3').step(p);
    net.pump();
    expect(net.node('n3').raft.rejoining).toBe(true);
  });
});

describe('raft core: back-pressure and abandoned transfers', () => {
  it('a leader without a quorum refuses proposals past uncommittedBytesMax, and takes them again once it commits', () => {
    const net = new Net(['n1', 'n2', 'n3'], 32, { uncommittedBytesMax: 100 });
    net.elect('n1');
    net.stabilize();
    net.isolate('n2');
    net.isolate('n3');
    let accepted = 0;
    expect(() => {
      for (let k = 0; k < 50; k++) {
        net.node('n1').propose([enc('x'.repeat(30))]);
        accepted++;
      }
    }).toThrow(ProposalDroppedError);
    expect(accepted).toBeGreaterThan(0);
    expect(accepted * 30).toBeLessThanOrEqual(130);
    net.heal();
    net.tick(['n1'], 2);
    expect(net.appliedData('n2')).toHaveLength(accepted);
    expect(() => net.node('n1').propose([enc('again')])).not.toThrow();
  });

  it('a transfer to an unreachable node is abandoned after an election timeout, and proposals flow again', () => {
    const net = new Net(['n1', 'n2', 'n3'], 33);
    net.elect('n1');
    net.stabilize();
    net.isolate('n3');
    net.propose('n1', 'a');
    net.stabilize();
    net.node('n1').transferLeadership('n3');
    expect(() => net.node('n1').propose([enc('b')])).toThrow(ProposalDroppedError);
    net.tick(['n1', 'n2'], ELECTION_TICKS);
    expect(net.leaders()).toEqual(['n1']);
    net.propose('n1', 'c');
    net.stabilize();
    expect(net.appliedData('n2')).toEqual(['a', 'c']);
  });
});

// ---- snapshots ----------------------------------------------------------------------------

describe('raft core: snapshots', () => {
  it('a follower behind a compacted log receives MsgSnap, persists it, and catches up after it', () => {
    const net = new Net(['n1', 'n2', 'n3'], 14);
    net.elect('n1');
    net.stabilize();
    net.isolate('n3');
    for (let k = 0; k < 20; k++) net.propose('n1', `before-${k}`);
    net.stabilize();
    const n1 = net.node('n1');
    const snapIndex = n1.raft.log.applied;
    expect(snapIndex).toBeGreaterThan(20);
    const snap = n1.snapshot(snapIndex, enc('state-at-snapshot'), 0);
    expect(n1.raft.log.firstIndex()).toBe(snapIndex + 1);
    net.propose('n1', 'after-1');
    net.propose('n1', 'after-2');
    net.stabilize();

    net.heal();
    const mark = net.sent.length;
    net.tick(['n1'], 3);
    expect(net.sentSince(mark, (m) => m.type === MT.Snap && m.to === 'n3')).toHaveLength(1);
    const n3 = net.node('n3');
    expect(net.snapshots.get('n3')!.map((s) => s.metadata.index)).toEqual([snapIndex]);
    expect(dec(net.snapshots.get('n3')![0].data)).toBe('state-at-snapshot');
    expect(snap.metadata.index).toBe(snapIndex);
    expect(n3.raft.log.firstIndex()).toBe(snapIndex + 1);
    expect(n3.raft.log.committed).toBe(n1.raft.log.committed);
    expect(n3.raft.log.applied).toBe(n1.raft.log.applied);
    expect(net.appliedData('n3').filter((d) => d.startsWith('after'))).toEqual(['after-1', 'after-2']);
    expect(net.appliedData('n3').filter((d) => d.startsWith('before'))).toEqual([]);
    expect(n1.raft.progress.get('n3')!.state).toBe('replicate');
  });
});

// ---- leadership transfer ----------------------------------------------------------------------

describe('raft core: leadership transfer', () => {
  it('transferLeadership(to) sends TimeoutNow and `to` leads in term+1 without waiting for a timeout', () => {
    const net = new Net(['n1', 'n2', 'n3'], 15);
    net.elect('n1');
    net.stabilize();
    const term = net.node('n1').raft.term;
    const mark = net.sent.length;
    net.node('n1').transferLeadership('n2');
    net.stabilize();
    expect(net.sentSince(mark, (m) => m.type === MT.TimeoutNow)).toMatchObject([{ from: 'n1', to: 'n2' }]);
    expect(net.leaders()).toEqual(['n2']);
    expect(net.node('n2').raft.term).toBe(term + 1);
    expect(net.node('n1').raft.lead).toBe('n2');
  });

  it('a lagging transferee is caught up first; proposals are refused meanwhile', () => {
    const net = new Net(['n1', 'n2', 'n3'], 16);
    net.elect('n1');
    net.stabilize();
    net.isolate('n2');
    for (let k = 0; k < 5; k++) net.propose('n1', `q${k}`);
    net.stabilize();
    net.heal();
    const n1 = net.node('n1');
    n1.transferLeadership('n2');
    expect(() => n1.propose([enc('refused')])).toThrow(ProposalDroppedError);
    net.stabilize();
    expect(net.leaders()).toEqual(['n2']);
    expect(net.appliedData('n2').filter((d) => d.startsWith('q'))).toHaveLength(5);
  });

  it('a follower forwards a transfer request to the leader', () => {
    const net = new Net(['n1', 'n2', 'n3'], 17);
    net.elect('n1');
    net.stabilize();
    net.node('n3').transferLeadership('n3');
    net.stabilize();
    expect(net.leaders()).toEqual(['n3']);
  });
});

// ---- ReadIndex -------------------------------------------------------------------------------------

describe('raft core: ReadIndex', () => {
  it('the leader answers a read with its commit index only after a heartbeat quorum', () => {
    const net = new Net(['n1', 'n2', 'n3'], 18);
    net.elect('n1');
    net.propose('n1', 'w');
    net.stabilize();
    const n1 = net.node('n1');
    const commit = n1.raft.log.committed;
    const ctx = enc('read-1');
    // No follower answers: the read must wait.
    net.filter = (m) => m.type !== MT.HeartbeatResp;
    n1.readIndex(ctx);
    net.stabilize();
    net.tick(['n1'], 3);
    expect(net.readStates.get('n1')).toEqual([]);
    // One answer gives a quorum of two with the leader.
    net.filter = (m) => !(m.type === MT.HeartbeatResp && m.from === 'n3');
    net.tick(['n1']);
    expect(net.readStates.get('n1')).toEqual([{ index: commit, context: ctx }]);
  });

  it('a new leader holds a read until an entry of its term commits', () => {
    const net = new Net(['n1', 'n2', 'n3'], 19);
    net.elect('n1');
    net.propose('n1', 'w');
    net.stabilize();
    // n2 takes over by a transfer, but no acknowledgement reaches it: its
    // empty entry of the new term stays uncommitted.
    net.filter = (m) => !(m.type === MT.AppResp && m.to === 'n2');
    net.node('n1').transferLeadership('n2');
    net.stabilize();
    const n2 = net.node('n2');
    expect(n2.raft.role).toBe(Role.Leader);
    n2.readIndex(enc('r'));
    net.tick(['n2'], 2);
    expect(net.readStates.get('n2')).toEqual([]);
    net.heal();
    net.tick(['n2'], 2);
    const rs = net.readStates.get('n2')!;
    expect(rs).toHaveLength(1);
    expect(rs[0].index).toBe(n2.raft.log.committed);
    expect(n2.raft.log.term(rs[0].index)).toBe(n2.raft.term);
  });

  it('a read on a follower is forwarded to the leader and answered to the follower', () => {
    const net = new Net(['n1', 'n2', 'n3'], 20);
    net.elect('n1');
    net.propose('n1', 'w');
    net.stabilize();
    const ctx = enc('read-f');
    net.node('n2').readIndex(ctx);
    net.stabilize();
    expect(net.readStates.get('n2')).toEqual([{ index: net.node('n1').raft.log.committed, context: ctx }]);
    expect(net.readStates.get('n1')).toEqual([]);
  });
});

// ---- regressions: bugs found while writing these tests ------------------------------------

describe('raft core: regressions', () => {
  it('a forwarded read reaching a node with no leader is dropped, not thrown back into the driver', () => {
    const net = new Net(['n1', 'n2', 'n3'], 21);
    net.elect('n1');
    net.stabilize();
    // n1 loses its quorum and steps down (leader unknown) while n2's read travels to it.
    net.isolate('n1');
    net.tick(['n1'], 2 * ELECTION_TICKS);
    expect(net.node('n1').raft.role).toBe(Role.Follower);
    expect(net.node('n1').raft.lead).toBe('');
    net.node('n2').readIndex(enc('lost-read'));
    net.pump();
    const fwd = net.inflight.filter((m) => m.type === MT.ReadIndex);
    expect(fwd).toHaveLength(1);
    expect(() => net.node('n1').step(fwd[0])).not.toThrow();
    // The same at a candidate.
    const cand = new Net(['n1', 'n2', 'n3'], 22, { preVote: false });
    cand.node('n1').campaign();
    expect(cand.node('n1').raft.role).toBe(Role.Candidate);
    expect(() => cand.node('n1').step({ ...fwd[0], to: 'n1' })).not.toThrow();
    // A local read on a node without a leader still fails fast.
    expect(() => cand.node('n1').readIndex(enc('local'))).toThrow(ProposalDroppedError);
  });

  it('a read forwarded twice (through a follower with a newer leader) is answered to the node that asked', () => {
    const net = new Net(['n1', 'n2', 'n3'], 23);
    net.elect('n1');
    net.stabilize();
    // n3 still believes n2 leads (as after a missed election); n2 knows n1 does.
    net.node('n3').raft.lead = 'n2';
    const ctx = enc('read-twice');
    net.node('n3').readIndex(ctx);
    net.stabilize();
    expect(net.readStates.get('n3')).toEqual([{ index: net.node('n1').raft.log.committed, context: ctx }]);
    expect(net.readStates.get('n2')).toEqual([]);
  });

  it('a full window whose appends were all lost recovers once the follower answers heartbeats (AC4)', () => {
    const net = new Net(['n1', 'n2', 'n3'], 24, { inflightMsgsMax: 2 });
    net.elect('n1');
    net.stabilize();
    net.isolate('n3'); // down: n2 is needed for every commit
    net.filter = (m) => !(m.type === MT.App && m.to === 'n2' && m.entries.length > 0);
    net.propose('n1', 'lost-1');
    net.propose('n1', 'lost-2');
    net.propose('n1', 'queued-3');
    net.stabilize();
    expect(net.node('n1').raft.progress.get('n2')!.inflights.full()).toBe(true);
    // The loss ends; no Unreachable report arrives (a dropped packet is silent).
    net.filter = () => true;
    net.tick(['n1'], 2 * ELECTION_TICKS);
    expect(net.appliedData('n2')).toEqual(['lost-1', 'lost-2', 'queued-3']);
    expect(net.leaders()).toEqual(['n1']);
  });

  function lostSnapshot(seed: number): Net {
    const net = new Net(['n1', 'n2', 'n3'], seed);
    net.elect('n1');
    net.stabilize();
    net.isolate('n3');
    for (let k = 0; k < 5; k++) net.propose('n1', `s${k}`);
    net.stabilize();
    const n1 = net.node('n1');
    n1.snapshot(n1.raft.log.applied, enc('snap'), 0);
    net.heal();
    net.filter = (m) => m.type !== MT.Snap;
    net.tick(['n1'], 2);
    expect(net.sent.filter((m) => m.type === MT.Snap)).toHaveLength(1);
    expect(n1.raft.progress.get('n3')!.state).toBe('snapshot');
    net.filter = () => true;
    return net;
  }

  it('a lost MsgSnap is resent at the next heartbeat once the driver reports it failed', () => {
    const net = lostSnapshot(25);
    const n1 = net.node('n1');
    net.tick(['n1'], 2);
    expect(n1.raft.progress.get('n3')!.state).toBe('snapshot');
    n1.reportSnapshot('n3', false);
    net.tick(['n1'], 2);
    expect(n1.raft.progress.get('n3')!.state).toBe('replicate');
    expect(net.node('n3').raft.log.applied).toBe(n1.raft.log.applied);
  });

  it('a lost MsgSnap with no report is resent after an election timeout of heartbeat answers (AC4)', () => {
    const net = lostSnapshot(26);
    const n1 = net.node('n1');
    net.tick(['n1'], ELECTION_TICKS + 2);
    expect(net.sent.filter((m) => m.type === MT.Snap)).toHaveLength(2);
    expect(n1.raft.progress.get('n3')!.state).toBe('replicate');
    expect(net.node('n3').raft.log.applied).toBe(n1.raft.log.applied);
  });
});

// ---- randomized schedules -------------------------------------------------------------------

describe('raft core: randomized schedules (safety on every step, liveness after healing)', () => {
  /** Log Matching: where two logs hold the same term at an index, they agree on every earlier term. */
  function checkLogMatching(net: Net): void {
    const logs = net.ids.map((id) => net.node(id).raft.log);
    for (let a = 0; a < logs.length; a++) {
      for (let b = a + 1; b < logs.length; b++) {
        const lo = Math.max(logs[a].firstIndex(), logs[b].firstIndex());
        const hi = Math.min(logs[a].lastIndex(), logs[b].lastIndex());
        let agreeFrom = -1;
        for (let i = hi; i >= lo; i--) {
          if (logs[a].term(i) === logs[b].term(i)) {
            agreeFrom = i;
            break;
          }
        }
        for (let i = lo; i <= agreeFrom; i++) {
          expect(logs[a].term(i), `log matching ${net.ids[a]}/${net.ids[b]} at ${i}`).toBe(logs[b].term(i));
        }
      }
    }
  }

  function runSchedule(seed: number, size: number): void {
    const ids = Array.from({ length: size }, (_, k) => `n${k + 1}`);
    const choose = new Rng(seed * 7919 + 1);
    const overrides: Overrides = {
      inflightMsgsMax: 1 + choose.int(6),
      appendBytesMax: choose.chance(0.5) ? 1 : 1 << 20,
    };
    const net = new Net(ids, seed, overrides);
    const pick = <T>(xs: T[]): T => xs[choose.int(xs.length)];
    const minReadIndex = new Map<string, number>();
    /** index -> term of a committed entry, and the highest term in the cluster when it was seen committed. */
    const committedTerms = new Map<number, { term: number; seenAt: number }>();
    let proposals = 0;
    let reads = 0;

    const observe = (): void => {
      const maxTerm = Math.max(...ids.map((id) => net.node(id).raft.term));
      for (const id of ids) {
        for (const e of net.applied.get(id)!) {
          if (!committedTerms.has(e.index)) committedTerms.set(e.index, { term: e.term, seenAt: maxTerm });
        }
        for (const rs of net.readStates.get(id)!.splice(0)) {
          const min = minReadIndex.get(dec(rs.context));
          expect(min, `unknown read ${dec(rs.context)}`).not.toBeUndefined();
          expect(rs.index, `read ${dec(rs.context)} answered with a stale index`).toBeGreaterThanOrEqual(min!);
        }
      }
      // Leader Completeness: a leader of a later term holds every committed
      // entry (that it has not compacted).
      for (const id of net.leaders()) {
        const log = net.node(id).raft.log;
        for (const [i, c] of committedTerms) {
          if (net.node(id).raft.term <= c.seenAt || i < log.firstIndex() - 1) continue;
          expect(log.term(i), `leader ${id} (term ${net.node(id).raft.term}) lacks committed entry ${i}`).toBe(c.term);
        }
      }
      checkLogMatching(net);
    };

    const deliverSome = (): void => {
      const k = 1 + choose.int(Math.max(1, net.inflight.length));
      const batch: Message[] = [];
      for (let j = 0; j < k && net.inflight.length > 0; j++)
        batch.push(net.inflight.splice(choose.int(net.inflight.length), 1)[0]);
      for (const m of batch) {
        if (choose.chance(0.1)) continue; // lost
        if (choose.chance(0.05)) net.inflight.push(cloneMessage(m)); // duplicated, arrives later
        if (net.cut.has(`${m.from}->${m.to}`)) continue;
        net.node(m.to).step(m);
      }
      net.pump();
    };

    for (let step = 0; step < 700; step++) {
      const r = choose.float();
      if (r < 0.35) deliverSome();
      else if (r < 0.55) {
        net.node(pick(ids)).tick();
        net.pump();
      } else if (r < 0.62) {
        for (const id of ids) net.node(id).tick();
        net.pump();
      } else if (r < 0.74) {
        try {
          const leaders = net.leaders();
          const at = leaders.length > 0 && choose.chance(0.8) ? pick(leaders) : pick(ids);
          net.node(at).propose([enc(`s${seed}-p${proposals++}`)]);
        } catch (err) {
          if (!(err instanceof ProposalDroppedError)) throw err;
        }
        net.pump();
      } else if (r < 0.78) {
        const ctx = `s${seed}-r${reads++}`;
        minReadIndex.set(ctx, Math.max(...ids.map((id) => net.node(id).raft.log.committed)));
        try {
          net.node(pick(ids)).readIndex(enc(ctx));
        } catch (err) {
          if (!(err instanceof ProposalDroppedError)) throw err;
        }
        net.pump();
      } else if (r < 0.81) {
        net.heal();
        if (choose.chance(0.6)) net.isolate(pick(ids));
      } else if (r < 0.835) {
        net.crash(pick(ids), choose.chance(0.5));
        net.pump();
      } else if (r < 0.86) {
        const n = net.node(pick(ids));
        const applied = n.raft.log.applied;
        if (applied > n.raft.log.storage.snapshot().metadata.index)
          n.snapshot(applied, enc(`snap@${applied}`), choose.int(3));
      } else if (r < 0.87) {
        const leaders = net.leaders();
        if (leaders.length > 0) net.node(leaders[0]).transferLeadership(pick(ids));
        net.pump();
      } else if (r < 0.89) {
        // A disk turns slow (writes stay in flight while messages flow) or fast again.
        const id = pick(ids);
        if (net.slow.has(id)) net.slow.delete(id);
        else net.slow.add(id);
        net.completeWrite(id);
      } else {
        net.completeWrite(pick(ids));
      }
      observe();
    }

    // Faults stop: a leader emerges and a new entry reaches every node (AC4 at the Raft level).
    net.heal();
    net.slow.clear();
    for (const id of ids) net.completeWrite(id);
    let done = false;
    for (let round = 0; round < 60 * ELECTION_TICKS && !done; round++) {
      net.tick();
      observe();
      const leaders = net.leaders();
      if (leaders.length !== 1) continue;
      const leader = net.node(leaders[0]);
      if (leader.raft.leadTransferee !== '') continue;
      try {
        leader.propose([enc(`s${seed}-final`)]);
      } catch (err) {
        if (!(err instanceof ProposalDroppedError)) throw err;
        continue;
      }
      for (let k = 0; k < 3 * ELECTION_TICKS; k++) net.tick();
      observe();
      done = ids.every(
        (id) =>
          net.appliedData(id).includes(`s${seed}-final`) ||
          net.node(id).raft.log.applied >= leader.raft.log.lastIndex(),
      );
    }
    expect(done, `seed ${seed}: no progress after healing`).toBe(true);
    const last = Math.max(...ids.map((id) => net.node(id).raft.log.applied));
    for (const id of ids) expect(net.node(id).raft.log.applied, `seed ${seed}: ${id} behind`).toBe(last);
  }

  it('3 nodes: 40 seeded schedules of loss, duplication, reordering, partitions, crashes, snapshots', () => {
    for (let seed = 1; seed <= 40; seed++) runSchedule(seed, 3);
  });

  it('5 nodes: 20 seeded schedules', () => {
    for (let seed = 101; seed <= 120; seed++) runSchedule(seed, 5);
  });
});
