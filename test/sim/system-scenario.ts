// The vocabulary of a whole-system simulation run: the scenario fast-check
// generates (transactions, faults, crash points, an optional mutant) and the
// result a run hands back. See system-world.ts for what each piece does.

import type { BatchMutant, ClientMutant, CoreMutant, EngineMutant, ParticipantMutant } from './protocol-mutants.ts';
import type { TccMutant } from './system-tcc.ts';
import type { DbMutant } from './system-dbprep.ts';

export const CRASH_POINTS = [
  'prepare-send',
  'some-prepared',
  'commit-proposed',
  'commit-applied',
  'some-decided',
  'before-forget',
  'after-forget',
] as const;
export type CrashPointName = (typeof CRASH_POINTS)[number];

/**
 * Crash `target` — the leader, or the i-th participant of the transaction —
 * the first time a transaction reaches `point`:
 *   prepare-send     the leader is about to send PREPARE
 *   some-prepared    a YES reached the leader (leader), or a participant synced
 *                    its prepared state and is about to send YES (participant)
 *   commit-proposed  Decide(T, COMMIT) was just proposed, not yet committed
 *   commit-applied   COMMIT applied on the leader, no DECISION sent yet
 *   some-decided     an ACK reached the leader (leader), or a participant applied
 *                    COMMIT and is about to ACK (participant)
 *   before-forget    the leader is about to propose Forget(T)
 *   after-forget     Forget(T) was applied on the leader
 */
export interface CrashPoint {
  point: CrashPointName;
  target: 'leader' | number;
  downMs: number;
  /**
   * The crashed leader never restarts, not even at healing: a coordinator-side
   * process lost for good (a minority of the nodes). Leader targets only. The
   * baselines (test/sim/baselines) put classic 2PC's one coordinator through
   * the same fault, and Verdict must still decide everything (AC4).
   */
  forever?: boolean;
}

/** One client transaction: when it begins (after load starts), who it enlists, who is told to vote NO. */
export interface TxnPlan {
  atMs: number;
  /** Participant indexes (taken modulo P, duplicates dropped). */
  members: number[];
  /** Index into members of the participant told to vote NO, or null. */
  no: number | null;
  timeoutMs: number;
}

/** Endpoint indexes count the nodes first, then the participants, modulo their total. */
export type SysFault =
  | { kind: 'crash-node'; at: number; node: number; downMs: number }
  | { kind: 'crash-leader'; at: number; downMs: number }
  | { kind: 'crash-participant'; at: number; participant: number; downMs: number }
  | { kind: 'partition'; at: number; side: number[]; durMs: number }
  | { kind: 'isolate-leader'; at: number; durMs: number }
  | { kind: 'isolate-participant'; at: number; participant: number; durMs: number }
  | { kind: 'one-way'; at: number; from: number; to: number; durMs: number }
  | { kind: 'loss'; at: number; percent: number; durMs: number }
  | { kind: 'duplicate'; at: number; percent: number; durMs: number }
  | { kind: 'delay'; at: number; extraMs: number; durMs: number }
  | { kind: 'slow-disk'; at: number; target: number; extraMs: number; durMs: number }
  | { kind: 'transfer'; at: number; to: number }
  /** Crash a node, then its disk loses its last `records` synced entries (the high-water mark stays). */
  | { kind: 'lose-tail'; at: number; node: number; records: number; downMs: number }
  /** Crash a node, then a record of its log is corrupted: it refuses to start until repaired. */
  | { kind: 'corrupt'; at: number; node: number; downMs: number }
  /** Crash a node, then its data directory is replaced by an empty one: it restarts rejoining (src/raft/raft.ts). */
  | { kind: 'wipe'; at: number; node: number; downMs: number };

/** A deliberately broken protocol, for the checker's own tests; never set in the real simulation. */
export type Mutant =
  | EngineMutant
  | ParticipantMutant
  | TccMutant
  | BatchMutant
  | ClientMutant
  | CoreMutant
  | DbMutant
  | DiskMutant
  | GroupMutant;

