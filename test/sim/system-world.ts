// The whole-system simulator: Verdict as the article promises it, on one
// virtual clock. N Raft nodes, each the production node core
// (src/node/core.ts: driver, state machine, proposal batcher, coordinator
// engine, membership), the very wiring src/node/node.ts runs; P participants,
// each the production ParticipantEngine + MemoryResource over a simulated
// journal; and clients that Begin and Commit with the SDK's semantics (retry
// with the same txnId, R7). Every message between them crosses the simulated
// network; every choice comes from one seed.
//
// Faults (crashes that lose unsynced writes, partitions, loss, duplication,
// delay, slow disks, leadership transfer) happen before healAtMs; then
// everything restarts and heals, and the world must become quiet — nothing in
// doubt, every decision acknowledged and forgotten, every client answered —
// within livenessMs (AC4). Crash points crash a node or a participant at an
// exact step of the protocol, synchronously, from the core's observer and the
// participant links below.
//
// With decision groups (SystemScenario.groups = G > 1, docs/architecture.md)
// each node process is the production GroupHost (src/node/group-host.ts) over
// G node cores, one disk per group crashed and faulted together, and one
// network carrying every group's Raft messages tagged with the group. A
// transaction is begun, committed and asked about at the leader of
// groupOf(txnId, G); a participant registers in every group; Raft's safety
// is checked per group and AC1–AC4 over every transaction. With an extension
// (sagas) every group's replica runs its products' engines, as the node
// process does, and a saga lives in groupOf(sagaId, G). At G = 1 (absent)
// the world draws exactly the schedules it drew before groups existed.

import type { CoordinatorEngine, EngineConfig, OutcomeAnswer } from '../../src/commit/engine.ts';
import { DecisionTable, type ApplyResult } from '../../src/commit/state.ts';
import { COMMIT_NOTICE_MS_DEFAULT, type Driver } from '../../src/node/driver.ts';
import { encodeMemberContext, NodeStateMachine } from '../../src/node/machine.ts';
import { ConfChangeType } from '../../src/raft/confchange.ts';
import { attachProducts, nodeProducts, type NodeProducts, type ProductsOptions } from '../../src/node/products.ts';
import type { SagaEngineIO } from '../../src/saga/engine.ts';
import type { SagaCore } from '../../src/saga/saga-core.ts';
import type { NodeCore, NodeCoreObserver, ParticipantLinks } from '../../src/node/core.ts';
import { coreReplica, GroupHost, preferredLeader, type GroupReplica } from '../../src/node/group-host.ts';
import { groupOf } from '../../src/domain/group.ts';
import type { GroupMessage, Transport } from '../../src/transport/types.ts';
import type { ParticipantEngine } from '../../src/participant/engine.ts';
import {
  batchDecoder,
  beginRule,
  coordinatorEngine,
  CORE_MUTANTS,
  ENGINE_MUTANTS,
  nodeCore,
  PARTICIPANT_MUTANTS,
  type CoreMutant,
  type EngineMutant,
  type ParticipantMutant,
} from './protocol-mutants.ts';
import { ParticipantError, type ClusterOutcome, type TxnStatus } from '../../src/participant/types.ts';
import { SERVED_OPTIONAL } from '../../src/participant/serve.ts';
import { RawNode } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import type { ConfState, NodeId } from '../../src/raft/types.ts';
import { NotDeliveredError, outcomeOfDecision, type Ack, type VoteAnswer as Vote } from '../../src/domain/protocol.ts';
import { EventQueue } from './event-queue.ts';
import { RaftChecker } from './raft-checker.ts';
import { SimDisk } from './sim-disk.ts';
import { SimNetwork } from './sim-network.ts';
import { SystemChecker } from './system-checker.ts';
import { scheduleFault, type DiskFault, type FaultWorld } from './system-faults.ts';
import {
  crashSimParticipant,
  SimJournal,
  startSimParticipant,
  type ParticipantWiring,
  type SimParticipant,
} from './system-participant.ts';
import { SimClient, type ClientEnv } from './system-client.ts';
import { DB_MUTANTS, SimDatabase, startSimDbParticipant, type DbMutant } from './system-dbprep.ts';
import { checkTcc, crashSimTcc, newSimTcc, startSimTccParticipant, type SimTcc, type TccMutant } from './system-tcc.ts';
import { SIM_RAFT_TUNING } from './raft-tuning.ts';
import { DEAD, redirect, SimRpc, type CallCoordinator, type Inc, type Reply, type RpcError } from './system-rpc.ts';
import {
  CRASH_POINTS,
  type CrashPoint,
  type CrashPointName,
  type Mutant,
  type SystemResult,
  type SystemScenario,
  type TxnPlan,
} from './system-scenario.ts';

export { CRASH_POINTS };
export type { CrashPoint, CrashPointName, Mutant, SystemResult, SystemScenario, TxnPlan };
export type { SysFault } from './system-scenario.ts';

export const TICK_MS = 100;
const ELECTION_TICKS = 10;
/**
 * How long a healed, quiet world may take to spread its groups' leaders (a hold-off of 3 s per transfer, and a few
 * elections).
 */
const SPREAD_MS_MAX = 30_000;
/**
 * How long a healed, quiet world may take for every group to follow group 0's membership (one change per group every
 * few ticks).
 */
const MEMBERS_MS_MAX = 30_000;
const CLUSTER = 'sim';
/** Registration must finish within this, with no faults, before load starts. */
const SETUP_MS_MAX = 10_000;
const PROPOSE_TIMEOUT_MS = 3_000;
const ASK_DEADLINE_MS = 1_000;
const REGISTER_DEADLINE_MS = 1_000;
/** How often the world looks whether it has become quiet after healing. */
const QUIET_POLL_MS = 100;

const ENGINE_CONFIG: Partial<EngineConfig> = {
  defaultTimeoutMs: 2_000,
  rpcTimeoutMs: 1_000,
  retryMinMs: 100,
  retryMaxMs: 1_000,
  forgetDelayMs: 200,
};

/**
 * The node state machine, with the decision table's tombstone bound set by the scenario and the node's product tables.
 */
class SimMachine extends NodeStateMachine {
  override readonly table: DecisionTable;
  constructor(tombstonesMax: number | undefined, mutant: Mutant | undefined, products: NodeProducts) {
    super(products.tables, mutant === 'batch-drops-last' ? batchDecoder(mutant) : undefined);
    this.table = tombstonesMax === undefined ? new DecisionTable() : new DecisionTable(tombstonesMax);
  }
}

/**
 * More that rides the same nodes and participant processes (sagas:
 * test/sim/system-saga.ts). Absent in the commit-only runs, which therefore
 * draw exactly the schedules they drew before it existed.
 *
 * An extension never builds a product's engine: every node runs the
 * products' engines as src/node/products.ts attaches them to its core
 * (SysNode.sagas), on the world's clock; an extension only gives what the
 * node process would get from outside (step services over the simulated
 * network, settings, its generator) and reads what it wants to check.
 */
export interface WorldExtension {
  /** The product tables of a node's replica of `group`; the node's own (src/node/products.ts) when absent. */
  products?(group: number): NodeProducts;
  /**
   * A node incarnation starts: what the products' engines of its replica of `group` are wired to (every group's
   * replica runs its own, as the node process does; called for group 0 only without groups).
   */
  nodeProducts(node: { id: NodeId; index: number; group: number }, inc: Inc): SimProductsWiring;
  participantStarted(id: string): void;
  participantCrashed(id: string): void;
  /** Load starts at t0. */
  start(t0: number): void;
  /** null when the extension's work is done; else what is pending. */
  quiet(): string | null;
  /** Checks at the end of a run that became quiet. */
  final(): void;
}

