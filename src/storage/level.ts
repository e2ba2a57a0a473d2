// LevelDB (classic-level) side of the Raft storage: the data directory's
// identity, the hard state, the snapshot and the log state (the high-water
// mark of the segment log, src/storage/segment-log.ts). One PersistBatch's
// metadata is one atomic LevelDB write.

import { mkdir, readdir } from 'node:fs/promises';
import { Level as ClassicLevel } from 'level';
import { emptySnapshot, NONE, type HardState, type Snapshot } from '../raft/types.ts';
import {
  CorruptRecordError,
  decodeGroups,
  decodeHardState,
  decodeIdentity,
  decodeLogState,
  decodeSnapshot,
  encodeGroups,
  encodeIdentity,
  FORMAT_VERSION,
  KEY_GROUPS,
  KEY_HARD_STATE,
  KEY_IDENTITY,
  KEY_LOG_STATE,
  KEY_SNAPSHOT,
  type LogState,
} from './codec.ts';
import {
  IDENTITY_FILE,
  ownerMismatch,
  readDirIdentity,
  removeDirIdentity,
  sameOwner,
  StorageIdentityError,
  writeDirIdentity,
  type DirOwner,
} from './dir-identity.ts';

import type { StorageIdentity } from './types.ts';

export type Db = ClassicLevel<Uint8Array, Uint8Array>;
export type Op = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

/**
 * Opens LevelDB in `dbPath` after the data directory and its identity file
 * were checked; a lock held by another process is said in one line.
 */
export async function openLevel(dir: string, dbPath: string, walPath: string, identity: StorageIdentity): Promise<Db> {
  await checkDataDir(dir, dbPath, walPath);
  // Before LevelDB is opened: opening rewrites its own files (LOG, MANIFEST,
  // a flushed write-ahead log) even when nothing is put.
  await checkIdentityFile(dir, dbPath, identity);
  const db: Db = new ClassicLevel<Uint8Array, Uint8Array>(dbPath, { keyEncoding: 'view', valueEncoding: 'view' });
  try {
    await db.open({ createIfMissing: true });
  } catch (err) {
    if (errorCode(err) === 'LEVEL_LOCKED' || errorCode(causeOf(err)) === 'LEVEL_LOCKED') {
      throw new Error(`${dbPath} is locked by another process: is this node already running?`, { cause: err });
    }
    throw levelError(dbPath, 'opened', err);
  }
  return db;
}

const REPAIR = "run `verdict node repair --config <this node's config>` with the node stopped (docs/storage.md)";

/**
 * Refuses a directory that something other than Verdict owns. A fresh node
 * gets an empty (or missing) directory; a restarted one finds `raft/` there
 * (and `wal/`, the segment log, from format 2 on).
 */
async function checkDataDir(dir: string, dbPath: string, walPath: string): Promise<void> {
  const fix = `if it is this node's data directory, its raft state is damaged: ${REPAIR}; otherwise point the config at this node's own data directory`;
  // A file system's own lost+found (a dedicated disk mounted as the data directory) is not content.
  const names = (await readdirOrNull(dir))?.filter((n) => n !== 'lost+found') ?? null;
  if (names === null) {
    await mkdir(dir, { recursive: true });
    return;
  }
  if (!names.includes('raft') && names.includes('wal')) {
    throw new StorageIdentityError(
      `${dir} holds a raft log (${walPath}) but no ${dbPath}: this node's raft state is damaged; ${REPAIR}`,
    );
  }
  if (names.some((n) => n !== IDENTITY_FILE) && !names.includes('raft')) {
    throw new StorageIdentityError(
      `${dir} is not empty and is not a Verdict data directory (it has no raft/ inside); point the config at this node's own data directory, or at a new empty one for a node that is new`,
    );
  }
  const raftNames = await readdirOrNull(dbPath);
  if (raftNames !== null && raftNames.length > 0 && !raftNames.includes('CURRENT')) {
    throw new StorageIdentityError(
      `${dbPath} is not empty and holds no LevelDB database (its CURRENT file is missing); ${fix}`,
    );
  }
}

async function readdirOrNull(path: string): Promise<string[] | null> {
  try {
    return await readdir(path);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return null;
    throw err;
  }
}

/**
 * identity.json beside raft/ (src/storage/dir-identity.ts) repeats the
 * identity that LevelDB holds, so that a data directory of another node,
 * participant or cluster is refused without opening LevelDB. LevelDB's record
 * stays authoritative: without the file (a crash before it was first
 * written), or with a damaged one, the check falls to checkIdentity, and the
 * file is written again once LevelDB accepted the identity.
 */
function nodeOwner(id: StorageIdentity): DirOwner {
  return { clusterId: id.clusterId, role: 'node', id: id.nodeId };
}

function identityMismatch(dir: string, have: DirOwner, want: StorageIdentity): StorageIdentityError {
  // Never "delete it": the directory is another member's, whose data the cluster may need.
  return ownerMismatch(dir, have, nodeOwner(want), "point the config at this node's own data directory");
}

