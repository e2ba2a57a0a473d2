// Quorum arithmetic, apart from everything else so that it can be checked
// against a brute-force reference (test/unit/quorum.test.ts).
//
// A configuration is a JointConfig: the incoming voters and, only while a
// joint-consensus membership change is in progress, the outgoing voters.
// Every decision (commit index, election) needs a majority of each non-empty
// half. With `outgoing` empty this is plain majority quorum.

import type { NodeId } from './types.ts';

export enum VoteResult {
  Pending = 'pending',
  Lost = 'lost',
  Won = 'won',
}

/** The largest index that a majority of `voters` has acknowledged. */
export function majorityCommitted(voters: ReadonlySet<NodeId>, acked: (id: NodeId) => number | undefined): number {
  const n = voters.size;
  // An empty configuration never blocks the other half of a joint config.
  if (n === 0) return Number.MAX_SAFE_INTEGER;
  const indexes: number[] = [];
  for (const id of voters) indexes.push(acked(id) ?? 0);
  indexes.sort((a, b) => b - a);
  // The (n/2+1)-th largest acknowledged index is held by a majority.
  return indexes[Math.floor(n / 2)];
}

export function majorityVote(voters: ReadonlySet<NodeId>, votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  if (voters.size === 0) return VoteResult.Won;
  let yes = 0;
  let missing = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === undefined) missing++;
    else if (v) yes++;
  }
  const q = Math.floor(voters.size / 2) + 1;
  if (yes >= q) return VoteResult.Won;
  if (yes + missing >= q) return VoteResult.Pending;
  return VoteResult.Lost;
}

export class JointConfig {
  readonly incoming: ReadonlySet<NodeId>;
  readonly outgoing: ReadonlySet<NodeId>;

  constructor(incoming: Iterable<NodeId>, outgoing: Iterable<NodeId> = []) {
    this.incoming = new Set(incoming);
    this.outgoing = new Set(outgoing);
  }

  /** Every voter of either half. */
  ids(): Set<NodeId> {
    return new Set([...this.incoming, ...this.outgoing]);
  }

  isSingleton(id: NodeId): boolean {
    return this.outgoing.size === 0 && this.incoming.size === 1 && this.incoming.has(id);
  }

  committed(acked: (id: NodeId) => number | undefined): number {
    return Math.min(majorityCommitted(this.incoming, acked), majorityCommitted(this.outgoing, acked));
  }

  vote(votes: ReadonlyMap<NodeId, boolean>): VoteResult {
    const a = majorityVote(this.incoming, votes);
    const b = majorityVote(this.outgoing, votes);
    if (a === b) return a;
    if (a === VoteResult.Lost || b === VoteResult.Lost) return VoteResult.Lost;
    return VoteResult.Pending;
  }
}
