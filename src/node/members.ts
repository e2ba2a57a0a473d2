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
  // Called for every inbound message: the answer is kept until the
  // configuration or the log moves, and the configuration's own set until
  // the configuration moves, so a tail without membership changes (the
  // steady state) allocates nothing but its slice.
  let atConf = -1;
  let atApplied = -1;
  let atLast = -1;
  let atLastTerm = -1;
  let ids: ReadonlySet<NodeId> = new Set();
  let baseConfIndex = -1;
  let base: ReadonlySet<NodeId> = new Set();
  return () => {
    const r = node.raft;
    const applied = r.log.applied;
    const last = r.log.lastIndex();
    // The last entry's term too: a new leader may overwrite the tail with as many entries (Log Matching: index and term
    // name the whole log).
    const lastTerm = r.log.lastTerm();
    if (r.confIndex === atConf && applied === atApplied && last === atLast && lastTerm === atLastTerm) return ids;
    if (r.confIndex !== baseConfIndex || base.size === 0) {
      const cs = r.confState();
      const set = new Set<NodeId>([...cs.voters, ...cs.learners, ...cs.votersOutgoing]);
      // A joining node has no configuration until the leader's log or snapshot gives it one.
      base = set.size > 0 ? set : new Set(whenNone());
      baseConfIndex = set.size > 0 ? r.confIndex : -1;
    }
    // The unapplied tail is a few entries in steady state; after a restart it shrinks as the node applies.
    const tail = last > applied ? (r.log.slice(applied + 1, last + 1, Number.MAX_SAFE_INTEGER) ?? []) : [];
    let out: Set<NodeId> | null = null;
    for (const e of tail) {
      if (e.type !== EntryType.ConfChange) continue;
      try {
        const cc = decodeConfChange(e.data);
        if (
          cc.type !== ConfChangeType.Remove &&
          typeof cc.nodeId === 'string' &&
          cc.nodeId !== '' &&
          !base.has(cc.nodeId)
        ) {
          out ??= new Set(base);
          out.add(cc.nodeId);
        }
      } catch {
        // Checked when it arrived; one that does not decode stops the node when applied (UnappliableEntryError).
      }
    }
    atConf = r.confIndex;
    atApplied = applied;
    atLast = last;
    atLastTerm = lastTerm;
    ids = out ?? base;
    return ids;
  };
}
