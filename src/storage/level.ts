// Durable Raft storage on LevelDB (classic-level). One PersistBatch becomes
// one atomic, synced LevelDB write, so after a crash the disk holds exactly
// the batches whose onSynced fired (and possibly the one in flight), never a
// part of one. That is what lets the node send a message that depends on a
// batch as soon as onSynced(null) fires (R6).

import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Level as ClassicLevel } from 'level';
import { assert, emptySnapshot, NONE, type Entry, type HardState, type Snapshot } from '../raft/types.ts';
import {
  CorruptRecordError,
  decodeEntry,
  decodeHardState,
  decodeIdentity,
  decodeSnapshot,
  encodeEntry,
  encodeHardState,
  encodeIdentity,
  encodeSnapshot,
  ENTRY_KEY_END,
  entryKey,
  entryKeyIndex,
  entryRecordName,
  FORMAT_VERSION,
  KEY_HARD_STATE,
  KEY_IDENTITY,
  KEY_SNAPSHOT,
} from './codec.ts';
import type { LogStore, PersistBatch, RecoveredState, StorageIdentity } from './types.ts';

/**
 * Batches accepted but not yet synced. The driver waits for onSynced before
 * it advances, so a deep queue means a caller that stopped waiting: fail
 * loudly rather than buffer without bound.
 */
export const PERSIST_QUEUE_MAX = 1024;

/** The data directory belongs to someone else; nothing was written. */
export class StorageIdentityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorageIdentityError';
  }
}

type Db = ClassicLevel<Uint8Array, Uint8Array>;
type Op = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

/**
 * What is on disk once every accepted batch is synced.
 * Invariant: firstIndex <= snapIndex + 1 <= lastIndex + 1, the entries
 * firstIndex..lastIndex are all present, and commit <= lastIndex. Entries at
 * or below snapIndex stay after a local snapshot until compactTo drops them.
 */
interface LogBounds {
  snapIndex: number;
  firstIndex: number;
  /** Index of the last entry, or snapIndex when the log is empty. */
  lastIndex: number;
  hardState: HardState;
}

export class LevelLogStore implements LogStore {
  private bounds: LogBounds;
  /** The last accepted write; each batch starts after it, so writes never reorder. */
  private tail: Promise<void> = Promise.resolve();
  private inFlight = 0;
  /** Set by the first failed write: later batches are not written, or the log could get a hole. */
  private failure: Error | null = null;
  private closed = false;

  private constructor(
    private readonly db: Db,
    /** Where the LevelDB files live: `${dir}/raft`. */
    readonly dbPath: string,
    bounds: LogBounds,
  ) {
    this.bounds = bounds;
  }

