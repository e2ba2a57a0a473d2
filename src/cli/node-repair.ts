// `verdict node repair`: the operator's way back for a node whose data
// directory is damaged. Nothing is ever deleted: what is moved aside stays
// for whoever investigates the disk.
//
// A damaged raft log (wal/): the segment log is moved aside; LevelDB (raft/)
// stays, so the node keeps its identity, its term and vote (it cannot vote
// twice in a term) and the high-water mark of what it acknowledged. On its
// next start the log is shorter than the mark, so the node starts recovering:
// it refuses votes and never campaigns until the leader has sent it
// everything past the mark.
//
// Damaged LevelDB (raft/: a record that fails its checksum, a missing CURRENT
// or MANIFEST, a database that is not a Verdict raft log, another storage
// format): nothing in the directory can be trusted, so the whole directory is
// moved aside and an empty one put in its place. The node then starts
// rejoining (src/raft/raft.ts, Raft.rejoining): it grants no vote, never
// campaigns and counts in no quorum until a leader has caught it up and
// proven it whole. Either way the node needs a quorum of the others to come
// back (docs/storage.md).

import { mkdir, rename, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { loadConfig } from '../node/config.ts';
import { envName, OVERRIDABLE } from '../node/config-sources.ts';
import { readDirIdentity, StorageIdentityError } from '../storage/dir-identity.ts';
import { checkIdentity, openLevel, readMetadata, type Db, type Metadata } from '../storage/level.ts';
import { MARK_FILE, MarkFile, newestMark } from '../storage/mark-file.ts';
import { syncDir } from '../storage/segment-log.ts';
import { flag, flagAll, UsageError } from './args.ts';

export const NODE_REPAIR_HELP = `  verdict node repair --config FILE [--set KEY=VALUE ...]
                                      with the node stopped: move its damaged raft log (wal/) aside, keeping its
                                      identity, term, vote and high-water mark (it restarts recovering); or, when
                                      its LevelDB (raft/) is damaged, move the whole data directory aside (it
                                      restarts rejoining, empty). Either way it votes again once a leader has
                                      caught it up; nothing is deleted (see docs/storage.md)
`;

export async function nodeRepairCommand(args: string[], now: () => Date = () => new Date()): Promise<void> {
  const file = flag(args, '--config');
  const sets = flagAll(args, '--set');
  if (args.length > 0)
    throw new UsageError(`unexpected argument "${args[0]}"; usage: verdict node repair --config FILE`);
  const fromEnv = Object.keys(OVERRIDABLE).some((k) => process.env[envName(k)] !== undefined);
  if (file === undefined && sets.length === 0 && !fromEnv)
    throw new UsageError('verdict node repair needs --config FILE (the node’s own config)');
  const cfg = loadConfig(file, { env: process.env, sets });
  const dir = resolve(cfg.dataDir);
  const dbPath = join(dir, 'raft');
  const walPath = join(dir, 'wal');
  const identity = { clusterId: cfg.clusterId, nodeId: cfg.nodeId };
  if (!(await exists(dbPath)) && !(await exists(walPath)))
    throw new UsageError(
      `${dir} holds no raft state: there is nothing to repair (started on it, the node rejoins the cluster and votes once a leader has caught it up)`,
    );
  // Another node's or a participant's directory is never touched.
  const owner = await readDirIdentity(dir);
  if (
    owner.state === 'found' &&
    (owner.owner.role !== 'node' || owner.owner.id !== cfg.nodeId || owner.owner.clusterId !== cfg.clusterId)
  )
    throw new UsageError(
      `${dir} belongs to ${owner.owner.role} "${owner.owner.id}" of cluster "${owner.owner.clusterId}", not to node "${cfg.nodeId}" of "${cfg.clusterId}"; point --config at this node's own config`,
    );
  const stamp = now().toISOString().replace(/[:.]/g, '-');
  const kept = await readKept(dir, dbPath, walPath, identity);
  let summary: string;
  if (kept.ok) {
    const { meta, db } = kept;
    try {
      const hw = newestMark([meta.logState, await MarkFile.peek(join(dbPath, MARK_FILE))])?.highWaterIndex ?? 0;
      const what = `term ${meta.hardState.term}, vote "${meta.hardState.vote}", snapshot at index ${meta.snapshot.metadata.index}, high-water mark ${hw}`;
      if (!(await exists(walPath)))
        throw new UsageError(
          `${walPath} does not exist: there is no raft log to move aside (the node already rejoins from its peers on start)`,
        );
      const aside = join(dir, `wal.damaged-${stamp}`);
      await rename(walPath, aside);
      await syncDir(dir);
      summary = `moved ${walPath} aside to ${aside}; kept ${dbPath} (${what}). Start the node: it refuses votes until the leader has caught it up past index ${hw}, then serves as before. Delete ${aside} once it has.`;
    } finally {
      await db.close();
    }
  } else {
    const aside = `${dir}.damaged-${stamp}`;
    await rename(dir, aside);
    await mkdir(dir);
    await syncDir(dirname(dir));
    summary = `${dbPath} cannot be trusted (${kept.why}); moved ${dir} aside to ${aside} and left ${dir} empty. Start the node: it rejoins the cluster, grants no vote and counts in no quorum until a leader has caught it up (its log says "rejoined"), then serves as before; it needs the other nodes' quorum for that. Delete ${aside} once it has.`;
  }
  process.stdout.write(`verdict: ${summary}\n`);
}

/**
 * What the repair of a damaged wal/ keeps: LevelDB opened (its lock taken: a
 * running node is refused), this node's, in this storage format, its records
 * readable. Anything else but a running node means raft/ cannot be kept.
 */
async function readKept(
  dir: string,
  dbPath: string,
  walPath: string,
  identity: { clusterId: string; nodeId: string },
): Promise<{ ok: true; db: Db; meta: Metadata } | { ok: false; why: string }> {
  let db: Db;
  try {
    db = await openLevel(dir, dbPath, walPath, identity);
  } catch (err) {
    if (/is locked by another process/.test((err as Error).message)) throw err;
    if (err instanceof StorageIdentityError && /belongs to/.test(err.message)) throw err;
    return { ok: false, why: oneLine(err) };
  }
  try {
    await checkIdentity(db, dir, dbPath, identity);
    return { ok: true, db, meta: await readMetadata(db, dbPath) };
  } catch (err) {
    await db.close();
    if (err instanceof StorageIdentityError && /belongs to/.test(err.message)) throw err;
    return { ok: false, why: oneLine(err) };
  }
}

function oneLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ');
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
