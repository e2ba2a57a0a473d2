// The node's loop, free of real I/O so that the simulator runs this very code:
//
//   event (tick | inbound messages | proposal | read)
//     → step the core → Ready → send what may go early → persist (fsync)
//     → send the rest → apply committed entries → advance → next Ready
//
// The disk, the network and the state machine come in as small interfaces;
// the real node plugs in LevelDB and gRPC, the simulator plugs in its own.
// Callbacks, not promises: a simulated disk completes a write when the
// simulator says so, which keeps every run a pure function of its seed.

import { assert } from '../util/assert.ts';
import { ConfChangeRefusedError, decodeConfChange, type ConfChange } from '../raft/confchange.ts';
import { RawNode, type Ready } from '../raft/raw-node.ts';
import { ProposalDroppedError } from '../raft/raft.ts';
import {
  EntryType,
  Role,
  type ConfState,
  type Entry,
  type Message,
  type NodeId,
  type Snapshot,
} from '../raft/types.ts';
import type { LogStore, PersistBatch } from '../storage/types.ts';
import type { Transport } from '../transport/types.ts';

/** The replicated state machine. `apply` must be deterministic. */
export interface StateMachine<R = unknown> {
  apply(entry: Entry): R;
  snapshot(): Uint8Array;
  restore(data: Uint8Array, index: number): void;
  /** A membership change was applied at `index` (e.g. to remember members' addresses in snapshots). */
  applyConfChange?(cc: ConfChange, entry: Entry): void;
}

export type ProposeCallback<R> = (err: Error | null, result?: { index: number; result: R }) => void;
export type ReadCallback = (err: Error | null, appliedIndex?: number) => void;

export class NotLeaderError extends Error {
  constructor(readonly leader: NodeId) {
    super(leader ? `not the leader; the leader is ${leader}` : 'no leader is known; retry shortly');
    this.name = 'NotLeaderError';
  }
}

/**
 * A committed entry in this node's own log that the state machine cannot
 * apply. Every entry a peer sends is checked before it is accepted, so this
 * is damage to the local log: the node stops, naming the index, rather than
 * skip the entry and diverge from the other replicas.
 */
export class UnappliableEntryError extends Error {
  constructor(
    readonly index: number,
    readonly why: string,
  ) {
    super(`log entry ${index} cannot be applied: ${why}`);
    this.name = 'UnappliableEntryError';
  }
}

export class OverloadedError extends Error {
  constructor(what: string) {
    super(`overloaded: ${what}`);
    this.name = 'OverloadedError';
  }
}

/**
 * A moved commit index waits at most this long (ms) for an append to carry
 * it: at one transaction at a time the next one's entry comes within about
 * a millisecond (parallel commit) or three (classic), so followers are woken
 * once per entry instead of twice, and apply at most this much later.
 */
export const COMMIT_NOTICE_MS_DEFAULT = 5;

export interface DriverOptions<R> {
  node: RawNode;
  store: LogStore;
  transport: Transport;
  sm: StateMachine<R>;
  /** Take a local snapshot after this many applied entries (at the least; see snapshotLogRatio). */
  snapshotEntries: number;
  /**
   * And only once the entries applied since the last snapshot hold at least
   * this many times that snapshot's bytes: a snapshot costs time in
   * proportion to the state (it is taken on the loop, and the store writes
   * it in the log's path), so a fixed count would make a large state stall
   * the node every few seconds. With the log between snapshots bounded
   * below by the state's size, a snapshot's cost per applied byte stays
   * the same however large the state grows. 0: by count only.
   */
  snapshotLogRatio?: number;
  /**
   * This node's share, in [0, 1), added to both bounds: replicas of one
   * state reach the same bounds at the same index, and would all stall
   * together; staggered, a follower writing its snapshot leaves the
   * leader a quorum of the others. 0 by default.
   */
  snapshotStagger?: number;
  /** Entries kept in memory behind a snapshot for followers that lag a little. */
  snapshotKeepEntries: number;
  /** Proposals and reads waiting for an answer, each. */
  waitersMax: number;
  /**
   * The disk failed (it cannot know what was written), or its log holds an entry it cannot apply
   * (UnappliableEntryError): the node must stop.
   */
  onFatal: (err: Error) => void;
  /** A peer's message the core refused before stepping it (see RawNode.step), with why. */
  onRefused?: (m: Message, why: string) => void;
  /** Observers: every applied entry, and every Ready that was persisted. */
  onApplied?: (entry: Entry, result: R) => void;
  onPersisted?: (rd: Ready) => void;
  /**
   * Leadership as the application must see it: `term` once this node leads
   * and has applied an entry of its own term — so its state machine holds
   * everything earlier leaders committed — and 0 when it stops leading.
   */
  onLeadership?: (term: number) => void;
  /** The configuration changed: a membership change was applied, or a snapshot installed. */
  onMembership?: (cs: ConfState) => void;
  /** A node that started recovering (its disk lost acknowledged entries) was caught up by a leader. */
  onCaughtUp?: (lastIndex: number) => void;
  /**
   * A node that started rejoining (its data directory held no Raft state) was proven whole by `leader`
   * (src/raft/raft.ts, Raft.rejoining).
   */
  onRejoined?: (leader: NodeId, lastIndex: number) => void;
  /**
   * For a core with commitNoticeLazy: how long a moved commit index may wait
   * for an append or heartbeat to carry it before the driver sends it on its
   * own, and the timer to wait with. Absent: it goes at once, as with an
   * eager core.
   */
  commitNotice?: { delayMs: number; after: (delayMs: number, fn: () => void) => () => void };
  /**
   * A local snapshot at `index`: about to be taken (`bytes`: the last snapshot's), taken (`bytes`: this one's), then
   * written and the log compacted behind it.
   */
  onSnapshot?: (phase: 'begin' | 'taken' | 'written', index: number, bytes: number) => void;
}

