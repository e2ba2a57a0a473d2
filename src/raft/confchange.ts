// Membership changes, one server at a time (Ongaro's dissertation, §4.1).
//
// A change adds a learner, promotes a learner to voter (or adds a voter
// outright), or removes a member. Only one change may be pending: the leader
// refuses a new one until the previous one is applied, and a new leader
// refuses until it applied an entry of its own term (the fix for the
// single-server bug found in 2015). A change takes effect on each node when
// it is applied (etcd's rule), so the entry itself commits under the old
// configuration.
//
// The entry carries, besides the change, the configuration it applies to
// (`base`): a node that replays the log from index 1 with no configuration
// (a new node fed entries rather than a snapshot) adopts it, and every other
// node asserts that it matches its own — a cheap, always-on check that the
// changes are applied in the same order everywhere. `context` is opaque to
// the core (the node layer puts the members' addresses there).

import { assert } from '../util/assert.ts';
import { type ConfState, type NodeId } from './types.ts';

export enum ConfChangeType {
  AddLearner = 0,
  /** Promotes a learner, or adds a voter directly. */
  AddVoter = 1,
  Remove = 2,
}

export interface ConfChange {
  type: ConfChangeType;
  nodeId: NodeId;
  /** The configuration before the change, stamped by the proposing leader. */
  base: ConfState;
  /** Opaque to the core. */
  context: Uint8Array;
}

export class ConfChangeRefusedError extends Error {
  constructor(why: string) {
    super(`membership change refused: ${why}`);
    this.name = 'ConfChangeRefusedError';
  }
}

const sorted = (xs: readonly NodeId[]): NodeId[] => [...xs].sort();

export function sameConfState(a: ConfState, b: ConfState): boolean {
  const eq = (x: readonly NodeId[], y: readonly NodeId[]): boolean =>
    x.length === y.length && sorted(x).every((v, i) => v === sorted(y)[i]);
  return eq(a.voters, b.voters) && eq(a.learners, b.learners) && eq(a.votersOutgoing, b.votersOutgoing);
}

/** Why `cc` cannot be applied to `cs`, or null when it can. */
export function checkConfChange(cs: ConfState, cc: Pick<ConfChange, 'type' | 'nodeId'>): string | null {
  if (cc.nodeId === '') return 'the node id is empty';
  if (cs.votersOutgoing.length > 0) return 'a joint configuration is in effect';
  const voter = cs.voters.includes(cc.nodeId);
  const learner = cs.learners.includes(cc.nodeId);
  switch (cc.type) {
    case ConfChangeType.AddLearner:
      if (voter) return `${cc.nodeId} is already a voter`;
      if (learner) return `${cc.nodeId} is already a learner`;
      return null;
    case ConfChangeType.AddVoter:
      if (voter) return `${cc.nodeId} is already a voter`;
      return null;
    case ConfChangeType.Remove:
      if (!voter && !learner)
        return `${cc.nodeId} is not a member (voters: ${cs.voters.join(', ') || 'none'}; learners: ${cs.learners.join(', ') || 'none'})`;
      if (voter && cs.voters.length === 1)
        return `${cc.nodeId} is the last voter; a cluster cannot remove its last voter`;
      return null;
    default:
      return `unknown change type ${String(cc.type)}`;
  }
}

/** The configuration after `cc`; `cc` must pass checkConfChange. */
export function nextConfState(cs: ConfState, cc: Pick<ConfChange, 'type' | 'nodeId'>): ConfState {
  const id = cc.nodeId;
  const voters = cs.voters.filter((v) => v !== id);
  const learners = cs.learners.filter((v) => v !== id);
  if (cc.type === ConfChangeType.AddLearner) learners.push(id);
  else if (cc.type === ConfChangeType.AddVoter) voters.push(id);
  return { voters, learners, votersOutgoing: [] };
}

// ---- encoding (the data of an EntryType.ConfChange entry) -----------------

interface WireConfChange {
  v: 1;
  type: ConfChangeType;
  nodeId: NodeId;
  base: ConfState;
  context: string;
}

export function encodeConfChange(cc: ConfChange): Uint8Array {
  const w: WireConfChange = {
    v: 1,
    type: cc.type,
    nodeId: cc.nodeId,
    base: cc.base,
    context: Buffer.from(cc.context).toString('base64'),
  };
  return new Uint8Array(Buffer.from(JSON.stringify(w)));
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  let w: WireConfChange;
  try {
    w = JSON.parse(Buffer.from(data).toString('utf8')) as WireConfChange;
  } catch (err) {
    throw new Error(`malformed membership change entry: ${(err as Error).message}`);
  }
  assert(w !== null && typeof w === 'object' && w.v === 1, 'membership change entry: unknown version');
  assert(typeof w.nodeId === 'string' && w.type in ConfChangeType, 'membership change entry: bad type or node id');
  const b = w.base;
  assert(
    Array.isArray(b?.voters) && Array.isArray(b.learners) && Array.isArray(b.votersOutgoing),
    'membership change entry: bad base configuration',
  );
  return {
    type: w.type,
    nodeId: w.nodeId,
    base: { voters: b.voters, learners: b.learners, votersOutgoing: b.votersOutgoing },
    context: new Uint8Array(Buffer.from(w.context ?? '', 'base64')),
  };
}
