// The node's core: everything one Verdict node is, wired, with no I/O of its
// own — the Raft driver, the replicated state machine, the proposal batcher
// (group commit), the coordinator engine with its participant links, the
// membership, and room for more engines fed from the same log (sagas).
//
// Time, randomness, the disk, the network and the participant links come in
// as arguments. src/node/node.ts plugs in the clock, LevelDB, gRPC and a
// crypto-seeded generator; the whole-system simulator
// (test/sim/system-world.ts) plugs in its virtual clock, simulated disk and
// network and one seed. Both run this wiring, so what the simulator checks is
// what ships.
//
// What happens where, in the order the driver calls back:
//   applied entry → every result of it (a decision batch entry holds many)
//     → observers (the console's timeline, the simulator's checker)
//     → routed: a product table's result (a saga's) to its engine, any other to the commit engine
//   leadership (an entry of this term applied) → commit engine, then sagas
//   membership change applied → the Membership holder, then observers
//   proposals (engine, sagas) → batcher (one turn, one batch) → driver,
//     each with a timeout; the answer is the applied result (R1)
//
// After stop() or crash() nothing more reaches the engines or the callers: a
// crashed node's late callbacks (the simulator crashes nodes inside them) go
// nowhere.

import { CoordinatorEngine, type EngineConfig, type EngineIO } from '../commit/engine.ts';
import { eachResult, isRecordTrace } from '../commit/decision-batch.ts';
import type { ProductApplyResult } from '../commit/product-table.ts';
import type { ApplyResult, Command, DecisionTable } from '../commit/state.ts';
import type { RawNode, Ready } from '../raft/raw-node.ts';
import { NONE, Role, type ConfState, type Entry, type Message, type NodeId } from '../raft/types.ts';
import type { LogStore } from '../storage/types.ts';
import type { Transport } from '../transport/types.ts';
import { assert } from '../util/assert.ts';
import { Driver } from './driver.ts';
import type { NodeStateMachine } from './machine.ts';
import { Membership } from './membership.ts';
import { ProposalBatcher } from './proposal-batcher.ts';

/**
 * PREPARE, DECISION and the status question to a participant: gRPC in the node, the simulated network in the simulator.
 */
export type ParticipantLinks = Pick<EngineIO, 'sendPrepare' | 'sendDecision' | 'sendStatus'>;

/** What the core needs from the world. */
export interface NodeCoreIO {
  nowMs(): number;
  /** A uniform float in [0, 1). */
  random(): number;
  /** Runs `fn` at the end of this turn: setImmediate in the node, the virtual clock's next step in the simulator. */
  endOfTurn(fn: () => void): void;
  /** Runs `fn` after `delayMs`; the returned function cancels it. */
  after(delayMs: number, fn: () => void): () => void;
  store: LogStore;
  transport: Transport;
  links: ParticipantLinks;
  /** A test's fault point (src/node/fault-point.ts); absent in production. */
  faultPoint?: EngineIO['faultPoint'];
}

/** Watchers of what the core does; none of them changes it. */
export interface NodeCoreObserver {
  /** A write failed or this node's own log is damaged: the node must stop (required: there is no safe default). */
  onFatal(err: Error): void;
  onRefused?(m: Message, why: string): void;
  onPersisted?(rd: Ready): void;
  onCaughtUp?(lastIndex: number): void;
  onRejoined?(leader: NodeId, lastIndex: number): void;
  onSnapshot?(phase: 'begin' | 'taken' | 'written', index: number, bytes: number): void;
  /** An entry applied, before any of its results is routed. */
  onEntryApplied?(entry: Entry, applied: ApplyResult | null): void;
  /** One result of an applied entry, before it is routed. */
  onResult?(entry: Entry, result: ApplyResult): void;
  /** One result of an applied entry, after it reached its engine. */
  onRouted?(entry: Entry, result: ApplyResult): void;
  /** The membership holder changed (cs: the change applied; null at start). */
  onMembership?(members: Membership, cs: ConfState | null): void;
  /** A command is about to be proposed (before the batcher sees it). */
  onProposing?(cmd: Command): void;
  /** A command was handed to the batcher. */
  onProposed?(cmd: Command): void;
  onProposalFailed?(cmd: Command, err: Error): void;
}

