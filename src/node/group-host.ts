// One node process hosting a replica of every decision group
// (docs/architecture.md, "Decision groups"): G node cores side by side, each
// today's NodeCore unchanged, behind one door. The host routes inbound Raft
// messages to their group's replica, gives each replica a transport that
// tags what it sends with its group (one stream per peer carries every
// group), ticks every replica on the node's one ticker, tells every replica
// that a peer's stream broke, and stops or crashes them together: a process
// lives and dies whole.
//
// Pure like the core: no timers, sockets or disk; the node process and the
// simulator hand in the transport and build the replicas. With one group the
// host holds one replica and passes everything through untouched, so a
// cluster of one group is exactly what it was before groups.
//
// Leaders spread (G > 1): group g prefers node `g mod N` of its sorted voter
// list (preferredLeader). On every tick the host asks each replica that
// leads whether its preferred node is another voter that is caught up (its
// match index within SpreadOptions.lagEntriesMax of the leader's last
// index) and heard from lately (any message of any group from it within
// heardWithinTicks: a node that died keeps its old match index); once that
// has held for holdOffTicks ticks in a row, the leader hands its group over
// with the same transfer `verdict node drain` uses (TimeoutNow). A new
// leader aborts the prepares it did not send (R2), and spreading must never
// turn a transaction that would have committed into an abort, so the hand-over
// goes in two steps: first the leader's commit engine refuses new
// transactions as not the leader (holdNewTransactions; the SDK retries them
// with `begin`, nothing was done), while those in flight (begun, preparing,
// deciding) decide here; at the first tick none is left the transfer starts,
// and Raft's transfer keeps them refused until it ends (EngineIO.handingOverTo).
// If some are still in flight after SpreadOptions.drainTicksMax ticks, the
// hand-over is called off and tried again after a hold-off that doubles with
// each one called off in a row (up to CALLED_OFF_DOUBLINGS_MAX times), so a
// client that keeps a transaction open for long costs the group a refusal of
// drainTicksMax now and then, not every few seconds. The hold-off lets a node
// that just returned catch up first, and spaces out retries of a transfer
// that did not happen.
//
// Every hand-over the host starts goes this one way (handOver): spreading's,
// a leader about to leave its group's membership (followMembers), and an
// operator's `verdict leader transfer` (at any G, group 0 included). They
// differ only in what happens when transactions are still in flight at the
// bound: spreading and an operator's transfer without force call it off (the
// operator hears how many and may retry or force it); a leader being removed
// and an operator's forced transfer go ahead anyway, and the in-flight ones
// may then abort.
//
// Idle groups cost nothing (G > 1): a group with nothing to do quiesces (its
// Raft core stops heartbeats once every member agreed: src/raft/raft.ts,
// Raft.quiesced). What keeps its followers from campaigning is the node:
// on every tick the host has its transport send a frame with no message to
// each peer it sent nothing else to since the last tick (GroupTransport.heartbeat),
// and before each tick it tells every replica which peers were heard from
// since the last one (any frame, of any group): a quiesced follower takes
// its leader's node as alive, a quiesced leader its members' nodes as active.
// So an idle node sends one small frame per peer per tick, whatever G is,
// instead of a heartbeat and its answer per group; the first proposal,
// read or message of a group wakes it.

import { groupOf, groupsProblem } from '../domain/group.ts';
import { Role, type Message, type NodeId } from '../raft/types.ts';
import type { GroupMessage, GroupTransport, Transport } from '../transport/types.ts';
import { assert } from '../util/assert.ts';
import type { NodeCore } from './core.ts';
import { encodeMemberContext } from './machine.ts';
import { ConfChangeType } from '../raft/confchange.ts';

/** A group's configuration: its voters and learners, and whether it is in a joint configuration. */
export interface GroupMembers {
  voters: readonly NodeId[];
  learners: readonly NodeId[];
  joint: boolean;
}

/** Ticks between two looks at whether a group's members follow group 0's (and between two changes it proposes). */
export const MEMBERS_CHECK_TICKS = 10;

