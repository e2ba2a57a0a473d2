// How many decision groups this node hosts (docs/architecture.md, "Decision
// groups"): the config's `groups`, 1 when absent, which must be the number
// the data directory was founded with (`verdict cluster init --groups`); the
// storage refuses a directory founded with another (src/storage/group-store.ts).

import type { NodeConfig } from './config.ts';

/** The cluster's number of decision groups (1..GROUPS_MAX). */
export function clusterGroups(cfg: Pick<NodeConfig, 'groups'>): number {
  return cfg.groups;
}