/**
 * A product's engine fed from the same log and leadership (the saga core,
 * src/saga/saga-core.ts, attached by ./products.ts): it hears every product table's applied result
 * (src/commit/product-table.ts) and takes its own by `product`.
 */
export interface CoreExtension {
  setLeadership(term: number): void;
  onApplied(result: ProductApplyResult): void;
  tick(): void;
}

/** Entries and reads outside the engines (the node's API, leases), bounded like the engines' proposals. */
export type BoundedLog = Pick<NodeCore, 'proposeEntry' | 'read'>;

export type EngineFactory = (table: DecisionTable, io: EngineIO, cfg: Partial<EngineConfig>) => CoordinatorEngine;

export interface NodeCoreOptions {
  id: NodeId;
  /** The Raft core, restarted from this node's storage. */
  node: RawNode;
  machine: NodeStateMachine;
  io: NodeCoreIO;
  /** The config file's peers (the seed membership) and this node's own address. */
  seedPeers: ReadonlyMap<NodeId, string>;
  selfAddress: string;
  driver: {
    snapshotEntries: number;
    snapshotLogRatio?: number;
    snapshotStagger?: number;
    snapshotKeepEntries: number;
    waitersMax: number;
  };
  /**
   * With a Raft core of commitNoticeLazy: the longest a moved commit index waits for an append to carry it
   * (DriverOptions.commitNotice).
   */
  commitNoticeMs?: number;
  engine: Partial<EngineConfig>;
  /** A proposal not applied within this long is answered with an error (the entry may still commit later). */
  proposeTimeoutMs: number;
  observe: NodeCoreObserver;
  /** The coordinator engine to build (test code hands in a broken one); the production one by default. */
  newEngine?: EngineFactory;
  /**
   * The traceparent a transaction's Decide or Stage record carries (undefined: none), so every
   * node's log lines and a later leader's DECISIONs join its trace. The node process passes its
   * memory of trace contexts (src/node/txn-traces.ts); the simulator none.
   */
  traceOf?: (txnId: string) => string | undefined;
}

export class NodeCore {
  readonly driver: Driver<ApplyResult | null>;
  readonly engine: CoordinatorEngine;
  readonly machine: NodeStateMachine;
  readonly membership: Membership;
  private readonly proposals: ProposalBatcher;
  private readonly observe: NodeCoreObserver;
  private readonly io: NodeCoreIO;
  private readonly proposeTimeoutMs: number;
  private extension: CoreExtension | null = null;
  private stopped = false;
  private readonly traceOf: ((txnId: string) => string | undefined) | undefined;
  /**
   * The node the group host is about to hand this leader's group to (holdNewTransactions), while the transactions
   * in flight here decide; null otherwise. Cleared by the host, and by any change of leadership.
   */
  private handOverTo: NodeId | null = null;

