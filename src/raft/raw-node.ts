// The narrow door of the Raft core. The driver's loop is always:
//
//   rd = node.ready()
//   send rd.messagesNow            (allowed before the sync, see below)
//   persist rd.hardState, rd.entries, rd.snapshot with fsync
//   send rd.messages               (only after the sync: R6)
//   apply rd.committedEntries
//   node.advance(rd)
//
// Only one Ready is out at a time; everything that happens while it is being
// persisted (proposals, messages, ticks) goes into the next one: that is the
// group commit.

import type { ConfChange } from './confchange.ts';
import { MemoryStorage } from './memory-storage.ts';
import { Raft, defaultRaftConfig, type RaftConfig, type RaftTuning } from './raft.ts';
import { assert } from '../util/assert.ts';
import {
  EntryType,
  isEmptySnapshot,
  LOCAL_MESSAGES,
  message,
  MessageType as MT,
  NONE,
  REJOINING_VOTE,
  Role,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type ReadState,
  type Snapshot,
  type SoftState,
} from './types.ts';

export interface Ready {
  /** Set when leader or role changed. */
  softState: SoftState | null;
  /** Set when term, vote or commit changed: persist it. */
  hardState: HardState | null;
  /** Unstable entries to persist (they may replace a suffix of the log). */
  entries: Entry[];
  /** A leader's snapshot to persist; it replaces the whole log and the state machine. */
  snapshot: Snapshot | null;
  /** Committed, locally durable entries to apply, in order. */
  committedEntries: Entry[];
  /**
   * Messages that depend on nothing in this Ready's hard state: the leader's
   * appends and heartbeats when its term and vote are already durable. The
   * leader writes its own entries while they travel (R6 allows it; the
   * leader counts itself only after its sync).
   */
  messagesNow: Message[];
  /** Messages that may leave only after this Ready is synced (R6). */
  messages: Message[];
  readStates: ReadState[];
  /** Whether the write must be fsynced (hard state or entries changed). */
  mustSync: boolean;
}

export type RawNodeConfig = Pick<RaftConfig, 'id' | 'storage' | 'random' | 'recoverIndex' | 'rejoining'> &
  Partial<RaftTuning>;

/**
 * Whether a node's durable state is that of a node that never held any:
 * no term, no vote, no snapshot, no entries. A data directory that is empty,
 * or was emptied, looks exactly like this. A founding member of a new cluster
 * never starts from it: founding records term 1 first (foundingHardState).
 */
export function holdsNoRaftState(recovered: { hardState: HardState; snapshot: Snapshot; entries: Entry[] }): boolean {
  return (
    recovered.hardState.term === 0 &&
    recovered.hardState.vote === NONE &&
    isEmptySnapshot(recovered.snapshot) &&
    recovered.entries.length === 0
  );
}

/**
 * The hard state that founds a new cluster: the one explicit bootstrap act
 * (\`verdict cluster init\`, or \`verdict cluster up\` on its first start) writes it
 * to every founding member's empty data directory before it starts. Term 1
 * (as etcd's bootstrap) makes the directory hold Raft state, so the node
 * votes from its first start; a node that finds no state at all starts
 * rejoining instead (Raft.rejoining).
 */
export function foundingHardState(): HardState {
  return { term: 1, vote: NONE, commit: 0 };
}

export class RawNode {
  readonly raft: Raft;
  private prevHard: HardState;
  private prevSoft: SoftState;
  private outstanding: Ready | null = null;

  constructor(cfg: RawNodeConfig) {
    this.raft = new Raft({ ...defaultRaftConfig, ...cfg });
    const hs = this.hardState();
    // A rejoining node's first Ready makes its state durable (REJOINING_VOTE), before it sends anything:
    // restarted from the same directory, it is still rejoining.
    this.prevHard =
      hs.vote === REJOINING_VOTE && cfg.storage.hardState.vote !== REJOINING_VOTE
        ? { ...hs, vote: cfg.storage.hardState.vote }
        : hs;
    this.prevSoft = this.softState();
  }

  /**
   * A node restarting from its durable state, or a new one with
   * \`initialConf\`. A node whose state holds nothing (holdsNoRaftState)
   * starts rejoining: it does not vote or campaign until a leader has caught
   * it up (Raft.rejoining). A founding member starts from foundingHardState().
   */
  static restart(
    cfg: Omit<RawNodeConfig, 'storage' | 'recoverIndex' | 'rejoining'>,
    recovered: { hardState: HardState; snapshot: Snapshot; entries: Entry[]; recoverIndex?: number },
    initialConf: ConfState,
  ): RawNode {
    let snapshot = recovered.snapshot;
    if (isEmptySnapshot(snapshot) && snapshot.metadata.confState.voters.length === 0) {
      // A fresh cluster: membership comes from the configuration file.
      snapshot = { ...snapshot, metadata: { ...snapshot.metadata, confState: initialConf } };
    }
    const storage = MemoryStorage.from(recovered.hardState, snapshot, recovered.entries);
    return new RawNode({
      ...cfg,
      storage,
      recoverIndex: recovered.recoverIndex ?? 0,
      rejoining: holdsNoRaftState(recovered),
    });
  }

