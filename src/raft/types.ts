// The vocabulary of the Raft core. Everything here is plain data: the core,
// the storage, the transport and the simulator all speak these types, and
// none of them carries behaviour.

/** A node's identity inside one cluster, e.g. "n1". Never the empty string. */
export type NodeId = string;

/** No node: used for "voted for nobody" and "leader unknown". */
export const NONE: NodeId = '';

/**
 * The vote a rejoining node's hard state records (src/raft/raft.ts,
 * Raft.rejoining): it has promised nothing it remembers, so it votes for
 * nobody in any term until a leader proved it whole. Not a node id (ids
 * are letters, digits, ".", "_" and "-"), so it never matches a candidate.
 */
export const REJOINING_VOTE: NodeId = '(rejoining)';

export enum EntryType {
  /** An application command (or an empty entry a new leader appends). */
  Normal = 0,
  /** A membership change; reserved so that adding it later changes no format. */
  ConfChange = 1,
}

export interface Entry {
  term: number;
  index: number;
  type: EntryType;
  data: Uint8Array;
}

/**
 * The state that must be durable before any message that depends on it
 * leaves the node (R6). `commit` is persisted for a faster restart but is
 * not needed for safety.
 */
export interface HardState {
  term: number;
  vote: NodeId;
  commit: number;
}

/**
 * The membership of the cluster. Voters decide; learners only receive the
 * log. `votersOutgoing` is non-empty only during a joint-consensus change
 * (C_old,new): while it is set, every decision needs a majority of both.
 */
export interface ConfState {
  voters: NodeId[];
  learners: NodeId[];
  votersOutgoing: NodeId[];
}

export interface SnapshotMetadata {
  index: number;
  term: number;
  confState: ConfState;
}

export interface Snapshot {
  metadata: SnapshotMetadata;
  data: Uint8Array;
}

export enum MessageType {
  // Local messages: never sent over the wire.
  Hup = 0,
  Beat = 1,
  Prop = 2,
  // Wire messages.
  App = 3,
  AppResp = 4,
  Vote = 5,
  VoteResp = 6,
  PreVote = 7,
  PreVoteResp = 8,
  Snap = 9,
  Heartbeat = 10,
  HeartbeatResp = 11,
  TransferLeader = 12,
  TimeoutNow = 13,
  ReadIndex = 14,
  ReadIndexResp = 15,
  // Local reports from the driver.
  Unreachable = 16,
  SnapStatus = 17,
  CheckQuorum = 18,
}

export const LOCAL_MESSAGES: ReadonlySet<MessageType> = new Set([
  MessageType.Hup,
  MessageType.Beat,
  MessageType.Unreachable,
  MessageType.SnapStatus,
  MessageType.CheckQuorum,
]);

export interface Message {
  type: MessageType;
  from: NodeId;
  to: NodeId;
  term: number;
  /** Term of the entry at `index` (App), or of the last entry (votes). */
  logTerm: number;
  index: number;
  entries: Entry[];
  commit: number;
  reject: boolean;
  /** On a rejected App: the follower's best guess of where the logs agree. */
  rejectHint: number;
  /** Opaque request context: ReadIndex ids, campaign-transfer marks. */
  context: Uint8Array;
  snapshot: Snapshot | null;
}

export function message(fields: Partial<Message> & Pick<Message, 'type'>): Message {
  return {
    from: NONE,
    to: NONE,
    term: 0,
    logTerm: 0,
    index: 0,
    entries: [],
    commit: 0,
    reject: false,
    rejectHint: 0,
    context: EMPTY,
    snapshot: null,
    ...fields,
  };
}

export const EMPTY: Uint8Array = new Uint8Array(0);

export enum Role {
  Follower = 'follower',
  PreCandidate = 'pre-candidate',
  Candidate = 'candidate',
  Leader = 'leader',
}

/** A linearizable read is safe once the state machine has applied `index`. */
export interface ReadState {
  index: number;
  context: Uint8Array;
}

/** Volatile state for observers (status, tests); never persisted. */
export interface SoftState {
  leader: NodeId;
  role: Role;
}

export function emptyConfState(): ConfState {
  return { voters: [], learners: [], votersOutgoing: [] };
}

export function emptySnapshot(): Snapshot {
  return { metadata: { index: 0, term: 0, confState: emptyConfState() }, data: EMPTY };
}

export function isEmptySnapshot(s: Snapshot | null): boolean {
  return s === null || s.metadata.index === 0;
}

export function entryBytes(e: Entry): number {
  // 24 bytes is a fair estimate of the framing around the payload.
  return e.data.byteLength + 24;
}
