// `verdict node repair`: the operator's answer to a damaged raft log.
//
// The segment log (wal/) is moved aside, never deleted: whoever investigates
// the disk keeps the bytes. LevelDB (raft/) stays: the node keeps its
// identity, its term and vote (so it cannot vote twice in a term) and the
// high-water mark of what it acknowledged. On its next start the log is
// shorter than the mark, so the node starts recovering: it refuses votes and
// never campaigns until the leader has sent it everything past the mark
// (docs/storage.md). A damaged raft/ cannot be repaired this way: the node
// must be removed from the cluster and added back empty.

import { rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { loadConfig } from '../node/config.ts';
import { envName, OVERRIDABLE } from '../node/config-sources.ts';
import { checkIdentity, openLevel, readMetadata } from '../storage/level.ts';
import { MARK_FILE, MarkFile, newestMark } from '../storage/mark-file.ts';
import { syncDir } from '../storage/segment-log.ts';
import { flag, flagAll, UsageError } from './args.ts';

export const NODE_REPAIR_HELP = `  verdict node repair --config FILE [--set KEY=VALUE ...]
                                      with the node stopped: move its damaged raft log (wal/) aside, keeping its
                                      identity, term, vote and high-water mark; on start it rejoins from its peers
                                      in the recovering state (see docs/storage.md)
`;

export async function nodeRepairCommand(args: string[], now: () => Date = () => new Date()): Promise<void> {
  const file = flag(args, '--config');
  const sets = flagAll(args, '--set');
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"; usage: verdict node repair --config FILE`);
  const fromEnv = Object.keys(OVERRIDABLE).some((k) => process.env[envName(k)] !== undefined);
  if (file === undefined && sets.length === 0 && !fromEnv) throw new UsageError('verdict node repair needs --config FILE (the node’s own config)');
  const cfg = loadConfig(file, { env: process.env, sets });
  const dir = cfg.dataDir;
  const dbPath = join(dir, 'raft');
  const walPath = join(dir, 'wal');
  if (!(await exists(dbPath))) throw new UsageError(`${dbPath} does not exist: there is nothing to repair (a node with an empty data directory joins as new)`);
  // Opening LevelDB takes its lock (a running node is refused) and checks
  // that the directory is this node's; reading the metadata checks that what
  // the repair keeps is intact.
  const db = await openLevel(dir, dbPath, walPath, { clusterId: cfg.clusterId, nodeId: cfg.nodeId });
  let summary: string;
  try {
    await checkIdentity(db, dir, dbPath, { clusterId: cfg.clusterId, nodeId: cfg.nodeId });
    const meta = await readMetadata(db, dbPath);
    const hw = newestMark([meta.logState, await MarkFile.peek(join(dbPath, MARK_FILE))])?.highWaterIndex ?? 0;
    summary = `term ${meta.hardState.term}, vote "${meta.hardState.vote}", snapshot at index ${meta.snapshot.metadata.index}, high-water mark ${hw}`;
    if (!(await exists(walPath))) throw new UsageError(`${walPath} does not exist: there is no raft log to move aside (the node already rejoins from its peers on start)`);
    const aside = join(dir, `wal.damaged-${now().toISOString().replace(/[:.]/g, '-')}`);
    await rename(walPath, aside);
    await syncDir(dir);
    summary = `moved ${walPath} aside to ${aside}; kept ${dbPath} (${summary}). Start the node: it refuses votes until the leader has caught it up past index ${hw}, then serves as before. Delete ${aside} once it has.`;
  } finally {
    await db.close();
  }
  process.stdout.write(`verdict: ${summary}\n`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
