// proto/raft.proto, loaded once, with the wire shapes that @grpc/proto-loader
// produces under LOAD_OPTIONS and the codec between them and the Raft types.
// The wire interfaces are written by hand and kept narrow: they describe only
// what this project reads and writes, so no `any` from the loader leaks out.
import { assert } from '../util/assert.ts';
import { protoFile } from './proto-file.ts';
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { EMPTY, EntryType, LOCAL_MESSAGES, MessageType, entryBytes, type ConfState, type Entry, type Message, type Snapshot } from '../raft/types.ts';

export const PROTO_PATH = protoFile('raft.proto');

/** Numbers as JS numbers, enums as their numbers, every field present. */
export const LOAD_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: Number,
  defaults: true,
  oneofs: true,
};

export const packageDefinition: protoLoader.PackageDefinition = protoLoader.loadSync(PROTO_PATH, LOAD_OPTIONS);

// ---- Wire shapes (camelCase, as proto-loader maps the snake_case fields) ----

export interface WireEntry {
  term: number;
  index: number;
  type: number;
  data: Uint8Array;
}

export interface WireConfState {
  voters: string[];
  learners: string[];
  votersOutgoing: string[];
}

export interface WireSnapshot {
  metadata: { index: number; term: number; confState: WireConfState | null } | null;
  data: Uint8Array;
}

export interface WireMessage {
  type: number;
  from: string;
  to: string;
  term: number;
  logTerm: number;
  index: number;
  entries: WireEntry[];
  commit: number;
  reject: boolean;
  rejectHint: number;
  context: Uint8Array;
  snapshot: WireSnapshot | null;
}

export interface WireBatch {
  clusterId: string;
  from: string;
  to: string;
  messages: WireMessage[];
}

export type WireStreamAck = Record<string, never>;

// ---- Admin / status API (service RaftNode) ----

export type StatusRequest = Record<string, never>;

export interface PeerStatus {
  nodeId: string;
  address: string;
  matchIndex: number;
  nextIndex: number;
  state: string;
}

export interface NodeStatus {
  clusterId: string;
  nodeId: string;
  address: string;
  role: string;
  term: number;
  leaderId: string;
  commitIndex: number;
  appliedIndex: number;
  lastIndex: number;
  firstIndex: number;
  peers: PeerStatus[];
  /** The node's process id; 0 from a node that does not report it. */
  pid: number;
}

export interface PutRequest {
  key: string;
  value: Uint8Array;
}

export interface PutResponse {
  index: number;
  leaderId: string;
  leaderAddress: string;
}

export interface StreamedPut {
  id: number;
  /** Null when the client sent none (the wire makes every message field optional). */
  put: PutRequest | null;
}

export interface StreamedPuts {
  puts: StreamedPut[];
}

export interface StreamedPutAnswer {
  id: number;
  response: PutResponse | null;
  code: number;
  details: string;
  leaderAddress: string;
  leaderId: string;
  statusReason: string;
}

export interface StreamedPutAnswers {
  answers: StreamedPutAnswer[];
}

export interface GetRequest {
  key: string;
  linearizable: boolean;
}

export interface GetResponse {
  found: boolean;
  value: Uint8Array;
  appliedIndex: number;
  leaderId: string;
  leaderAddress: string;
}

export interface TransferLeaderRequest {
  to: string;
  timeoutMs: number;
}

export interface TransferLeaderResponse {
  leaderId: string;
  term: number;
}

export interface Member {
  nodeId: string;
  address: string;
  voter: boolean;
  matchIndex: number;
  state: string;
}

export interface AddMemberRequest {
  nodeId: string;
  address: string;
  timeoutMs: number;
}

export interface RemoveMemberRequest {
  nodeId: string;
}

export type ListMembersRequest = Record<string, never>;

export interface Members {
  members: Member[];
  leaderId: string;
  term: number;
  confIndex: number;
}

/** What a node implements to serve `verdict.raft.RaftNode`. */
export interface RaftNodeHandlers extends grpc.UntypedServiceImplementation {
  Status: grpc.handleUnaryCall<StatusRequest, NodeStatus>;
  Put: grpc.handleUnaryCall<PutRequest, PutResponse>;
  PutStream: grpc.handleBidiStreamingCall<StreamedPuts, StreamedPutAnswers>;
  Get: grpc.handleUnaryCall<GetRequest, GetResponse>;
  TransferLeader: grpc.handleUnaryCall<TransferLeaderRequest, TransferLeaderResponse>;
  AddMember: grpc.handleUnaryCall<AddMemberRequest, Members>;
  RemoveMember: grpc.handleUnaryCall<RemoveMemberRequest, Members>;
  ListMembers: grpc.handleUnaryCall<ListMembersRequest, Members>;
}

export interface RaftHandlers extends grpc.UntypedServiceImplementation {
  Stream: grpc.handleClientStreamingCall<WireBatch, WireStreamAck>;
}

function service(name: string, methods: readonly string[]): protoLoader.ServiceDefinition {
  const def = packageDefinition[name];
  // Message and enum definitions carry a `format`; services are plain maps of methods.
  assert(def !== undefined && !('format' in def), `${name} is a service in ${PROTO_PATH}`);
  const svc = def as protoLoader.ServiceDefinition;
  for (const m of methods) assert(svc[m] !== undefined, `${name}.${m} is defined in ${PROTO_PATH}`);
  return svc;
}