/** What a group's replica that leads tells the host, for spreading leaders. */
export interface LeaderView {
  /** This node's id. */
  self: NodeId;
  /** The group's voters (not in a joint configuration: a leader in one reports none). */
  voters: readonly NodeId[];
  lastIndex: number;
  /** Each other member's match index (voters the leader counts in quorums, and learners). */
  match: ReadonlyMap<NodeId, number>;
}

export interface SpreadOptions {
  /**
   * Ticks in a row that the preferred node must be caught up and heard from before a transfer (and between retries).
   */
  holdOffTicks: number;
  /** How far behind the leader's last index the preferred node's match index may be. */
  lagEntriesMax: number;
  /** A node heard from within this many ticks is taken as up. */
  heardWithinTicks: number;
  /**
   * Ticks a leader about to hand over refuses new transactions while those in flight decide; past it the hand-over is
   * called off (and tried again after a hold-off), the transactions finish where they are.
   */
  drainTicksMax: number;
}

/**
 * Three seconds at the default 100 ms tick for a returning node to catch up; new transactions wait at most two for
 * those in flight.
 */
export const SPREAD_DEFAULTS: Readonly<SpreadOptions> = {
  holdOffTicks: 30,
  lagEntriesMax: 64,
  heardWithinTicks: 10,
  drainTicksMax: 20,
};

/** A hand-over called off this many times in a row waits 2^this hold-offs before the next (96 s at the defaults). */
export const CALLED_OFF_DOUBLINGS_MAX = 5;

/**
 * The node group `group` prefers as its leader: `group mod N` of the voters sorted by code unit; null without voters.
 */
export function preferredLeader(group: number, voters: readonly NodeId[]): NodeId | null {
  if (voters.length === 0) return null;
  const sorted = [...voters].sort();
  return sorted[group % sorted.length];
}

/** What the host needs of one group's replica: a node core (coreReplica) or a test's stand-in. */
export interface GroupReplica {
  /** This group's inbound Raft messages, in the order they arrived. */
  receive(messages: Message[]): void;
  /** The stream to `peer` broke (a killed process's sockets reset). */
  reportUnreachable(peer: NodeId): void;
  /**
   * These peers' nodes were heard from since the last tick, and of them `leaders` said they lead this group quiesced
   * (told just before the tick; G > 1 only).
   */
  heard?(peers: readonly NodeId[], leaders: readonly NodeId[]): void;
  /** Whether the group is quiesced here (src/raft/raft.ts, Raft.quiesced). */
  quiesced?(): boolean;
  tick(): void;
  /** A shutdown: pending callers hear "node stopped". */
  stop(): void;
  /** A death: nobody hears anything more. */
  crash(): void;
  /** The replica's view when it leads its group, else null (absent: it never takes part in spreading). */
  leaderView?(): LeaderView | null;
  /** Hands leadership to `to` (TimeoutNow once `to` is caught up), as `verdict node drain` does. */
  transferLeadership?(to: NodeId): void;
  /**
   * The transactions this leader has in flight (begun, preparing or deciding) that a leader change now would abort
   * (R2).
   */
  inFlightCount?(): number;
  /** Refuses new transactions as a leader handing over to `to` does (null: takes them again); NodeCore's. */
  holdNewTransactions?(to: NodeId | null): void;
  /** The group's configuration as applied on this node. */
  members?(): GroupMembers;
  /**
   * As the group's leader, proposes one single-server change, naming every
   * resulting member's address from `addressOf`. A refusal (another change
   * pending, a leader change) is dropped: the host looks again later.
   */
  proposeMemberChange?(type: ConfChangeType, id: NodeId, addressOf: (id: NodeId) => string | undefined): void;
  /** The address of member `id` as this replica knows it (group 0's: the operator's membership). */
  addressOf?(id: NodeId): string | undefined;
  /** This node's id and the group's leader as this replica knows it ('' when none). */
  known?(): { self: NodeId; leader: NodeId };
}