/** What a node's products' engines take from the simulated world, beside the node core's clock and timers. */
export interface SimProductsWiring {
  /** The saga core's generator (a stream of its own, so the commit engine's draws stay its own). */
  random(): number;
  steps: Pick<SagaEngineIO, 'callStep' | 'endSaga' | 'endSagas'>;
  options?: ProductsOptions;
}

/** A world without step services (the commit-only runs): no saga is ever started, so nothing is called. */
const NO_STEP_SERVICES: SimProductsWiring['steps'] = {
  callStep: (to, _req, _timeoutMs, cb) => cb(new Error(`no step service ${to.id} in this world`)),
  endSaga: (to, _sagaId, _timeoutMs, cb) => cb(new Error(`no step service ${to.id} in this world`)),
  endSagas: (to, _sagaIds, _timeoutMs, cb) => cb(new Error(`no step service ${to.id} in this world`)),
};

interface SysNode {
  id: NodeId;
  /** Group 0's disk (disks[0]). */
  disk: SimDisk;
  /** disks[g] is group g's: crashed, slowed and faulted together, as one shared writer's. */
  disks: SimDisk[];
  up: boolean;
  inc: Inc;
  /** Group 0's core and its parts while up (groups[0]); the one group of a run without groups. */
  core: NodeCore | null;
  driver: Driver<ApplyResult | null> | null;
  sm: SimMachine | null;
  engine: CoordinatorEngine | null;
  /** Group 0's saga core while up, as src/node/products.ts attached it to the core. */
  sagas: SagaCore | null;
  /** The process: every group's replica behind the production host; null while down. */
  host: GroupHost<GroupReplica> | null;
  /** groups[g]: group g's core and state machine while up; empty while down. */
  groups: SysGroup[];
}

/** One group's replica on one node. */
interface SysGroup {
  core: NodeCore;
  sm: SimMachine;
  /**
   * The saga core on this replica: every group's with an extension (the node process runs one per group, each saga in
   * groupOf(saga id)); group 0's only in the commit-only runs, which start no saga.
   */
  sagas: SagaCore | null;
}

interface SysParticipant extends SimParticipant {
  /** The node it believes leads (the ClusterLink's redirect-following); group 0's, with groups. */
  hint: number;
  /** With groups: the node it believes leads group g (g >= 1), until a redirect says otherwise. */
  hints?: number[];
  registered: boolean;
  /** With groups: the groups it has registered in; registered once it is all of them. */
  registeredIn?: Set<number>;
  /** A TCC participant (SystemScenario.tcc): its TCC journal and resource (test/sim/system-tcc.ts). */
  tcc?: SimTcc;
  /** A participant over a database (SystemScenario.dbPrepare): outlives its crashes (test/sim/system-dbprep.ts). */
  db?: SimDatabase;
  /**
   * Per node: the transactions this incarnation voted YES for at that node's
   * request and has not seen decided by it, as the Exchange stream of
   * src/participant/serve.ts remembers them. When the node crashes, its
   * stream breaks and they are asked about at once (engine.askNow).
   */
  votedYes?: Map<string, Set<string>>;
  /** Built from the oldest supported protocol (SystemScenario.oldParticipants): serves nothing optional, no Status. */
  old?: boolean;
}

export class SystemWorld implements FaultWorld {
  readonly q = new EventQueue();
  readonly rng: Rng;
  readonly nodes: SysNode[] = [];
  readonly parts: SysParticipant[] = [];
  readonly clients: SimClient[] = [];
  readonly checker: SystemChecker;
  /** Raft's safety, checked per group: rafts[g] watches group g's replicas. */
  private readonly rafts: RaftChecker[];
  /** The number of decision groups (SystemScenario.groups; 1 when absent). */
  readonly groups: number;
  /** Which group's leader the next leader fault or transfer aims at, with groups (round robin, drawing nothing). */
  private leaderPick = 0;
  readonly net: SimNetwork;
  readonly rpc: SimRpc;
  private readonly ext: WorldExtension | null;
  private readonly conf: ConfState;
  /** Every node's "address" is its id: the simulated network routes by id. */
  private readonly seedPeers: ReadonlyMap<NodeId, string>;
  private readonly clientByTxn = new Map<string, SimClient>();
  private readonly armed: (CrashPoint & { fired: boolean })[];
  /** Nodes a `forever` crash point took down: they stay down through healing. */
  private readonly lostForever = new Set<NodeId>();
  healed = false;
  private registered = 0;
  crashes = 0;
  diskFaults = 0;
  refusals = 0;
  private diskFaultNode: SysNode | null = null;
  partitions = 0;
  /**
   * Faults (a crash, a partition) that struck a node while it led a quiesced group (G > 1): the schedules that test
   * quiescence's liveness (the followers must notice the node is gone without heartbeats).
   */
  quietFaults = 0;
  /** Per node, the peers its groups sent a message to since its last node heartbeat (GroupTransport.heartbeat). */
  private readonly sentSinceHeartbeat = new Map<NodeId, Set<NodeId>>();
  crashPointsFired = 0;
  /** Replays only: a line per protocol event, with virtual time. */
  trace: ((line: string) => void) | null = null;

  constructor(
    readonly sc: SystemScenario,
    extend?: (w: SystemWorld) => WorldExtension,
  ) {
    this.rng = new Rng(sc.seed);
    this.net = new SimNetwork(this.q, this.rng);
    this.rpc = new SimRpc(this.q, this.net);
    this.checker = new SystemChecker(() => this.q.now);
    this.checker.parallelCommit = sc.parallelCommit !== undefined;
    this.ext = extend?.(this) ?? null;
    this.groups = sc.groups ?? 1;
    this.rafts = Array.from(
      { length: this.groups },
      (_, g) =>
        new RaftChecker((what) => this.checker.violation(g === 0 ? `raft ${what}` : `raft group ${g}: ${what}`)),
    );
    this.armed = sc.crashPoints.map((c) => ({ ...c, fired: false }));
    const ids = Array.from({ length: sc.nodes }, (_, i) => `n${i + 1}`);
    this.conf = { voters: ids, learners: [], votersOutgoing: [] };
    this.seedPeers = new Map(ids.map((id) => [id, id]));
    for (const id of ids) {
      const disk = new SimDisk(this.q, new Rng(this.rng.u32()));
      const n: SysNode = {
        id,
        disk,
        disks: [disk],
        up: false,
        inc: DEAD,
        core: null,
        driver: null,
        sm: null,
        engine: null,
        sagas: null,
        host: null,
        groups: [],
      };
      for (let g = 1; g < this.groups; g++)
        n.disks.push(new SimDisk(this.q, new Rng(this.rng.u32()), sc.mutant === 'group-1-disk-lies' && g === 1));
      // The bootstrap act of a new cluster (`verdict cluster init`): every member's store is founded before it starts.
      for (const d of n.disks) d.found();
      this.nodes.push(n);
      this.startNode(n);
    }
    for (let idx = 0; idx < sc.participants; idx++) {
      const p: SysParticipant = {
        id: `p${idx + 1}`,
        journal: new SimJournal(this.q, new Rng(this.rng.u32())),
        up: false,
        inc: DEAD,
        engine: null,
        resource: null,
        hint: this.rng.int(sc.nodes),
        registered: false,
      };
      // TCC runs: every other participant is a TCC one, so transactions mix TCC and memory participants.
      if (sc.tcc === true && idx % 2 === 0) p.tcc = newSimTcc(this.q, this.rng);
      if (sc.dbPrepare === true && idx % 2 === 0) p.db = new SimDatabase();
      if (sc.oldParticipants === true && idx % 2 === 1) p.old = true;
      this.parts.push(p);
      this.startParticipant(p);
    }
  }