interface ProposalWaiter {
  term: number;
  /** A membership change: answered with the configuration, not a state machine result. */
  conf: boolean;
  cb: ProposeCallback<unknown>;
}

interface ReadWaiter {
  index: number;
  cb: ReadCallback;
}

export class Driver<R = unknown> {
  readonly node: RawNode;
  private readonly opts: DriverOptions<R>;
  private persisting = false;
  private stopped = false;
  /** Cancels the timer of a due commit notice; null when none is set. */
  private cancelCommitNotice: (() => void) | null = null;
  private readonly proposals = new Map<number, ProposalWaiter>();
  private readonly readsByContext = new Map<string, ReadCallback>();
  private readonly readsReady: ReadWaiter[] = [];
  private readSeq = 0;
  private lastSnapshotIndex: number;
  /** The state machine's bytes in the last snapshot (taken, restored or installed). */
  private lastSnapshotBytes: number;
  /** Command bytes applied since the last snapshot. */
  private appliedBytesSinceSnapshot = 0;
  private leadingTerm = 0;
  private recovering: boolean;
  private rejoining: boolean;

  constructor(opts: DriverOptions<R>) {
    this.opts = opts;
    this.node = opts.node;
    const snap = this.node.raft.log.storage.snapshot();
    this.lastSnapshotIndex = snap.metadata.index;
    this.lastSnapshotBytes = snap.data.byteLength;
    if (snap.metadata.index > 0) opts.sm.restore(snap.data, snap.metadata.index);
    this.recovering = this.node.raft.recoverIndex > 0;
    this.rejoining = this.node.raft.rejoining;
  }

  /**
   * Whether this node started on a data directory without Raft state and no leader has proven it whole yet: it does not
   * vote.
   */
  isRejoining(): boolean {
    return this.node.raft.rejoining;
  }

  /** Whether the disk lost entries this node acknowledged and no leader has caught it up yet. */
  isRecovering(): boolean {
    return this.node.raft.recoverIndex > 0;
  }

  get applied(): number {
    return this.node.raft.log.applied;
  }

  isLeader(): boolean {
    return this.node.raft.role === Role.Leader;
  }

  leader(): NodeId {
    return this.node.raft.lead;
  }

  tick(): void {
    if (this.stopped) return;
    this.node.tick();
    this.pump();
  }

  receive(messages: Message[]): void {
    if (this.stopped) return;
    for (const m of messages) {
      const why = this.node.step(m);
      if (why !== null) this.opts.onRefused?.(m, why);
    }
    this.pump();
  }

  reportUnreachable(peer: NodeId): void {
    if (this.stopped) return;
    this.node.reportUnreachable(peer);
    this.pump();
  }

  /**
   * Proposes one command. The callback fires once the entry is applied here
   * (with the state machine's result), or with an error if this node is not
   * the leader, is overloaded, or lost the entry to a new leader.
   */
  propose(data: Uint8Array, cb: ProposeCallback<R>): void {
    if (this.stopped) return cb(new Error('node is stopping'));
    if (!this.isLeader()) return cb(new NotLeaderError(this.leader()));
    if (this.proposals.size >= this.opts.waitersMax)
      return cb(new OverloadedError(`${this.proposals.size} proposals in flight`));
    try {
      this.node.propose([data]);
    } catch (err) {
      if (err instanceof ProposalDroppedError) return cb(err);
      throw err;
    }
    const raft = this.node.raft;
    this.proposals.set(raft.log.lastIndex(), { term: raft.term, conf: false, cb: cb as ProposeCallback<unknown> });
    this.pump();
  }