export interface GroupHostOptions<R extends GroupReplica> {
  /** The cluster's number of decision groups, fixed at its founding (1..GROUPS_MAX). */
  groups: number;
  /** Builds group `group`'s replica, given the transport that tags its messages with its group. */
  replica(group: number, transport: Transport): R;
  /** The node's one transport to its peers. */
  transport: GroupTransport;
  /** A message for a group this node does not host (the edge refuses those first: this is the second line). */
  onRefused?(gm: GroupMessage, why: string): void;
  /**
   * Leaders spread over the nodes, with more than one group (SPREAD_DEFAULTS
   * for what is not given; absent: the defaults); false: never. One group is
   * never spread: its leader stays wherever Raft elected it, as before groups.
   */
  spread?: Partial<SpreadOptions> | false;
  /** Told of each transfer the host starts (the node logs it): why, and how many transactions were still in flight. */
  onTransfer?(group: number, from: NodeId, to: NodeId, why: HandOverWhy, inFlight: number): void;
}

/** Who asked for a hand-over: leaders spreading, a leader leaving its group's membership, an operator. */
export type HandOverWhy = 'spread' | 'members' | 'operator';

/** How a hand-over ended (HandOverOptions.done). */
export interface HandOverResult {
  /**
   * transferred: the Raft transfer started (it may still not take: the caller watches who leads); in-flight:
   * transactions were still in flight at the bound and it was called off; not-leader: this node does not lead the
   * group (or stopped leading it meanwhile); superseded: another hand-over of the group replaced it.
   */
  outcome: 'transferred' | 'in-flight' | 'not-leader' | 'superseded';
  /** Transactions in flight when it ended (begun, preparing or deciding). */
  inFlight: number;
  /** Ticks it refused new transactions for. */
  drainedTicks: number;
}

export interface HandOverOptions {
  why: HandOverWhy;
  /** Transactions still in flight at the bound: transfer anyway (they may abort), or call the hand-over off. */
  force: boolean;
  /** Told once, from a tick (or at once when this node does not lead the group). */
  done?(r: HandOverResult): void;
}

/** A hand-over under way: new transactions are refused since sinceTick. */
interface Pending extends HandOverOptions {
  to: NodeId;
  sinceTick: number;
}

export class GroupHost<R extends GroupReplica = GroupReplica> {
  /** replicas[g] is group g's; the length is the number of groups. */
  readonly replicas: readonly R[];

  constructor(o: GroupHostOptions<R>) {
    const bad = groupsProblem(o.groups);
    assert(bad === null, `GroupHost: ${bad}`);
    const replicas: R[] = [];
    for (let g = 0; g < o.groups; g++) {
      const group = g;
      replicas.push(
        o.replica(group, { send: (messages) => o.transport.send(messages.map((message) => ({ group, message }))) }),
      );
    }
    this.replicas = replicas;
    this.transport = o.transport;
    this.onRefused = o.onRefused;
    this.onTransfer = o.onTransfer;
    this.spread = o.groups > 1 && o.spread !== false ? { ...SPREAD_DEFAULTS, ...o.spread } : null;
    this.drainTicksMax =
      o.spread === false ? SPREAD_DEFAULTS.drainTicksMax : { ...SPREAD_DEFAULTS, ...o.spread }.drainTicksMax;
    this.holds = replicas.map(() => 0);
    this.pending = replicas.map(() => null);
    this.calledOff = replicas.map(() => 0);
  }

