// The one check of a data directory before anything opens it, shared by the
// node (before its Raft log and state are opened) and the participant
// (before its journal). Each failure is one line naming the path and the
// cause, so an operator never sees a bare `Database failed to open`, a raw
// `ENOTDIR`, or a process that hangs without a word:
//
//   1. the nearest existing folder is on a real filesystem (not /proc, /sys
//      or another kernel pseudo-filesystem, where file operations can block
//      or lie);
//   2. the path is a directory (created when missing);
//   3. it is writable and syncs: a probe file is created, written, fsynced
//      and removed, bounded by a timeout (a hung mount answers nothing);
//   4. every LevelDB database inside (a folder with a CURRENT file) still has
//      the MANIFEST its CURRENT names: without it LevelDB only says
//      "Database failed to open".
//
// Nothing in the directory is changed except the probe file, which is gone
// when the check returns.

import { statfs } from 'node:fs/promises';
import { mkdir, open, readdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

/**
 * What every refusal of a damaged Verdict database says to do (never "delete it": a voter's data may be what the
 * cluster needs).
 */
const REPAIR =
  "if it is a node's data directory, run `verdict node repair --config <that node's config>` with the node stopped (docs/storage.md)";

/** How long the write probe may take before the directory is declared unusable. */
export const DATA_DIR_PROBE_TIMEOUT_MS = 10_000;

/** The data directory cannot be used; the message is the one line to print. */
export class DataDirError extends Error {
  constructor(
    readonly path: string,
    cause: string,
  ) {
    super(`data directory ${path}: ${cause}`);
    this.name = 'DataDirError';
  }
}

/**
 * Kernel pseudo-filesystems (statfs f_type, from linux/magic.h): what looks
 * like a file there is a view of kernel state, and writes block or vanish.
 */
const PSEUDO_FS: ReadonlyMap<number, string> = new Map([
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
  [0x1cd1, 'devpts'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0x73636673, 'securityfs'],
  [0xcafe4a11, 'bpf'],
  [0x6165676c, 'pstore'],
  [0xf97cff8c, 'selinuxfs'],
  [0x50495045, 'pipefs'],
  [0x534f434b, 'sockfs'],
]);

export interface DataDirCheckOptions {
  probeTimeoutMs?: number;
}

/** Checks (and creates when missing) `dir`; throws DataDirError with the path and the cause. */
export async function checkDataDir(dir: string, o: DataDirCheckOptions = {}): Promise<void> {
  const path = resolve(dir);
  const timeoutMs = o.probeTimeoutMs ?? DATA_DIR_PROBE_TIMEOUT_MS;
  await bounded(path, 'checking the filesystem', timeoutMs, () => checkFilesystem(path));
  await bounded(path, 'checking that it is a directory', timeoutMs, () => ensureDirectory(path));
  await bounded(path, 'writing and syncing a probe file', timeoutMs, () => probeWrite(path));
  await bounded(path, 'checking its LevelDB files', timeoutMs, () => checkLevelDbs(path));
}

/** Runs `fn`, but gives up after timeoutMs: a hung filesystem call cannot be cancelled, only abandoned. */
async function bounded(path: string, what: string, timeoutMs: number, fn: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new DataDirError(
            path,
            `no answer from the filesystem within ${timeoutMs} ms while ${what}; check the disk or mount, or use another directory`,
          ),
        ),
      timeoutMs,
    );
  });
  try {
    await Promise.race([fn(), late]);
  } finally {
    clearTimeout(timer);
  }
}

function codeOf(err: unknown): string {
  return (err as NodeJS.ErrnoException | null)?.code ?? '';
}

/** What an errno means for a data directory, and what to do about it. */
function explain(err: unknown): string {
  switch (codeOf(err)) {
    case 'EACCES':
    case 'EPERM':
      return 'permission denied; give the user running Verdict write access to it, or use another directory';
    case 'EROFS':
      return 'the filesystem is mounted read-only; remount it read-write or use another directory';
    case 'ENOSPC':
      return 'the disk is full; free space or use another directory';
    case 'EDQUOT':
      return 'the disk quota is exhausted; free space or use another directory';
    case 'ENOTDIR':
      return 'a part of the path is a file, not a directory; use a directory path';
    case 'EIO':
      return 'I/O error from the disk; check the device';
    case 'ELOOP':
      return 'too many symbolic links in the path';
    case 'ENAMETOOLONG':
      return 'the path is too long';
    default:
      return `${codeOf(err) || 'error'}: ${(err as Error).message}`;
  }
}