  /**
   * Proposes several commands as consecutive entries in one step, so they
   * share one append message per follower and one Ready (group commit for
   * callers that gather the proposals of one event-loop turn). Each callback
   * fires as propose()'s would; if the batch cannot be taken, all get the error.
   */
  proposeBatch(datas: Uint8Array[], cbs: ProposeCallback<R>[]): void {
    assert(datas.length === cbs.length, 'driver: one callback per proposed command');
    if (datas.length === 0) return;
    const failAll = (err: Error): void => {
      for (const cb of cbs) cb(err);
    };
    if (this.stopped) return failAll(new Error('node is stopping'));
    if (!this.isLeader()) return failAll(new NotLeaderError(this.leader()));
    if (this.proposals.size + datas.length > this.opts.waitersMax)
      return failAll(new OverloadedError(`${this.proposals.size} proposals in flight`));
    try {
      this.node.propose(datas);
    } catch (err) {
      if (err instanceof ProposalDroppedError) return failAll(err);
      throw err;
    }
    const raft = this.node.raft;
    const first = raft.log.lastIndex() - datas.length + 1;
    for (let i = 0; i < cbs.length; i++)
      this.proposals.set(first + i, { term: raft.term, conf: false, cb: cbs[i] as ProposeCallback<unknown> });
    this.pump();
  }

  /**
   * Proposes one membership change (src/raft/confchange.ts). The callback
   * fires once it is applied here, with the configuration then in effect;
   * or with NotLeaderError, ProposalDroppedError (another change pending)
   * or ConfChangeRefusedError (nonsense for the current configuration).
   */
  proposeConfChange(
    change: Omit<ConfChange, 'base'>,
    cb: (err: Error | null, r?: { index: number; confState: ConfState }) => void,
  ): void {
    if (this.stopped) return cb(new Error('node is stopping'));
    if (!this.isLeader()) return cb(new NotLeaderError(this.leader()));
    let index: number;
    try {
      index = this.node.proposeConfChange(change);
    } catch (err) {
      if (err instanceof ProposalDroppedError || err instanceof ConfChangeRefusedError) return cb(err);
      throw err;
    }
    const done: ProposeCallback<unknown> = (err, r) =>
      err ? cb(err) : cb(null, { index: r?.index ?? index, confState: r?.result as ConfState });
    this.proposals.set(index, { term: this.node.raft.term, conf: true, cb: done });
    this.pump();
  }

  /**
   * A linearizable read (ReadIndex): the callback fires once this node has
   * applied everything that was committed when the read arrived, as
   * confirmed by a quorum. The caller then reads its state machine.
   */
  read(cb: ReadCallback): void {
    if (this.stopped) return cb(new Error('node is stopping'));
    if (this.readsByContext.size + this.readsReady.length >= this.opts.waitersMax)
      return cb(new OverloadedError('too many reads in flight'));
    const ctx = new Uint8Array(8);
    new DataView(ctx.buffer).setFloat64(0, ++this.readSeq);
    try {
      this.node.readIndex(ctx);
    } catch (err) {
      if (err instanceof ProposalDroppedError) return cb(new NotLeaderError(this.leader()));
      throw err;
    }
    this.readsByContext.set(Buffer.from(ctx).toString('latin1'), cb);
    this.pump();
  }

  transferLeadership(to: NodeId): void {
    if (this.stopped) return;
    this.node.transferLeadership(to);
    this.pump();
  }

