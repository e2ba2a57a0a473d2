// Where trust ends for node-to-node traffic: every Raft batch that arrives on
// the `verdict.raft.Raft` stream is checked here, field by field, before any
// of it reaches the Raft core. The core asserts its own invariants; it must
// never be the first to notice that a peer (or anyone who can reach the
// port) sent nonsense, because an assertion there stops the node, and a term
// it adopted first is already on its way to the disk.
//
// The checks are pure: the caller passes what the node knows now (its id,
// cluster id, members and term) and what the state machine accepts as an
// entry or a snapshot. A refusal names the field and the reason; the reason
// is one of a closed set, so it can label a metric.

import { EntryType, LOCAL_MESSAGES, MessageType, type NodeId } from '../raft/types.ts';
import type { WireBatch, WireConfState, WireEntry, WireMessage, WireSnapshot } from './proto.ts';

/**
 * The largest term or index a peer may send. Our own term and log grow by one
 * per election or entry from whatever a peer made us adopt, so the bound
 * leaves 2^32 steps of room below 2^53 - 1: no value that passes here can
 * later make this node's own encoder (src/transport/proto.ts) refuse a number.
 */
export const WIRE_NUMBER_MAX = Number.MAX_SAFE_INTEGER - 2 ** 32;

/**
 * How far ahead of ours a peer's term may be. With PreVote every term is won
 * by a quorum's pre-vote, so a real gap is the number of elections this node
 * missed; 2^32 of them cannot happen, while a single message can no longer
 * carry the cluster most of the way to the end of the number range.
 */
export const TERM_AHEAD_MAX = 2 ** 32;

export interface RaftEdgeLimits {
  /** Node and cluster ids, in UTF-16 code units (ids are ASCII in practice). */
  idLengthMax: number;
  /** Messages in one batch: twice the sender's default queue bound (src/transport/grpc.ts). */
  messagesPerBatchMax: number;
  /** Entries in one append: appendBytesMax (1 MiB) over the smallest entry's 24-byte estimate, rounded up. */
  entriesPerMessageMax: number;
  /** One entry's payload; nothing larger fits in a gRPC message (MESSAGE_BYTES_MAX). */
  entryBytesMax: number;
  /** ReadIndex ids are 8 bytes and a campaign mark 1; the bound leaves room, nothing more. */
  contextBytesMax: number;
  /** Ids in each list of a snapshot's configuration. */
  membersMax: number;
}

export const DEFAULT_EDGE_LIMITS: RaftEdgeLimits = {
  idLengthMax: 128,
  messagesPerBatchMax: 8_192,
  entriesPerMessageMax: 65_536,
  entryBytesMax: 64 * 1024 * 1024,
  contextBytesMax: 1_024,
  membersMax: 1_024,
};

/** What the node knows when a batch arrives. */
export interface RaftEdgeView {
  clusterId: string;
  selfId: NodeId;
  /** Voters, learners and outgoing voters of the configuration in effect here. */
  members: ReadonlySet<NodeId>;
  /** This node's current term. */
  term: number;
  /** Why the state machine could not apply this entry's payload, or null (Normal and ConfChange entries). */
  entryProblem?: (type: EntryType, data: Uint8Array) => string | null;
  /** Why the state machine could not restore this snapshot's data, or null. */
  snapshotProblem?: (data: Uint8Array) => string | null;
  /** The decision groups this node hosts (docs/architecture.md, "Decision groups"); 1 when absent. */
  groups?: number;
}