  private readonly transport: GroupTransport;
  private readonly onRefused: GroupHostOptions<R>['onRefused'];
  private readonly onTransfer: GroupHostOptions<R>['onTransfer'];
  /** Null: leaders are not spread (one group, or turned off). */
  private readonly spread: SpreadOptions | null;
  /** The host's ticks so far (the clock of heardAtTick). */
  private ticks = 0;
  /** The groups each peer said it leads quiesced, in the frames heard from it since the last tick. */
  private readonly quiesceLeadersHeard = new Map<NodeId, Set<number>>();
  /** The tick at which each peer was last heard from, in any group. */
  private readonly heardAtTick = new Map<NodeId, number>();
  /** holds[g]: ticks in a row that group g's leader here has seen its preferred node ready. */
  private readonly holds: number[];
  /** How long any hand-over waits for the transactions in flight (SpreadOptions.drainTicksMax, spread or not). */
  private readonly drainTicksMax: number;
  /** pending[g]: group g's hand-over under way here (new transactions refused); null: none. */
  private readonly pending: (Pending | null)[];
  /** calledOff[g]: group g's hand-overs called off in a row here (transactions in flight past drainTicksMax). */
  private readonly calledOff: number[];

  get groups(): number {
    return this.replicas.length;
  }

  /** Group `group`'s replica. */
  replica(group: number): R {
    assert(
      Number.isInteger(group) && group >= 0 && group < this.replicas.length,
      `group ${group} is one of this host's ${this.replicas.length}`,
    );
    return this.replicas[group];
  }

  /** The replica of the group that decides `id` (a transaction, saga or lease): groupOf(id, G). */
  replicaOf(id: string): R {
    return this.replicas[groupOf(id, this.replicas.length)];
  }

  /**
   * Inbound messages of any groups: each group's replica gets its own in one
   * call, in their order of arrival (Raft needs no order across groups).
   */
  receive(messages: readonly GroupMessage[]): void {
    if (this.replicas.length === 1) {
      // One group: every message is group 0's (the edge refused any other), passed through as one batch, as before
      // groups.
      const mine: Message[] = [];
      for (const gm of messages) if (this.admit(gm)) mine.push(gm.message);
      if (mine.length > 0) this.replicas[0].receive(mine);
      return;
    }
    const byGroup = new Map<number, Message[]>();
    for (const gm of messages) {
      if (!this.admit(gm)) continue;
      this.heardAtTick.set(gm.message.from, this.ticks);
      let list = byGroup.get(gm.group);
      if (list === undefined) byGroup.set(gm.group, (list = []));
      list.push(gm.message);
    }
    for (const [g, list] of byGroup) this.replicas[g].receive(list);
  }

  /** A peer's stream broke: every group's Raft core hears it. */
  reportUnreachable(peer: NodeId): void {
    for (const r of this.replicas) r.reportUnreachable(peer);
  }

  /**
   * A frame came from `peer` (the transport checked who sent it), with or without messages: its node is alive, and
   * leads the groups `quiesced` quiesced (WireBatch.quiescedGroups). Only G > 1 uses it (quiesced groups, and
   * spreading's "heard from lately").
   */
  heard(peer: NodeId, quiesced: readonly number[] = []): void {
    if (this.replicas.length === 1) return;
    this.heardAtTick.set(peer, this.ticks);
    if (quiesced.length === 0) return;
    let led = this.quiesceLeadersHeard.get(peer);
    if (led === undefined) this.quiesceLeadersHeard.set(peer, (led = new Set()));
    for (const g of quiesced) led.add(g);
  }

  /** How many groups are quiesced here (src/raft/raft.ts, Raft.quiesced). */
  quiescedCount(): number {
    let n = 0;
    for (const r of this.replicas) if (r.quiesced?.() === true) n += 1;
    return n;
  }

  /** The groups this node leads quiesced: every frame to a peer names them (WireBatch.quiescedGroups). */
  quiescedLeading(): number[] {
    const out: number[] = [];
    for (let g = 0; g < this.replicas.length; g++) {
      const r = this.replicas[g];
      if (r.quiesced?.() === true && leaderHere(r) !== null) out.push(g);
    }
    return out;
  }