  /** Stops the loop; waiters get an error. A persist in flight may still land. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    const err = new Error('node stopped');
    for (const w of this.proposals.values()) w.cb(err);
    this.proposals.clear();
    for (const cb of this.readsByContext.values()) cb(err);
    this.readsByContext.clear();
    for (const r of this.readsReady) r.cb(err);
    this.readsReady.length = 0;
    this.cancelCommitNotice?.();
    this.cancelCommitNotice = null;
  }

  /** Runs Readys until the core has nothing more or a write is in flight. */
  private pump(): void {
    if (this.persisting && !this.stopped) {
      // A leader streams appends of new proposals while its previous write syncs.
      const early = this.node.takeMessagesNow();
      if (early.length > 0) this.opts.transport.send(early);
    }
    while (!this.stopped && !this.persisting && this.node.hasReady()) {
      const rd = this.node.ready();
      this.opts.transport.send(rd.messagesNow);
      // A Ready that only moves the commit index writes nothing: commit is
      // not needed for safety (a restarted node learns it again from the
      // leader, and its recovery never trusts it past the log), so apply
      // does not wait behind a write that carries nothing.
      if (!rd.mustSync) {
        this.finish(rd);
        continue;
      }
      this.persisting = true;
      const batch: PersistBatch = {
        hardState: rd.hardState,
        entries: rd.entries,
        snapshot: rd.snapshot,
        localSnapshot: null,
        compactTo: 0,
        sync: rd.mustSync,
      };
      this.opts.store.persist(batch, (err) => {
        if (this.stopped) return;
        if (err) return this.fatal(err);
        this.persisting = false;
        this.finish(rd);
        this.pump();
      });
    }
    this.scheduleCommitNotice();
  }

  /**
   * A moved commit index waits for the next append or heartbeat to carry it
   * (at one transaction at a time, the next transaction's entry, about a
   * millisecond later), but no longer than commitNotice.delayMs from the
   * moment it became due.
   */
  private scheduleCommitNotice(): void {
    if (this.stopped) return;
    if (!this.node.commitNoticeDue()) {
      // An append or heartbeat carried it: the next notice gets a bound of its own.
      this.cancelCommitNotice?.();
      this.cancelCommitNotice = null;
      return;
    }
    if (this.cancelCommitNotice !== null) return;
    const cn = this.opts.commitNotice;
    if (cn === undefined || cn.delayMs <= 0) {
      this.node.noticeCommit();
      this.pump();
      return;
    }
    this.cancelCommitNotice = cn.after(cn.delayMs, () => {
      this.cancelCommitNotice = null;
      if (this.stopped) return;
      this.node.noticeCommit();
      this.pump();
    });
  }

  private fatal(err: Error): void {
    this.stop();
    this.opts.onFatal(err);
  }

  private finish(rd: Ready): void {
    this.opts.onPersisted?.(rd);
    // R6: these depend on what was just synced (votes, appended entries).
    this.opts.transport.send(rd.messages);
    if (rd.snapshot) {
      this.restoreSnapshot(rd.snapshot);
      this.opts.onMembership?.(this.node.confState());
    }
    for (const e of rd.committedEntries) {
      this.applyEntry(e);
      // An entry that cannot be applied stopped the node: nothing after it may be applied or advanced.
      if (this.stopped) return;
    }
    for (const rs of rd.readStates) {
      const key = Buffer.from(rs.context).toString('latin1');
      const cb = this.readsByContext.get(key);
      if (!cb) continue;
      this.readsByContext.delete(key);
      this.readsReady.push({ index: rs.index, cb });
    }
    this.node.advance(rd);
    if (this.recovering && this.node.raft.recoverIndex === 0) {
      this.recovering = false;
      this.opts.onCaughtUp?.(this.node.raft.log.lastIndex());
    }
    if (this.rejoining && !this.node.raft.rejoining) {
      this.rejoining = false;
      this.opts.onRejoined?.(this.node.raft.lead, this.node.raft.log.lastIndex());
    }
    this.reportLeadership();
    this.failTruncatedProposals();
    this.releaseReads();
    if (rd.softState && rd.softState.role !== Role.Leader) this.failReadsOnLeaderLoss();
    this.maybeSnapshot();
  }

  private restoreSnapshot(snap: Snapshot): void {
    this.opts.sm.restore(snap.data, snap.metadata.index);
    this.lastSnapshotIndex = snap.metadata.index;
    this.lastSnapshotBytes = snap.data.byteLength;
    this.appliedBytesSinceSnapshot = 0;
    // Proposals at or below the snapshot can no longer be matched to entries.
    for (const [index, w] of this.proposals) {
      if (index <= snap.metadata.index) {
        this.proposals.delete(index);
        w.cb(new Error('proposal outcome unknown: this node was brought up to date by a snapshot; retry idempotently'));
      }
    }
  }

  private applyEntry(e: Entry): void {
    if (e.type === EntryType.ConfChange) return this.applyConfChange(e);
    let result: R | undefined;
    // A leader's empty entry carries no command.
    const isCommand = e.type === EntryType.Normal && e.data.byteLength > 0;
    if (isCommand) {
      this.appliedBytesSinceSnapshot += e.data.byteLength;
      try {
        result = this.opts.sm.apply(e);
      } catch (err) {
        if (!(err instanceof UnappliableEntryError)) throw err;
        return this.fatal(err);
      }
      this.opts.onApplied?.(e, result);
    }
    const w = this.proposals.get(e.index);
    if (!w) return;
    this.proposals.delete(e.index);
    if (w.term === e.term && isCommand && !w.conf) w.cb(null, { index: e.index, result });
    else w.cb(new Error(`proposal lost: index ${e.index} was taken by a leader of term ${e.term}; retry idempotently`));
  }