  /**
   * Opens (or creates) the store in `${dir}/raft`. Refuses, before writing
   * anything, a directory that belongs to another node, another cluster or
   * another program; refuses a damaged log with a CorruptRecordError.
   */
  static async open(dir: string, identity: StorageIdentity): Promise<{ store: LevelLogStore; recovered: RecoveredState }> {
    assert(identity.clusterId !== '' && identity.nodeId !== '', 'storage identity needs a cluster id and a node id');
    const dbPath = join(dir, 'raft');
    await checkDataDir(dir, dbPath);
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
      throw err;
    }
    try {
      await checkIdentity(db, dir, dbPath, identity);
      const { recovered, bounds } = await recover(db, dbPath);
      await writeIdentityFile(dir, identity);
      return { store: new LevelLogStore(db, dbPath, bounds), recovered };
    } catch (err) {
      await db.close();
      throw err;
    }
  }

  persist(batch: PersistBatch, onSynced: (err: Error | null) => void): void {
    assert(!this.closed, 'persist after close');
    assert(this.inFlight < PERSIST_QUEUE_MAX, `more than ${PERSIST_QUEUE_MAX} persist batches waiting for sync`);
    const ops = this.plan(batch);
    this.inFlight += 1;
    const write = this.tail.then(async () => {
      if (this.failure) throw this.failure;
      await this.db.batch(ops, { sync: batch.sync });
    });
    this.tail = write.then(
      () => {},
      (err: unknown) => {
        this.failure ??= toError(err);
      },
    );
    // An exception thrown by onSynced surfaces as an unhandled rejection (a
    // crash) instead of being swallowed; it cannot break the write chain.
    void write.then(
      () => {
        this.inFlight -= 1;
        onSynced(null);
      },
      (err: unknown) => {
        this.inFlight -= 1;
        onSynced(toError(err));
      },
    );
  }

  /** Waits for every accepted batch to be synced (or fail), then closes the database. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.tail;
    await this.db.close();
  }

  /**
   * Checks a batch against the log as it will be once every earlier batch is
   * synced, turns it into LevelDB operations in the order PersistBatch
   * documents, and advances the in-memory bounds. A violated precondition is
   * a bug in the caller: it throws before anything is queued.
   */
  private plan(batch: PersistBatch): Op[] {
    const b: LogBounds = { ...this.bounds };
    const ops: Op[] = [];
    const dropRange = (from: number, to: number): void => {
      for (let i = from; i <= to; i++) ops.push({ type: 'del', key: entryKey(i) });
    };

    if (batch.snapshot) {
      // A leader's snapshot replaces the whole log: entries after it may
      // belong to a history the snapshot overrode.
      const snapIndex = batch.snapshot.metadata.index;
      assert(snapIndex >= b.snapIndex, `snapshot index ${snapIndex} is behind the stored snapshot ${b.snapIndex}`);
      assert(snapIndex >= b.hardState.commit, `snapshot index ${snapIndex} would drop committed entries (commit ${b.hardState.commit})`);
      dropRange(b.firstIndex, b.lastIndex);
      ops.push({ type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(batch.snapshot) });
      b.snapIndex = snapIndex;
      b.firstIndex = snapIndex + 1;
      b.lastIndex = snapIndex;
    }

    if (batch.entries.length > 0) {
      checkEntries(batch.entries);
      const first = batch.entries[0].index;
      const last = batch.entries[batch.entries.length - 1].index;
      assert(first > b.snapIndex, `entry ${first} is at or below the snapshot index ${b.snapIndex}`);
      assert(first <= b.lastIndex + 1, `entry ${first} leaves a gap after the last index ${b.lastIndex}`);
      // Committed entries are never replaced: doing so would break state machine safety.
      assert(first > b.hardState.commit, `entry ${first} would overwrite committed entries (commit ${b.hardState.commit})`);
      // Puts overwrite the replaced keys they cover; delete only the stale tail beyond them.
      dropRange(last + 1, b.lastIndex);
      for (const e of batch.entries) ops.push({ type: 'put', key: entryKey(e.index), value: encodeEntry(e) });
      b.lastIndex = last;
    }

    if (batch.hardState) {
      const hs = batch.hardState;
      const prev = b.hardState;
      assert(hs.term >= prev.term, `hard state term goes back from ${prev.term} to ${hs.term}`);
      assert(
        hs.term > prev.term || prev.vote === NONE || hs.vote === prev.vote,
        `vote in term ${hs.term} changes from ${prev.vote} to ${hs.vote}`,
      );
      assert(hs.commit >= prev.commit, `commit goes back from ${prev.commit} to ${hs.commit}`);
      assert(hs.commit <= b.lastIndex, `commit ${hs.commit} is beyond the last index ${b.lastIndex}`);
      ops.push({ type: 'put', key: KEY_HARD_STATE, value: encodeHardState(hs) });
      b.hardState = { term: hs.term, vote: hs.vote, commit: hs.commit };
    }

    if (batch.localSnapshot) {
      // This node's own snapshot: the log stays, so slow followers can still be sent entries.
      const snapIndex = batch.localSnapshot.metadata.index;
      assert(snapIndex >= b.snapIndex, `local snapshot index ${snapIndex} is behind the stored snapshot ${b.snapIndex}`);
      assert(snapIndex <= b.lastIndex, `local snapshot index ${snapIndex} is beyond the last index ${b.lastIndex}`);
      ops.push({ type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(batch.localSnapshot) });
      b.snapIndex = snapIndex;
    }

    if (batch.compactTo > 0) {
      // Recovery rebuilds the log from the snapshot onward: compacting past
      // the stored snapshot would lose the only copy of those entries.
      assert(batch.compactTo <= b.snapIndex, `compactTo ${batch.compactTo} is beyond the snapshot index ${b.snapIndex}`);
      dropRange(b.firstIndex, Math.min(batch.compactTo, b.lastIndex));
      b.firstIndex = Math.max(b.firstIndex, batch.compactTo + 1);
    }

    this.bounds = b;
    return ops;
  }
}

