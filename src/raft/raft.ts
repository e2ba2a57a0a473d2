// The Raft protocol as a pure state machine (in the manner of etcd-io/raft).
//
// Inputs: step(message), tick(), and the driver's report that entries were
// synced (onPersisted). Outputs accumulate in `msgs`, `readStates` and the
// log's unstable part; RawNode packs them into a Ready. No clock, no disk, no
// socket and no ambient randomness appear here: the election timeout is drawn
// from the injected `random`.
//
// Roles are behaviour swapped in one place: becomeFollower / becomeCandidate /
// becomePreCandidate / becomeLeader set `stepRole` and `tickRole`.

import {
  checkConfChange,
  ConfChangeRefusedError,
  ConfChangeType,
  encodeConfChange,
  nextConfState,
  sameConfState,
  type ConfChange,
} from './confchange.ts';
import { RaftLog } from './log.ts';
import { MemoryStorage } from './memory-storage.ts';
import { Progress, ProgressState } from './progress.ts';
import { JointConfig, VoteResult } from './quorum.ts';
import { ReadOnly } from './read-only.ts';
import type { Random } from './rng.ts';
import { assert } from '../util/assert.ts';
import {
  EMPTY,
  entryBytes,
  EntryType,
  message,
  MessageType as MT,
  NONE,
  REJOINING_VOTE,
  Role,
  type ConfState,
  type Entry,
  type Message,
  type NodeId,
  type ReadState,
  type Snapshot,
} from './types.ts';

export interface RaftConfig {
  id: NodeId;
  /** Ticks without hearing from a leader before campaigning (randomized in [n, 2n)). */
  electionTicks: number;
  heartbeatTicks: number;
  storage: MemoryStorage;
  /** Injected randomness: an integer in [0, n). */
  random: Random;
  /** Batching: the payload bytes of one append message. */
  appendBytesMax: number;
  /** Flow control: appends in flight per follower, by count and by payload bytes. */
  inflightMsgsMax: number;
  inflightBytesMax: number;
  /** Back-pressure: proposals are refused while this many bytes are uncommitted. */
  uncommittedBytesMax: number;
  /** Committed entries handed to the state machine per Ready. */
  applyBytesMax: number;
  /** Pending linearizable reads. */
  readIndexMax: number;
  preVote: boolean;
  checkQuorum: boolean;
  /**
   * A leader whose commit index advances does not tell every follower at
   * once with an append of its own: the new index rides the next append or
   * heartbeat, and the driver calls noticeCommit() if none has gone out
   * within its bound (DriverOptions.commitNotice). A commit index is never
   * needed for safety, only for the followers' apply, and at low load that
   * dedicated append woke every follower a second time per entry.
   */
  commitNoticeLazy: boolean;
  /**
   * Quiescence (see Raft.quiesced): a leader with nothing to do stops its
   * heartbeats once every follower has agreed, and a quiesced follower takes
   * any frame from its leader's node that names the group as led quiesced
   * (heard()) as the heartbeat it no longer gets. Needs a transport that keeps
   * every peer hearing from this node and that carries those names; the group
   * host gives one to clusters of more than one group.
   */
  quiesce: boolean;
  /**
   * Protocol-aware recovery (Alagappan et al., FAST 2018): on start the disk
   * held a shorter log than this node had already acknowledged, up to this
   * index. 0 (or absent): the log is whole. See Raft.recoverIndex.
   */
  recoverIndex?: number;
  /**
   * This node's data directory held no Raft state when it started and it is
   * not founding a new cluster: it starts rejoining (see Raft.rejoining). A
   * hard state whose vote is REJOINING_VOTE says the same after a restart.
   */
  rejoining?: boolean;
}

export type RaftTuning = Omit<RaftConfig, 'id' | 'storage' | 'random' | 'recoverIndex' | 'rejoining'>;

export const defaultRaftConfig: RaftTuning = {
  electionTicks: 10,
  heartbeatTicks: 1,
  appendBytesMax: 1 << 20,
  inflightMsgsMax: 256,
  inflightBytesMax: 32 << 20,
  uncommittedBytesMax: 64 << 20,
  applyBytesMax: 16 << 20,
  readIndexMax: 4096,
  preVote: true,
  checkQuorum: true,
  commitNoticeLazy: false,
  quiesce: false,
};

export class ProposalDroppedError extends Error {
  constructor(why: string) {
    super(`proposal dropped: ${why}`);
    this.name = 'ProposalDroppedError';
  }
}

/**
 * After a leader loss (see leaderLost) the voters that remain campaign in
 * turn, by id: the first 1 to LEADER_LOST_JITTER_TICKS ticks after the
 * report, the next LEADER_LOST_RANK_TICKS later, and so on. Two followers
 * that saw the same broken stream in the same tick therefore do not both
 * become candidates and split the vote (each voting for itself), which cost
 * a whole randomized election timeout (1–2 s) before.
 */
export const LEADER_LOST_JITTER_TICKS = 2;
export const LEADER_LOST_RANK_TICKS = 3;
/**
 * Quick campaigns (at the ranked delay) after a leader loss before the ordinary randomized timeout takes over again.
 */
export const LEADER_LOST_CAMPAIGNS_MAX = 3;

/** Marks the votes of a leadership transfer: they bypass the leader lease. */
const CAMPAIGN_TRANSFER = new Uint8Array([0x54]);
/** Marks a recovering follower's refusal: its disk lost entries it had acknowledged. */
const LOST_ENTRIES = new Uint8Array([0x4c]);

function isLostEntries(context: Uint8Array): boolean {
  return context.length === 1 && context[0] === LOST_ENTRIES[0];
}

/**
 * A rejoining follower's answers (append and heartbeat answers) carry
 * [REJOINING_TAG][its nonce]; the leader's append that ends the rejoin
 * carries [REJOINED_TAG][the same nonce]. The nonce is drawn anew by each
 * start of the node, so an answer to an earlier start (a message delayed
 * across a restart) never ends a later one's rejoin.
 */
const REJOINING_TAG = 0x52;
const REJOINED_TAG = 0x72;
const REJOIN_NONCE_BYTES = 8;

function rejoinContext(tag: number, nonce: Uint8Array): Uint8Array {
  const c = new Uint8Array(1 + REJOIN_NONCE_BYTES);
  c[0] = tag;
  c.set(nonce, 1);
  return c;
}

/** The nonce in a context made by rejoinContext(tag, …); null for any other context. */
function rejoinNonceIn(tag: number, context: Uint8Array): Uint8Array | null {
  return context.length === 1 + REJOIN_NONCE_BYTES && context[0] === tag ? context.subarray(1) : null;
}

/**
 * A leader's heartbeat that asks its followers to quiesce carries
 * [QUIESCE_TAG][the round, a float64]; a follower that takes it answers with
 * [QUIESCED_TAG][the same round]. The round moves on whenever anything
 * happens in the group (Raft.wake), so a late answer to an earlier request
 * never counts for a later one; and a node built before quiescence, which
 * echoes a heartbeat's context as it is, never counts as having agreed.
 * Nine bytes: never a ReadIndex id (eight) nor a rejoin mark (its tags
 * differ).
 */
const QUIESCE_TAG = 0x51;
const QUIESCED_TAG = 0x71;

function quiesceContext(tag: number, round: number): Uint8Array {
  const c = new Uint8Array(9);
  c[0] = tag;
  new DataView(c.buffer).setFloat64(1, round);
  return c;
}