/** The closed set of reasons, the label of verdict_raft_messages_refused_total. */
export const REFUSAL_REASONS = [
  'undecodable',
  'cluster',
  'destination',
  'sender',
  'batch_size',
  'type',
  'number',
  'term_ahead',
  'entries',
  'entry_type',
  'entry_data',
  'context',
  'snapshot',
  'state',
  'group',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export interface Refusal {
  reason: RefusalReason;
  /** The field at fault, as a path: "messages[2].entries[0].index". */
  field: string;
  detail: string;
}

const refusal = (reason: RefusalReason, field: string, detail: string): Refusal => ({ reason, field, detail });

/** Messages that a node relays on behalf of another: their `from` names the node that asked, not the sender. */
export const RELAYED_TYPES: ReadonlySet<MessageType> = new Set([MessageType.ReadIndex, MessageType.TransferLeader]);

/** A value echoed into a log line or an error, cut short: a hostile id may be 100 kB. */
export function clip(v: unknown, max = 64): string {
  const s = typeof v === 'string' ? v : String(v);
  return s.length <= max ? s : `${s.slice(0, max)}…(${s.length} chars)`;
}

function idProblem(v: unknown, field: string, lim: RaftEdgeLimits, reason: RefusalReason): Refusal | null {
  if (typeof v !== 'string' || v === '') return refusal(reason, field, 'is missing');
  if (v.length > lim.idLengthMax)
    return refusal(reason, field, `is ${v.length} characters long (at most ${lim.idLengthMax})`);
  return null;
}

function numberProblem(v: unknown, field: string, max = WIRE_NUMBER_MAX): Refusal | null {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    return refusal('number', field, `${clip(v)} is not an unsigned safe integer`);
  if (v > max) return refusal('number', field, `${v} is beyond ${max}`);
  return null;
}

function bytesLength(v: unknown): number | null {
  return v instanceof Uint8Array ? v.byteLength : null;
}

/**
 * The checks of a batch's envelope that end the stream: a batch for another
 * cluster or node (R7), or from a sender that is not a member here.
 */
export function checkEnvelope(
  b: WireBatch,
  view: RaftEdgeView,
  lim: RaftEdgeLimits = DEFAULT_EDGE_LIMITS,
): Refusal | null {
  if (b.clusterId !== view.clusterId) {
    return refusal(
      'cluster',
      'clusterId',
      `cluster id mismatch: message for cluster "${clip(b.clusterId)}" reached a node of cluster "${view.clusterId}"`,
    );
  }
  if (b.to !== view.selfId)
    return refusal(
      'destination',
      'to',
      `node id mismatch: message for node "${clip(b.to)}" reached node "${view.selfId}"`,
    );
  const bad = idProblem(b.from, 'from', lim, 'sender');
  if (bad) return bad;
  if (b.from === view.selfId)
    return refusal('sender', 'from', `a batch claims to come from this node (${view.selfId})`);
  if (!view.members.has(b.from))
    return refusal(
      'sender',
      'from',
      `"${clip(b.from)}" is not a member of the current configuration (${[...view.members].join(', ') || 'none'})`,
    );
  if (!Array.isArray(b.messages)) return refusal('batch_size', 'messages', 'is missing');
  if (b.messages.length > lim.messagesPerBatchMax)
    return refusal(
      'batch_size',
      'messages',
      `${b.messages.length} messages in one batch (at most ${lim.messagesPerBatchMax})`,
    );
  return quiescedGroupsProblem(b, view);
}

/**
 * The groups a batch says its sender leads quiesced (docs/architecture.md, "Idle groups quiesce"): a list of this
 * node's groups, each at most once. A follower takes the batch as its leader's heartbeat for each.
 */
function quiescedGroupsProblem(b: WireBatch, view: RaftEdgeView): Refusal | null {
  const qg: unknown = b.quiescedGroups ?? [];
  const groups = view.groups ?? 1;
  if (!Array.isArray(qg)) return refusal('group', 'quiescedGroups', 'is not a list');
  if (qg.length > groups)
    return refusal('group', 'quiescedGroups', `${qg.length} groups named (this node has ${groups})`);
  const seen = new Set<number>();
  for (let i = 0; i < qg.length; i++) {
    const g: unknown = qg[i];
    if (typeof g !== 'number' || !Number.isInteger(g) || g < 0 || g >= groups || seen.has(g))
      return refusal(
        'group',
        `quiescedGroups[${i}]`,
        `${clip(g)} is not a group of this node named once (it has ${groups})`,
      );
    seen.add(g);
  }
  return null;
}

/** The checks of one message of a batch that passed checkEnvelope; a refusal drops this message only. */
export function checkMessage(
  m: WireMessage,
  b: WireBatch,
  view: RaftEdgeView,
  lim: RaftEdgeLimits = DEFAULT_EDGE_LIMITS,
): Refusal | null {
  if (m === null || typeof m !== 'object') return refusal('type', '', 'is not a message');
  const t = m.type;
  // Prop is never sent: a follower redirects clients, it does not forward proposals.
  if (typeof t !== 'number' || !(t in MessageType) || LOCAL_MESSAGES.has(t) || t === MessageType.Prop) {
    return refusal('type', 'type', `${clip(t)} is not a message type a node sends`);
  }
  const name = MessageType[t];
  // A message for a group this node does not host would reach the wrong
  // group's Raft core; a cluster of one group has only group 0, which the
  // wire leaves out (an absent field reads as 0).
  const groups = view.groups ?? 1;
  const g: unknown = m.group ?? 0;
  if (typeof g !== 'number' || !Number.isInteger(g) || g < 0 || g >= groups)
    return refusal('group', 'group', `${clip(g)} is not a group of this node (it has ${groups})`);

  if (m.to !== view.selfId)
    return refusal('destination', 'to', `message for "${clip(m.to)}" in a batch for "${view.selfId}"`);
  const badFrom = idProblem(m.from, 'from', lim, 'sender');
  if (badFrom) return badFrom;
  if (RELAYED_TYPES.has(t)) {
    if (!view.members.has(m.from))
      return refusal('sender', 'from', `${name} relayed for "${clip(m.from)}", which is not a member`);
  } else if (m.from !== b.from) {
    return refusal('sender', 'from', `${name} from "${clip(m.from)}" in a batch from "${clip(b.from)}"`);
  }

  for (const f of ['term', 'logTerm', 'index', 'commit', 'rejectHint'] as const) {
    const bad = numberProblem(m[f], f);
    if (bad) return bad;
  }
  // Term 0 is how the core tells a local message from a peer's: a peer's
  // message without a term would skip the term check altogether. Forwarded
  // reads are the one exception, and they never carry one.
  if (t === MessageType.ReadIndex) {
    if (m.term !== 0)
      return refusal('number', 'term', `ReadIndex carries term ${m.term}; a forwarded read carries none`);
  } else if (m.term === 0) {
    return refusal('number', 'term', `${name} without a term`);
  }
  if (m.term > view.term + TERM_AHEAD_MAX)
    return refusal(
      'term_ahead',
      'term',
      `${m.term} is more than ${TERM_AHEAD_MAX} ahead of this node's term ${view.term}`,
    );
  if (m.logTerm > m.term && t !== MessageType.ReadIndex) {
    // A vote request's logTerm is the candidate's last term, an append's the leader's: neither exceeds the message's
    // term.
    if (t === MessageType.App || t === MessageType.Vote || t === MessageType.PreVote)
      return refusal('number', 'logTerm', `${m.logTerm} is beyond the message's term ${m.term}`);
  }

  const ctx = bytesLength(m.context);
  if (ctx === null) return refusal('context', 'context', 'is not bytes');
  if (ctx > lim.contextBytesMax) return refusal('context', 'context', `${ctx} bytes (at most ${lim.contextBytesMax})`);

  const entries = checkEntries(m, view, lim);
  if (entries) return entries;

  if (t === MessageType.Snap) return checkSnapshot(m.snapshot, m.term, view, lim);
  if (m.snapshot !== null && m.snapshot !== undefined)
    return refusal('snapshot', 'snapshot', `${name} carries a snapshot`);
  return null;
}

function checkEntries(m: WireMessage, view: RaftEdgeView, lim: RaftEdgeLimits): Refusal | null {
  const es = m.entries;
  if (!Array.isArray(es)) return refusal('entries', 'entries', 'is not a list');
  if (es.length === 0) return null;
  if (m.type !== MessageType.App)
    return refusal('entries', 'entries', `${MessageType[m.type]} carries ${es.length} entries`);
  if (es.length > lim.entriesPerMessageMax)
    return refusal('entries', 'entries', `${es.length} entries in one append (at most ${lim.entriesPerMessageMax})`);
  // Entries follow (index, logTerm) one by one, with terms that never go
  // back and never pass the leader's: what the storage asserts on write.
  let prevTerm = m.logTerm;
  for (let i = 0; i < es.length; i++) {
    const e: WireEntry = es[i];
    const at = `entries[${i}]`;
    if (e === null || typeof e !== 'object') return refusal('entries', at, 'is not an entry');
    const badTerm = numberProblem(e.term, `${at}.term`) ?? numberProblem(e.index, `${at}.index`);
    if (badTerm) return { ...badTerm, reason: 'entries' };
    if (e.index !== m.index + 1 + i)
      return refusal(
        'entries',
        `${at}.index`,
        `${e.index} does not follow ${i === 0 ? `the append's index ${m.index}` : `entry ${es[i - 1].index}`}`,
      );
    if (e.term === 0 || e.term < prevTerm)
      return refusal('entries', `${at}.term`, `${e.term} goes back from ${prevTerm}`);
    if (e.term > m.term) return refusal('entries', `${at}.term`, `${e.term} is beyond the leader's term ${m.term}`);
    prevTerm = e.term;
    if (e.type !== EntryType.Normal && e.type !== EntryType.ConfChange)
      return refusal('entry_type', `${at}.type`, `${clip(e.type)} is not an entry type`);
    const n = bytesLength(e.data);
    if (n === null) return refusal('entry_data', `${at}.data`, 'is not bytes');
    if (n > lim.entryBytesMax) return refusal('entry_data', `${at}.data`, `${n} bytes (at most ${lim.entryBytesMax})`);
    const why = view.entryProblem?.(e.type, e.data) ?? null;
    if (why !== null) return refusal('entry_data', `${at}.data`, `entry ${e.index}: ${why}`);
  }
  return null;
}

function checkSnapshot(
  s: WireSnapshot | null | undefined,
  msgTerm: number,
  view: RaftEdgeView,
  lim: RaftEdgeLimits,
): Refusal | null {
  if (s === null || s === undefined || typeof s !== 'object')
    return refusal('snapshot', 'snapshot', 'Snap without a snapshot');
  const md = s.metadata;
  if (md === null || md === undefined || typeof md !== 'object')
    return refusal('snapshot', 'snapshot.metadata', 'is missing');
  const badNum = numberProblem(md.index, 'snapshot.metadata.index') ?? numberProblem(md.term, 'snapshot.metadata.term');
  if (badNum) return { ...badNum, reason: 'snapshot' };
  if (md.index === 0 || md.term === 0)
    return refusal(
      'snapshot',
      'snapshot.metadata',
      `index ${md.index} and term ${md.term}: an empty snapshot is never sent`,
    );
  if (md.term > msgTerm)
    return refusal('snapshot', 'snapshot.metadata.term', `${md.term} is beyond the leader's term ${msgTerm}`);
  const cs = checkConfState(md.confState, lim);
  if (cs) return cs;
  const n = bytesLength(s.data);
  if (n === null) return refusal('snapshot', 'snapshot.data', 'is not bytes');
  const why = view.snapshotProblem?.(s.data) ?? null;
  if (why !== null) return refusal('snapshot', 'snapshot.data', why);
  return null;
}

function checkConfState(cs: WireConfState | null | undefined, lim: RaftEdgeLimits): Refusal | null {
  const at = 'snapshot.metadata.confState';
  if (cs === null || cs === undefined || typeof cs !== 'object') return refusal('snapshot', at, 'is missing');
  const lists = { voters: cs.voters, learners: cs.learners, votersOutgoing: cs.votersOutgoing };
  for (const [k, ids] of Object.entries(lists)) {
    if (!Array.isArray(ids)) return refusal('snapshot', `${at}.${k}`, 'is not a list');
    if (ids.length > lim.membersMax)
      return refusal('snapshot', `${at}.${k}`, `${ids.length} ids (at most ${lim.membersMax})`);
    for (let i = 0; i < ids.length; i++) {
      const bad = idProblem(ids[i], `${at}.${k}[${i}]`, lim, 'snapshot');
      if (bad) return bad;
    }
    if (new Set(ids).size !== ids.length) return refusal('snapshot', `${at}.${k}`, 'names a node twice');
  }
  // A snapshot the leader took always has voters: a configuration without them could never elect again.
  if (cs.voters.length === 0) return refusal('snapshot', `${at}.voters`, 'is empty');
  const voters = new Set(cs.voters);
  const both = cs.learners.find((id) => voters.has(id));
  if (both !== undefined) return refusal('snapshot', `${at}.learners`, `"${clip(both)}" is both a voter and a learner`);
  return null;
}
