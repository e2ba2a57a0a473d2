// Who may send this node Raft traffic (the edge's member check,
// src/transport/raft-edge.ts): the members of the configuration in effect,
// plus every node that a membership change already in this node's log, but
// not yet applied, adds.
//
// Why the second part: a change takes effect on a node when the node applies
// it, and it applies it only once it learns the entry is committed, which it
// learns from the leader. When that leader is the node the change added
// (a new voter that won an election while this node was restarting, say),
// refusing it would leave this node waiting forever for the commit index
// that would let it accept the leader.

import { ConfChangeType, decodeConfChange } from '../raft/confchange.ts';
import type { RawNode } from '../raft/raw-node.ts';
import { EntryType, type NodeId } from '../raft/types.ts';

export function raftMembers(node: RawNode, whenNone: () => ReadonlySet<NodeId>): () => ReadonlySet<NodeId> {
  let key = '';
  let ids: ReadonlySet<NodeId> = new Set();
  return () => {
    const r = node.raft;
    const applied = r.log.applied;
    const last = r.log.lastIndex();
    const k = `${r.confIndex}:${applied}:${last}`;
    if (k === key) return ids;
    const cs = r.confState();
    const out = new Set<NodeId>([...cs.voters, ...cs.learners, ...cs.votersOutgoing]);
    // A joining node has no configuration until the leader's log or snapshot gives it one.
    if (out.size === 0) for (const id of whenNone()) out.add(id);
    // The unapplied tail is a few entries in steady state; after a restart it shrinks as the node applies.
    const tail = last > applied ? (r.log.slice(applied + 1, last + 1, Number.MAX_SAFE_INTEGER) ?? []) : [];
    for (const e of tail) {
      if (e.type !== EntryType.ConfChange) continue;
      try {
        const cc = decodeConfChange(e.data);
        if (cc.type !== ConfChangeType.Remove && typeof cc.nodeId === 'string' && cc.nodeId !== '') out.add(cc.nodeId);
      } catch {
        // Checked when it arrived; one that does not decode stops the node when applied (UnappliableEntryError).
      }
    }
    key = k;
    ids = out;
    return ids;
  };
}
