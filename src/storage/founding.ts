// Founding a new cluster: the one explicit act that lets a node with an empty
// data directory vote from its first start.
//
// A node that finds no Raft state in its data directory starts rejoining
// (src/raft/raft.ts, Raft.rejoining): it does not vote or campaign until a
// leader has caught it up. That is what a voter whose disk was wiped or
// replaced must do, and the node cannot tell such a voter from a member of a
// cluster that never ran. So a new cluster is founded explicitly, once:
// `verdict cluster init` (or `verdict cluster up` on its first start) writes
// the founding hard state (term 1) into each founding member's empty data
// directory before the member starts, and refuses a directory that already
// holds Raft state. Whether the peers hold state is the caller's check
// (src/cli/cluster-init.ts asks them; the local launcher reads their
// directories). The number of decision groups is part of the founding: a
// cluster of G > 1 records it in every founding member's directory beside
// the cluster id (src/storage/level.ts, checkFoundedGroups), and each group
// gets the founding hard state.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { foundingHardState, holdsNoRaftState } from '../raft/raw-node.ts';
import { REJOINING_VOTE } from '../raft/types.ts';
import { openGroupStorage } from './group-store.ts';
import type { RecoveredState, StorageIdentity } from './types.ts';

/** What a data directory holds: nothing yet, or Raft state (at least a term or a log). */
export type RaftDirState = { kind: 'empty' } | { kind: 'state'; term: number; lastIndex: number; rejoining: boolean };

/** The directory already holds Raft state: a cluster is founded once. */
export class FoundingRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FoundingRefusedError';
  }
}

/**
 * Reads what `dir` holds, without creating anything when it holds nothing.
 * The node must be stopped (its LevelDB lock is taken while reading).
 */
export async function raftStateIn(dir: string, identity: StorageIdentity, groups = 1): Promise<RaftDirState> {
  if (!existsSync(join(dir, 'raft')) && !existsSync(join(dir, 'wal'))) return { kind: 'empty' };
  const storage = await openGroupStorage(dir, identity, groups);
  try {
    const held = storage.groups.find((g) => !holdsNoRaftState(g.recovered));
    if (held === undefined) return { kind: 'empty' };
    return {
      kind: 'state',
      term: held.recovered.hardState.term,
      lastIndex: lastIndexOf(held.recovered),
      rejoining: held.recovered.hardState.vote === REJOINING_VOTE,
    };
  } finally {
    await storage.close();
  }
}

function lastIndexOf(r: RecoveredState): number {
  return r.entries.at(-1)?.index ?? r.snapshot.metadata.index;
}

/**
 * Writes the founding hard state into `dir` (into every group's state, and
 * the number of groups when more than one), which must hold no Raft state
 * (created when missing). Synced before it returns.
 */
export async function foundDataDir(dir: string, identity: StorageIdentity, groups = 1): Promise<void> {
  const storage = await openGroupStorage(dir, identity, groups);
  try {
    const held = storage.groups.find((g) => !holdsNoRaftState(g.recovered));
    if (held !== undefined) {
      throw new FoundingRefusedError(
        `${dir} already holds Raft state (term ${held.recovered.hardState.term}, log up to index ${lastIndexOf(held.recovered)}): node "${identity.nodeId}" is a member of a cluster already, and a cluster is founded once. Start the node as it is`,
      );
    }
    await Promise.all(
      storage.groups.map(
        (g) =>
          new Promise<void>((resolve, reject) =>
            g.store.persist(
              {
                hardState: foundingHardState(),
                entries: [],
                snapshot: null,
                localSnapshot: null,
                compactTo: 0,
                sync: true,
              },
              (err) => (err ? reject(err) : resolve()),
            ),
          ),
      ),
    );
  } finally {
    await storage.close();
  }
}