  // ---- nodes: the production core of src/node/core.ts -----------------------

  /** The scenario's commitNoticeMs for every node (the node's default for a schedule that predates it). */
  private commitNoticeMs(): number {
    return this.sc.commitNoticeMs ?? COMMIT_NOTICE_MS_DEFAULT;
  }

  private startNode(n: SysNode): void {
    const inc: Inc = { alive: true };
    n.inc = inc;
    // The process: the production host over one replica of every group, on one transport.
    const groups: SysGroup[] = [];
    const host = new GroupHost<GroupReplica>({
      groups: this.groups,
      // Leaders spread at G > 1 (the host never spreads one group), as in the node process.
      spread: this.sc.spreadCheck === false ? false : {},
      transport: {
        send: (gms) => inc.alive && this.sendRaft(n.id, gms),
        heartbeat: () => inc.alive && this.raftHeartbeat(n.id),
      },
      replica: (g, transport) => {
        const r = this.startReplica(n, inc, g, transport);
        groups.push(r);
        return coreReplica(r.core);
      },
      onRefused: (gm, why) => this.checker.violation(`${n.id} refused a message of group ${gm.group}: ${why}`),
      onTransfer: (g, from, to) => this.log(() => `${from} hands group ${g} over to ${to}`),
    });
    n.host = host;
    n.groups = groups;
    n.core = groups[0].core;
    n.driver = groups[0].core.driver;
    n.sm = groups[0].sm;
    n.engine = groups[0].core.engine;
    n.sagas = groups[0].sagas;
    n.up = true;
    const tick = (): void => {
      if (!inc.alive) return;
      host.tick();
      if (!inc.alive) return;
      this.q.after(TICK_MS, tick);
    };
    this.q.after(this.rng.int(TICK_MS), tick);
  }

  /**
   * Group g's replica on node n: the production node core on group g's disk, sending through the host's transport for
   * g.
   */
  private startReplica(n: SysNode, inc: Inc, g: number, transport: Transport): SysGroup {
    const disk = n.disks[g];
    const rawNode = RawNode.restart(
      {
        id: n.id,
        random: new Rng(this.rng.u32()).asRandom(),
        electionTicks: ELECTION_TICKS,
        ...SIM_RAFT_TUNING,
        commitNoticeLazy: this.commitNoticeMs() > 0,
        // Idle groups quiesce, as in the node process (G > 1 only: one group runs as it always did).
        quiesce: this.groups > 1,
      },
      disk.recover(),
      this.conf,
    );
    const products = this.ext?.products?.(g) ?? nodeProducts();
    const sm = new SimMachine(this.sc.tombstonesMax, this.sc.mutant, products);
    const random = new Rng(this.rng.u32());
    this.rafts[g].restarted(n.id);
    // The production composition (src/node/core.ts) on the simulated clock, disk, network and links.
    // A crashed incarnation may still be inside a core callback: its writes and sends go nowhere.
    const core: NodeCore = nodeCore(
      {
        id: n.id,
        node: rawNode,
        machine: sm,
        io: {
          nowMs: () => this.q.now,
          random: () => random.float(),
          endOfTurn: (fn) => this.q.after(0, fn),
          // Not cancelled: a finished proposal's timer runs as a no-op, as it always has in the simulator.
          after: (ms, fn) => {
            this.q.after(ms, fn);
            return () => {};
          },
          store: { persist: (b, cb) => inc.alive && disk.persist(b, cb) },
          transport,
          links: this.links(n, inc),
        },
        seedPeers: this.seedPeers,
        selfAddress: n.id,
        driver: { snapshotEntries: this.sc.snapshotEntries, snapshotKeepEntries: 5, waitersMax: 1000 },
        commitNoticeMs: this.commitNoticeMs(),
        engine: {
          ...ENGINE_CONFIG,
          parallelCommit:
            this.sc.parallelCommit === 'all' || (this.sc.parallelCommit === 'mixed' && this.nodes.indexOf(n) % 2 === 0),
        },
        proposeTimeoutMs: PROPOSE_TIMEOUT_MS,
        newEngine: (table, io, cfg) => coordinatorEngine(table, io, cfg, engineMutant(this.sc.mutant)),
        observe: this.observer(n, inc, rawNode, () => core, g),
      },
      coreMutant(this.sc.mutant),
    );
    // The products' engines as the node process attaches them (src/node/products.ts), on the same clock.
    const sagas = g === 0 || this.ext !== null ? this.attachProducts(n, inc, g, core, products, random) : null;
    return { core, sm, sagas };
  }

  /** Attaches the products' engines to a node's core with the production composition, wired to this world. */
  private attachProducts(
    n: SysNode,
    inc: Inc,
    g: number,
    core: NodeCore,
    products: NodeProducts,
    coreRandom: Rng,
  ): SagaCore {
    const wiring: SimProductsWiring = this.ext?.nodeProducts(
      { id: n.id, index: this.nodes.indexOf(n), group: g },
      inc,
    ) ?? {
      random: () => coreRandom.float(),
      steps: NO_STEP_SERVICES,
    };
    const io = {
      nowMs: () => this.q.now,
      random: wiring.random,
      after: (ms: number, fn: () => void) => {
        this.q.after(ms, () => inc.alive && fn());
        return () => {};
      },
      steps: wiring.steps,
      log: { warn: (_fields: Record<string, unknown>, msg: string) => this.log(() => `${n.id} warns: ${msg}`) },
    };
    return attachProducts(core, products, io, wiring.options).sagas;
  }

  /**
   * What the simulator watches in a node's core: Raft safety, decisions applied, the crash points of the commit path.
   */
  private observer(n: SysNode, inc: Inc, rawNode: RawNode, core: () => NodeCore, g: number): NodeCoreObserver {
    const raft = this.rafts[g];
    const disk = n.disks[g];
    const ofGroup = this.groups === 1 ? '' : ` of group ${g}`;
    return {
      onFatal: (err) => this.checker.violation(`${n.id}${ofGroup} fatal: ${err.message}`),
      onPersisted: (rd) => {
        raft.onReady(n.id, rawNode, disk, rd);
        if (rd.softState) this.log(() => `${n.id} is ${rd.softState?.role}${ofGroup} in term ${rawNode.raft.term}`);
      },
      onEntryApplied: (e) => raft.onApplied(n.id, e.index, e.term, Buffer.from(e.data).toString()),
      onResult: (_e, result) => {
        if (result.t !== 'decide') return;
        // A decision lives in exactly one group: the one its id is placed in.
        if (this.groups > 1 && groupOf(result.decision.txnId, this.groups) !== g) {
          this.checker.violation(
            `placement: ${result.decision.txnId} decided in group ${g}, placed in group ${groupOf(result.decision.txnId, this.groups)}`,
          );
        }
        this.checker.decisionApplied(n.id, result.decision, result.first);
        if (result.first && result.decision.outcome === 'commit' && core().engine.isLeader())
          this.point('commit-applied', result.decision.txnId, { node: n });
      },
      onRouted: (_e, result) => {
        if (result.t === 'forget' && core().engine.isLeader())
          for (const id of result.txnIds) if (inc.alive) this.point('after-forget', id, { node: n });
      },
      onProposing: (cmd) => {
        this.log(() => `${n.id} proposes ${JSON.stringify(cmd)}`);
        if (cmd.t !== 'forget') return;
        for (const id of cmd.txnIds) {
          this.point('before-forget', id, { node: n });
          if (!inc.alive) return;
        }
      },
      onProposed: (cmd) => {
        if (cmd.t === 'decide' && cmd.outcome === 'commit') this.point('commit-proposed', cmd.txnId, { node: n });
      },
      onProposalFailed: (cmd, err) =>
        this.log(
          () =>
            `${n.id} proposal ${cmd.t} ${cmd.t === 'forget' ? cmd.txnIds.join(',') : 'txnId' in cmd ? cmd.txnId : 'sagaId' in cmd ? cmd.sagaId : 'id' in cmd ? cmd.id : ''} failed: ${err.message}`,
        ),
    };
  }

