// Each decision group's Raft log on this node's disk (docs/architecture.md,
// "Decision groups"). Group 0 is the data directory itself, in today's
// layout, so a node of one group opens exactly what it always did; group g
// of a cluster of more lives in `groups/<g>/` under it, a log of the same
// format with the same identity (cluster and node).
//
// A group's directory that does not exist yet is founded with group 0's
// founding (`verdict cluster init`) only while group 0 is itself founded and
// untouched (term 1, no vote, no log): the cluster's first start. Later, a
// missing group directory opens empty and its replica rejoins, as a wiped
// data directory does (docs/storage.md).
//
// This opener is the node's stand-in until the shared segment-log writer
// (one batch and one fdatasync per turn for every group) replaces it: each
// group here syncs its own log. It is the one function the node calls for
// its storage, so the switch is made in one place.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { foundingHardState } from '../raft/raw-node.ts';
import { foundDataDir } from '../storage/founding.ts';
import { checkDataDir } from '../storage/data-dir.ts';
import { DiskLogStore, type OpenReport } from '../storage/store.ts';
import type { RecoveredState } from '../storage/types.ts';
import type { StorageIdentity } from '../storage/types.ts';

/** One group's opened log. */
export interface GroupLog {
  store: DiskLogStore;
  recovered: RecoveredState;
  report: OpenReport;
  /** Where this group's log lives. */
  dir: string;
}

/** Group 0 as `verdict cluster init` left it: the founding hard state and nothing else. */
function newlyFounded(r: RecoveredState): boolean {
  const f = foundingHardState();
  const h = r.hardState;
  return h.term === f.term && h.vote === f.vote && h.commit === f.commit && r.entries.length === 0 && r.snapshot.metadata.index === 0;
}

/** Where group `group`'s log lives under the data directory. */
export function groupDataDir(dataDir: string, group: number): string {
  return group === 0 ? dataDir : join(dataDir, 'groups', String(group));
}

/**
 * Opens every group's log, group 0 first; a failure closes what was opened
 * and throws. The data directory itself is checked by the caller first.
 */
export async function openGroupStorage(dataDir: string, groups: number, identity: StorageIdentity): Promise<GroupLog[]> {
  const opened: GroupLog[] = [];
  try {
    for (let g = 0; g < groups; g++) {
      const dir = groupDataDir(dataDir, g);
      if (g > 0) {
        const missing = !existsSync(dir);
        await checkDataDir(dir);
        if (missing && newlyFounded(opened[0].recovered)) await foundDataDir(dir, identity);
      }
      const { store, recovered, report } = await DiskLogStore.open(dir, identity);
      opened.push({ store, recovered, report, dir });
    }
    return opened;
  } catch (err) {
    for (const o of opened) await o.store.close().catch(() => {});
    throw err;
  }
}
