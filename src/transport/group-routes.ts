// Where a caller sends a request for one id in a cluster of G decision groups
// (docs/architecture.md, "Leaders spread, clients route").
//
// Each transaction, saga and lease is decided by group groupOf(id, G), and
// only that group's leader acts on it: a node that does not lead the group
// refuses NOT_LEADER naming the group's leader (and the group, in
// `verdict-group`). So a caller keeps one leader finder per group, each with
// its own hint, and follows a redirect inside the group it concerns.
//
// G and each group's leader come from the cluster's status answer. Until a
// caller has one it routes as a cluster of one group, which is what a cluster
// before groups is and what every cluster at G = 1 is: one finder, today's
// requests exactly. A refusal that names a group while the caller routes as
// one group (or names a group past its G) says the caller's view is stale;
// `stale()` tells the caller to ask the status again. A status answer with
// group_count 0 (a cluster that predates groups) or 1 changes nothing.
//
// Pure: no I/O, no clock. The SDK's connection (src/client/connection.ts),
// the saga caller and a participant's cluster link (src/participant/cluster-link.ts)
// drive it.

import { groupOf, groupsProblem } from '../domain/group.ts';
import { LeaderFinder, type LeaderFinderOptions } from './leader-finder.ts';

/** What routing needs of a ClusterStatus answer (verdict.coordinator.ClusterStatusResponse). */
export interface GroupsView {
  /** 0 (a cluster before groups) is one group. */
  groupCount: number;
  groups: readonly { group: number; leaderAddress: string }[];
}

export class GroupRoutes {
  private count = 1;
  /** True once a status answer said how many groups the cluster has. */
  private learned = false;
  /** One finder per group, index = group; [0] also serves every call that names no id. */
  private finders: LeaderFinder[];

  constructor(
    private readonly endpoints: readonly string[],
    private readonly options: LeaderFinderOptions,
  ) {
    this.finders = [new LeaderFinder(endpoints, options)];
  }

  /** The number of groups routed by: 1 until a status answer says more. */
  get groups(): number {
    return this.count;
  }

  /** True once a status answer said how many groups there are. */
  get known(): boolean {
    return this.learned;
  }

  /** Group 0's finder: every call that concerns no one id (the registry, listings, status). */
  get base(): LeaderFinder {
    return this.finders[0] as LeaderFinder;
  }

  /** The group that decides `id` as routed now. */
  groupOf(id: string): number {
    return this.count === 1 ? 0 : groupOf(id, this.count);
  }

  /** The finder of the group that decides `id`; `undefined`: the base finder. */
  finderFor(id: string | undefined): LeaderFinder {
    return id === undefined ? this.base : (this.finders[this.groupOf(id)] as LeaderFinder);
  }

  /** The finder of group `g`, if the cluster as routed has it. */
  finderOfGroup(g: number): LeaderFinder | undefined {
    return this.finders[g];
  }

  /** Every leader address known now, one per group that has one (a participant's view of "the nodes that lead"). */
  leaders(): string[] {
    return [...new Set(this.finders.map((f) => f.leader).filter((a): a is string => a !== undefined))];
  }

  /** The routing as a status answer would give it: G and each group's known leader. */
  view(): GroupsView {
    return {
      groupCount: this.count,
      groups: this.finders.map((f, group) => ({ group, leaderAddress: f.leader ?? '' })),
    };
  }

  /**
   * True when a refusal naming group `group` (the `verdict-group` metadata,
   * as text) shows the routing is stale: it names a group while the caller
   * routes as one group it has not learned, or a group past the known count.
   */
  stale(group: string | undefined): boolean {
    const g = parseGroup(group);
    if (g === undefined) return false;
    return !this.learned ? g > 0 || this.count > 1 : g >= this.count;
  }

  /**
   * Learns G and each group's leader from a status answer. At G = 1 (or 0,
   * a cluster before groups) nothing else changes: the one finder keeps its
   * hint as it always did. A count out of range is ignored (it came from the
   * network; routing stays as it was).
   */
  learn(view: GroupsView): void {
    const count = view.groupCount === 0 ? 1 : view.groupCount;
    if (groupsProblem(count) !== null) return;
    this.learned = true;
    if (count === 1) {
      if (this.count !== 1) this.finders = [this.base];
      this.count = 1;
      return;
    }
    if (count !== this.count) {
      const next = [this.base];
      for (let g = 1; g < count; g++) next.push(this.finders[g] ?? new LeaderFinder(this.endpoints, this.options));
      this.finders = next;
      this.count = count;
    }
    for (const s of view.groups) {
      if (!Number.isInteger(s.group) || s.group < 0 || s.group >= count || s.leaderAddress === '') continue;
      (this.finders[s.group] as LeaderFinder).learn(s.leaderAddress);
    }
  }
}

/** A `verdict-group` value as a group number, or undefined when it is not one. */
export function parseGroup(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,2}$/.test(text)) return undefined;
  return Number(text);
}