  /**
   * PREPARE, DECISION and the status question from node n to participants over the simulated network, with the crash
   * points of the commit path.
   */
  private links(n: SysNode, inc: Inc): ParticipantLinks {
    return {
      sendPrepare: (to, req, timeoutMs, cb) => {
        if (!inc.alive) return;
        this.point('prepare-send', req.txnId, { node: n });
        if (!inc.alive) return;
        const p = this.participant(to.id);
        if (!p.up) {
          // A process that is down refuses the connection at once (gRPC: UNAVAILABLE, no connection
          // established): the PREPARE provably never reached it, and the engine owes it no ABORT (R3).
          this.log(() => `${n.id} cannot reach ${p.id} (down) with PREPARE for ${req.txnId}`);
          this.q.after(
            1,
            () => inc.alive && cb(new NotDeliveredError(p.id, `PREPARE never reached participant ${p.id}: it is down`)),
          );
          return;
        }
        this.log(() => `${n.id} sends PREPARE for ${req.txnId} to ${p.id}`);
        this.rpc.call<Vote>(
          n.id,
          inc,
          p.id,
          timeoutMs,
          (reply) =>
            this.atParticipant(p, reply, (pp, eng, r) =>
              eng.prepare(
                {
                  clusterId: CLUSTER,
                  txnId: req.txnId,
                  participantId: req.participantId,
                  participants: req.participants,
                  payload: req.payload,
                  timeoutMs: req.timeoutMs,
                },
                (err, vote) => {
                  if (err || !vote) return r(participantError(err));
                  // Votes are recorded as they are sent (AC2).
                  this.checker.voteSent(pp.id, req.txnId, vote.vote);
                  this.log(() => `${pp.id} votes ${vote.vote.toUpperCase()} on ${req.txnId}`);
                  if (vote.vote === 'yes') {
                    this.noteYes(pp, n, inc, req.txnId);
                    this.point('some-prepared', req.txnId, { participant: pp.id });
                  }
                  r(null, vote);
                },
              ),
            ),
          (err, vote) => {
            if (err || !vote) return cb(new Error(err?.message ?? 'no vote'));
            if (vote.vote === 'yes') {
              this.point('some-prepared', req.txnId, { node: n });
              if (!inc.alive) return;
            }
            cb(null, { vote: vote.vote, reason: vote.reason });
          },
        );
      },
      sendStatus: (to, txnId, timeoutMs, cb) => {
        if (!inc.alive) return;
        const p = this.participant(to.id);
        this.log(() => `${n.id} asks ${p.id} the status of ${txnId} (recovery)`);
        this.rpc.call<TxnStatus>(
          n.id,
          inc,
          p.id,
          timeoutMs,
          (reply) =>
            this.atParticipant(p, reply, (pp, eng, r) =>
              // Built before Status existed: its server does not know the method.
              pp.old === true
                ? r({ code: 'UNIMPLEMENTED', message: 'unknown method Status' })
                : eng.status({ clusterId: CLUSTER, txnId, participantId: pp.id }, (err, status) => {
                    if (err || !status) return r(participantError(err));
                    this.log(() => `${pp.id} answers ${status} for ${txnId}`);
                    // "prepared" is a YES vote: the participant holds T durably prepared (AC2 counts it).
                    if (status === 'prepared') this.checker.voteSent(pp.id, txnId, 'yes');
                    r(null, status);
                  }),
            ),
          (err, status) => (err || !status ? cb(new Error(err?.message ?? 'no status')) : cb(null, status)),
        );
      },
      sendDecision: (to, req, timeoutMs, cb) => {
        if (!inc.alive) return;
        const p = this.participant(to.id);
        const commit = req.outcome === 'commit';
        this.log(() => `${n.id} sends DECISION ${req.outcome} for ${req.txnId} to ${p.id}`);
        this.rpc.call<Ack>(
          n.id,
          inc,
          p.id,
          timeoutMs,
          (reply) =>
            this.atParticipant(p, reply, (pp, eng, r) => {
              pp.votedYes?.get(n.id)?.delete(req.txnId);
              eng.decide(
                {
                  clusterId: CLUSTER,
                  txnId: req.txnId,
                  participantId: req.participantId,
                  outcome: req.outcome,
                  reason: req.reason,
                },
                (err, ack) => {
                  if (err || !ack) return r(participantError(err));
                  if (commit) this.point('some-decided', req.txnId, { participant: pp.id });
                  r(null, ack);
                },
              );
            }),
          (err) => {
            if (err) return cb(new Error(err.message));
            if (commit) {
              this.point('some-decided', req.txnId, { node: n });
              if (!inc.alive) return;
            }
            cb(null);
          },
        );
      },
    };
  }

  private crashNode(n: SysNode): void {
    if (!n.up) return;
    this.log(() => `${n.id} crashes`);
    this.countQuietFault([n.id]);
    this.connectionsBroke(n);
    this.crashes++;
    n.up = false;
    n.inc.alive = false;
    n.host?.crash();
    for (const d of n.disks) d.crash();
    n.host = null;
    n.groups = [];
    n.core = null;
    n.driver = null;
    n.sm = null;
    n.engine = null;
    n.sagas = null;
  }

  /**
   * A crashed process's sockets are reset by its kernel at once: every live
   * node that can reach it sees its stream to it break a millisecond later
   * (no randomness drawn, so every earlier schedule of a seed stays as it was).
   */
  private connectionsBroke(dead: SysNode): void {
    for (const peer of this.nodes) {
      const h = peer.host;
      if (peer === dead || h === null || this.net.isBlocked(dead.id, peer.id)) continue;
      this.q.after(1, () => peer.host === h && h.reportUnreachable(dead.id));
    }
    // Participants see the dead node's Exchange stream break too, and ask about what it prepared there.
    for (const p of this.parts) {
      const ids = p.votedYes?.get(dead.id);
      if (!p.up || ids === undefined || this.net.isBlocked(dead.id, p.id)) continue;
      p.votedYes?.delete(dead.id);
      const inc = p.inc;
      this.q.after(1, () => {
        if (!inc.alive || !p.engine) return;
        this.log(() => `${p.id} sees ${dead.id}'s stream break; asks about ${ids.size} transaction(s) at once`);
        p.engine.askNow(ids);
      });
    }
  }

  /** A YES at node n's request (src/participant/serve.ts: noteYes); given after n died, it is asked about at once. */
  private noteYes(p: SysParticipant, n: SysNode, nodeInc: { alive: boolean }, txnId: string): void {
    if (!nodeInc.alive) {
      const inc = p.inc;
      this.q.after(1, () => inc.alive && p.engine?.askNow([txnId]));
      return;
    }
    p.votedYes ??= new Map();
    let ids = p.votedYes.get(n.id);
    if (ids === undefined) p.votedYes.set(n.id, (ids = new Set()));
    ids.add(txnId);
  }