/**
 * 'wiped-refounds': a node whose disk was wiped restarts as if it founded the cluster (what no tooling does), so it
 * votes at once.
 */
export type DiskMutant = 'wiped-refounds';

/**
 * With decision groups: 'misrouted-client' sends every transaction to group
 * 0's leader instead of its own group's (groupOf); 'group-1-disk-lies' gives
 * group 1's replicas disks that acknowledge writes before they are durable.
 */
export type GroupMutant = 'misrouted-client' | 'group-1-disk-lies';

/** What a Verdict run and a baseline run (test/sim/baselines) are both given. */
export interface FaultScenario {
  seed: number;
  participants: number;
  txns: TxnPlan[];
  faults: SysFault[];
  crashPoints: CrashPoint[];
  /** Faults happen before this (ms after load starts); afterwards the world is healthy. */
  healAtMs: number;
  /** After healing, the world must be quiet within this (AC4). */
  livenessMs: number;
}

export interface SystemScenario extends FaultScenario {
  nodes: number;
  /** A lost synced tail, a corrupted record or a wiped disk, all on one node (absent: none). */
  diskFaults?: SysFault[];
  snapshotEntries: number;
  /**
   * Every node's commitNoticeMs: 0, the commit index in an append of its own
   * at once; above, it rides the next append or goes after this long (the
   * node's default). Absent (a schedule written before it): the default.
   */
  commitNoticeMs?: number;
  /** Forgotten decisions the table remembers (default: production's). */
  tombstonesMax?: number;
  /**
   * Participants never ask about a prepared transaction (they still ask after
   * a restart) and remember every decision: whether they terminate shows
   * whether COMMIT and ABORT are delivered until acknowledged.
   */
  participantsWait?: boolean;
  /** Every other participant is a TCC one (test/sim/system-tcc.ts). */
  tcc?: boolean;
  /**
   * Parallel commit (src/commit/parallel-commit.ts): 'all' on every node;
   * 'mixed' on every other node, so a leader change moves between the
   * parallel and the classic path. Absent: classic only.
   */
  parallelCommit?: 'all' | 'mixed';
  /**
   * Every other participant is built from the oldest supported protocol: it
   * registers without `serves` and answers UNIMPLEMENTED to Status, so its
   * transactions must commit the classic way. Absent: all serve Status.
   */
  oldParticipants?: boolean;
  /**
   * Every other participant keeps its prepared state in a database and votes without syncing its journal
   * (test/sim/system-dbprep.ts).
   */
  dbPrepare?: boolean;
  /**
   * Decision groups (docs/architecture.md): each node hosts this many Raft groups, each transaction is decided in
   * groupOf(id). Absent: 1.
   */
  groups?: number;
  /**
   * With groups: once quiet, the run goes on (at most SPREAD_MS_MAX) until
   * every group's leader is its preferred node (src/node/group-host.ts,
   * preferredLeader), and a run whose leaders do not end spread is a violation.
   * Leaders spread at G > 1 in every run, as in the node; false: not at all.
   */
  spreadCheck?: boolean;
  /**
   * An operator's member remove and re-add, under the schedule's faults:
   * node `node` (modulo the node count) is removed from group 0 at
   * `removeAtMs` and added back (a learner, then a voter once caught up) at
   * `readdAtMs`, both after setup; every other group follows group 0 (its
   * leader's host drives it, src/node/group-host.ts). Once quiet, every
   * group's configuration must equal group 0's with the node a voter again.
   */
  memberChurn?: { node: number; removeAtMs: number; readdAtMs: number };
  mutant?: Mutant;
}

/** What a Verdict run and a baseline run both report. */
export interface RunResult {
  violations: string[];
  steps: number;
  crashes: number;
  partitions: number;
  txns: number;
  committed: number;
  crashPointsFired: number;
}

export interface SystemResult extends RunResult {
  virtualMs: number;
  /** Lost synced tails and corrupted records injected; starts refused for a corrupted record (then repaired). */
  diskFaults: number;
  refusals: number;
  /** Crashes and partitions that struck a node while it led a quiesced group (G > 1; system-world.ts). */
  quietFaults: number;
}
