// proto/raft.proto, loaded once, with the wire shapes that @grpc/proto-loader
// produces under LOAD_OPTIONS and the codec between them and the Raft types.
// The wire types are generated from the proto with the same options
// (scripts/gen-proto.mjs, checked by test/unit/gen-proto.test.ts).
import { protoFile, protoService } from './proto-file.ts';
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Entry__Output as GenEntry } from './gen/raft/verdict/raft/Entry.ts';
import type { ConfState__Output as GenConfState } from './gen/raft/verdict/raft/ConfState.ts';
import type { Snapshot__Output as GenSnapshot } from './gen/raft/verdict/raft/Snapshot.ts';
import type { Message__Output as GenMessage } from './gen/raft/verdict/raft/Message.ts';
import type { Batch__Output as GenBatch } from './gen/raft/verdict/raft/Batch.ts';
import type { StreamAck__Output as GenStreamAck } from './gen/raft/verdict/raft/StreamAck.ts';
import type { StatusRequest__Output as GenStatusRequest } from './gen/raft/verdict/raft/StatusRequest.ts';
import type { PeerStatus__Output as GenPeerStatus } from './gen/raft/verdict/raft/PeerStatus.ts';
import type { NodeStatus__Output as GenNodeStatus } from './gen/raft/verdict/raft/NodeStatus.ts';
import type { PutRequest__Output as GenPutRequest } from './gen/raft/verdict/raft/PutRequest.ts';
import type { PutResponse__Output as GenPutResponse } from './gen/raft/verdict/raft/PutResponse.ts';
import type { StreamedPut__Output as GenStreamedPut } from './gen/raft/verdict/raft/StreamedPut.ts';
import type { StreamedPuts__Output as GenStreamedPuts } from './gen/raft/verdict/raft/StreamedPuts.ts';
import type { StreamedPutAnswer__Output as GenStreamedPutAnswer } from './gen/raft/verdict/raft/StreamedPutAnswer.ts';
import type { StreamedPutAnswers__Output as GenStreamedPutAnswers } from './gen/raft/verdict/raft/StreamedPutAnswers.ts';
import type { TransferLeaderRequest__Output as GenTransferLeaderRequest } from './gen/raft/verdict/raft/TransferLeaderRequest.ts';
import type { TransferLeaderResponse__Output as GenTransferLeaderResponse } from './gen/raft/verdict/raft/TransferLeaderResponse.ts';
import type { Member__Output as GenMember } from './gen/raft/verdict/raft/Member.ts';
import type { AddMemberRequest__Output as GenAddMemberRequest } from './gen/raft/verdict/raft/AddMemberRequest.ts';
import type { RemoveMemberRequest__Output as GenRemoveMemberRequest } from './gen/raft/verdict/raft/RemoveMemberRequest.ts';
import type { ListMembersRequest__Output as GenListMembersRequest } from './gen/raft/verdict/raft/ListMembersRequest.ts';
import type { Members__Output as GenMembers } from './gen/raft/verdict/raft/Members.ts';
import type { HistoryQuery__Output as GenHistoryQuery } from './gen/raft/verdict/raft/HistoryQuery.ts';
import type { HistoryPage__Output as GenHistoryPage } from './gen/raft/verdict/raft/HistoryPage.ts';
import type { RaftDefinition, RaftHandlers as GenRaftHandlers } from './gen/raft/verdict/raft/Raft.ts';
import type { RaftNodeDefinition, RaftNodeHandlers as GenRaftNodeHandlers } from './gen/raft/verdict/raft/RaftNode.ts';
import type { GroupMessage } from './types.ts';
import type { Wire, WireHandlers } from './wire.ts';
import { assert } from '../util/assert.ts';
import {
  EMPTY,
  EntryType,
  LOCAL_MESSAGES,
  MessageType,
  entryBytes,
  type ConfState,
  type Entry,
  type Message,
  type Snapshot,
} from '../raft/types.ts';

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

// ---- Wire shapes: the generated types (src/transport/gen/raft/), camelCase as proto-loader maps the snake_case fields
// ----

export type WireEntry = Wire<GenEntry>;
export type WireConfState = Wire<GenConfState>;
export type WireSnapshot = Wire<GenSnapshot>;
/**
 * A Raft message on the wire. `group` is optional where the generated type
 * has it always: an encoder leaves it out for group 0 (proto-loader writes a
 * present zero, which would change the bytes of a cluster of one group), and
 * a reader takes an absent one as 0.
 */