  hardState(): HardState {
    return {
      term: this.raft.term,
      vote: this.raft.rejoining ? REJOINING_VOTE : this.raft.vote,
      commit: this.raft.log.committed,
    };
  }

  softState(): SoftState {
    return { leader: this.raft.lead, role: this.raft.role };
  }

  tick(): void {
    this.raft.tick();
  }

  /**
   * Hands a message from a peer to the core, or refuses it and says why.
   * The transport checked every field on its own (src/transport/raft-edge.ts);
   * what is refused here needs the log to judge, and is refused before the
   * core sees it, so a refused message changes nothing (not even the term).
   */
  step(m: Message): string | null {
    if (LOCAL_MESSAGES.has(m.type) || m.type === MT.Prop) return `${MT[m.type]} is not a peer's message`;
    if (m.from === this.raft.id) return 'a message from this node itself';
    const r = this.raft;
    // A follower acknowledges only what its leader sent; an acknowledgement
    // past our log (at our term, where we lead) would move progress past
    // anything we can send and make us look for a snapshot that cannot exist.
    if (
      m.type === MT.AppResp &&
      !m.reject &&
      m.term === r.term &&
      r.role === Role.Leader &&
      m.index > r.log.lastIndex()
    ) {
      return `acknowledges index ${m.index} beyond the last index ${r.log.lastIndex()}`;
    }
    this.raft.step(m);
    return null;
  }

  /** Proposes entries; throws ProposalDroppedError when this node cannot take them. */
  propose(datas: Uint8Array[]): void {
    const entries = datas.map((data) => ({ term: 0, index: 0, type: EntryType.Normal, data }));
    this.raft.step(message({ type: MT.Prop, from: this.raft.id, entries }));
  }

  /**
   * Proposes one membership change; returns its log index. The change takes
   * effect when the driver applies the entry and calls applyConfChange.
   */
  proposeConfChange(change: Omit<ConfChange, 'base'>): number {
    return this.raft.proposeConfChange(change);
  }

  /** Applies a committed membership change (the entry at `index`); returns the configuration in effect. */
  applyConfChange(cc: ConfChange, index: number): ConfState {
    return this.raft.applyConfChange(cc, index);
  }

  confState(): ConfState {
    return this.raft.confState();
  }

  campaign(): void {
    this.raft.step(message({ type: MT.Hup, from: this.raft.id }));
  }

  readIndex(context: Uint8Array): void {
    this.raft.readIndex(context);
  }

  transferLeadership(to: NodeId): void {
    this.raft.transferLeadership(to);
  }

  /** Leader with commitNoticeLazy: the commit index moved and no append or heartbeat has carried it yet. */
  commitNoticeDue(): boolean {
    return this.raft.commitNoticeDue;
  }

  /** Sends the commit index to every follower now if it is still due (see RaftConfig.commitNoticeLazy). */
  noticeCommit(): void {
    this.raft.noticeCommit();
  }

  /**
   * Node `peer` was heard from since the last tick: a frame of any group came from it, and with `leads` it said it
   * leads this group quiesced. A quiesced group takes it as the heartbeat it no longer gets (Raft.heard); any other
   * ignores it.
   */
  heard(peer: NodeId, leads: boolean): void {
    this.raft.heard(peer, leads);
  }

  /** Whether this group is quiesced here (RaftConfig.quiesce). */
  quiesced(): boolean {
    return this.raft.quiesced;
  }

  reportUnreachable(peer: NodeId): void {
    this.raft.step(message({ type: MT.Unreachable, from: peer }));
  }

  reportSnapshot(peer: NodeId, ok: boolean): void {
    this.raft.step(message({ type: MT.SnapStatus, from: peer, reject: !ok }));
  }

  hasReady(): boolean {
    const r = this.raft;
    const soft = this.softState();
    if (soft.leader !== this.prevSoft.leader || soft.role !== this.prevSoft.role) return true;
    const hs = this.hardState();
    if (hs.term !== this.prevHard.term || hs.vote !== this.prevHard.vote || hs.commit !== this.prevHard.commit)
      return true;
    if (r.log.pendingSnapshot() !== null) return true;
    return (
      r.msgs.length > 0 ||
      r.log.unstableEntries().length > 0 ||
      r.log.hasNextCommittedEntries() ||
      r.readStates.length > 0
    );
  }