// The casts narrow proto-loader's `object` message types to the wire shapes
// above; LOAD_OPTIONS is what makes those shapes true.
export const raftService = service('verdict.raft.Raft', ['Stream']) as unknown as grpc.ServiceDefinition<RaftHandlers>;
export const raftNodeService = service('verdict.raft.RaftNode', [
  'Status',
  'Put',
  'PutStream',
  'Get',
  'TransferLeader',
  'AddMember',
  'RemoveMember',
  'ListMembers',
]) as unknown as grpc.ServiceDefinition<RaftNodeHandlers>;

export const streamMethod = raftService.Stream as grpc.MethodDefinition<WireBatch, WireStreamAck>;
export const putStreamMethod = raftNodeService.PutStream as grpc.MethodDefinition<StreamedPuts, StreamedPutAnswers>;

// ---- Codec: Message <-> WireMessage, asserting on both sides ----

function safeUint(n: number, what: string): number {
  // uint64 on the wire, number in memory: anything past 2^53 would silently round.
  assert(Number.isSafeInteger(n) && n >= 0, `${what} is a safe unsigned integer (got ${n})`);
  return n;
}

/** A private copy: a decoded Buffer is a view into the whole received frame. */
function ownBytes(b: Uint8Array): Uint8Array {
  return b.byteLength === 0 ? EMPTY : new Uint8Array(b);
}

function isWireType(t: number): t is MessageType {
  return Number.isInteger(t) && t in MessageType && !LOCAL_MESSAGES.has(t);
}

function entryToWire(e: Entry): WireEntry {
  assert(e.type in EntryType, `entry type ${e.type} is known`);
  return { term: safeUint(e.term, 'entry.term'), index: safeUint(e.index, 'entry.index'), type: e.type, data: e.data };
}

function entryFromWire(w: WireEntry): Entry {
  assert(Number.isInteger(w.type) && w.type in EntryType, `entry type ${w.type} is known`);
  return {
    term: safeUint(w.term, 'entry.term'),
    index: safeUint(w.index, 'entry.index'),
    type: w.type as EntryType,
    data: ownBytes(w.data),
  };
}

function confStateFromWire(w: WireConfState | null): ConfState {
  if (w === null) return { voters: [], learners: [], votersOutgoing: [] };
  return { voters: [...w.voters], learners: [...w.learners], votersOutgoing: [...w.votersOutgoing] };
}

function snapshotToWire(s: Snapshot): WireSnapshot {
  const { index, term, confState } = s.metadata;
  return {
    metadata: { index: safeUint(index, 'snapshot.index'), term: safeUint(term, 'snapshot.term'), confState },
    data: s.data,
  };
}

function snapshotFromWire(w: WireSnapshot): Snapshot {
  const md = w.metadata;
  return {
    metadata: {
      index: safeUint(md?.index ?? 0, 'snapshot.index'),
      term: safeUint(md?.term ?? 0, 'snapshot.term'),
      confState: confStateFromWire(md?.confState ?? null),
    },
    data: ownBytes(w.data),
  };
}

export function toWire(m: Message): WireMessage {
  assert(isWireType(m.type), `message type ${MessageType[m.type] ?? m.type} may be sent over the wire`);
  return {
    type: m.type,
    from: m.from,
    to: m.to,
    term: safeUint(m.term, 'term'),
    logTerm: safeUint(m.logTerm, 'logTerm'),
    index: safeUint(m.index, 'index'),
    entries: m.entries.map(entryToWire),
    commit: safeUint(m.commit, 'commit'),
    reject: m.reject,
    rejectHint: safeUint(m.rejectHint, 'rejectHint'),
    context: m.context,
    snapshot: m.snapshot === null ? null : snapshotToWire(m.snapshot),
  };
}

/**
 * Throws InvariantError on a message no correct peer would send; inbound
 * messages are checked by src/transport/raft-edge.ts first, so that is this
 * node's own bug, never a peer's input.
 */
export function fromWire(w: WireMessage): Message {
  assert(isWireType(w.type), `received message type ${w.type} is a wire type`);
  return {
    type: w.type,
    from: w.from,
    to: w.to,
    term: safeUint(w.term, 'term'),
    logTerm: safeUint(w.logTerm, 'logTerm'),
    index: safeUint(w.index, 'index'),
    entries: w.entries.map(entryFromWire),
    commit: safeUint(w.commit, 'commit'),
    reject: w.reject,
    rejectHint: safeUint(w.rejectHint, 'rejectHint'),
    context: ownBytes(w.context),
    snapshot: w.snapshot === null ? null : snapshotFromWire(w.snapshot),
  };
}

export const codec = { toWire, fromWire } as const;

/** A cheap upper-bound estimate of a message's encoded size, for queue and batch limits. */
export function messageBytes(m: Message): number {
  let n = 64 + m.from.length + m.to.length + m.context.byteLength;
  for (const e of m.entries) n += entryBytes(e);
  if (m.snapshot !== null) {
    const cs = m.snapshot.metadata.confState;
    n += m.snapshot.data.byteLength + 32;
    for (const id of [...cs.voters, ...cs.learners, ...cs.votersOutgoing]) n += id.length + 2;
  }
  return n;
}
