// The simulators' Raft checker (test/sim/raft-checker.ts) against RawNodes
// driven by hand, message by message, with a write held in flight the way a
// slow disk holds it. First the interleaving that made the whole-system
// simulator report "n1 and n3 both lead term 5" on the failover branch
// although no term ever had two leaders; then the checker's teeth: two
// leaders of one term, and a vote given twice in one term.

import { describe, expect, it } from 'vitest';
import { foundingHardState, RawNode, type Ready } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import {
  emptySnapshot,
  MessageType as MT,
  Role,
  type HardState,
  type Message,
  type NodeId,
} from '../../src/raft/types.ts';
import { RaftChecker } from '../sim/raft-checker.ts';

const IDS = ['n1', 'n2', 'n3', 'n4', 'n5'];

/** Five nodes, a wire the test delivers from by hand, and the checker watching every write as it lands. */
class Hand {
  readonly nodes = new Map<NodeId, RawNode>();
  wire: Message[] = [];
  readonly violations: string[] = [];
  readonly checker = new RaftChecker((what) => this.violations.push(what));

  constructor(seed: number) {
    // Founding members: term 1 before the first election (what `verdict cluster init` writes).
    for (const [k, id] of IDS.entries()) this.start(id, foundingHardState(), seed + k);
  }

  start(id: NodeId, hardState: HardState, seed: number): void {
    const conf = { voters: IDS, learners: [], votersOutgoing: [] };
    this.nodes.set(
      id,
      RawNode.restart(
        { id, electionTicks: 10, heartbeatTicks: 1, random: new Rng(seed).asRandom() },
        { hardState, snapshot: emptySnapshot(), entries: [] },
        conf,
      ),
    );
    this.checker.restarted(id);
  }

  node(id: NodeId): RawNode {
    const n = this.nodes.get(id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  /** The driver's loop with an instant disk: every Ready is written, checked, sent and advanced. */
  flush(...ids: NodeId[]): void {
    for (const id of ids) while (this.node(id).hasReady()) this.land(id, this.take(id));
  }

  /** A Ready is taken and its write starts; what may leave before the sync leaves now. */
  take(id: NodeId): Ready {
    const rd = this.node(id).ready();
    this.wire.push(...rd.messagesNow);
    return rd;
  }

  /** The write of `rd` landed: the checker sees it, the rest is sent, the node advances. */
  land(id: NodeId, rd: Ready): void {
    const n = this.node(id);
    this.checker.onReady(id, n, { termAt: (i) => n.raft.log.storage.term(i) }, rd);
    this.wire.push(...rd.messages);
    n.advance(rd);
  }

  /**
   * Delivers the messages of `type` from `from` to `to` (every other message stays on the wire); runs the receivers
   * unless told not to.
   */
  deliver(type: MT, from: NodeId, to: NodeId[], run = true): void {
    const now = this.wire.filter((m) => m.type === type && m.from === from && to.includes(m.to));
    this.wire = this.wire.filter((m) => !now.includes(m));
    for (const m of now) expect(this.node(m.to).step(m)).toBeNull();
    if (run) this.flush(...to);
  }

  /** The answers of `type` to `to` from every node, delivered; runs `to`. */
  answer(type: MT, to: NodeId): void {
    for (const id of IDS) if (id !== to) this.deliver(type, id, [to]);
  }

  /** `id` campaigns (pre-vote, then vote) with only `voters` hearing it, and wins. */
  elect(id: NodeId, voters: NodeId[]): void {
    this.node(id).campaign();
    this.flush(id);
    this.deliver(MT.PreVote, id, voters);
    this.answer(MT.PreVoteResp, id);
    this.deliver(MT.Vote, id, voters);
    // The last answer makes it leader: its first leader Ready stays for the caller to take.
    for (const v of voters) this.deliver(MT.VoteResp, v, [id], false);
    expect(this.node(id).raft.role).toBe(Role.Leader);
  }

  /**
   * Drops everything `from` sent that is still on the wire (a slow link that delivers it later is no different to the
   * checker).
   */
  drop(from: NodeId): void {
    this.wire = this.wire.filter((m) => m.from !== from);
  }
}

describe('the Raft checker reads a Ready in the term it was built in', () => {
  it('a leader of term 2 that steps down to term 3 before its first leader Ready is durable did not lead term 3 (the failover branch false alarm, seed 28 of the focused schedules)', () => {
    const h = new Hand(28);
    // n1 wins term 2 with n3 and n4; its first leader Ready goes to a slow disk.
    h.elect('n1', ['n3', 'n4']);
    const n1First = h.take('n1');
    expect(n1First.softState?.role).toBe(Role.Leader);
    expect(h.node('n1').raft.term).toBe(2);
    // n2 and n5 get n1's vote requests late (their answers never arrive) and its appends not at
    // all yet: n3, n4 and n5 know no leader of term 2, so they grant n2's pre-vote and vote.
    h.deliver(MT.Vote, 'n1', ['n2', 'n5']);
    h.drop('n1');
    h.elect('n2', ['n3', 'n4', 'n5']);
    const n2First = h.take('n2');
    expect(h.node('n2').raft.term).toBe(3);
    // n2's first append reaches n1 while n1's write is still in flight: n1 follows n2 in term 3.
    const append = h.wire.find((m) => m.type === MT.App && m.from === 'n2' && m.to === 'n1');
    expect(append).toBeDefined();
    h.wire = h.wire.filter((m) => m !== append);
    if (append) expect(h.node('n1').step(append)).toBeNull();
    expect([h.node('n1').raft.role, h.node('n1').raft.term, h.node('n1').raft.lead]).toEqual([Role.Follower, 3, 'n2']);
    // Now the writes land, n1's first: it led term 2, n2 leads term 3.
    h.land('n1', n1First);
    h.land('n2', n2First);
    h.flush(...IDS);
    expect(h.violations).toEqual([]);
  });
});

describe("the Raft checker's teeth", () => {
  it('two nodes leading the same term are reported', () => {
    // Two clusters with the same ids that never talk: each elects a leader in term 2.
    const a = new Hand(1);
    const b = new Hand(2);
    a.elect('n1', ['n2', 'n3']);
    b.elect('n4', ['n3', 'n5']);
    const checker = a.checker;
    const n4 = b.node('n4');
    checker.onReady('n4', n4, { termAt: (i) => n4.raft.log.storage.term(i) }, b.take('n4'));
    a.flush('n1');
    expect(a.violations).toEqual(['election safety: n4 and n1 both lead term 2']);
  });

  it('a node that votes twice in one term is reported, across a restart that lost its synced vote', () => {
    const h = new Hand(3);
    h.elect('n1', ['n2', 'n3']);
    h.flush('n1');
    expect(h.node('n3').raft.log.storage.hardState).toMatchObject({ term: 2, vote: 'n1' });
    // n3 restarts from a disk that forgot its term and vote (the broken disk R6 rules out);
    // n5, which heard nothing yet, campaigns for term 2 too.
    h.start('n3', foundingHardState(), 33);
    h.wire = [];
    h.node('n5').campaign();
    h.flush('n5');
    h.deliver(MT.PreVote, 'n5', ['n3', 'n4']);
    h.answer(MT.PreVoteResp, 'n5');
    expect([h.node('n5').raft.role, h.node('n5').raft.term]).toEqual([Role.Candidate, 2]);
    expect(h.violations).toEqual([]);
    h.deliver(MT.Vote, 'n5', ['n3']);
    expect(h.violations).toEqual(['vote safety: n3 voted for n1 and then for n5 in term 2']);
  });
});