async function checkFilesystem(path: string): Promise<void> {
  // statfs of the directory, or of its nearest existing ancestor when it does not exist yet.
  for (let p = path; ; p = dirname(p)) {
    let type: number;
    try {
      type = (await statfs(p)).type;
    } catch (err) {
      if ((codeOf(err) === 'ENOENT' || codeOf(err) === 'ENOTDIR') && dirname(p) !== p) continue;
      throw new DataDirError(path, `cannot inspect ${p}: ${explain(err)}`);
    }
    const pseudo = PSEUDO_FS.get(type);
    if (pseudo !== undefined)
      throw new DataDirError(
        path,
        `${p} is on the kernel's ${pseudo} pseudo-filesystem, not on a disk; use a directory on a real filesystem`,
      );
    return;
  }
}

async function ensureDirectory(path: string): Promise<void> {
  let isDir: boolean;
  try {
    isDir = (await stat(path)).isDirectory();
  } catch (err) {
    if (codeOf(err) !== 'ENOENT') throw new DataDirError(path, `cannot stat it: ${explain(err)}`);
    try {
      await mkdir(path, { recursive: true });
    } catch (e) {
      throw new DataDirError(path, `cannot create it: ${explain(e)}`);
    }
    return;
  }
  if (!isDir)
    throw new DataDirError(
      path,
      'is a file, not a directory; point the configuration at a directory (or remove the file)',
    );
}

async function probeWrite(path: string): Promise<void> {
  const probe = join(path, `.verdict-probe-${process.pid}`);
  try {
    const fh = await open(probe, 'wx');
    try {
      await fh.writeFile('probe\n');
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (err) {
    await rm(probe, { force: true }).catch(() => {});
    throw new DataDirError(path, `cannot write and sync a file in it: ${explain(err)}`);
  }
  try {
    await rm(probe);
  } catch (err) {
    throw new DataDirError(path, `cannot remove a file in it: ${explain(err)}`);
  }
}

/**
 * Every folder directly inside `path` (and `path` itself) that holds a LevelDB CURRENT file must still have the
 * MANIFEST it names.
 */
async function checkLevelDbs(path: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(path);
  } catch (err) {
    throw new DataDirError(path, `cannot list it: ${explain(err)}`);
  }
  const candidates = [path];
  for (const n of names) {
    const p = join(path, n);
    if ((await stat(p).catch(() => null))?.isDirectory()) candidates.push(p);
  }
  for (const db of candidates) {
    const current = join(db, 'CURRENT');
    let text: string;
    try {
      text = await readFile(current, 'utf8');
    } catch (err) {
      if (codeOf(err) === 'ENOENT') continue;
      throw new DataDirError(path, `cannot read the LevelDB file ${current}: ${explain(err)}`);
    }
    const manifest = text.trim();
    if (!/^MANIFEST-\d+$/.test(manifest))
      throw new DataDirError(path, `the LevelDB file ${current} is damaged (it does not name a MANIFEST); ${REPAIR}`);
    try {
      await stat(join(db, manifest));
    } catch (err) {
      const cause = codeOf(err) === 'ENOENT' ? 'is missing' : `cannot be read (${explain(err)})`;
      throw new DataDirError(
        path,
        `the LevelDB manifest ${join(db, manifest)} named by ${current} ${cause}; the database cannot be opened: ${REPAIR}`,
      );
    }
  }
}

/**
 * LevelDB reports a failed open as "Database failed to open" and keeps the
 * reason in `cause`; the operator gets both, with the path, as one line.
 * Other errors pass through unchanged.
 */
export function explainOpenError(dir: string, err: unknown): unknown {
  if (!(err instanceof Error) || !/failed to open/i.test(err.message)) return err;
  const cause = err.cause instanceof Error ? err.cause.message : '';
  return new DataDirError(resolve(dir), `${err.message}${cause ? `: ${cause}` : ''}`.replace(/\s+/g, ' '));
}
