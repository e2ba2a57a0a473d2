// How many decision groups this node hosts (docs/architecture.md, "Decision
// groups"). The one place that reads it: the count belongs to the cluster's
// founding record; until the data directory records it, an optional
// `groups` in the node's config says it (1 when absent), and every node of
// a cluster must be given the same.

import type { NodeConfig } from './config.ts';

/** The cluster's number of decision groups (1..GROUPS_MAX; 1 when not set). */
export function clusterGroups(cfg: Pick<NodeConfig, 'groups'>): number {
  return cfg.groups ?? 1;
}