  constructor(o: NodeCoreOptions) {
    assert(o.proposeTimeoutMs > 0, 'a proposal timeout is positive');
    this.machine = o.machine;
    this.observe = o.observe;
    this.io = o.io;
    this.proposeTimeoutMs = o.proposeTimeoutMs;
    this.traceOf = o.traceOf;
    this.membership = new Membership(o.id, o.seedPeers, o.selfAddress);
    const obs = o.observe;
    this.driver = new Driver<ApplyResult | null>({
      node: o.node,
      store: o.io.store,
      transport: o.io.transport,
      sm: o.machine,
      ...o.driver,
      commitNotice: o.commitNoticeMs !== undefined ? { delayMs: o.commitNoticeMs, after: o.io.after } : undefined,
      onFatal: (err) => obs.onFatal(err),
      onRefused: (m, why) => obs.onRefused?.(m, why),
      onPersisted: (rd) => !this.stopped && obs.onPersisted?.(rd),
      // The engines lead only once this node applied an entry of its term:
      // before that their tables may lag behind what the old leader logged.
      onLeadership: (term) => this.lead(term),
      onMembership: (cs) => this.membershipChanged(cs),
      onCaughtUp: (lastIndex) => obs.onCaughtUp?.(lastIndex),
      onRejoined: (leader, lastIndex) => obs.onRejoined?.(leader, lastIndex),
      onSnapshot: (phase, index, bytes) => obs.onSnapshot?.(phase, index, bytes),
      onApplied: (entry, applied) => this.applied(entry, applied),
    });
    this.proposals = new ProposalBatcher(
      (datas, cbs) => this.driver.proposeBatch(datas, cbs),
      o.io.endOfTurn,
      o.io.after,
    );
    const io: EngineIO = {
      nowMs: o.io.nowMs,
      random: o.io.random,
      propose: (cmd, cb, lingerMs) => this.propose(cmd, cb, lingerMs),
      sendPrepare: o.io.links.sendPrepare,
      sendDecision: o.io.links.sendDecision,
      sendStatus: o.io.links.sendStatus,
      faultPoint: o.io.faultPoint,
      handingOverTo: () => this.handingOverTo(),
    };
    this.engine = (o.newEngine ?? ((table, eio, cfg) => new CoordinatorEngine(table, eio, cfg)))(
      o.machine.table,
      io,
      o.engine,
    );
    // A snapshot restored by the driver may already hold a membership change.
    this.membershipChanged(null);
  }

  /** Feeds `ext` the same leadership, applied results and ticks as the commit engine, from now on. */
  attach(ext: CoreExtension): void {
    assert(this.extension === null, 'one extension per node core');
    this.extension = ext;
  }

  /**
   * Proposes `cmd` through the batcher and Raft; `cb` gets the applied
   * result, or an error when the proposal fails or times out (its entry may
   * still commit: callers retry idempotently, R7). `lingerMs`: see EngineIO.propose.
   */
  propose(command: Command, cb: (err: Error | null, r?: ApplyResult) => void, lingerMs = 0): void {
    if (this.stopped) return;
    const cmd = this.traced(command);
    this.observe.onProposing?.(cmd);
    if (this.stopped) return;
    this.bounded<ApplyResult | null>(
      `proposal ${cmd.t}`,
      (done) => this.proposals.add(cmd, (err, r) => done(err, r?.result), lingerMs),
      (err, r) => {
        if (this.stopped) return;
        if (err) {
          this.observe.onProposalFailed?.(cmd, err);
          cb(err);
        } else if (r) cb(null, r);
        else cb(new Error(`proposal ${cmd.t} applied without a result`));
      },
    );
    this.observe.onProposed?.(cmd);
  }

  /** `cmd` with its transaction's trace context when it is a batched Decide or Stage and the node knows one. */
  private traced(cmd: Command): Command {
    if (this.traceOf === undefined || (cmd.t !== 'decide' && cmd.t !== 'stage') || cmd.trace !== undefined) return cmd;
    if (cmd.t === 'decide' && cmd.operator !== undefined) return cmd;
    const trace = this.traceOf(cmd.txnId);
    return trace === undefined || !isRecordTrace(trace) ? cmd : { ...cmd, trace };
  }

  /**
   * Proposes one entry's bytes (a put, a lease command) straight to the
   * driver, outside the batcher, with the same timeout as propose(); `cb`
   * gets the entry's index right after it applied here, so the caller can
   * read what the state machine made of it before anything else applies.
   * Unlike propose(), a node that stops answers "node is stopping".
   */
  proposeEntry(what: string, data: Uint8Array, cb: (err: Error | null, index?: number) => void): void {
    this.bounded<number>(what, (done) => this.driver.propose(data, (err, r) => done(err, r?.index)), cb);
  }