  private restartNode(n: SysNode): void {
    if (n.up) return;
    if (n.disks.some((d) => d.corrupted)) {
      // The real node refuses to start; the operator runs `verdict node repair`.
      this.log(() => `${n.id} refuses to start: a record of its raft log is corrupt; repaired, it restarts recovering`);
      this.refusals++;
      for (const d of n.disks) if (d.corrupted) d.repair();
    }
    this.log(() => `${n.id} restarts`);
    this.startNode(n);
  }

  /**
   * One node per run has a lying disk (the fault model: one node of three);
   * with a node lost for good beside it, two are faulty and the cluster
   * rightly waits for an operator, so such runs get no disk faults.
   */
  diskFault(index: number, fault: DiskFault): string | null {
    if (this.sc.crashPoints.some((c) => c.forever === true)) return null;
    this.diskFaultNode ??= this.nodes[index % this.nodes.length];
    const n = this.diskFaultNode;
    if (!n.up) return null;
    this.crashNode(n);
    this.diskFaults++;
    this.log(
      () =>
        `${n.id}'s disk ${fault.kind === 'lose-tail' ? `loses its last ${fault.records} synced entries` : fault.kind === 'wipe' ? 'is replaced by an empty one' : 'corrupts a record'}`,
    );
    // One disk under every group's log (the shared writer): the fault hits each group's records.
    for (const [g, disk] of n.disks.entries()) {
      if (fault.kind === 'lose-tail') disk.loseSyncedTail(fault.records);
      else if (fault.kind === 'corrupt') disk.corrupt();
      else {
        disk.wipe();
        // Its synced votes are gone with the disk: the checker's memory of them goes too (election safety is still
        // checked).
        this.rafts[g].wiped(n.id);
        if (this.sc.mutant === 'wiped-refounds') disk.found();
      }
    }
    return n.id;
  }

  leader(): SysNode | null {
    let best: SysNode | null = null;
    for (const n of this.nodes) {
      if (!n.up || !n.driver?.isLeader() || !n.engine?.isLeader()) continue;
      if (!best || n.driver.node.raft.term > (best.driver?.node.raft.term ?? 0)) best = n;
    }
    return best;
  }

  /** Group g's leader: its node and replica (group 0's node is leader()). */
  groupLeader(g: number): { n: SysNode; rep: SysGroup } | null {
    let best: { n: SysNode; rep: SysGroup } | null = null;
    for (const n of this.nodes) {
      const rep = n.up ? n.groups[g] : undefined;
      if (rep === undefined || !rep.core.driver.isLeader() || !rep.core.engine.isLeader()) continue;
      if (!best || rep.core.driver.node.raft.term > best.rep.core.driver.node.raft.term) best = { n, rep };
    }
    return best;
  }

  /**
   * The leader of group g that no up node of the group has moved past: a stale leader (cut off, its term
   * overtaken, not yet told) is not the group's leader, so the world is not quiet and nothing is read from it.
   */
  currentLeader(g: number): { n: SysNode; rep: SysGroup } | null {
    const l = this.groupLeader(g);
    if (l === null) return null;
    const term = l.rep.core.driver.node.raft.term;
    for (const n of this.nodes) {
      const rep = n.up ? n.groups[g] : undefined;
      if (rep !== undefined && rep.core.driver.node.raft.term > term) return null;
    }
    return l;
  }

  /** The group of a transaction id: where it is begun, decided and asked about. */
  groupOf(txnId: string): number {
    return this.groups === 1 ? 0 : groupOf(txnId, this.groups);
  }

  /**
   * Every group's Raft messages cross one simulated network, each delivered to its group's replica at the receiving
   * process.
   */
  private sendRaft(from: NodeId, gms: GroupMessage[]): void {
    // Every frame names the groups its sender leads quiesced (src/transport/peer.ts, WireBatch.quiescedGroups).
    const quiesced = this.quiescedLeading(from);
    let sent = this.sentSinceHeartbeat.get(from);
    if (sent === undefined) this.sentSinceHeartbeat.set(from, (sent = new Set()));
    for (const gm of gms) {
      const to = this.nodes.find((x) => x.id === gm.message.to);
      if (!to) continue;
      sent.add(to.id);
      this.net.send(from, to.id, () => {
        if (!to.up || !to.host) return;
        to.host.heard(from, quiesced);
        to.host.receive([gm]);
      });
    }
  }

  /**
   * The node-level heartbeat (src/transport/peer.ts, PeerLink.heartbeat): a frame with no message to every other node
   * that was sent nothing since the last one; the receiving host hears the node alive.
   */
  private raftHeartbeat(from: NodeId): void {
    const sent = this.sentSinceHeartbeat.get(from);
    const quiesced = this.quiescedLeading(from);
    for (const to of this.nodes) {
      if (to.id === from || sent?.has(to.id)) continue;
      this.net.send(from, to.id, () => {
        if (to.up && to.host) to.host.heard(from, quiesced);
      });
    }
    sent?.clear();
  }

  /** The groups node `id` leads quiesced, as its frames name them (GroupHost.quiescedLeading). */
  private quiescedLeading(id: NodeId): number[] {
    return this.nodes.find((x) => x.id === id)?.host?.quiescedLeading() ?? [];
  }

  /** Counts a fault (a crash, a partition) that strikes any of `ids` while it leads a quiesced group. */
  countQuietFault(ids: readonly NodeId[]): void {
    const struck = this.nodes.some(
      (n) =>
        ids.includes(n.id) && n.up && n.groups.some((r) => r.core.driver.isLeader() && r.core.driver.node.quiesced()),
    );
    if (struck) this.quietFaults++;
  }

  // ---- participants: the production wiring of src/participant/runtime.ts --

  private participant(id: string): SysParticipant {
    const p = this.parts.find((x) => x.id === id);
    if (!p) throw new Error(`sim: no participant ${id}`);
    return p;
  }

  private startParticipant(p: SysParticipant): void {
    const wiring: ParticipantWiring = {
      clusterId: CLUSTER,
      q: this.q,
      checker: this.checker,
      applied: (txnId, outcome) => this.log(() => `${p.id} applies ${outcome} to ${txnId}`),
      askOutcome: (inc, txnId, cb) => this.askOutcome(p, inc, txnId, cb),
      log: (inc) => ({
        info: () => {},
        warn: () => {},
        error: (o, msg) => {
          if (!inc.alive || !msg.startsWith('protocol violation')) return;
          const r = o as { txnId?: string; decision?: string; local?: string };
          this.checker.participantRefused(p.id, r.txnId ?? '?', r.decision ?? '?', r.local ?? '?');
        },
      }),
      mutant: participantMutant(this.sc.mutant),
      // Every other participant keeps nothing of an aborted transaction (the
      // protocol allows it): answers must not rest on participants' memory.
      forgetAborts: this.sc.participantsWait !== true && this.parts.indexOf(p) % 2 === 1,
      inDoubtAfterMs: this.sc.participantsWait === true ? Number.MAX_SAFE_INTEGER : undefined,
    };
    if (p.db !== undefined) {
      startSimDbParticipant(p, p.db, { ...wiring, dbMutant: dbMutant(this.sc.mutant) });
      this.ext?.participantStarted(p.id);
      return;
    }
    if (p.tcc === undefined) {
      startSimParticipant(p, wiring);
      this.ext?.participantStarted(p.id);
      return;
    }
    startSimTccParticipant(p, p.tcc, {
      ...wiring,
      // The first TCC participant forgets aborts too, so that late Trys meet the barrier rather than the engine's
      // memory.
      forgetAborts: this.sc.participantsWait !== true && this.parts.indexOf(p) % 4 === 0,
      askAbort: (inc, txnId, reason, cb) => this.askAbort(p, inc, txnId, reason, cb),
      tccMutant: tccMutant(this.sc.mutant),
    });
    this.ext?.participantStarted(p.id);
  }