  /** One tick of the node's clock, for every group in order. */
  tick(): void {
    if (this.replicas.length > 1) {
      // Quiesced groups hear their members' nodes (heard since the last tick) in place of heartbeats; a follower
      // only its leader's node, and only while that node says it still leads the group quiesced.
      const heard: NodeId[] = [];
      for (const [peer, at] of this.heardAtTick) if (at === this.ticks) heard.push(peer);
      if (heard.length > 0)
        for (let g = 0; g < this.replicas.length; g++) {
          const leaders = heard.filter((p) => this.quiesceLeadersHeard.get(p)?.has(g) === true);
          this.replicas[g].heard?.(heard, leaders);
        }
      this.quiesceLeadersHeard.clear();
    }
    for (const r of this.replicas) r.tick();
    this.ticks += 1;
    if (this.replicas.length > 1) {
      if (this.ticks % MEMBERS_CHECK_TICKS === 0) for (let g = 1; g < this.replicas.length; g++) this.followMembers(g);
      const o = this.spread;
      if (o !== null) for (let g = 0; g < this.replicas.length; g++) this.balance(g, o);
    }
    for (let g = 0; g < this.replicas.length; g++) this.drain(g);
    // Every peer hears this node each tick, whatever its groups sent (one frame, of no message, where none did).
    if (this.replicas.length > 1) this.transport.heartbeat?.();
  }

  /**
   * Hands group `group`, if its leader is here, to `to` the safe way: its engine refuses new transactions from now
   * on (a retryable not-the-leader), each tick looks whether any is still in flight, and at the first tick none is
   * (or once drainTicksMax ticks have passed, with o.force) the Raft transfer starts; at the bound without force it
   * is called off and new transactions are taken again. A hand-over of the group already under way is replaced.
   */
  handOver(group: number, to: NodeId, o: HandOverOptions): void {
    const r = this.replica(group);
    if (leaderHere(r) === null || r.transferLeadership === undefined) {
      o.done?.({ outcome: 'not-leader', inFlight: 0, drainedTicks: 0 });
      return;
    }
    this.end(group, 'superseded');
    this.pending[group] = { ...o, to, sinceTick: this.ticks };
    r.holdNewTransactions?.(to);
    // Nothing in flight: the transfer starts now, not a tick later.
    this.drain(group);
  }

  /** One look at group g's hand-over under way: transfer, wait on, or call it off. */
  private drain(g: number): void {
    const p = this.pending[g];
    if (p === null) return;
    const r = this.replicas[g];
    const self = leaderHere(r);
    if (self === null) return this.end(g, 'not-leader');
    const inFlight = r.inFlightCount?.() ?? 0;
    if (inFlight > 0 && this.ticks - p.sinceTick < this.drainTicksMax) return;
    if (inFlight > 0 && !p.force) return this.end(g, 'in-flight');
    this.onTransfer?.(g, self, p.to, p.why, inFlight);
    // Raft's transfer refuses new transactions from here until it ends (EngineIO.handingOverTo).
    r.transferLeadership?.(p.to);
    this.end(g, 'transferred');
  }

  /**
   * Group g's hand-over under way, if any, ends: its leader here takes new transactions again (or Raft refuses them).
   */
  private end(g: number, outcome: HandOverResult['outcome']): void {
    const p = this.pending[g];
    if (p === null) return;
    this.pending[g] = null;
    const r = this.replicas[g];
    r.holdNewTransactions?.(null);
    p.done?.({ outcome, inFlight: r.inFlightCount?.() ?? 0, drainedTicks: this.ticks - p.sinceTick });
  }