  private applyConfChange(e: Entry): void {
    let cc: ConfChange;
    try {
      cc = decodeConfChange(e.data);
    } catch (err) {
      return this.fatal(new UnappliableEntryError(e.index, (err as Error).message));
    }
    const cs = this.node.applyConfChange(cc, e.index);
    try {
      this.opts.sm.applyConfChange?.(cc, e);
    } catch (err) {
      if (!(err instanceof UnappliableEntryError)) throw err;
      return this.fatal(err);
    }
    this.opts.onMembership?.(cs);
    const w = this.proposals.get(e.index);
    if (!w) return;
    this.proposals.delete(e.index);
    if (w.term === e.term && w.conf) w.cb(null, { index: e.index, result: cs });
    else w.cb(new Error(`proposal lost: index ${e.index} was taken by a leader of term ${e.term}; retry idempotently`));
  }

  private reportLeadership(): void {
    const r = this.node.raft;
    const term = r.role === Role.Leader && r.log.term(r.log.applied) === r.term ? r.term : 0;
    if (term === this.leadingTerm) return;
    this.leadingTerm = term;
    this.opts.onLeadership?.(term);
  }

  /**
   * A node that lost leadership may have its uncommitted tail replaced by the
   * new leader; a proposal whose entry is gone would otherwise wait forever.
   */
  private failTruncatedProposals(): void {
    if (this.proposals.size === 0 || this.isLeader()) return;
    const log = this.node.raft.log;
    for (const [index, w] of this.proposals) {
      if (index > log.committed && log.term(index) !== w.term) {
        this.proposals.delete(index);
        w.cb(new Error(`proposal lost: leadership changed and entry ${index} was replaced; retry idempotently`));
      }
    }
  }

  private releaseReads(): void {
    const applied = this.applied;
    for (let i = 0; i < this.readsReady.length; ) {
      const r = this.readsReady[i];
      if (r.index <= applied) {
        this.readsReady.splice(i, 1);
        r.cb(null, applied);
      } else i++;
    }
  }

  private failReadsOnLeaderLoss(): void {
    // Reads waiting for a heartbeat quorum will never be confirmed now.
    const err = new NotLeaderError(this.leader());
    for (const cb of this.readsByContext.values()) cb(err);
    this.readsByContext.clear();
  }

  private maybeSnapshot(): void {
    const applied = this.applied;
    if (this.persisting) return;
    const stretch = 1 + (this.opts.snapshotStagger ?? 0);
    if (applied - this.lastSnapshotIndex < this.opts.snapshotEntries * stretch) return;
    if (this.appliedBytesSinceSnapshot < this.lastSnapshotBytes * (this.opts.snapshotLogRatio ?? 0) * stretch) return;
    this.opts.onSnapshot?.('begin', applied, this.lastSnapshotBytes);
    const data = this.opts.sm.snapshot();
    this.opts.onSnapshot?.('taken', applied, data.byteLength);
    const snap = this.node.snapshot(applied, data, this.opts.snapshotKeepEntries);
    this.lastSnapshotIndex = applied;
    this.lastSnapshotBytes = data.byteLength;
    this.appliedBytesSinceSnapshot = 0;
    assert(snap.metadata.index === applied, 'driver: snapshot index');
    this.persisting = true;
    this.opts.store.persist(
      { hardState: null, entries: [], snapshot: null, localSnapshot: snap, compactTo: snap.metadata.index, sync: true },
      (err) => {
        if (this.stopped) return;
        if (err) return this.fatal(err);
        this.opts.onSnapshot?.('written', applied, data.byteLength);
        this.persisting = false;
        this.pump();
      },
    );
  }
}

/**
 * A node's share of the snapshot bounds (DriverOptions.snapshotStagger), in
 * [0, 0.5), from its id: the replicas of one cluster snapshot at different
 * indexes, the same ones on every restart.
 */
export function snapshotStagger(nodeId: string): number {
  let h = 2166136261;
  for (let i = 0; i < nodeId.length; i++) h = Math.imul(h ^ nodeId.charCodeAt(i), 16777619);
  return ((h >>> 0) % 1000) / 2000;
}