  private crashParticipant(p: SysParticipant): void {
    if (!p.up) return;
    this.log(() => `${p.id} crashes`);
    this.crashes++;
    p.votedYes = undefined;
    crashSimParticipant(p);
    if (p.tcc !== undefined) crashSimTcc(p.tcc);
    this.ext?.participantCrashed(p.id);
  }

  private restartParticipant(p: SysParticipant): void {
    if (p.up) return;
    this.log(() => `${p.id} restarts`);
    this.startParticipant(p);
  }

  /** GetOutcome with the participant id, to the node it believes leads; redirects followed like the ClusterLink. */
  private askOutcome(
    p: SysParticipant,
    inc: Inc,
    txnId: string,
    cb: (err: Error | null, o: ClusterOutcome) => void,
  ): void {
    const g = this.groupOf(txnId);
    const hint = this.hintOf(p, g);
    const at = this.nodes[hint].id;
    this.callCoordinator<OutcomeAnswer>(
      p.id,
      inc,
      hint,
      ASK_DEADLINE_MS,
      (c) => {
        // The in-doubt question is a YES the node may count (parallel commit's recovery does):
        // the participant asks only while it holds T durably prepared (R4), so AC2 counts it as one.
        if (p.engine?.inDoubt().some((d) => d.txnId === txnId)) this.checker.voteSent(p.id, txnId, 'yes');
        c.engine.outcome(txnId, p.id, (err, a) => (err || !a ? c.fail(err) : c.ok(a)));
      },
      (err, a) => {
        this.log(
          () =>
            `${p.id} asks ${at} about ${txnId}: ${err ? `${err.code} ${err.message}` : `${a?.outcome} ${a?.reason}`}`,
        );
        if (err || !a) {
          this.setHint(p, g, redirect(this.hintOf(p, g), err, this.nodeIds));
          return cb(new Error(err?.message ?? 'no answer'), 'UNKNOWN');
        }
        cb(null, a.outcome);
      },
      g,
    );
  }

  /**
   * Where participant p believes group g's leader is: p.hint for group 0, and for every other group until a redirect.
   */
  private hintOf(p: SysParticipant, g: number): number {
    return g === 0 ? p.hint : (p.hints?.[g] ?? p.hint);
  }

  private setHint(p: SysParticipant, g: number, to: number): void {
    if (g === 0) p.hint = to;
    else (p.hints ??= [])[g] = to;
  }

  /**
   * Coordinator.Abort, as an expired TCC reserve asks it (src/participant/tcc/expiry.ts); redirects followed like
   * askOutcome.
   */
  private askAbort(
    p: SysParticipant,
    inc: Inc,
    txnId: string,
    reason: string,
    cb: (err: Error | null, o: ClusterOutcome) => void,
  ): void {
    const g = this.groupOf(txnId);
    const hint = this.hintOf(p, g);
    const at = this.nodes[hint].id;
    this.callCoordinator<OutcomeAnswer>(
      p.id,
      inc,
      hint,
      ASK_DEADLINE_MS,
      (c) => c.engine.abort(txnId, reason, (err, a) => (err || !a ? c.fail(err) : c.ok(a))),
      (err, a) => {
        this.log(
          () =>
            `${p.id} asks ${at} to abort ${txnId} (reserve expired): ${err ? `${err.code} ${err.message}` : `${a?.outcome} ${a?.reason}`}`,
        );
        if (err || !a) {
          this.setHint(p, g, redirect(this.hintOf(p, g), err, this.nodeIds));
          return cb(new Error(err?.message ?? 'no answer'), 'UNKNOWN');
        }
        cb(null, a.outcome);
      },
      g,
    );
  }

  /**
   * Registers p in group g; with groups, p is registered once every group has applied its registration (the registry is
   * replicated to every group).
   */
  private register(p: SysParticipant, g = 0): void {
    if (p.registered || p.registeredIn?.has(g)) return;
    const endpoint = `${p.id}:1`;
    // What the runtime lists (src/participant/serve.ts), or nothing for one built before `serves` existed.
    const serves = p.old === true ? [] : [...SERVED_OPTIONAL];
    const hint = this.hintOf(p, g);
    this.callCoordinator<true>(
      p.id,
      p.inc,
      hint,
      REGISTER_DEADLINE_MS,
      (c) => {
        // Re-registration at the same endpoint is answered without a log write, as the service does.
        const known = c.table.participants.get(p.id);
        if (
          known?.endpoint === endpoint &&
          known.resourceKind === 'memory' &&
          known.serves.join(',') === serves.join(',')
        )
          return c.ok(true);
        c.engine.registerParticipant(p.id, endpoint, 'memory', serves, (err) => (err ? c.fail(err) : c.ok(true)));
      },
      (err) => {
        if (!err) {
          if (this.groups > 1) {
            (p.registeredIn ??= new Set()).add(g);
            if (p.registeredIn.size < this.groups) return;
          }
          if (!p.registered) this.registered++;
          p.registered = true;
          return;
        }
        this.setHint(p, g, redirect(this.hintOf(p, g), err, this.nodeIds));
        this.q.after(100, () => this.register(p, g));
      },
      g,
    );
  }

  /** A Coordinator RPC to node `node`, served by its engine while the node is up (the gRPC service's role). */
  readonly callCoordinator: CallCoordinator = (from, caller, node, timeoutMs, serve, cb, group = 0) => {
    const n = this.nodes[node];
    this.rpc.call(
      from,
      caller,
      n.id,
      timeoutMs,
      (reply) => {
        // The service picks the replica of the call's group (groupOf of its id).
        const rep = n.up ? n.groups[group] : undefined;
        if (rep === undefined) return;
        const inc = n.inc;
        const leader = rep.core.driver.leader();
        serve({
          engine: rep.core.engine,
          table: rep.sm.table,
          ok: (v) => inc.alive && reply(null, v),
          fail: (err) =>
            inc.alive &&
            reply(
              err
                ? {
                    code: err.code,
                    message: err.message,
                    leader: err.code === 'not-leader' ? leader : undefined,
                    recorded: err.recorded,
                  }
                : { code: 'outcome-unknown', message: 'no answer' },
            ),
        });
      },
      cb,
    );
  };

  private clientEnv(): ClientEnv {
    return {
      q: this.q,
      rng: this.rng,
      nodeIds: this.nodeIds,
      call: this.callCoordinator,
      answered: (txnId, outcome) => this.checker.clientAnswered(txnId, outcome),
      refusedAsDecided: (txnId, recorded) => this.checker.clientRefusedAsDecided(txnId, recorded),
      refused: (txnId, call, err) =>
        this.checker.violation(`client: ${call}(${txnId}) refused: ${err.code}: ${err.message}`),
      log: (line) => this.log(line),
      beginRule: beginRule(this.sc.mutant === 'begin-on-retry' ? this.sc.mutant : undefined),
      groupOf: (txnId) => (this.sc.mutant === 'misrouted-client' ? 0 : this.groupOf(txnId)),
    };
  }

  log(line: () => string): void {
    if (this.trace) this.trace(`t=${this.q.now}ms ${line()}`);
  }

  // ---- RPCs over the simulated network -------------------------------------

  private atParticipant<T>(
    p: SysParticipant,
    reply: Reply<T>,
    handle: (p: SysParticipant, eng: ParticipantEngine, r: Reply<T>) => void,
  ): void {
    if (!p.up || !p.engine) return;
    const inc = p.inc;
    handle(p, p.engine, (err, v) => inc.alive && reply(err, v));
  }

  // ---- crash points -----------------------------------------------------------