  /**
   * Membership across groups: an operator's member add or remove changes
   * group 0's configuration (`verdict member add/remove` goes to group 0's
   * leader, as with one group), and every other group follows it. Group g's
   * leader, here, compares its configuration with group 0's as applied on
   * this node and proposes one single-server change at a time: a missing
   * member joins as a learner, a learner that group 0 has as a voter is
   * promoted once caught up, and a member group 0 no longer has is removed
   * (adds before removes, so a replaced node never shrinks a quorum). A leader
   * that is itself to go hands its group to another voter first.
   */
  private followMembers(g: number): void {
    const r = this.replicas[g];
    const zero = this.replicas[0];
    if (r.proposeMemberChange === undefined || zero.addressOf === undefined) return;
    const view = r.leaderView?.() ?? null;
    const target = zero.members?.();
    const cur = r.members?.();
    // A node whose group 0 holds no configuration yet (it rejoins empty) has nothing to follow.
    if (target === undefined || cur === undefined || target.joint || cur.joint || target.voters.length === 0) return;
    if (view === null) {
      // A removed node may lead group g without ever learning of its removal from group 0 (the leader
      // stops sending to it). A follower that knows asks it to hand the group over to itself.
      const k = r.known?.();
      if (
        k !== undefined &&
        k.leader !== '' &&
        k.leader !== k.self &&
        target.voters.includes(k.self) &&
        !target.voters.includes(k.leader) &&
        !target.learners.includes(k.leader)
      ) {
        r.transferLeadership?.(k.self);
      }
      return;
    }
    const want = [...target.voters, ...target.learners].sort();
    const have = new Set([...cur.voters, ...cur.learners]);
    const addressOf = (id: NodeId): string | undefined => zero.addressOf?.(id);
    const missing = want.find((id) => !have.has(id));
    if (missing !== undefined) return r.proposeMemberChange(ConfChangeType.AddLearner, missing, addressOf);
    const lag = this.spread?.lagEntriesMax ?? SPREAD_DEFAULTS.lagEntriesMax;
    const promote = [...target.voters]
      .sort()
      .find(
        (id) => cur.learners.includes(id) && (view.match.get(id) ?? Number.NEGATIVE_INFINITY) + lag >= view.lastIndex,
      );
    if (promote !== undefined) return r.proposeMemberChange(ConfChangeType.AddVoter, promote, addressOf);
    const gone = [...have].sort().find((id) => !want.includes(id));
    if (gone === undefined) return;
    if (gone !== view.self) return r.proposeMemberChange(ConfChangeType.Remove, gone, addressOf);
    const to = preferredLeader(
      g,
      target.voters.filter(
        (id) => id !== view.self && (view.match.get(id) ?? Number.NEGATIVE_INFINITY) + lag >= view.lastIndex,
      ),
    );
    // Its removal must happen: past the bound the transfer goes ahead with what is still in flight.
    if (to !== null && this.pending[g]?.why !== 'members') this.handOver(g, to, { why: 'members', force: true });
  }

  /**
   * Group g's leader, if here and not on its preferred node, hands over once that node has been ready for the hold-off.
   */
  private balance(g: number, o: SpreadOptions): void {
    // Another hand-over of the group (a leader being removed, an operator's) goes first.
    const p = this.pending[g];
    if (p !== null && p.why !== 'spread') return;
    const r = this.replicas[g];
    const view = r.transferLeadership === undefined ? null : (r.leaderView?.() ?? null);
    const want = view === null ? null : preferredLeader(g, view.voters);
    if (view === null || want === null || want === view.self) {
      this.holds[g] = 0;
      this.calledOff[g] = 0;
      this.end(g, 'superseded');
      return;
    }
    const match = view.match.get(want);
    const heardAt = this.heardAtTick.get(want);
    const ready =
      match !== undefined &&
      match + o.lagEntriesMax >= view.lastIndex &&
      heardAt !== undefined &&
      this.ticks - heardAt <= o.heardWithinTicks;
    this.holds[g] = ready ? this.holds[g] + 1 : 0;
    // A lapse while the hand-over waits calls it off (not counted as called off: nothing was in flight too long).
    if (this.holds[g] < o.holdOffTicks * 2 ** Math.min(this.calledOff[g], CALLED_OFF_DOUBLINGS_MAX))
      return this.end(g, 'superseded');
    if (p !== null) return;
    // A new leader aborts the prepares it did not send (R2): no new transaction from here on, and the hand-over
    // waits for those in flight to decide, for a bounded time.
    this.handOver(g, want, {
      why: 'spread',
      force: false,
      done: (res) => {
        // The next attempt, if this one does not take or is called off, waits a full hold-off again.
        this.holds[g] = 0;
        if (res.outcome === 'transferred') this.calledOff[g] = 0;
        else if (res.outcome === 'in-flight') this.calledOff[g] += 1;
      },
    });
  }