export type WireMessage = Omit<Wire<GenMessage>, 'group'> & { group?: number };
/** A batch on the wire; `quiescedGroups` may be absent (a cluster of one group never sets it). */
export type WireBatch = Omit<Wire<GenBatch>, 'messages' | 'quiescedGroups'> & {
  messages: WireMessage[];
  quiescedGroups?: number[];
};
export type WireStreamAck = Wire<GenStreamAck>;
export type StatusRequest = Wire<GenStatusRequest>;
export type PeerStatus = Wire<GenPeerStatus>;
export type NodeStatus = Wire<GenNodeStatus>;
export type PutRequest = Wire<GenPutRequest>;
export type PutResponse = Wire<GenPutResponse>;
export type StreamedPut = Wire<GenStreamedPut>;
export type StreamedPuts = Wire<GenStreamedPuts>;
export type StreamedPutAnswer = Wire<GenStreamedPutAnswer>;
export type StreamedPutAnswers = Wire<GenStreamedPutAnswers>;
export type TransferLeaderRequest = Wire<GenTransferLeaderRequest>;
export type TransferLeaderResponse = Wire<GenTransferLeaderResponse>;
export type Member = Wire<GenMember>;
export type AddMemberRequest = Wire<GenAddMemberRequest>;
export type RemoveMemberRequest = Wire<GenRemoveMemberRequest>;
export type ListMembersRequest = Wire<GenListMembersRequest>;
export type Members = Wire<GenMembers>;
export type HistoryQueryWire = Wire<GenHistoryQuery>;
export type HistoryPageWire = Wire<GenHistoryPage>;

/** What a node implements to serve `verdict.raft.RaftNode`. */
export type RaftNodeHandlers = WireHandlers<GenRaftNodeHandlers, RaftNodeDefinition>;
export type RaftHandlers = WireHandlers<GenRaftHandlers, RaftDefinition>;

export const raftService = protoService<RaftHandlers>(packageDefinition, PROTO_PATH, 'verdict.raft.Raft', ['Stream']);
export const raftNodeService = protoService<RaftNodeHandlers>(packageDefinition, PROTO_PATH, 'verdict.raft.RaftNode', [
  'Status',
  'Put',
  'PutStream',
  'TransferLeader',
  'AddMember',
  'RemoveMember',
  'ListMembers',
  'History',
]);

export const streamMethod = raftService.Stream as grpc.MethodDefinition<WireBatch, WireStreamAck>;
export const putStreamMethod = raftNodeService.PutStream as grpc.MethodDefinition<StreamedPuts, StreamedPutAnswers>;

// ---- Codec: Message <-> WireMessage ----
//
// Outbound, the message is this node's own: a value that cannot be encoded is
// this node's bug, and an assertion stops it. Inbound, the message is a
// peer's (or anyone's who reached the port): a value that cannot be decoded
// is refused with a WireDecodeError naming the field, and the stream drops
// that message and goes on (src/transport/grpc.ts). The receiving edge
// (src/transport/raft-edge.ts) checks every field before decoding, so a
// refusal here is a second line, never an assertion on someone else's input.

/** A peer's message that cannot be decoded; `field` is the path at fault ("entries[0].type"). */
export class WireDecodeError extends Error {
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`${field} ${detail}`);
    this.name = 'WireDecodeError';
  }
}

/**
 * Our own number, about to be sent: uint64 on the wire, number in memory, so anything past 2^53 would silently round.
 */
function safeUint(n: number, what: string): number {
  assert(Number.isSafeInteger(n) && n >= 0, `${what} is a safe unsigned integer (got ${n})`);
  return n;
}

/** A peer's number: the same rule, as a refusal. */
function wireUint(n: unknown, field: string): number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0)
    throw new WireDecodeError(field, `is not an unsigned safe integer (${shown(n)})`);
  return n;
}

/** A peer's bytes, as a private copy: a decoded Buffer is a view into the whole received frame. */
function wireBytes(b: unknown, field: string): Uint8Array {
  if (!(b instanceof Uint8Array)) throw new WireDecodeError(field, 'is not bytes');
  return ownBytes(b);
}

function wireId(v: unknown, field: string): string {
  if (typeof v !== 'string') throw new WireDecodeError(field, 'is not a node id');
  return v;
}

function wireIds(v: unknown, field: string): string[] {
  if (!Array.isArray(v)) throw new WireDecodeError(field, 'is not a list of node ids');
  return v.map((id, i) => wireId(id, `${field}[${i}]`));
}

/** A value echoed into a refusal, cut short: it came from the network. */
function shown(v: unknown): string {
  const s = typeof v === 'string' ? JSON.stringify(v) : String(v);
  return s.length <= 40 ? s : `${s.slice(0, 40)}…`;
}

function ownBytes(b: Uint8Array): Uint8Array {
  return b.byteLength === 0 ? EMPTY : new Uint8Array(b);
}

function isWireType(t: unknown): t is MessageType {
  return typeof t === 'number' && Number.isInteger(t) && t in MessageType && !LOCAL_MESSAGES.has(t);
}