  /** Called at each protocol step; crashes the armed target synchronously, at most once per crash point. */
  private point(point: CrashPointName, txnId: string, at: { node?: SysNode; participant?: string }): void {
    if (this.healed) return;
    for (const cp of this.armed) {
      if (cp.fired || cp.point !== point) continue;
      const c = this.clientByTxn.get(txnId);
      if (!c) continue;
      if (cp.target === 'leader') {
        if (!at.node) continue;
        cp.fired = true;
        this.crashPointsFired++;
        this.log(() => `crash point ${point} of ${txnId}: the leader`);
        const n = at.node;
        this.crashNode(n);
        if (cp.forever) this.lostForever.add(n.id);
        else this.q.after(cp.downMs, () => !this.healed && this.restartNode(n));
      } else {
        const pid = c.participants[cp.target];
        if (pid === undefined) continue;
        const participantSide = point === 'some-prepared' || point === 'some-decided';
        if (participantSide ? at.participant !== pid : !at.node) continue;
        cp.fired = true;
        this.crashPointsFired++;
        this.log(() => `crash point ${point} of ${txnId}: participant ${pid}`);
        const p = this.participant(pid);
        this.crashParticipant(p);
        this.q.after(cp.downMs, () => !this.healed && this.restartParticipant(p));
      }
    }
  }

  // ---- faults: what system-faults.ts may do to the world ------------------

  get nodeIds(): string[] {
    return this.nodes.map((n) => n.id);
  }

  get participantIds(): string[] {
    return this.parts.map((p) => p.id);
  }

  /** The leader a leader fault aims at: with groups, each group's in turn. */
  leaderId(): string | null {
    if (this.groups === 1) return this.leader()?.id ?? null;
    return this.groupLeader(this.leaderPick++ % this.groups)?.n.id ?? null;
  }

  crash(id: string): void {
    const n = this.nodes.find((x) => x.id === id);
    if (n) this.crashNode(n);
    else this.crashParticipant(this.participant(id));
  }

  restart(id: string): void {
    const n = this.nodes.find((x) => x.id === id);
    if (n) this.restartNode(n);
    else this.restartParticipant(this.participant(id));
  }

  setSlowDisk(id: string, extraMs: number): void {
    const n = this.nodes.find((x) => x.id === id);
    if (n) for (const d of n.disks) d.slowMs = extraMs;
    else {
      const p = this.participant(id);
      p.journal.slowMs = extraMs;
      if (p.tcc !== undefined) p.tcc.journal.slowMs = extraMs;
    }
  }

  transferLeadership(to: string): void {
    if (this.groups === 1) this.leader()?.driver?.transferLeadership(to);
    else this.groupLeader(this.leaderPick++ % this.groups)?.rep.core.driver.transferLeadership(to);
  }

  private heal(): void {
    this.log(() => 'heal: faults stop, everything restarts');
    this.healed = true;
    this.net.heal();
    for (const n of this.nodes) {
      for (const d of n.disks) d.slowMs = 0;
      if (!this.lostForever.has(n.id)) this.restartNode(n);
    }
    for (const p of this.parts) {
      p.journal.slowMs = 0;
      if (p.tcc !== undefined) p.tcc.journal.slowMs = 0;
      this.restartParticipant(p);
    }
  }

  // ---- a run -------------------------------------------------------------

  run(): SystemResult {
    const txns = this.sc.txns.length;
    try {
      this.runPhases();
    } catch (err) {
      this.checker.exception(err);
    }
    let committed = 0;
    for (const c of this.clients) if (this.checker.decisionOf(c.txnId) === 'commit') committed++;
    return {
      violations: this.checker.violations,
      steps: this.q.steps,
      crashes: this.crashes,
      partitions: this.partitions,
      txns,
      committed,
      crashPointsFired: this.crashPointsFired,
      virtualMs: this.q.now,
      diskFaults: this.diskFaults,
      refusals: this.refusals,
      quietFaults: this.quietFaults,
    };
  }

  private runPhases(): void {
    // Setup, without faults: a leader, and every participant registered through the log.
    // With groups, each participant registers in every group (the registry is replicated to all of them).
    for (const p of this.parts)
      this.q.after(this.rng.int(200), () => Array.from({ length: this.groups }, (_, g) => this.register(p, g)));
    this.q.runUntil(SETUP_MS_MAX, () => this.registered === this.parts.length);
    if (this.registered < this.parts.length) {
      this.checker.violation(
        `setup: only ${this.registered} of ${this.parts.length} participants registered within ${SETUP_MS_MAX} ms without faults`,
      );
      return;
    }
    const t0 = this.q.now;
    for (const f of [...this.sc.faults, ...(this.sc.diskFaults ?? [])])
      if (f.at < this.sc.healAtMs) scheduleFault(this, f, t0);
    const env = this.clientEnv();
    // Which clients send their id again, from a generator of its own so that the schedules of earlier seeds stay as
    // they were. Only while every decision is remembered (unbounded tombstones): the sim's ids are untimed.
    const resends = new Rng((this.sc.seed ^ 0x2e5e2d) >>> 0);
    for (const [i, plan] of this.sc.txns.entries()) {
      const members = [...new Set(plan.members.map((m) => m % this.parts.length))].map((m) => this.parts[m].id);
      // Every other client begins with its Commit (CommitRequest.begin, the SDK's transaction()) instead of calling
      // Begin.
      const resendAfterMs =
        this.sc.tombstonesMax === undefined && resends.int(3) === 0 ? 200 + resends.int(4_000) : null;
      const c = new SimClient(
        env,
        `c${i + 1}`,
        `t${i + 1}`,
        plan,
        members,
        plan.no === null ? null : members[plan.no % members.length],
        i % 2 === 1,
        resendAfterMs,
      );
      this.clients.push(c);
      this.clientByTxn.set(c.txnId, c);
      this.checker.plan({ txnId: c.txnId, participants: c.participants, noVoter: c.noVoter });
      this.q.at(t0 + plan.atMs, () => c.start());
    }
    this.ext?.start(t0);
    const churn = this.sc.memberChurn;
    if (churn !== undefined) {
      const id = this.nodes[churn.node % this.nodes.length].id;
      // The add starts once the removal is applied in group 0 and every group has followed it (an operator
      // waits for `member remove` to answer, and for `verdict status` to show no group behind).
      const readd = (): void => this.operatorMember('add', id, t0, () => {});
      const followed = (): void => {
        if (this.q.now > t0 + this.sc.healAtMs + this.sc.livenessMs / 2) return;
        const behind = Array.from({ length: this.groups }, (_, g) =>
          this.groupLeader(g)?.rep.core.driver.node.raft.confState(),
        ).some((cs) => cs === undefined || cs.voters.includes(id) || cs.learners.includes(id));
        if (behind) return void this.q.after(200, followed);
        this.q.at(Math.max(this.q.now, t0 + churn.readdAtMs), readd);
      };
      this.q.at(t0 + churn.removeAtMs, () => this.operatorMember('remove', id, t0, followed));
    }
    this.q.runUntil(t0 + this.sc.healAtMs);
    this.heal();
    // AC4: once healed, the world must become quiet within livenessMs.
    if (!this.q.runUntilQuiet(this.sc.livenessMs, QUIET_POLL_MS, () => this.quiet() === null)) {
      this.checker.violation(
        `AC4 termination: ${this.sc.livenessMs} ms after healing the world is not quiet: ${this.quiet()}`,
      );
      return;
    }
    this.ext?.final();
    this.checker.final({
      faultFree:
        this.sc.faults.length === 0 &&
        (this.sc.diskFaults ?? []).length === 0 &&
        this.sc.crashPoints.length === 0 &&
        this.sc.mutant === undefined,
      valueAt: (pid, key) => {
        const p = this.participant(pid);
        return p.tcc !== undefined ? p.tcc.resource?.state.data.get(key) : p.resource?.get(key);
      },
      began: (txnId) => this.clientByTxn.get(txnId)?.began === true,
      // With a bounded tombstone list a forgotten decision may be gone for good (the horizon of timed ids is a unit
      // test's).
      outcomeNow: (txnId) => {
        const d = this.currentLeader(this.groupOf(txnId))?.rep.sm.table.lookup(txnId);
        return d ? outcomeOfDecision(d.outcome) : this.sc.tombstonesMax === undefined ? null : undefined;
      },
    });
    const tcc = this.parts.flatMap((p) => (p.tcc !== undefined ? [{ id: p.id, tcc: p.tcc }] : []));
    if (tcc.length > 0) checkTcc(this.checker, tcc, t0 + this.sc.healAtMs);
    if (this.sc.spreadCheck === true && this.groups > 1) this.checkSpread();
    if (this.sc.memberChurn !== undefined) this.checkMembersFollow();
  }

