// Whose data directory this is (R7): a node's and a participant's data
// directory each hold one small file, identity.json, naming the cluster and
// the node or participant that owns it, so that a directory of another node,
// participant or cluster is refused before anything in it is opened.
//
//   a node         {"clusterId":"…","nodeId":"…"}
//   a participant  {"clusterId":"…","participantId":"…"}
//
// The file is read as hostile input:
// bounded in size, a JSON object with a non-empty cluster id and exactly one
// of the two ids, or it is "damaged" and the caller decides (a participant
// refuses to start; a node, whose LevelDB holds the authoritative copy,
// rewrites it).

import { open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { syncDir } from './segment-log.ts';

export const IDENTITY_FILE = 'identity.json';
/** An identity file is a line of JSON; anything much longer is not one. */
const IDENTITY_BYTES_MAX = 4_096;

export type DirRole = 'node' | 'participant';

/** The owner of a data directory. */
export interface DirOwner {
  clusterId: string;
  role: DirRole;
  /** The node id or the participant id. */
  id: string;
}

/** The data directory belongs to someone else, or says so unreadably; nothing was written. */
export class StorageIdentityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorageIdentityError';
  }
}

export type DirIdentityRead =
  | { state: 'none' }
  | { state: 'damaged'; file: string; problem: string }
  | { state: 'found'; file: string; owner: DirOwner };

/** The identity the directory's identity.json holds. */
export async function readDirIdentity(dir: string): Promise<DirIdentityRead> {
  const file = join(dir, IDENTITY_FILE);
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw new StorageIdentityError(
      `${file} cannot be read (${err.code ?? err.message}); it names the owner of data directory ${dir}`,
    );
  });
  if (text === null) return { state: 'none' };
  const parsed = parseIdentity(text);
  return typeof parsed === 'string'
    ? { state: 'damaged', file, problem: parsed }
    : { state: 'found', file, owner: parsed };
}

/** The owner the text names, or what is wrong with it. */
function parseIdentity(text: string): DirOwner | string {
  if (text.length > IDENTITY_BYTES_MAX) return `it is ${text.length} bytes long, more than ${IDENTITY_BYTES_MAX}`;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return 'it is not valid JSON';
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'it is not a JSON object';
  const o = v as Record<string, unknown>;
  if (!nonEmpty(o.clusterId)) return 'it has no clusterId';
  const node = nonEmpty(o.nodeId);
  const participant = nonEmpty(o.participantId);
  if (node === participant) return 'it names neither a nodeId nor a participantId, or both';
  return node
    ? { clusterId: o.clusterId as string, role: 'node', id: o.nodeId as string }
    : { clusterId: o.clusterId as string, role: 'participant', id: o.participantId as string };
}

function nonEmpty(x: unknown): x is string {
  return typeof x === 'string' && x !== '';
}

export function describeOwner(o: DirOwner): string {
  return `${o.role} "${o.id}" of cluster "${o.clusterId}"`;
}

export function sameOwner(a: DirOwner, b: DirOwner): boolean {
  return a.clusterId === b.clusterId && a.role === b.role && a.id === b.id;
}

/** The one line for a directory that belongs to another owner; `fix` says what to do. */
export function ownerMismatch(dir: string, have: DirOwner, want: DirOwner, fix: string): StorageIdentityError {
  return new StorageIdentityError(
    `data directory ${dir} belongs to ${describeOwner(have)}, but the config says ${describeOwner(want)}; ${fix}`,
  );
}

/** The file's bytes for an owner: one line of JSON. */
export function identityText(o: DirOwner): string {
  return `${JSON.stringify(o.role === 'node' ? { clusterId: o.clusterId, nodeId: o.id } : { clusterId: o.clusterId, participantId: o.id })}\n`;
}

/** Writes identity.json atomically and durably (only when missing or different). */
export async function writeDirIdentity(dir: string, owner: DirOwner): Promise<void> {
  const file = join(dir, IDENTITY_FILE);
  const text = identityText(owner);
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
  await syncDir(dir);
}

/** Forgets the directory's owner (a node whose raft/ was deleted, to rejoin empty). */
export async function removeDirIdentity(dir: string): Promise<void> {
  await rm(join(dir, IDENTITY_FILE), { force: true });
}

/**
 * Claims `dir` for `want` when it names no owner; refuses it (one line
 * naming the directory and both owners) when it names another, or when its
 * identity file is damaged.
 */
export async function claimDir(dir: string, want: DirOwner, fix: string): Promise<void> {
  const read = await readDirIdentity(dir);
  if (read.state === 'damaged') {
    throw new StorageIdentityError(
      `${read.file} is damaged (${read.problem}); it names the owner of data directory ${dir}: restore it, or ${fix}`,
    );
  }
  if (read.state === 'found' && !sameOwner(read.owner, want)) throw ownerMismatch(dir, read.owner, want, fix);
  await writeDirIdentity(dir, want);
}