  /** A linearizable read (ReadIndex, Driver.read), with the same timeout as propose(). */
  read(what: string, cb: (err: Error | null) => void): void {
    this.bounded<undefined>(what, (done) => this.driver.read((err) => done(err)), cb);
  }

  /** Runs `start`; `cb` hears its answer, or a timeout after proposeTimeoutMs, once. */
  private bounded<T>(
    what: string,
    start: (done: (err: Error | null, v?: T) => void) => void,
    cb: (err: Error | null, v?: T) => void,
  ): void {
    let finished = false;
    const finish = (err: Error | null, v?: T): void => {
      if (finished) return;
      finished = true;
      cancel();
      cb(err, v);
    };
    const cancel = this.io.after(this.proposeTimeoutMs, () =>
      finish(new Error(`${what} did not complete within ${this.proposeTimeoutMs} ms (no quorum?); retry`)),
    );
    start(finish);
  }

  /** One tick of the clock: Raft, then the commit engine, then the extension. */
  tick(): void {
    if (this.stopped) return;
    this.driver.tick();
    if (this.stopped) return;
    this.engine.tick();
    if (this.stopped) return;
    this.extension?.tick();
  }

  /**
   * A process shutting down: the driver stops and fails what is pending
   * ("node stopped", so callers hear it at once); from then on nothing
   * reaches the engines, the observers or the proposers.
   */
  stop(): void {
    this.driver.stop();
    this.stopped = true;
  }

  /**
   * A process that dies (the simulator's crash): nothing more reaches anyone, not even the failures of what was
   * pending.
   */
  crash(): void {
    this.stopped = true;
    this.driver.stop();
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /**
   * Where one applied result goes: a product table's (a saga's) to the
   * product's engine, any other to the commit engine (which ignores what is not its own). Test code
   * overrides it to break the wiring on purpose (test/sim/protocol-mutants.ts).
   */
  protected route(_entry: Entry, result: ApplyResult): void {
    if (result.t === 'product') this.extension?.onApplied(result);
    else this.engine.onApplied(result);
  }

  /**
   * Refuses new transactions from now on, as a leader that is handing its group to `to` does (null: takes them
   * again). The group host calls it before a transfer it starts, so that the transactions in flight decide here
   * first and none is begun that the next leader would abort (R2).
   */
  holdNewTransactions(to: NodeId | null): void {
    this.handOverTo = to;
  }

  /**
   * Where leadership is going while it leaves this node (EngineIO.handingOverTo): the Raft core stepped down and the
   * engine has not heard yet (its Ready is still to be processed): the new leader if known, else ''; a transfer under
   * way: its transferee; a hand-over the host is preparing: its target; else null.
   */
  private handingOverTo(): NodeId | null {
    const raft = this.driver.node.raft;
    if (raft.role !== Role.Leader) return raft.lead !== NONE && raft.lead !== raft.id ? raft.lead : '';
    if (raft.leadTransferee !== NONE) return raft.leadTransferee;
    return this.handOverTo;
  }

  private lead(term: number): void {
    if (this.stopped) return;
    this.handOverTo = null;
    this.engine.setLeadership(term);
    if (this.stopped) return;
    this.extension?.setLeadership(term);
  }

  private applied(entry: Entry, applied: ApplyResult | null): void {
    if (this.stopped) return;
    this.observe.onEntryApplied?.(entry, applied);
    // A decision batch entry holds many commands: each result is routed as its own entry's would be.
    for (const result of eachResult(applied)) {
      this.observe.onResult?.(entry, result);
      if (this.stopped) return;
      this.route(entry, result);
      this.observe.onRouted?.(entry, result);
      if (this.stopped) return;
    }
  }

  private membershipChanged(cs: ConfState | null): void {
    if (this.stopped) return;
    this.membership.update(this.machine.members);
    this.observe.onMembership?.(this.membership, cs);
  }
}