  /**
   * The operator's `verdict member remove/add` against group 0's leader, as
   * the membership service does it: one change at a time, retried every
   * 200 ms through leader changes; an add is a learner first, promoted once
   * it holds what is committed. Gives up at the heal plus half the liveness
   * bound (the final check then says what is missing).
   */
  private operatorMember(kind: 'remove' | 'add', id: string, t0: number, done: () => void): void {
    const giveUpAt = t0 + this.sc.healAtMs + this.sc.livenessMs / 2;
    const attempt = (): void => {
      if (this.q.now > giveUpAt) return;
      const l = this.groupLeader(0);
      if (l === null) return void this.q.after(200, attempt);
      const d = l.rep.core.driver;
      const cs = d.node.raft.confState();
      const members = new Set([...cs.voters, ...cs.learners]);
      const propose = (type: ConfChangeType): void => {
        const after = new Set(members);
        if (type === ConfChangeType.Remove) after.delete(id);
        else after.add(id);
        d.proposeConfChange(
          { type, nodeId: id, context: encodeMemberContext(new Map([...after].map((m) => [m, m]))) },
          () => {},
        );
      };
      if (kind === 'remove') {
        if (!members.has(id)) return done();
        propose(ConfChangeType.Remove);
      } else if (cs.voters.includes(id)) return done();
      else if (!cs.learners.includes(id)) propose(ConfChangeType.AddLearner);
      else if ((d.node.raft.progress.get(id)?.match ?? 0) >= d.node.raft.log.committed)
        propose(ConfChangeType.AddVoter);
      this.q.after(200, attempt);
    };
    attempt();
  }

  /**
   * Membership across groups: once quiet, every group's configuration comes to equal group 0's, the churned node a
   * voter again.
   */
  private checkMembersFollow(): void {
    const churned = this.nodes[(this.sc.memberChurn?.node ?? 0) % this.nodes.length].id;
    const configOf = (g: number): string | null => {
      const cs = this.groupLeader(g)?.rep.core.driver.node.raft.confState();
      return cs === undefined
        ? null
        : `voters ${[...cs.voters].sort().join(',')} learners ${[...cs.learners].sort().join(',') || '-'}`;
    };
    const differ = (): string[] => {
      const zero = configOf(0);
      const out: string[] = [];
      if (zero === null || !this.groupLeader(0)?.rep.core.driver.node.raft.confState().voters.includes(churned))
        out.push(`group 0 (${zero ?? 'no leader'}) does not have ${churned} back as a voter`);
      for (let g = 1; g < this.groups; g++)
        if (configOf(g) !== zero)
          out.push(`group ${g} has ${configOf(g) ?? 'no leader'}, group 0 ${zero ?? 'no leader'}`);
      return out;
    };
    this.q.runUntil(this.q.now + MEMBERS_MS_MAX, () => differ().length === 0);
    const left = differ();
    if (left.length > 0)
      this.checker.violation(`membership: ${MEMBERS_MS_MAX} ms after the world became quiet, ${left.join('; ')}`);
  }

  /** Leaders spread: after the heal every group's leader ends on its preferred node (the hosts transfer it there). */
  private checkSpread(): void {
    const misplaced = (): string[] => {
      const out: string[] = [];
      for (let g = 0; g < this.groups; g++) {
        const l = this.groupLeader(g);
        const want = l === null ? null : preferredLeader(g, l.rep.core.driver.node.raft.confState().voters);
        if (l === null || l.n.id !== want) out.push(`group ${g} led by ${l?.n.id ?? 'nobody'}, prefers ${want ?? '?'}`);
      }
      return out;
    };
    this.q.runUntil(this.q.now + SPREAD_MS_MAX, () => misplaced().length === 0);
    const left = misplaced();
    if (left.length > 0)
      this.checker.violation(`leaders spread: ${SPREAD_MS_MAX} ms after the world became quiet, ${left.join('; ')}`);
  }

  /**
   * null when nothing is in doubt, every decision is acknowledged and forgotten and every client answered; else what is
   * pending.
   */
  private quiet(): string | null {
    const pending: string[] = [];
    const unanswered = this.clients.filter((c) => !c.done || c.resending).map((c) => c.txnId);
    if (unanswered.length > 0) pending.push(`clients without an answer: ${unanswered.join(' ')}`);
    for (const p of this.parts) {
      if (!p.up || !p.engine) pending.push(`${p.id} down`);
      else {
        const doubt = p.engine.inDoubt().map((d) => d.txnId);
        if (doubt.length > 0) pending.push(`${p.id} in doubt on ${doubt.join(' ')}`);
        if (p.engine.counts().preparing > 0) pending.push(`${p.id} preparing`);
      }
    }
    for (let g = 0; g < this.groups; g++) {
      const ofGroup = this.groups === 1 ? '' : ` of group ${g}`;
      const l = this.currentLeader(g);
      if (!l) pending.push(`no leader${ofGroup}`);
      else {
        const open = [...l.rep.sm.table.decisions.values()].map((d) => `${d.txnId}:${d.outcome}`);
        if (open.length > 0)
          pending.push(`decisions not acknowledged and forgotten on leader ${l.n.id}${ofGroup}: ${open.join(' ')}`);
        // Parallel commit: a STAGING record with no decision is a transaction still undecided.
        const staged = [...l.rep.sm.table.staged.keys()];
        if (staged.length > 0) pending.push(`staged and undecided on leader ${l.n.id}${ofGroup}: ${staged.join(' ')}`);
      }
    }
    const more = this.ext?.quiet() ?? null;
    if (more !== null) pending.push(more);
    return pending.length === 0 ? null : pending.join('; ');
  }
}

function participantError(err: ParticipantError | null): RpcError {
  return { code: err?.code ?? 'UNAVAILABLE', message: err?.message ?? 'no vote' };
}

function coreMutant(m: Mutant | undefined): CoreMutant | undefined {
  return CORE_MUTANTS.find((x) => x === m);
}

function engineMutant(m: Mutant | undefined): EngineMutant | undefined {
  return ENGINE_MUTANTS.find((x) => x === m);
}

function tccMutant(m: Mutant | undefined): TccMutant | undefined {
  return m === 'tcc-no-barrier' || m === 'tcc-cancel-on-timer' ? m : undefined;
}

function dbMutant(m: Mutant | undefined): DbMutant | undefined {
  return DB_MUTANTS.find((x) => x === m);
}

function participantMutant(m: Mutant | undefined): ParticipantMutant | undefined {
  return PARTICIPANT_MUTANTS.find((x) => x === m);
}