  ready(): Ready {
    assert(this.outstanding === null, 'raw node: ready() before advance() of the previous Ready');
    const r = this.raft;
    const soft = this.softState();
    const hs = this.hardState();
    const softChanged = soft.leader !== this.prevSoft.leader || soft.role !== this.prevSoft.role;
    const hardChanged =
      hs.term !== this.prevHard.term || hs.vote !== this.prevHard.vote || hs.commit !== this.prevHard.commit;
    const entries = r.log.unstableEntries();
    const snapshot = r.log.pendingSnapshot();
    const msgs = r.msgs;
    r.msgs = [];
    const early = this.mayMessageEarly(hs) && snapshot === null;
    const rd: Ready = {
      softState: softChanged ? soft : null,
      hardState: hardChanged ? hs : null,
      entries,
      snapshot,
      committedEntries: r.log.nextCommittedEntries(),
      messagesNow: early ? msgs : [],
      messages: early ? [] : msgs,
      readStates: r.readStates,
      mustSync:
        entries.length > 0 || snapshot !== null || hs.term !== this.prevHard.term || hs.vote !== this.prevHard.vote,
    };
    r.readStates = [];
    if (softChanged) this.prevSoft = soft;
    this.outstanding = rd;
    return rd;
  }

  /**
   * The persist-before-send rule (R6), decided in one place: a leader whose
   * term and vote are already durable may send before syncing, because its
   * messages then depend only on the entries, which it counts for itself
   * only after the sync. Anything else waits for the sync.
   */
  private mayMessageEarly(hs: HardState): boolean {
    return this.raft.role === Role.Leader && hs.term === this.prevHard.term && hs.vote === this.prevHard.vote;
  }

  /**
   * Messages that may leave now, while a Ready is still being persisted: a
   * leader's appends of new proposals need not wait for the previous write.
   */
  takeMessagesNow(): Message[] {
    const r = this.raft;
    if (r.msgs.length === 0 || r.log.pendingSnapshot() !== null || !this.mayMessageEarly(this.hardState())) return [];
    const msgs = r.msgs;
    r.msgs = [];
    return msgs;
  }

  /** The driver persisted `rd` (synced when mustSync), sent and applied it. */
  advance(rd: Ready): void {
    assert(this.outstanding === rd, 'raw node: advance() of a Ready that is not outstanding');
    this.outstanding = null;
    const r = this.raft;
    const storage = r.log.storage;
    // The core's view of durable state catches up with the disk.
    if (rd.snapshot) {
      storage.applySnapshot(rd.snapshot);
      r.log.stableSnapTo(rd.snapshot.metadata.index);
      r.log.applied = Math.max(r.log.applied, rd.snapshot.metadata.index);
    }
    if (rd.entries.length > 0) {
      storage.append(rd.entries);
      const last = rd.entries[rd.entries.length - 1];
      r.log.stableTo(last.index, last.term);
    }
    if (rd.hardState) {
      storage.hardState = rd.hardState;
      this.prevHard = rd.hardState;
    }
    if (rd.committedEntries.length > 0) {
      r.log.appliedTo(rd.committedEntries[rd.committedEntries.length - 1].index);
      r.reduceUncommitted(rd.committedEntries);
    }
    r.onPersisted();
  }

  /**
   * Records a local snapshot of the state machine at `index` (applied) and
   * drops in-memory entries before `index - keepEntries`, so slow followers
   * can still catch up from the log. Returns the snapshot to persist.
   */
  snapshot(index: number, data: Uint8Array, keepEntries: number): Snapshot {
    assert(index <= this.raft.log.applied, `raw node: snapshot at ${index} beyond applied ${this.raft.log.applied}`);
    const storage = this.raft.log.storage;
    const snap = storage.createSnapshot(index, this.raft.confState(), data);
    storage.compact(Math.max(storage.firstIndex() - 1, index - keepEntries));
    return snap;
  }

  status(): {
    id: NodeId;
    hardState: HardState;
    softState: SoftState;
    applied: number;
    lastIndex: number;
    firstIndex: number;
    /**
     * `rejoining`: the follower started on an empty data directory and is not proven whole yet (it counts in no
     * quorum).
     */
    progress: { id: NodeId; match: number; next: number; state: string; learner: boolean; rejoining: boolean }[];
  } {
    const r = this.raft;
    const progress =
      r.role === Role.Leader
        ? [...r.progress.values()].map((p) => ({
            id: p.id,
            match: p.match,
            next: p.next,
            state: p.state,
            learner: p.isLearner,
            rejoining: !r.counts(p.id),
          }))
        : [];
    return {
      id: r.id,
      hardState: this.hardState(),
      softState: this.softState(),
      applied: r.log.applied,
      lastIndex: r.log.lastIndex(),
      firstIndex: r.log.firstIndex(),
      progress,
    };
  }
}
