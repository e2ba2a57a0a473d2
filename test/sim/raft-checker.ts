// Raft's safety properties, checked as the simulation runs: election safety,
// one vote per term, leader append-only, log matching and leader completeness
// at every persisted Ready, state machine safety at every applied entry.
// Shared by the Raft simulator and the whole-system simulator; it only
// observes.
//
// A Ready is checked when its write lands, and a node keeps stepping while
// the write is in flight: a leader elected in term T can meet term T+1 and
// step down before its first leader Ready is durable. So everything a Ready
// says is read in the term and role it was built in (its hard state, or the
// durable one it left unchanged), never in the node's state of the moment.

import type { Ready, RawNode } from '../../src/raft/raw-node.ts';
import { NONE, REJOINING_VOTE, Role, type HardState, type NodeId } from '../../src/raft/types.ts';

/** What the checker needs of a node's disk: the term of an entry as written. */
export interface WrittenLog {
  termAt(index: number): number | null;
}

export class RaftChecker {
  private readonly leaderOfTerm = new Map<number, NodeId>();
  private readonly entryAt = new Map<string, { data: string; prevTerm: number | null }>();
  /** Per index, the entry applied there (by any node). */
  readonly appliedAt: ({ term: number; data: string } | undefined)[] = [];
  /** While a node leads a term: the last index it persisted in that term. */
  private readonly leaderLast = new Map<NodeId, { term: number; last: number }>();
  /** Per node, the role its latest persisted Ready was built in (a Ready names the role only when it changed). */
  private readonly roleOf = new Map<NodeId, Role>();
  /**
   * Per node, its latest durable term and vote, across restarts: a vote, once synced, is never given to another in that
   * term.
   */
  private readonly durableVote = new Map<NodeId, { term: number; vote: NodeId }>();

  constructor(private readonly violation: (what: string) => void) {}

  /** Entries applied anywhere so far (the highest applied index). */
  get committed(): number {
    return this.appliedAt.length - 1;
  }

  /** A node restarted: it leads nothing until it wins an election again. */
  restarted(id: NodeId): void {
    this.leaderLast.delete(id);
    this.roleOf.delete(id);
  }

  /** A node's disk was replaced by an empty one: the votes it had synced are gone with it. */
  wiped(id: NodeId): void {
    this.durableVote.delete(id);
  }

  /** Election safety, leader append-only, log matching and leader completeness, at every Ready. */
  onReady(id: NodeId, node: RawNode, disk: WrittenLog, rd: Ready): void {
    const raft = node.raft;
    // Called before the node advances past rd: a Ready without a hard state
    // was built in the term its storage still holds.
    const term = rd.hardState?.term ?? raft.log.storage.hardState.term;
    const role = rd.softState?.role ?? this.roleOf.get(id) ?? Role.Follower;
    this.roleOf.set(id, role);
    if (rd.hardState) this.oneVotePerTerm(id, rd.hardState);
    if (rd.softState?.role === Role.Leader) {
      const prev = this.leaderOfTerm.get(term);
      if (prev !== undefined && prev !== id)
        this.violation(`election safety: ${prev} and ${id} both lead term ${term}`);
      this.leaderOfTerm.set(term, id);
      // Entries of this first Ready may still replace an unsynced follower tail.
      this.leaderLast.set(id, {
        term,
        last: rd.entries.length > 0 ? rd.entries[rd.entries.length - 1].index : raft.log.storage.lastIndex(),
      });
      // Leader completeness: every entry applied anywhere is in the new leader's log.
      for (let i = 1; i < this.appliedAt.length; i++) {
        const a = this.appliedAt[i];
        if (!a) continue;
        const t = raft.log.term(i);
        if (t === null && i <= raft.log.firstIndex() - 1) continue;
        if (t !== a.term)
          this.violation(
            `leader completeness: leader ${id} (term ${term}) has term ${t} at ${i}, committed entry has term ${a.term}`,
          );
      }
    }
    if (rd.entries.length > 0) {
      const ll = this.leaderLast.get(id);
      if (rd.softState?.role !== Role.Leader && role === Role.Leader && ll && ll.term === term) {
        if (rd.entries[0].index !== ll.last + 1)
          this.violation(`leader append-only: ${id} rewrote its log at ${rd.entries[0].index} (last ${ll.last})`);
        ll.last = rd.entries[rd.entries.length - 1].index;
      }
      // The batch is on the simulated disk already: check what is durable.
      let prevTerm = disk.termAt(rd.entries[0].index - 1);
      for (const e of rd.entries) {
        const key = `${e.index}:${e.term}`;
        const data = Buffer.from(e.data).toString();
        const seen = this.entryAt.get(key);
        if (!seen) this.entryAt.set(key, { data, prevTerm });
        else {
          if (seen.data !== data)
            this.violation(`log matching: two different entries at index ${e.index} term ${e.term}`);
          if (seen.prevTerm !== null && prevTerm !== null && seen.prevTerm !== prevTerm)
            this.violation(
              `log matching: entry ${key} follows term ${prevTerm} on ${id} but term ${seen.prevTerm} elsewhere`,
            );
        }
        prevTerm = e.term;
      }
    }
  }

  /**
   * The voter's half of election safety: a synced vote is never given to
   * another candidate in the same term, and a durable term never goes back
   * (a restart included: what was synced survives it).
   */
  private oneVotePerTerm(id: NodeId, hs: HardState): void {
    const prev = this.durableVote.get(id);
    if (prev !== undefined && hs.term < prev.term)
      this.violation(`vote safety: ${id}'s durable term went back from ${prev.term} to ${hs.term}`);
    // REJOINING_VOTE is a promise to vote for nobody, not a vote: the leader that proves the node whole becomes its
    // vote.
    else if (
      prev !== undefined &&
      hs.term === prev.term &&
      prev.vote !== NONE &&
      prev.vote !== REJOINING_VOTE &&
      hs.vote !== prev.vote
    )
      this.violation(
        `vote safety: ${id} voted for ${prev.vote} and then for ${hs.vote === NONE ? 'nobody' : hs.vote} in term ${hs.term}`,
      );
    this.durableVote.set(id, { term: hs.term, vote: hs.vote });
  }

  /** State machine safety: no two nodes apply different entries at one index. */
  onApplied(id: NodeId, index: number, term: number, data: string): void {
    const prev = this.appliedAt[index];
    if (!prev) this.appliedAt[index] = { term, data };
    else if (prev.term !== term || prev.data !== data)
      this.violation(
        `state machine safety: ${id} applied ${data}@${term} at ${index}, another node applied ${prev.data}@${prev.term}`,
      );
  }
}