async function checkIdentityFile(dir: string, dbPath: string, want: StorageIdentity): Promise<void> {
  const read = await readDirIdentity(dir);
  // A participant's directory is never taken over, even one without raft/ inside.
  if (read.state === 'found' && read.owner.role !== 'node') throw identityMismatch(dir, read.owner, want);
  if ((await readdirOrNull(dbPath)) === null) {
    // raft/ was deleted so that the node rejoins empty: the identity goes with it.
    await removeDirIdentity(dir);
    return;
  }
  if (read.state === 'found' && !sameOwner(read.owner, nodeOwner(want))) throw identityMismatch(dir, read.owner, want);
}

/** Written once LevelDB accepted the identity: atomically, and only when missing or different. */
export async function writeIdentityFile(dir: string, id: StorageIdentity): Promise<void> {
  await writeDirIdentity(dir, nodeOwner(id));
}

/**
 * Writes the identity on first open; afterwards it must match, in this
 * build's storage format, before anything is written.
 */
export async function checkIdentity(db: Db, dir: string, dbPath: string, want: StorageIdentity): Promise<void> {
  const stored = await levelGet(db, dbPath, KEY_IDENTITY);
  if (stored === undefined) {
    // A crash during the very first open can leave an empty database behind: adopt it.
    const anyKey = await db.keys({ limit: 1 }).all();
    if (anyKey.length > 0) {
      throw new StorageIdentityError(
        `${dbPath} holds a LevelDB database without a Verdict identity record; if it is this node's data directory, its raft state is damaged: ${REPAIR}; otherwise point the config at this node's own data directory`,
      );
    }
    await db.put(KEY_IDENTITY, encodeIdentity(want), { sync: true });
    return;
  }
  const have = decodeIdentity(stored, dbPath);
  if (have.formatVersion !== FORMAT_VERSION) {
    throw new StorageIdentityError(
      `${dbPath} was written in storage format ${have.formatVersion} but this build reads format ${FORMAT_VERSION} only; run a matching Verdict version, or ${REPAIR}: the node then rejoins the cluster empty`,
    );
  }
  if (have.clusterId !== want.clusterId || have.nodeId !== want.nodeId)
    throw identityMismatch(dir, nodeOwner(have), want);
}

/**
 * The number of decision groups is part of the cluster's founding: a
 * directory founded with G groups (a record only when G > 1; none means 1)
 * opens with G only. A directory that holds nothing yet (`fresh`: a new
 * node, or one whose disk was wiped to rejoin) takes the config's G.
 */
export async function checkFoundedGroups(
  db: Db,
  dir: string,
  dbPath: string,
  want: number,
  fresh: () => Promise<boolean>,
): Promise<void> {
  const stored = await levelGet(db, dbPath, KEY_GROUPS);
  const have = stored === undefined ? 1 : decodeGroups(stored, dbPath);
  if (have === want) return;
  if (stored === undefined && (await fresh())) {
    await db.put(KEY_GROUPS, encodeGroups(want), { sync: true });
    return;
  }
  throw new StorageIdentityError(
    `data directory ${dir} was founded with ${have} decision group${have === 1 ? '' : 's'}, but the config says ${want} ("groups"): the number of groups is fixed when a cluster is founded (docs/operations.md); set "groups": ${have} for this cluster`,
  );
}

/** Whether LevelDB holds nothing but the identity record (a directory no Raft state was written to). */
export async function holdsOnlyIdentity(db: Db): Promise<boolean> {
  const keys = await db.keys({ limit: 2 }).all();
  return keys.every((k) => k.byteLength === KEY_IDENTITY.byteLength && k[0] === KEY_IDENTITY[0]);
}

export interface Metadata {
  hardState: HardState;
  snapshot: Snapshot;
  /** Null before the first entry was written. */
  logState: LogState | null;
}

export async function readMetadata(db: Db, dbPath: string): Promise<Metadata> {
  const hsValue = await levelGet(db, dbPath, KEY_HARD_STATE);
  const hardState: HardState =
    hsValue === undefined ? { term: 0, vote: NONE, commit: 0 } : decodeHardState(hsValue, dbPath);
  const snapValue = await levelGet(db, dbPath, KEY_SNAPSHOT);
  const snapshot = snapValue === undefined ? emptySnapshot() : decodeSnapshot(snapValue, dbPath);
  const lsValue = await levelGet(db, dbPath, KEY_LOG_STATE);
  const logState = lsValue === undefined ? null : decodeLogState(lsValue, dbPath);
  return { hardState, snapshot, logState };
}

/**
 * LevelDB's own failure, in one line with the path. Its words are in the
 * cause ("Corruption: checksum mismatch"); a damaged table may only show on
 * the first read, not at open.
 */
function levelError(dbPath: string, what: 'opened' | 'read', err: unknown): Error {
  const cause = causeOf(err);
  const detail = (cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err)).replace(
    /\s+/g,
    ' ',
  );
  if (/corrupt/i.test(detail)) return new CorruptRecordError(dbPath, 'LevelDB database', detail);
  return new Error(`${dbPath} could not be ${what}: ${detail}`, { cause: err });
}

/** db.get, with LevelDB's own failures said in one line with the path. */
async function levelGet(db: Db, dbPath: string, key: Uint8Array): Promise<Uint8Array | undefined> {
  try {
    return await db.get(key);
  } catch (err) {
    throw levelError(dbPath, 'read', err);
  }
}

function errorCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
}

function causeOf(err: unknown): unknown {
  return err instanceof Error ? err.cause : undefined;
}