function entryToWire(e: Entry): WireEntry {
  assert(e.type in EntryType, `entry type ${e.type} is known`);
  return { term: safeUint(e.term, 'entry.term'), index: safeUint(e.index, 'entry.index'), type: e.type, data: e.data };
}

function entryFromWire(w: WireEntry, field: string): Entry {
  if (w === null || typeof w !== 'object') throw new WireDecodeError(field, 'is not an entry');
  if (typeof w.type !== 'number' || !Number.isInteger(w.type) || !(w.type in EntryType))
    throw new WireDecodeError(`${field}.type`, `is not an entry type this version knows (${shown(w.type)})`);
  return {
    term: wireUint(w.term, `${field}.term`),
    index: wireUint(w.index, `${field}.index`),
    type: w.type as EntryType,
    data: wireBytes(w.data, `${field}.data`),
  };
}

function confStateFromWire(w: WireConfState | null | undefined): ConfState {
  if (w === null || w === undefined) return { voters: [], learners: [], votersOutgoing: [] };
  const f = 'snapshot.metadata.confState';
  return {
    voters: wireIds(w.voters, `${f}.voters`),
    learners: wireIds(w.learners, `${f}.learners`),
    votersOutgoing: wireIds(w.votersOutgoing, `${f}.votersOutgoing`),
  };
}

function snapshotToWire(s: Snapshot): WireSnapshot {
  const { index, term, confState } = s.metadata;
  return {
    metadata: { index: safeUint(index, 'snapshot.index'), term: safeUint(term, 'snapshot.term'), confState },
    data: s.data,
  };
}

function snapshotFromWire(w: WireSnapshot): Snapshot {
  if (typeof w !== 'object') throw new WireDecodeError('snapshot', 'is not a snapshot');
  const md = w.metadata;
  return {
    metadata: {
      index: wireUint(md?.index ?? 0, 'snapshot.metadata.index'),
      term: wireUint(md?.term ?? 0, 'snapshot.metadata.term'),
      confState: confStateFromWire(md?.confState),
    },
    data: wireBytes(w.data, 'snapshot.data'),
  };
}

/** The largest group number the wire carries: the field is a uint32. */
export const WIRE_GROUP_MAX = 2 ** 32 - 1;

/** A group's message, encoded: toWire's fields and the group, left out for group 0 so that its bytes are toWire's. */
export function toWireEnvelope(gm: GroupMessage): WireMessage {
  assert(
    Number.isInteger(gm.group) && gm.group >= 0 && gm.group <= WIRE_GROUP_MAX,
    `a group number fits the wire's uint32 (got ${gm.group})`,
  );
  const w = toWire(gm.message);
  if (gm.group !== 0) w.group = gm.group;
  return w;
}

/**
 * A peer's message with its group, decoded. A message without the field (a
 * peer of one group, or one built before groups) is group 0's. Whether the
 * group exists on this node is the edge's question (raft-edge.ts checkMessage).
 */
export function fromWireEnvelope(w: WireMessage): GroupMessage {
  const message = fromWire(w);
  const g: unknown = w.group ?? 0;
  if (typeof g !== 'number' || !Number.isInteger(g) || g < 0 || g > WIRE_GROUP_MAX)
    throw new WireDecodeError('group', `is not a group number (${shown(g)})`);
  return { group: g, message };
}

/** Group 0's message (toWireEnvelope with group 0): the encoding of a cluster of one group. */
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
 * A peer's message, decoded. Throws WireDecodeError (one line, naming the
 * field) on a message no correct peer would send; never an assertion, since
 * the input is someone else's.
 */
export function fromWire(w: WireMessage): Message {
  if (w === null || typeof w !== 'object') throw new WireDecodeError('message', 'is not a message');
  if (!isWireType(w.type)) throw new WireDecodeError('type', `is not a message type a node sends (${shown(w.type)})`);
  if (!Array.isArray(w.entries)) throw new WireDecodeError('entries', 'is not a list');
  if (typeof w.reject !== 'boolean') throw new WireDecodeError('reject', 'is not a boolean');
  return {
    type: w.type,
    from: wireId(w.from, 'from'),
    to: wireId(w.to, 'to'),
    term: wireUint(w.term, 'term'),
    logTerm: wireUint(w.logTerm, 'logTerm'),
    index: wireUint(w.index, 'index'),
    entries: w.entries.map((e, i) => entryFromWire(e, `entries[${i}]`)),
    commit: wireUint(w.commit, 'commit'),
    reject: w.reject,
    rejectHint: wireUint(w.rejectHint, 'rejectHint'),
    context: wireBytes(w.context, 'context'),
    snapshot: w.snapshot === null || w.snapshot === undefined ? null : snapshotFromWire(w.snapshot),
  };
}

export const codec = { toWire, fromWire, toWireEnvelope, fromWireEnvelope } as const;

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