function checkEntries(entries: readonly Entry[]): void {
  for (let i = 1; i < entries.length; i++) {
    const prev = entries[i - 1];
    const e = entries[i];
    assert(e.index === prev.index + 1, `entries not contiguous: ${prev.index} then ${e.index}`);
    assert(e.term >= prev.term, `entry terms go back: ${prev.term} at ${prev.index}, ${e.term} at ${e.index}`);
  }
}

/**
 * Refuses a directory that something other than Verdict owns. A fresh node
 * gets an empty (or missing) directory; a restarted one finds `raft/` there.
 */
async function checkDataDir(dir: string, dbPath: string): Promise<void> {
  const fix = 'point the config at an empty directory or at this node’s own data directory';
  const names = await readdirOrNull(dir);
  if (names === null) {
    await mkdir(dir, { recursive: true });
    return;
  }
  if (names.some((n) => n !== IDENTITY_FILE) && !names.includes('raft')) {
    throw new StorageIdentityError(`${dir} is not empty and is not a Verdict data directory (it has no raft/ inside); ${fix}`);
  }
  const raftNames = await readdirOrNull(dbPath);
  if (raftNames !== null && raftNames.length > 0 && !raftNames.includes('CURRENT')) {
    throw new StorageIdentityError(`${dbPath} is not empty and holds no LevelDB database, so it is not a Verdict raft log; ${fix}`);
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
 * identity.json beside raft/ repeats the identity that LevelDB holds, so that
 * a data directory of another node or cluster is refused without opening
 * LevelDB. LevelDB's record stays authoritative: without the file (a crash
 * before it was first written) the check falls to checkIdentity.
 */
const IDENTITY_FILE = 'identity.json';

function identityMismatch(dir: string, dbPath: string, have: StorageIdentity, want: StorageIdentity): StorageIdentityError {
  return new StorageIdentityError(
    `${dir} belongs to node "${have.nodeId}" of cluster "${have.clusterId}", but the config says node "${want.nodeId}" of cluster "${want.clusterId}"; point the config at another data directory, or delete ${dbPath} if this node is meant to rejoin the cluster empty`,
  );
}

async function checkIdentityFile(dir: string, dbPath: string, want: StorageIdentity): Promise<void> {
  const file = join(dir, IDENTITY_FILE);
  if ((await readdirOrNull(dbPath)) === null) {
    // raft/ was deleted so that the node rejoins empty: the identity goes with it.
    await rm(file, { force: true });
    return;
  }
  let have: Partial<StorageIdentity>;
  try {
    have = JSON.parse(await readFile(file, 'utf8')) as Partial<StorageIdentity>;
  } catch {
    return;
  }
  if (typeof have.clusterId !== 'string' || typeof have.nodeId !== 'string') return;
  if (have.clusterId !== want.clusterId || have.nodeId !== want.nodeId) throw identityMismatch(dir, dbPath, have as StorageIdentity, want);
}

/** Written once LevelDB accepted the identity: atomically, and only when missing or different. */
async function writeIdentityFile(dir: string, id: StorageIdentity): Promise<void> {
  const file = join(dir, IDENTITY_FILE);
  const text = JSON.stringify({ clusterId: id.clusterId, nodeId: id.nodeId }) + '\n';
  if ((await readFile(file, 'utf8').catch(() => null)) === text) return;
  const tmp = `${file}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
  const dh = await open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/** Writes the identity on first open; afterwards it must match before anything is written. */
async function checkIdentity(db: Db, dir: string, dbPath: string, want: StorageIdentity): Promise<void> {
  const stored = await db.get(KEY_IDENTITY);
  if (stored === undefined) {
    // A crash during the very first open can leave an empty database behind: adopt it.
    const anyKey = await db.keys({ limit: 1 }).all();
    if (anyKey.length > 0) {
      throw new StorageIdentityError(
        `${dbPath} holds a LevelDB database without a Verdict identity record, so it is not a Verdict raft log; point the config at an empty directory or at this node’s own data directory`,
      );
    }
    await db.put(KEY_IDENTITY, encodeIdentity(want), { sync: true });
    return;
  }
  const have = decodeIdentity(stored, dbPath);
  if (have.formatVersion !== FORMAT_VERSION) {
    throw new StorageIdentityError(
      `${dbPath} was written in storage format ${have.formatVersion} but this build reads format ${FORMAT_VERSION}; run a matching Verdict version, or delete ${dbPath} if this node is meant to rejoin the cluster empty`,
    );
  }
  if (have.clusterId !== want.clusterId || have.nodeId !== want.nodeId) throw identityMismatch(dir, dbPath, have, want);
}

/** Reads everything back and checks that it fits together; any doubt is a CorruptRecordError. */
async function recover(db: Db, dbPath: string): Promise<{ recovered: RecoveredState; bounds: LogBounds }> {
  const hsValue = await db.get(KEY_HARD_STATE);
  const hardState: HardState = hsValue === undefined ? { term: 0, vote: NONE, commit: 0 } : decodeHardState(hsValue, dbPath);
  const snapValue = await db.get(KEY_SNAPSHOT);
  const snapshot: Snapshot = snapValue === undefined ? emptySnapshot() : decodeSnapshot(snapValue, dbPath);

  const snapIndex = snapshot.metadata.index;
  const snapTerm = snapshot.metadata.term;
  // Entries at or below the snapshot may remain after a local snapshot; they
  // are checked like the rest but only the ones after it are returned.
  const entries: Entry[] = [];
  let prev: Entry | null = null;
  let firstIndex = snapIndex + 1;
  for await (const [key, value] of db.iterator({ gte: entryKey(0), lt: ENTRY_KEY_END })) {
    const index = entryKeyIndex(key);
    if (index === null) {
      throw new CorruptRecordError(dbPath, 'raft log', `unreadable entry key ${Buffer.from(key).toString('hex')}`);
    }
    const e = decodeEntry(value, index, dbPath);
    const corrupt = (problem: string): CorruptRecordError => new CorruptRecordError(dbPath, entryRecordName(index), problem);
    if (prev === null && index > snapIndex + 1) throw corrupt(`gap in the log: the snapshot ends at ${snapIndex}, the first entry is ${index}`);
    if (prev !== null && index !== prev.index + 1) throw corrupt(`gap in the log: expected index ${prev.index + 1}, found ${index}`);
    if (prev !== null && e.term < prev.term) throw corrupt(`term ${e.term} is lower than term ${prev.term} before it`);
    if (index === snapIndex && e.term !== snapTerm) throw corrupt(`term ${e.term} differs from the snapshot's term ${snapTerm} at the same index`);
    if (index === snapIndex + 1 && e.term < snapTerm) throw corrupt(`term ${e.term} is lower than the snapshot's term ${snapTerm}`);
    if (prev === null) firstIndex = index;
    if (index > snapIndex) entries.push(e);
    prev = e;
  }
  if (prev !== null && prev.index < snapIndex) {
    throw new CorruptRecordError(dbPath, entryRecordName(prev.index), `the log ends below the snapshot index ${snapIndex}`);
  }

  const lastIndex = Math.max(snapIndex, prev?.index ?? 0);
  if (hardState.commit > lastIndex) {
    throw new CorruptRecordError(
      dbPath,
      'hard state record',
      `commit index ${hardState.commit} is beyond the last log index ${lastIndex}: synced entries are missing`,
    );
  }
  return { recovered: { hardState, snapshot, entries }, bounds: { snapIndex, firstIndex, lastIndex, hardState: { ...hardState } } };
}

function errorCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
}

function causeOf(err: unknown): unknown {
  return err instanceof Error ? err.cause : undefined;
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