/** The round in a context made by quiesceContext(tag, …); null for any other context. */
function quiesceRoundIn(tag: number, context: Uint8Array): number | null {
  if (context.length !== 9 || context[0] !== tag) return null;
  return new DataView(context.buffer, context.byteOffset, 9).getFloat64(1);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

type StepFn = (m: Message) => void;

export class Raft {
  readonly id: NodeId;
  term = 0;
  vote: NodeId = NONE;
  lead: NodeId = NONE;
  role: Role = Role.Follower;
  readonly log: RaftLog;

  config: JointConfig;
  learners: Set<NodeId>;
  /** The log index whose configuration is in effect (a snapshot's, or the last applied change's). */
  confIndex = 0;
  /**
   * Leader: the index of the last membership change it proposed (or its first entry); a new change waits until it is
   * applied.
   */
  pendingConfIndex = 0;
  readonly progress = new Map<NodeId, Progress>();
  private readonly votes = new Map<NodeId, boolean>();

  /** Outgoing messages since the last Ready. */
  msgs: Message[] = [];
  readStates: ReadState[] = [];

  leadTransferee: NodeId = NONE;
  /**
   * Recovering: this node's disk lost entries it had acknowledged, up to
   * this index (0: the log is whole). Its lost acknowledgements may be what
   * made those entries committed, so until a leader has caught its log up
   * past this index it grants no vote and never campaigns (an election it
   * helped could pick a leader without them), and it tells the leader that
   * its match went back. Invariant: 0 or > log.stableLastIndex().
   */
  recoverIndex: number;
  /**
   * Rejoining: this node started on a data directory with no Raft state,
   * and it was not founding a new cluster (that one act is explicit: see
   * docs/storage.md). A voter whose disk was wiped or replaced has forgotten
   * everything it promised: the entries it acknowledged, the terms it saw,
   * its votes. Until a leader has shown it is whole again it must not count
   * in any quorum, of an election or of a commit:
   *
   *  - it grants no vote and no pre-vote and never campaigns (an election it
   *    helped could pick a leader without the entries it acknowledged);
   *  - every answer it gives a leader is marked REJOINING, and a leader does
   *    not count a marked follower's acknowledgements towards a commit, a
   *    read or its own CheckQuorum: a stale leader of an old term, which this
   *    node no longer knows to refuse, could otherwise commit with it over
   *    entries a newer term committed;
   *  - on the first mark, the leader appends an empty entry, the fence, and
   *    waits until the fence is committed by a quorum that does not count
   *    this node, and this node holds the leader's log up to it; then its
   *    next append carries REJOINED, and this node leaves the state, taking
   *    the leader as its vote in the current term.
   *
   * Why that is safe (S = this node, T = the leader's term, Q = the quorum
   * that committed the fence, without S). Q acknowledged term T after S's
   * disk was lost, since the fence was appended after S's mark. Any quorum
   * S once belonged to (a vote it gave, an entry it acknowledged, in some
   * term T') shares a member with Q other than S, which had seen T' before
   * acknowledging T: so T' <= T. A leader of T was elected by voters that
   * remembered their promises (S grants nothing while rejoining), so by
   * Leader Completeness it holds every entry committed in a term below T,
   * and in T only it appends; so its log up to the fence holds everything
   * S ever acknowledged that counted. S now holds that prefix, so its log is
   * at least as up to date as what it acknowledged, and its vote in T is
   * the leader (if S had voted in T before the loss, that vote can only
   * have helped elect this leader, and S will grant no other in T).
   * Invariant: rejoining ⇒ vote === NONE (its durable form is REJOINING_VOTE).
   */
  rejoining: boolean;
  /** Drawn at start: ties this start's REJOINING answers to the REJOINED that ends them. */
  private readonly rejoinNonce: Uint8Array;
  private uncommittedBytes = 0;
  private readonly readOnly: ReadOnly;
  /** ReadIndex requests that arrived before the leader committed an entry of its term. */
  private pendingReads: Message[] = [];
  /** commitNoticeLazy: the commit index moved and has not been sent to every follower since (see noticeCommit). */
  private commitNoticePending = false;

  private electionElapsedTicks = 0;
  private heartbeatElapsedTicks = 0;
  private randomizedElectionTicks = 0;
  /**
   * The leader whose stream broke, while this node campaigns quickly to
   * replace it (NONE otherwise); cleared as soon as any leader is heard.
   * Invariant: lostLeader === NONE ⇒ quickCampaignsLeft === 0.
   */
  private lostLeader: NodeId = NONE;
  /** Campaigns left at the ranked delay of leaderLostDelayTicks. */
  private quickCampaignsLeft = 0;

  /**
   * Quiesced (cfg.quiesce): this group has nothing to do, and its members
   * agreed to stop heartbeats until something happens.
   *
   *  - A leader asks once it may (mayQuiesce: every entry committed, applied
   *    and matched by every member, no read, transfer or membership change
   *    under way): its heartbeats carry a quiesce request of the current
   *    round. A follower whose log ends at the leader's commit index takes
   *    it and answers so; once every member answered this
   *    round, the leader is quiesced too and sends no more heartbeats.
   *  - A quiesced follower's election timer is reset by any frame from its
   *    leader's node that says the node still leads the group quiesced
   *    (heard()), so it neither campaigns nor grants a vote (the leader
   *    lease) while that holds; once the node falls silent, or restarted and
   *    leads nothing, for an election timeout it campaigns as usual, and a
   *    broken stream to it (Unreachable) wakes it at once.
   *  - A quiesced leader counts a member whose node it hears as active for
   *    CheckQuorum: it steps down, as usual, when it no longer hears a
   *    quorum. A member whose node falls silent for an election timeout
   *    wakes it (silentTicks): a group with a member down heartbeats.
   *  - Anything else wakes the group (wakes): at the leader a proposal, a
   *    read, a transfer, any other message; at a follower what comes from
   *    its leader, or says it is gone. The round moves on, and the leader
   *    sends heartbeats again at its next tick.
   *
   * Safety never depends on it: no vote, commit or read is decided by it; it
   * only decides when heartbeats are sent, and how a follower times out.
   * Invariant: quiet ⇒ role is Follower or Leader.
   */
  private quiet = false;
  /** Leader: the current round of quiesce requests (see quiesceContext). */
  private quiesceRound = 0;
  /** Leader: the members that answered this round's quiesce request. */
  private readonly quiesceAcks = new Set<NodeId>();
  /**
   * Leader, quiesced: ticks since each member's node was last heard (heard()). A member silent for an election
   * timeout wakes the group: it may come back needing the leader (restarted, recovering, rejoining), and only a
   * leader that heartbeats finds it; until then the group heartbeats as one with a member down does.
   */
  private readonly silentTicks = new Map<NodeId, number>();

  private stepRole: StepFn;
  private tickRole: () => void;

  constructor(readonly cfg: RaftConfig) {
    assert(cfg.id !== NONE, 'raft: node id must not be empty');
    assert(
      cfg.heartbeatTicks > 0 && cfg.electionTicks > cfg.heartbeatTicks,
      'raft: need electionTicks > heartbeatTicks > 0',
    );
    this.id = cfg.id;
    this.log = new RaftLog(cfg.storage, cfg.applyBytesMax);
    const hs = cfg.storage.hardState;
    const cs = cfg.storage.confState();
    this.config = new JointConfig(cs.voters, cs.votersOutgoing);
    this.learners = new Set(cs.learners);
    this.confIndex = cfg.storage.snapshot().metadata.index;
    this.readOnly = new ReadOnly(cfg.readIndexMax);
    this.recoverIndex =
      cfg.recoverIndex !== undefined && cfg.recoverIndex > this.log.lastIndex() ? cfg.recoverIndex : 0;
    this.rejoining = cfg.rejoining === true || hs.vote === REJOINING_VOTE;
    // Drawn only when needed: a node that is not rejoining now never will be in this start (it is a new start that
    // rejoins).
    this.rejoinNonce = this.rejoining ? Uint8Array.from({ length: REJOIN_NONCE_BYTES }, () => cfg.random(256)) : EMPTY;
    if (hs.term > 0 || hs.commit > 0) {
      // The commit index may lag the snapshot (a commit-only write is not
      // synced and may be lost); it may never pass the log.
      assert(
        hs.commit <= this.log.lastIndex(),
        `raft: hard state commit ${hs.commit} beyond the last index ${this.log.lastIndex()}`,
      );
      this.log.commitTo(hs.commit);
      this.term = hs.term;
      this.vote = hs.vote === REJOINING_VOTE ? NONE : hs.vote;
    }
    this.stepRole = this.stepFollower;
    this.tickRole = this.tickElection;
    this.becomeFollower(this.term, NONE);
  }

  // ---- configuration -------------------------------------------------

  confState(): ConfState {
    return {
      voters: [...this.config.incoming],
      learners: [...this.learners],
      votersOutgoing: [...this.config.outgoing],
    };
  }

  private applyConfState(cs: ConfState, index: number): void {
    this.config = new JointConfig(cs.voters, cs.votersOutgoing);
    this.learners = new Set(cs.learners);
    this.confIndex = index;
    this.resetProgress();
  }

  /**
   * Proposes a membership change (see confchange.ts). Throws
   * ProposalDroppedError when this node is not the leader or a change is
   * still pending, ConfChangeRefusedError when the change makes no sense
   * for the current configuration. Returns the entry's index.
   */
  proposeConfChange(change: Omit<ConfChange, 'base'>): number {
    if (this.role !== Role.Leader)
      throw new ProposalDroppedError(this.lead === NONE ? 'no leader' : `not the leader (leader is ${this.lead})`);
    if (this.pendingConfIndex > this.log.applied) {
      throw new ProposalDroppedError(
        `a membership change is in progress (entry ${this.pendingConfIndex} is not applied yet; applied ${this.log.applied}); retry once it is`,
      );
    }
    const base = this.confState();
    const why = checkConfChange(base, change);
    if (why !== null) throw new ConfChangeRefusedError(why);
    this.propose([{ term: 0, index: 0, type: EntryType.ConfChange, data: encodeConfChange({ ...change, base }) }]);
    this.pendingConfIndex = this.log.lastIndex();
    return this.pendingConfIndex;
  }

  /**
   * Applies a committed membership change at log index `index` and returns
   * the configuration now in effect. A change at or below `confIndex` is
   * already reflected (a snapshot overtook it) and is skipped.
   */
  applyConfChange(cc: ConfChange, index: number): ConfState {
    if (index <= this.confIndex) return this.confState();
    let cur = this.confState();
    if (cur.voters.length === 0 && cur.learners.length === 0) {
      // A new node replaying the log from the start: the change says what it applies to.
      this.config = new JointConfig(cc.base.voters, cc.base.votersOutgoing);
      this.learners = new Set(cc.base.learners);
      cur = cc.base;
    }
    assert(
      sameConfState(cur, cc.base),
      `raft: membership change at ${index} was proposed for ${JSON.stringify(cc.base)} but ${this.id} has ${JSON.stringify(cur)}`,
    );
    const why = checkConfChange(cur, cc);
    assert(why === null, `raft: committed membership change at ${index} is invalid: ${why}`);
    const next = nextConfState(cur, cc);
    this.config = new JointConfig(next.voters, next.votersOutgoing);
    this.learners = new Set(next.learners);
    this.confIndex = index;
    const members = new Set([...next.voters, ...next.learners]);
    for (const id of [...this.progress.keys()]) if (!members.has(id)) this.progress.delete(id);
    for (const id of members) {
      const pr = this.progress.get(id);
      if (pr) {
        pr.isLearner = this.learners.has(id);
        continue;
      }
      const np = new Progress(
        id,
        this.log.lastIndex() + 1,
        this.cfg.inflightMsgsMax,
        this.cfg.inflightBytesMax,
        this.learners.has(id),
      );
      // Give a new member the benefit of the doubt, so it can be sent a snapshot at once.
      np.recentActive = true;
      if (id === this.id) np.match = this.log.stableLastIndex();
      this.progress.set(id, np);
    }
    if (this.role !== Role.Leader) return next;
    if (!this.config.ids().has(this.id)) {
      this.stepDownRemoved();
      return next;
    }
    if (this.leadTransferee !== NONE && !this.config.incoming.has(this.leadTransferee)) this.leadTransferee = NONE;
    // The quorum changed: the commit index may move (a removal), and a new member needs the log.
    const advanced = this.maybeCommit();
    if (advanced) this.onCommitAdvanced();
    // An eager notice went to every member already; a lazy one sends nothing yet.
    if ((!advanced || this.cfg.commitNoticeLazy) && cc.type !== ConfChangeType.Remove) this.sendAppend(cc.nodeId);
    return next;
  }

  /**
   * The leader applied its own removal: it tells everyone the commit index,
   * asks the most up-to-date voter to campaign at once (instead of waiting
   * for an election timeout), and stops leading.
   */
  private stepDownRemoved(): void {
    this.bcastAppend();
    let best: Progress | null = null;
    for (const [id, pr] of this.progress) {
      if (id === this.id || pr.isLearner || !this.counts(id)) continue;
      if (!best || pr.match > best.match) best = pr;
    }
    if (best && best.match === this.log.lastIndex()) this.send(message({ type: MT.TimeoutNow, to: best.id }));
    this.becomeFollower(this.term, NONE);
  }

  /**
   * This node may campaign: it is a voter, its log is whole, it is not rejoining, and no snapshot waits to be
   * persisted.
   */
  promotable(): boolean {
    return (
      this.config.ids().has(this.id) &&
      this.recoverIndex === 0 &&
      !this.rejoining &&
      this.log.pendingSnapshot() === null
    );
  }

  /** What this follower's answers to `to` carry: its rejoin mark, or on a refusal the recovering mark, or nothing. */
  private answerContext(refusal: boolean): Uint8Array {
    if (this.rejoining) return rejoinContext(REJOINING_TAG, this.rejoinNonce);
    return refusal && this.recoverIndex > 0 ? LOST_ENTRIES : EMPTY;
  }

  /** The leader proved this node whole (see `rejoining`): it counts again, and its vote in this term is that leader. */
  private endRejoin(leader: NodeId): void {
    this.rejoining = false;
    this.vote = leader;
  }

  /**
   * Leader, before anything else is done with a follower's answer: whether
   * it says the follower is rejoining, and whether that is news (the first
   * mark of this start of the follower: a nonce not seen before). From then
   * on the follower does not count (see counts()) until its fence is proven.
   */
  private markRejoining(pr: Progress, m: Message): 'no' | 'new' | 'known' {
    const nonce = rejoinNonceIn(REJOINING_TAG, m.context);
    if (nonce === null) {
      // Its first answer without the mark, once proven: the rejoin is over.
      if (pr.rejoinNonce !== null && this.rejoinProven(pr)) pr.rejoinNonce = null;
      return 'no';
    }
    if (pr.rejoinNonce !== null && sameBytes(pr.rejoinNonce, nonce)) return 'known';
    pr.rejoinNonce = Uint8Array.from(nonce);
    pr.rejoinFence = 0;
    return 'new';
  }

  /**
   * Leader, after the answer was handled: a new rejoin gets its fence (an
   * empty entry appended now, so after the follower lost its disk); a known
   * one that is proven is told so by the next append (sent now, in case the
   * leader is idle).
   */
  private followRejoin(pr: Progress, mark: 'no' | 'new' | 'known'): void {
    if (mark === 'new') {
      this.appendEntries([{ term: 0, index: 0, type: EntryType.Normal, data: EMPTY }]);
      pr.rejoinFence = this.log.lastIndex();
      this.bcastAppend();
    } else if (mark === 'known' && this.rejoinProven(pr)) {
      this.sendAppend(pr.id);
    }
  }

  /** The fence of `pr`'s rejoin is committed by a quorum without it, and it holds the log up to the fence. */
  private rejoinProven(pr: Progress): boolean {
    return pr.rejoinFence > 0 && pr.match >= pr.rejoinFence && this.log.committed >= pr.rejoinFence;
  }

  /**
   * Whether `id`'s acknowledgements count towards a commit, a read or CheckQuorum (a rejoining follower's do not, until
   * proven).
   */
  counts(id: NodeId): boolean {
    const pr = this.progress.get(id);
    return pr !== undefined && (pr.rejoinNonce === null || this.rejoinProven(pr));
  }

  private resetProgress(): void {
    this.progress.clear();
    const next = this.log.lastIndex() + 1;
    const ids = [...this.config.ids(), ...this.learners];
    for (const id of ids) {
      const pr = new Progress(id, next, this.cfg.inflightMsgsMax, this.cfg.inflightBytesMax, this.learners.has(id));
      if (id === this.id) pr.match = this.log.stableLastIndex();
      this.progress.set(id, pr);
    }
  }

  // ---- sending -------------------------------------------------------

  private send(m: Message): void {
    m.from = this.id;
    if (m.type === MT.Vote || m.type === MT.VoteResp || m.type === MT.PreVote || m.type === MT.PreVoteResp) {
      // Vote messages carry the term they are about, set by the caller.
      assert(m.term !== 0, `raft: ${MT[m.type]} without a term`);
    } else {
      assert(m.term === 0, `raft: ${MT[m.type]} with a preset term`);
      // Forwarded proposals and reads are local-term-free.
      if (m.type !== MT.Prop && m.type !== MT.ReadIndex) m.term = this.term;
    }
    this.msgs.push(m);
  }

  /** Sends appends to `to` while the window allows; returns whether any was sent. */
  private sendAppend(to: NodeId, sendIfEmpty = true): boolean {
    let sent = false;
    while (this.maybeSendAppend(to, sendIfEmpty && !sent)) sent = true;
    return sent;
  }

  private maybeSendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.progress.get(to);
    if (!pr || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    const last = this.log.lastIndex();
    const entries = prevTerm === null ? null : this.log.slice(pr.next, last + 1, this.cfg.appendBytesMax);
    if (prevTerm === null || entries === null) return this.sendSnapshot(to, pr);
    if (entries.length === 0 && !sendIfEmpty) return false;
    let bytes = 0;
    for (const e of entries) bytes += entryBytes(e);
    // A rejoining follower proven whole is told so by every append, until it answers without its mark.
    const context =
      pr.rejoinNonce !== null && this.rejoinProven(pr) ? rejoinContext(REJOINED_TAG, pr.rejoinNonce) : EMPTY;
    this.send(
      message({ type: MT.App, to, index: prevIndex, logTerm: prevTerm, entries, commit: this.log.committed, context }),
    );
    pr.sentEntries(entries.length, prevIndex + entries.length, bytes);
    // In Probe state one message per round trip; Replicate streams on.
    return entries.length > 0;
  }

  private sendSnapshot(to: NodeId, pr: Progress): boolean {
    // A follower that has not answered lately would not take it in: wait.
    if (!pr.recentActive) return false;
    const snap = this.log.snapshot();
    assert(snap.metadata.index > 0, `raft: follower ${to} needs a snapshot but none exists`);
    pr.becomeSnapshot(snap.metadata.index);
    this.send(message({ type: MT.Snap, to, snapshot: snap }));
    return false;
  }

  private sendHeartbeat(to: NodeId, context: Uint8Array): void {
    const pr = this.progress.get(to);
    // A follower's commit may only move to what it is known to hold.
    const commit = Math.min(pr ? pr.match : 0, this.log.committed);
    this.send(message({ type: MT.Heartbeat, to, commit, context }));
  }

  private forEachPeer(f: (id: NodeId) => void): void {
    for (const id of this.progress.keys()) if (id !== this.id) f(id);
  }

  private bcastAppend(): void {
    // Every append carries the commit index: a pending notice goes with these.
    this.commitNoticePending = false;
    this.forEachPeer((id) => this.sendAppend(id));
  }

  private bcastHeartbeat(): void {
    this.commitNoticePending = false;
    const ctx =
      this.readOnly.lastPendingContext() ??
      (this.mayQuiesce() ? quiesceContext(QUIESCE_TAG, this.quiesceRound) : EMPTY);
    this.forEachPeer((id) => this.sendHeartbeat(id, ctx));
  }

  // ---- quiescence (see `quiet`) -------------------------------------------

  /** Whether this group is quiesced here: no heartbeats go out or are expected while its nodes are heard. */
  get quiesced(): boolean {
    return this.quiet;
  }

  /**
   * Leader: the group has nothing to do. Every entry is committed, applied
   * and persisted here, and matched by every member that counts (a
   * rejoining one does not quiesce); no read, transfer or membership change
   * is under way.
   */
  private mayQuiesce(): boolean {
    if (!this.cfg.quiesce || this.role !== Role.Leader) return false;
    const last = this.log.lastIndex();
    if (this.log.committed !== last || this.log.applied !== last || this.log.stableLastIndex() !== last) return false;
    if (this.leadTransferee !== NONE || this.pendingConfIndex > this.log.applied || this.config.outgoing.size > 0)
      return false;
    if (this.pendingReads.length > 0 || this.readOnly.lastPendingContext() !== null) return false;
    for (const [id, pr] of this.progress) if (id !== this.id && (pr.match !== last || !this.counts(id))) return false;
    return true;
  }

  /**
   * Follower, on its leader's quiesce request `m`: whether it may take it. Its log ends at the leader's commit index
   * (which the leader sends only when this follower matched it), so nothing is left for it to receive or apply later.
   */
  private mayQuiesceFollowing(m: Message): boolean {
    const last = this.log.lastIndex();
    return (
      this.cfg.quiesce &&
      this.role === Role.Follower &&
      m.from === this.lead &&
      m.commit === last &&
      this.log.committed === last &&
      this.recoverIndex === 0 &&
      this.log.pendingSnapshot() === null
    );
  }

  /** Leader: `id` took this round's quiesce request; once every member has, the group is quiesced here. */
  private quiesceAcked(id: NodeId): void {
    if (!this.mayQuiesce()) return;
    this.quiesceAcks.add(id);
    for (const peer of this.progress.keys()) if (peer !== this.id && !this.quiesceAcks.has(peer)) return;
    this.quiet = true;
  }

  /**
   * Whether `m` wakes a quiesced group here (or ends the round of quiesce requests under way). A leader wakes on
   * anything but its ticks' own messages and the answers to its quiesce requests. A follower wakes only on what
   * says its leader is awake or gone: a message from it other than a quiesce request, a broken stream to it, its
   * own campaign. A rival's vote request does not wake it: it still hears its leader's node and refuses the vote
   * (the lease), as a follower that hears heartbeats does; woken, it would time out and depose a live leader that
   * sends it nothing.
   */
  private wakes(m: Message): boolean {
    const quiesceMessage =
      (m.type === MT.Heartbeat && quiesceRoundIn(QUIESCE_TAG, m.context) !== null) ||
      (m.type === MT.HeartbeatResp && quiesceRoundIn(QUIESCED_TAG, m.context) !== null);
    switch (m.type) {
      case MT.Beat:
      case MT.CheckQuorum:
        return false;
      case MT.Hup:
        return true;
      case MT.Prop:
      case MT.ReadIndex:
        // A follower takes neither: a proposal is refused, a read goes to the leader, which wakes.
        return this.role === Role.Leader;
      default:
        if (quiesceMessage) return false;
        return this.role === Role.Leader || m.from === this.lead;
    }
  }

  /** Something happened in the group: it is no longer quiesced, and the quiesce requests start a new round. */
  private wake(m: Message | null): void {
    // A quiesced follower whose leader asks for votes knows that node no longer leads: its lease ends.
    if (this.quiet && this.role === Role.Follower && m !== null && m.from === this.lead) {
      if (m.type === MT.PreVote || m.type === MT.Vote) this.electionElapsedTicks = this.cfg.electionTicks;
    }
    this.quiet = false;
    this.quiesceRound += 1;
    this.quiesceAcks.clear();
    this.silentTicks.clear();
  }

  /**
   * Node `id` was heard from since the last tick: some frame of any group came from it (the group host reports it
   * before the tick), and with `leads` the frame said that node leads this group quiesced. Only a quiesced group
   * takes it: its leader as the member's answer, for CheckQuorum; its follower as its leader's heartbeat, only if
   * the frame came from its leader and says it still leads: a leader's node that restarted (and so leads nothing)
   * must not hold its followers in their lease while it lives.
   */
  heard(id: NodeId, leads: boolean): void {
    if (!this.quiet) return;
    if (this.role === Role.Leader) {
      const pr = this.progress.get(id);
      if (pr !== undefined) pr.recentActive = true;
      this.silentTicks.set(id, 0);
    } else if (leads && id === this.lead) {
      this.electionElapsedTicks = 0;
    }
  }

  /**
   * Leader, quiesced, on a tick: a member whose node was silent for an election timeout wakes the group (silentTicks).
   */
  private countSilence(): void {
    for (const id of this.progress.keys()) {
      if (id === this.id) continue;
      const ticks = (this.silentTicks.get(id) ?? 0) + 1;
      this.silentTicks.set(id, ticks);
      if (ticks >= this.cfg.electionTicks) {
        this.wake(null);
        return;
      }
    }
  }

  // ---- role changes ----------------------------------------------------

  private reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsedTicks = 0;
    this.heartbeatElapsedTicks = 0;
    this.randomizedElectionTicks = this.cfg.electionTicks + this.cfg.random(this.cfg.electionTicks);
    this.leadTransferee = NONE;
    this.votes.clear();
    this.resetProgress();
    this.uncommittedBytes = 0;
    this.readOnly.reset();
    this.pendingReads = [];
    this.commitNoticePending = false;
    this.wake(null);
  }

  becomeFollower(term: number, lead: NodeId): void {
    this.reset(term);
    this.stepRole = this.stepFollower;
    this.tickRole = this.tickElection;
    this.lead = lead;
    this.role = Role.Follower;
    if (lead !== NONE) this.endLeaderLoss();
    // A campaign after a leader loss that lost (or met a higher term): the next one comes at the ranked delay, not a
    // full timeout.
    else if (this.quickCampaignsLeft > 0) this.quickTimeout();
  }

  private becomePreCandidate(): void {
    assert(this.role !== Role.Leader, 'raft: leader cannot become pre-candidate');
    // PreVote changes neither term nor vote: a partitioned node that keeps
    // losing pre-votes never disturbs the cluster with a higher term.
    this.stepRole = this.stepCandidate;
    this.tickRole = this.tickElection;
    this.votes.clear();
    this.lead = NONE;
    this.role = Role.PreCandidate;
    this.wake(null);
  }

  private becomeCandidate(): void {
    assert(this.role !== Role.Leader, 'raft: leader cannot become candidate');
    this.reset(this.term + 1);
    this.stepRole = this.stepCandidate;
    this.tickRole = this.tickElection;
    this.vote = this.id;
    this.role = Role.Candidate;
  }

  private becomeLeader(): void {
    assert(this.role !== Role.Follower, 'raft: follower cannot become leader directly');
    this.reset(this.term);
    this.stepRole = this.stepLeader;
    this.tickRole = this.tickHeartbeat;
    this.lead = this.id;
    this.role = Role.Leader;
    this.endLeaderLoss();
    const self = this.progress.get(this.id);
    if (self) self.becomeReplicate();
    if (self) self.match = this.log.stableLastIndex();
    // Entries of earlier terms commit only by an entry of this term (§5.4.2),
    // so the new leader appends an empty one at once.
    this.appendEntries([{ term: 0, index: 0, type: EntryType.Normal, data: EMPTY }]);
    // No membership change until this term's first entry is applied: that
    // covers any change an earlier leader left in the log, and it is the
    // fix for the single-server change bug (Ongaro, raft-dev, 2015).
    this.pendingConfIndex = this.log.lastIndex();
  }

  // ---- ticks -------------------------------------------------------------

  tick(): void {
    this.tickRole();
  }

  private pastElectionTimeout(): boolean {
    return this.electionElapsedTicks >= this.randomizedElectionTicks;
  }

  private tickElection(): void {
    this.electionElapsedTicks++;
    if (this.promotable() && this.pastElectionTimeout()) {
      this.electionElapsedTicks = 0;
      this.step(message({ type: MT.Hup, from: this.id }));
    }
  }

  /**
   * The transport reports that the stream to our leader broke: a leader
   * process that died resets its sockets at once, long before an election
   * timeout passes in silence. This node gives up its leader lease (it will
   * now grant pre-votes) and starts a pre-vote within LEADER_LOST_JITTER_TICKS
   * + 1 ticks, at a random point so that followers that lost the leader
   * together do not split the vote. A live leader whose stream merely broke
   * stays safe: the followers that still hear it are in lease and refuse the
   * pre-vote (PreVote, CheckQuorum), and its next heartbeat resets the timer.
   */
  private leaderLost(): void {
    // Without both, nothing would keep a live leader safe from this node's early campaign.
    if (!this.promotable() || !this.cfg.preVote || !this.cfg.checkQuorum) return;
    // The transport repeats the report while it fails to reconnect: the countdown already runs.
    if (this.lostLeader === this.lead) return;
    this.lostLeader = this.lead;
    this.quickCampaignsLeft = LEADER_LOST_CAMPAIGNS_MAX;
    this.electionElapsedTicks = Math.max(this.electionElapsedTicks, this.cfg.electionTicks);
    this.quickTimeout();
  }

  /**
   * Ticks from now until this node's campaign after a leader loss: its rank
   * among the remaining voters (by id) picks its turn, and a little jitter
   * keeps nodes with different views of the membership apart too. Never
   * later than an ordinary election timeout would be.
   */
  private leaderLostDelayTicks(): number {
    const rank = Math.max(0, this.rankOf(this.id));
    return Math.min(
      this.cfg.electionTicks,
      1 + rank * LEADER_LOST_RANK_TICKS + this.cfg.random(LEADER_LOST_JITTER_TICKS),
    );
  }

  /** Our place in the order of campaigns after the loss of lostLeader (0 goes first). */
  private rankOf(id: NodeId): number {
    return [...this.config.ids()]
      .filter((x) => x !== this.lostLeader)
      .sort()
      .indexOf(id);
  }

  /**
   * Two survivors of a leader loss that pre-vote at once would each grant
   * the other's pre-vote (neither hears a leader), both become candidates
   * and split the vote. So while this node pre-votes after a leader loss it
   * refuses the pre-vote of a rival that comes after it in the order, unless
   * the rival's log is more up to date than ours (then ours could not win,
   * and we grant and step back). Refusing a pre-vote only ever delays an
   * election, and only for the few quick campaigns (LEADER_LOST_CAMPAIGNS_MAX).
   */
  private yieldsNoPreVote(m: Message): boolean {
    if (this.role !== Role.PreCandidate || this.lostLeader === NONE) return false;
    const mine = this.rankOf(this.id);
    const theirs = this.rankOf(m.from);
    if (mine < 0 || theirs < 0 || mine > theirs) return false;
    const lastTerm = this.log.lastTerm();
    const theirsNewer = m.logTerm > lastTerm || (m.logTerm === lastTerm && m.index > this.log.lastIndex());
    return !theirsNewer;
  }

  private quickTimeout(): void {
    assert(this.lostLeader !== NONE, 'raft: a quick timeout only after a leader loss');
    this.randomizedElectionTicks = this.electionElapsedTicks + this.leaderLostDelayTicks();
  }

  /** A leader is known again (heard, or this node): back to the ordinary randomized timeout. */
  private endLeaderLoss(): void {
    if (this.lostLeader === NONE) return;
    this.lostLeader = NONE;
    this.quickCampaignsLeft = 0;
    this.randomizedElectionTicks = this.cfg.electionTicks + this.cfg.random(this.cfg.electionTicks);
  }

  /** A message from the current leader: the election timer starts over. */
  private heardFromLeader(from: NodeId): void {
    this.electionElapsedTicks = 0;
    this.lead = from;
    this.endLeaderLoss();
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsedTicks++;
    this.electionElapsedTicks++;
    if (this.electionElapsedTicks >= this.cfg.electionTicks) {
      this.electionElapsedTicks = 0;
      if (this.cfg.checkQuorum) this.step(message({ type: MT.CheckQuorum, from: this.id }));
      // A transfer that did not finish within an election timeout is abandoned.
      if (this.role === Role.Leader && this.leadTransferee !== NONE) this.leadTransferee = NONE;
    }
    if (this.quiet && this.role === Role.Leader) this.countSilence();
    // A quiesced leader sends no heartbeats; its members hear its node instead (see `quiet`).
    if (this.role !== Role.Leader || this.quiet) return;
    if (this.heartbeatElapsedTicks >= this.cfg.heartbeatTicks) {
      this.heartbeatElapsedTicks = 0;
      this.step(message({ type: MT.Beat, from: this.id }));
    }
  }

  // ---- elections ---------------------------------------------------------

  private hup(transfer: boolean): void {
    if (this.role === Role.Leader) return;
    if (!this.promotable()) return;
    if (this.cfg.preVote && !transfer) this.campaign(MT.PreVote, EMPTY);
    else this.campaign(MT.Vote, transfer ? CAMPAIGN_TRANSFER : EMPTY);
  }

  private campaign(kind: MT.Vote | MT.PreVote, context: Uint8Array): void {
    let term: number;
    if (kind === MT.PreVote) {
      this.becomePreCandidate();
      term = this.term + 1;
    } else {
      this.becomeCandidate();
      term = this.term;
    }
    // After a leader loss, a campaign that neither wins nor loses (a peer
    // that has not noticed the loss yet ignores our pre-vote; a split vote)
    // is retried at the ranked delay, a few times, before the ordinary
    // timeout. The pre-vote round is what counts as one campaign.
    if (this.quickCampaignsLeft > 0) {
      if (kind === MT.PreVote) this.quickCampaignsLeft -= 1;
      this.quickTimeout();
    } else if (this.lostLeader !== NONE) {
      // The quick campaigns are spent (a partition, not a dead leader?): the ordinary randomized timeout again.
      this.endLeaderLoss();
    }
    // Our own vote: for a real vote it is in the hard state persisted with
    // this Ready, before the requests below leave the node (R6).
    if (this.poll(this.id, true) === VoteResult.Won) {
      if (kind === MT.PreVote) this.campaign(MT.Vote, EMPTY);
      else this.becomeLeader();
      return;
    }
    const lastIndex = this.log.lastIndex();
    const lastTerm = this.log.lastTerm();
    for (const id of this.config.ids()) {
      if (id === this.id) continue;
      this.send(message({ type: kind, to: id, term, index: lastIndex, logTerm: lastTerm, context }));
    }
  }

  private poll(id: NodeId, granted: boolean): VoteResult {
    if (!this.votes.has(id)) this.votes.set(id, granted);
    return this.config.vote(this.votes);
  }

  // ---- step ------------------------------------------------------------

  /** The term rules every message passes first (ours moves on; a stale one is answered or dropped); false: dropped. */
  private stepTerm(m: Message): boolean {
    if (m.term === 0) {
      // Local message.
    } else if (m.term > this.term) {
      if (m.type === MT.Vote || m.type === MT.PreVote) {
        const force = m.context.length === 1 && m.context[0] === CAMPAIGN_TRANSFER[0];
        const inLease =
          this.cfg.checkQuorum && this.lead !== NONE && this.electionElapsedTicks < this.cfg.electionTicks;
        // Leader lease: while we hear from a live leader, ignore disruptive
        // candidates (a node rejoining from a partition), unless the leader
        // itself asked for the transfer.
        if (!force && inLease) return false;
      }
      if (m.type === MT.PreVote) {
        // A pre-vote never changes our term.
      } else if (m.type === MT.PreVoteResp && !m.reject) {
        // The term in a granted pre-vote is the future term we asked about.
      } else if (m.type === MT.App || m.type === MT.Heartbeat || m.type === MT.Snap) {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, NONE);
      }
    } else if (m.term < this.term) {
      if ((this.cfg.checkQuorum || this.cfg.preVote) && (m.type === MT.Heartbeat || m.type === MT.App)) {
        // A stale leader (cut off, then healed) learns of the newer term from
        // this and steps down; otherwise, with PreVote, it could go on forever.
        this.send(message({ type: MT.AppResp, to: m.from }));
      } else if (m.type === MT.PreVote) {
        this.send(message({ type: MT.PreVoteResp, to: m.from, term: this.term, reject: true }));
      }
      return false;
    }
    return true;
  }

  step(m: Message): void {
    // Quiescence off (one group), nothing quiesces: no message needs asking whether it wakes the group.
    if (this.cfg.quiesce && this.wakes(m)) this.wake(m);
    if (!this.stepTerm(m)) return;
    switch (m.type) {
      case MT.Hup:
        this.hup(false);
        return;
      case MT.Vote:
      case MT.PreVote: {
        if (m.type === MT.PreVote && this.yieldsNoPreVote(m)) {
          this.send(message({ type: MT.PreVoteResp, to: m.from, term: this.term, reject: true }));
          return;
        }
        const canVote =
          this.vote === m.from ||
          (this.vote === NONE && this.lead === NONE) ||
          (m.type === MT.PreVote && m.term > this.term);
        const respType = m.type === MT.Vote ? MT.VoteResp : MT.PreVoteResp;
        // A recovering node's log is not evidence of what it acknowledged; a rejoining one remembers nothing it
        // promised.
        if (canVote && this.recoverIndex === 0 && !this.rejoining && this.log.isUpToDate(m.index, m.logTerm)) {
          this.send(message({ type: respType, to: m.from, term: m.term }));
          if (m.type === MT.Vote) {
            this.electionElapsedTicks = 0;
            this.vote = m.from;
          } else if (this.role === Role.PreCandidate && this.lostLeader !== NONE) {
            // We just helped a rival after the same leader loss: step back
            // rather than compete with it for the other votes (a split).
            this.becomeFollower(this.term, NONE);
          }
        } else if (this.term > 0) {
          // (A node at term 0 has nothing to refuse with: it started empty and heard no leader yet. Silence refuses as
          // well.)
          this.send(message({ type: respType, to: m.from, term: this.term, reject: true }));
        }
        return;
      }
      default:
        this.stepRole(m);
    }
  }

  // ---- leader ------------------------------------------------------------

  private stepLeader = (m: Message): void => {
    switch (m.type) {
      case MT.Beat:
        this.bcastHeartbeat();
        return;
      case MT.CheckQuorum:
        if (!this.quorumActive()) this.becomeFollower(this.term, NONE);
        for (const [id, pr] of this.progress) if (id !== this.id) pr.recentActive = false;
        return;
      case MT.Prop:
        this.propose(m.entries);
        return;
      case MT.ReadIndex:
        this.leaderReadIndex(m);
        return;
    }
    const pr = this.progress.get(m.from);
    if (!pr) return;
    switch (m.type) {
      case MT.AppResp: {
        const mark = this.markRejoining(pr, m);
        this.handleAppendResponse(m, pr);
        this.followRejoin(pr, mark);
        return;
      }
      case MT.HeartbeatResp: {
        const mark = this.markRejoining(pr, m);
        this.handleHeartbeatResponse(m, pr);
        this.followRejoin(pr, mark);
        return;
      }
      case MT.SnapStatus:
        if (pr.state !== ProgressState.Snapshot) return;
        if (m.reject) pr.pendingSnapshot = 0;
        pr.becomeProbe();
        // Wait for the next heartbeat before probing again.
        pr.probeSent = true;
        return;
      case MT.Unreachable:
        if (pr.state === ProgressState.Replicate) pr.becomeProbe();
        return;
      case MT.TransferLeader:
        this.handleTransferLeader(m, pr);
        return;
    }
  };

  private quorumActive(): boolean {
    const active = new Map<NodeId, boolean>();
    for (const [id, pr] of this.progress) {
      if (pr.isLearner) continue;
      active.set(id, id === this.id || (pr.recentActive && this.counts(id)));
    }
    return this.config.vote(active) === VoteResult.Won;
  }

  private propose(entries: Entry[]): void {
    if (!this.progress.has(this.id)) throw new ProposalDroppedError('this node was removed from the cluster');
    if (this.leadTransferee !== NONE) throw new ProposalDroppedError(`leadership is moving to ${this.leadTransferee}`);
    this.appendEntries(entries);
    this.bcastAppend();
  }

  private appendEntries(entries: Entry[]): void {
    if (this.cfg.quiesce) this.wake(null);
    let bytes = 0;
    for (const e of entries) bytes += e.data.byteLength;
    // Back-pressure: a leader that cannot commit (no quorum) must not buffer forever.
    if (this.uncommittedBytes > 0 && this.uncommittedBytes + bytes > this.cfg.uncommittedBytesMax) {
      throw new ProposalDroppedError(
        `${this.uncommittedBytes} bytes of proposals await commit (limit ${this.cfg.uncommittedBytesMax})`,
      );
    }
    this.uncommittedBytes += bytes;
    let li = this.log.lastIndex();
    const stamped = entries.map((e) => ({ term: this.term, index: ++li, type: e.type, data: e.data }));
    this.log.append(stamped);
    // R6: the leader does not count itself here; onPersisted() does, after the sync.
  }

  /** Reports that the committed entries handed out were applied, for back-pressure. */
  reduceUncommitted(entries: Entry[]): void {
    if (this.role !== Role.Leader) return;
    let bytes = 0;
    for (const e of entries) bytes += e.data.byteLength;
    this.uncommittedBytes = Math.max(0, this.uncommittedBytes - bytes);
  }

  /** The driver synced the log through stableLastIndex(): the leader may now count itself (R6). */
  onPersisted(): void {
    // Entries past the lost ones can only have come from a leader since the
    // restart: the log is whole again up to everything this node acknowledged.
    if (this.recoverIndex > 0 && this.log.stableLastIndex() >= this.recoverIndex) this.recoverIndex = 0;
    if (this.role !== Role.Leader) return;
    const self = this.progress.get(this.id);
    if (!self) return;
    if (self.maybeUpdate(this.log.stableLastIndex()) && this.maybeCommit()) this.onCommitAdvanced();
  }

  private maybeCommit(): boolean {
    const mci = this.config.committed((id) => (this.counts(id) ? this.progress.get(id)?.match : undefined));
    return this.log.maybeCommit(mci, this.term);
  }

  private onCommitAdvanced(): void {
    this.releasePendingReads();
    if (this.cfg.commitNoticeLazy) this.commitNoticePending = true;
    else this.bcastAppend();
  }

  /**
   * Leader, commitNoticeLazy: the commit index advanced and no append or heartbeat has carried it to every follower
   * since.
   */
  get commitNoticeDue(): boolean {
    return this.commitNoticePending && this.role === Role.Leader;
  }

  /**
   * Tells every follower the commit index now (an empty append where nothing else is due), if a notice is still due.
   */
  noticeCommit(): void {
    if (this.commitNoticeDue) this.bcastAppend();
    this.commitNoticePending = false;
  }

  private handleAppendResponse(m: Message, pr: Progress): void {
    pr.recentActive = true;
    // The follower lacks entries this leader counts as matched: it says so
    // (recovering), or it refuses the probe sent at its match itself, which
    // only a disk that lost synced writes without noticing can cause (a stale
    // duplicate of an old refusal only costs one extra append). Probing again
    // at the same match would loop for ever: back off below what it lacks.
    const lostAfter = this.lostAfter(m, pr);
    if (lostAfter !== null) {
      pr.lostEntriesAfter(lostAfter);
      this.sendAppend(m.from);
      return;
    }
    if (m.reject) {
      // Fast backtracking: jump over the follower's whole conflicting term.
      let hint = m.rejectHint;
      if (m.logTerm > 0) hint = this.log.findConflictByTerm(m.rejectHint, m.logTerm).index;
      if (pr.maybeDecrTo(m.index, hint)) {
        if (pr.state === ProgressState.Replicate) pr.becomeProbe();
        this.sendAppend(m.from);
      }
      return;
    }
    const wasPaused = pr.isPaused();
    // A duplicate or reordered acknowledgement carries no news, except that
    // a probe answered at exactly `match` proves the logs agree there.
    const probeConfirmed = pr.state === ProgressState.Probe && m.index === pr.match;
    if (!pr.maybeUpdate(m.index) && !probeConfirmed) return;
    switch (pr.state) {
      case ProgressState.Probe:
        pr.becomeReplicate();
        break;
      case ProgressState.Snapshot:
        if (pr.match >= pr.pendingSnapshot) {
          pr.becomeProbe();
          pr.becomeReplicate();
        }
        break;
      case ProgressState.Replicate:
        pr.inflights.freeLE(m.index);
        break;
    }
    const advanced = this.maybeCommit();
    if (advanced) this.onCommitAdvanced();
    // The acknowledgement may have opened this follower's window: what waited
    // behind it goes now (an eager notice already sent it, to everyone).
    if (!advanced || this.cfg.commitNoticeLazy) this.sendAppend(m.from, wasPaused);
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) {
      this.send(message({ type: MT.TimeoutNow, to: m.from }));
    }
  }

  /** Where a refusing follower's log may end when it lacks entries counted in `pr.match`; null if it does not. */
  private lostAfter(m: Message, pr: Progress): number | null {
    if (!m.reject) return null;
    if (isLostEntries(m.context)) return m.rejectHint < pr.match ? m.rejectHint : null;
    if (rejoinNonceIn(REJOINING_TAG, m.context) !== null) {
      // A rejoining follower's log is new: what the leader counted as its match may be of the log its disk lost,
      // and it does not even hold the entry at the refused index. Its match goes below both.
      const lost = Math.max(0, Math.min(m.rejectHint, m.index - 1));
      return lost < pr.match ? lost : null;
    }
    const refusedMatch =
      pr.state === ProgressState.Probe && m.index === pr.next - 1 && m.index > 0 && m.index <= pr.match;
    return refusedMatch ? Math.max(0, Math.min(m.rejectHint, m.index - 1)) : null;
  }

  private handleHeartbeatResponse(m: Message, pr: Progress): void {
    pr.recentActive = true;
    pr.probeSent = false;
    // Appends lost in flight never free their slots; the follower is alive, so
    // release one and let it reject the gap, which sends it back to Probe.
    if (pr.state === ProgressState.Replicate && pr.inflights.full()) pr.inflights.freeFirstOne();
    // A snapshot that is not acknowledged within an election timeout of
    // heartbeats was lost (or is stuck): probe again, which resends it if needed.
    if (pr.state === ProgressState.Snapshot && ++pr.snapshotHeartbeats >= this.cfg.electionTicks) pr.becomeProbe();
    if (pr.match < this.log.lastIndex()) this.sendAppend(m.from);
    // A rejoining follower's answer confirms no read: it carries its mark, not the read's context.
    if (m.context.length === 0 || !this.counts(m.from)) return;
    const round = quiesceRoundIn(QUIESCED_TAG, m.context);
    if (round !== null) {
      if (round === this.quiesceRound) this.quiesceAcked(m.from);
      return;
    }
    const acks = this.readOnly.recvAck(m.from, m.context);
    if (!acks || this.config.vote(acks) !== VoteResult.Won) return;
    for (const rs of this.readOnly.advance(m.context)) this.answerRead(rs.req, rs.index);
  }

  private answerRead(req: Message, index: number): void {
    if (req.from === NONE || req.from === this.id) {
      this.readStates.push({ index, context: req.context });
    } else {
      this.send(message({ type: MT.ReadIndexResp, to: req.from, index, context: req.context }));
    }
  }

  private committedEntryInCurrentTerm(): boolean {
    return this.log.term(this.log.committed) === this.term;
  }

  private leaderReadIndex(m: Message): void {
    if (this.config.isSingleton(this.id)) {
      this.answerRead(m, this.log.committed);
      return;
    }
    // Until an entry of this term commits, our commit index may lag what an
    // earlier leader committed: hold the read.
    if (!this.committedEntryInCurrentTerm()) {
      if (this.pendingReads.length >= this.cfg.readIndexMax) return;
      this.pendingReads.push(m);
      return;
    }
    if (this.readOnly.full()) return;
    this.readOnly.add(this.log.committed, m);
    this.readOnly.recvAck(this.id, m.context);
    this.forEachPeer((id) => this.sendHeartbeat(id, m.context));
  }

  private releasePendingReads(): void {
    if (this.pendingReads.length === 0 || !this.committedEntryInCurrentTerm()) return;
    const reads = this.pendingReads;
    this.pendingReads = [];
    for (const m of reads) this.leaderReadIndex(m);
  }

  private handleTransferLeader(m: Message, pr: Progress): void {
    // A rejoining follower would not campaign: the transfer would only hold proposals up.
    if (pr.isLearner || !this.counts(pr.id)) return;
    const transferee = m.from;
    if (this.leadTransferee === transferee || transferee === this.id) return;
    this.electionElapsedTicks = 0;
    this.leadTransferee = transferee;
    if (pr.match === this.log.lastIndex()) this.send(message({ type: MT.TimeoutNow, to: transferee }));
    else this.sendAppend(transferee);
  }

  // ---- candidate and pre-candidate ---------------------------------------

  private stepCandidate = (m: Message): void => {
    const myResp = this.role === Role.PreCandidate ? MT.PreVoteResp : MT.VoteResp;
    switch (m.type) {
      case MT.Prop:
        throw new ProposalDroppedError('no leader (election in progress)');
      case MT.App:
        this.becomeFollower(m.term, m.from);
        this.handleAppendEntries(m);
        return;
      case MT.Heartbeat:
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case MT.Snap:
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case MT.VoteResp:
      case MT.PreVoteResp: {
        if (m.type !== myResp) return;
        const r = this.poll(m.from, !m.reject);
        if (r === VoteResult.Won) {
          if (this.role === Role.PreCandidate) this.campaign(MT.Vote, EMPTY);
          else {
            this.becomeLeader();
            this.bcastAppend();
          }
        } else if (r === VoteResult.Lost) {
          this.becomeFollower(this.term, NONE);
        }
        return;
      }
      case MT.ReadIndex:
        // Only a local caller hears why; a read forwarded by a peer must not
        // throw into the driver's receive path (the peer times it out).
        if (m.from === this.id) throw new ProposalDroppedError('no leader (election in progress)');
        return;
    }
  };

  // ---- follower --------------------------------------------------------

  private stepFollower = (m: Message): void => {
    switch (m.type) {
      case MT.Prop:
        // Clients are redirected to the leader by the driver; the core does not forward.
        throw new ProposalDroppedError(this.lead === NONE ? 'no leader' : `not the leader (leader is ${this.lead})`);
      case MT.App:
        this.heardFromLeader(m.from);
        this.handleAppendEntries(m);
        return;
      case MT.Heartbeat:
        this.heardFromLeader(m.from);
        this.handleHeartbeat(m);
        return;
      case MT.Snap:
        this.heardFromLeader(m.from);
        this.handleSnapshot(m);
        return;
      case MT.TransferLeader:
        if (this.lead === NONE) return;
        this.send(message({ type: MT.TransferLeader, to: this.lead, from: m.from }));
        // send() overwrote `from`; the leader must see who asked to lead.
        this.msgs[this.msgs.length - 1].from = m.from;
        return;
      case MT.TimeoutNow:
        this.hup(true);
        return;
      case MT.Unreachable:
        if (m.from === this.lead) this.leaderLost();
        return;
      case MT.ReadIndex:
        if (this.lead === NONE) {
          // As in stepCandidate: a peer's forwarded read is dropped, not thrown.
          if (m.from === this.id) throw new ProposalDroppedError('no leader');
          return;
        }
        // `from` stays the node that asked, so the answer reaches it even
        // when the read was forwarded twice (through a node with a newer leader).
        this.msgs.push({ ...m, to: this.lead, term: 0 });
        return;
      case MT.ReadIndexResp:
        this.readStates.push({ index: m.index, context: m.context });
        return;
    }
  };

  private handleAppendEntries(m: Message): void {
    if (m.index < this.log.committed) {
      this.send(
        message({ type: MT.AppResp, to: m.from, index: this.log.committed, context: this.answerContext(false) }),
      );
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew !== null) {
      // The leader proved this node whole (see `rejoining`), for this start of it (the nonce), and the logs agree up to
      // m.index.
      const proof = rejoinNonceIn(REJOINED_TAG, m.context);
      if (this.rejoining && proof !== null && sameBytes(proof, this.rejoinNonce)) this.endRejoin(m.from);
      this.send(message({ type: MT.AppResp, to: m.from, index: lastNew, context: this.answerContext(false) }));
      return;
    }
    // Tell the leader where our log might agree with its own, so it can skip
    // a whole term of conflicting entries in one round trip.
    const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    this.send(
      message({
        type: MT.AppResp,
        to: m.from,
        index: m.index,
        reject: true,
        rejectHint: hint.index,
        logTerm: hint.term,
        context: this.answerContext(true),
      }),
    );
  }

  private handleHeartbeat(m: Message): void {
    // A heartbeat's commit index is the leader's view of what this node matched; rejoining, that view
    // may be of the log its disk lost, so the commit index comes only from appends, which check the log.
    if (!this.rejoining) this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    // Rejoining, the answer carries the mark instead of the read's context: it must confirm no read.
    let context = this.rejoining ? this.answerContext(false) : m.context;
    const round = quiesceRoundIn(QUIESCE_TAG, m.context);
    if (!this.rejoining && round !== null) {
      // A quiesce request is answered as taken only by a follower that takes it.
      if (this.mayQuiesceFollowing(m)) {
        this.quiet = true;
        context = quiesceContext(QUIESCED_TAG, round);
      } else context = EMPTY;
    }
    this.send(message({ type: MT.HeartbeatResp, to: m.from, context }));
    if (this.recoverIndex > 0) {
      // The leader may still count acknowledgements this node's disk lost:
      // tell it where the log really ends, so it sends the missing entries
      // even when no new proposal would make it.
      const last = this.log.lastIndex();
      this.send(
        message({ type: MT.AppResp, to: m.from, index: last, reject: true, rejectHint: last, context: LOST_ENTRIES }),
      );
    }
  }

  private handleSnapshot(m: Message): void {
    assert(m.snapshot !== null, 'raft: snapshot message without a snapshot');
    if (this.restore(m.snapshot)) {
      this.send(
        message({ type: MT.AppResp, to: m.from, index: this.log.lastIndex(), context: this.answerContext(false) }),
      );
    } else {
      this.send(
        message({ type: MT.AppResp, to: m.from, index: this.log.committed, context: this.answerContext(false) }),
      );
    }
  }

  private restore(snap: Snapshot): boolean {
    const { index, term } = snap.metadata;
    if (index <= this.log.committed) return false;
    if (this.log.matchTerm(index, term)) {
      // We already hold the snapshot's entries: just move commit forward.
      this.log.commitTo(index);
      return false;
    }
    this.log.restore(snap);
    this.applyConfState(snap.metadata.confState, index);
    return true;
  }

  // ---- inputs from the application -------------------------------------

  /** Accepts a client read; the answer comes back as a ReadState. */
  readIndex(context: Uint8Array): void {
    this.step(message({ type: MT.ReadIndex, from: this.id, entries: [], context }));
  }

  transferLeadership(to: NodeId): void {
    this.step(message({ type: MT.TransferLeader, from: to, to: this.id }));
  }
}