  stop(): void {
    // A caller waiting on a hand-over (an operator's transfer) hears that this node no longer leads.
    for (let g = 0; g < this.replicas.length; g++) this.end(g, 'not-leader');
    for (const r of this.replicas) r.stop();
  }

  crash(): void {
    for (const r of this.replicas) r.crash();
  }

  private admit(gm: GroupMessage): boolean {
    if (Number.isInteger(gm.group) && gm.group >= 0 && gm.group < this.replicas.length) return true;
    this.onRefused?.(gm, `group ${gm.group} is not a group of this node (it has ${this.replicas.length})`);
    return false;
  }
}

/**
 * This node's id when `r` leads its group (in a joint configuration too, where it has no LeaderView), else null.
 */
function leaderHere(r: GroupReplica): NodeId | null {
  const k = r.known?.();
  if (k !== undefined) return k.leader !== '' && k.leader === k.self ? k.self : null;
  return r.leaderView?.()?.self ?? null;
}

/** A node core as a group's replica: its driver hears the messages and broken streams, the core the ticks. */
export function coreReplica(core: NodeCore): GroupReplica & { core: NodeCore } {
  return {
    core,
    leaderView: () => leaderViewOf(core),
    transferLeadership: (to) => core.driver.transferLeadership(to),
    holdNewTransactions: (to) => core.holdNewTransactions(to),
    members: () => {
      const cs = core.driver.node.raft.confState();
      return { voters: cs.voters, learners: cs.learners, joint: cs.votersOutgoing.length > 0 };
    },
    addressOf: (id) => core.membership.get(id),
    known: () => ({ self: core.driver.node.raft.id, leader: core.driver.node.raft.lead }),
    proposeMemberChange: (type, id, addressOf) => proposeMemberChange(core, type, id, addressOf),
    inFlightCount: () => {
      const p = core.engine.phases();
      return p.begun + p.preparing + p.deciding;
    },
    receive: (messages) => core.driver.receive(messages),
    reportUnreachable: (peer) => core.driver.reportUnreachable(peer),
    heard: (peers, leaders) => {
      for (const p of peers) core.driver.node.heard(p, leaders.includes(p));
    },
    quiesced: () => core.driver.node.quiesced(),
    tick: () => core.tick(),
    stop: () => core.stop(),
    crash: () => core.crash(),
  };
}

/** A node core's view as its group's leader, or null when it does not lead (or is in a joint configuration). */
function leaderViewOf(core: NodeCore): LeaderView | null {
  const node = core.driver.node;
  if (node.raft.role !== Role.Leader) return null;
  const cs = node.raft.confState();
  if (cs.votersOutgoing.length > 0) return null;
  const st = node.status();
  const match = new Map<NodeId, number>();
  for (const p of st.progress) if (!p.rejoining && p.id !== st.id) match.set(p.id, p.match);
  return { self: st.id, voters: cs.voters, lastIndex: st.lastIndex, match };
}

/**
 * One single-server change of a core's group, with the addresses of the members it leaves (none is proposed without
 * them all).
 */
function proposeMemberChange(
  core: NodeCore,
  type: ConfChangeType,
  id: NodeId,
  addressOf: (id: NodeId) => string | undefined,
): void {
  const cs = core.driver.node.raft.confState();
  const members = new Set([...cs.voters, ...cs.learners]);
  if (type === ConfChangeType.Remove) members.delete(id);
  else members.add(id);
  const addresses = new Map<NodeId, string>();
  for (const m of members) {
    const a = addressOf(m);
    if (a === undefined) return;
    addresses.set(m, a);
  }
  core.driver.proposeConfChange({ type, nodeId: id, context: encodeMemberContext(addresses) }, () => {});
}
