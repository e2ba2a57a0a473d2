// A data directory that cannot be used is refused at start, by the node and
// by the participant alike (src/storage/data-dir.ts): the process exits
// non-zero within seconds and prints one line naming the path and the cause,
// instead of LevelDB's bare "Database failed to open", a raw ENOTDIR, or a
// hang with no output.

import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  Cluster,
  cliEnv,
  freePorts,
  ROOT,
  runCli,
  tempDir,
  useProcessCleanup,
  type CliResult,
} from './harness.ts';

useProcessCleanup();

/** Generous for a loaded machine; an idle one refuses in about a second (tsx start-up). */
const EXIT_WITHIN_MS = 15_000;

/** Runs the CLI, as uid/gid `as` when given (root ignores file modes, so a read-only directory needs another user). */
async function run(args: string[], as?: number): Promise<CliResult> {
  if (as === undefined) return runCli(args, { timeoutMs: EXIT_WITHIN_MS + 5_000 });
  const started = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    uid: as,
    gid: as,
    env: cliEnv({ HOME: '/tmp' }),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), EXIT_WITHIN_MS + 5_000);
  return new Promise((res) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      res({ code, signal, stdout, stderr, elapsedMs: Date.now() - started });
    }),
  );
}

/** Exit non-zero, in time, with exactly one line on stderr that names `path` and matches `cause`. */
function expectOneLine(res: CliResult, path: string, cause: RegExp): void {
  const context = `exit ${res.code ?? res.signal}, ${res.elapsedMs} ms, stderr:\n${res.stderr}`;
  expect(res.code, context).not.toBe(0);
  expect(res.code, context).not.toBeNull();
  expect(res.elapsedMs, context).toBeLessThan(EXIT_WITHIN_MS);
  const lines = res.stderr.split('\n').filter((l) => l !== '');
  expect(lines, context).toHaveLength(1);
  expect(lines[0]).toMatch(/^verdict: /);
  expect(lines[0]).toContain(path);
  expect(lines[0]).toMatch(cause);
  expect(lines[0]).not.toMatch(/    at /);
}

describe('a data directory that cannot be used is refused with one line naming the path and the cause', () => {
  let dir: string;
  let config: string;
  let listen: string;

  beforeAll(async () => {
    dir = tempDir('verdict-datadir-');
    const [port] = await freePorts(1);
    listen = `127.0.0.1:${port}`;
    config = join(dir, 'node.json');
    writeFileSync(
      config,
      JSON.stringify({
        clusterId: 'c1',
        nodeId: 'n1',
        listen,
        peers: { n1: listen },
        dataDir: 'data',
        tickMs: 50,
        electionTicks: 20,
        heartbeatTicks: 2,
        insecure: true,
      }),
    );
  });

  const node = (dataDir: string, as?: number): Promise<CliResult> =>
    run(['node', '--config', config, '--set', `dataDir=${dataDir}`], as);
  const participant = (dataDir: string, as?: number): Promise<CliResult> =>
    run(['participant', '--id', 'p1', '--listen', '127.0.0.1:0', '--endpoints', listen, '--data', dataDir], as);

  it('refuses a data dir that is a file (node and participant), not a raw ENOTDIR', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory\n');
    expectOneLine(await node(file), file, /is a file, not a directory/);
    expectOneLine(await participant(file), file, /is a file, not a directory/);
    const below = join(file, 'sub');
    expectOneLine(await node(below), below, /a part of the path is a file/);
  });

  it('refuses a data dir under /proc (node and participant) instead of hanging', async () => {
    const p = '/proc/verdict-data';
    expectOneLine(await node(p), p, /proc pseudo-filesystem, not on a disk/);
    expectOneLine(await participant(p), p, /proc pseudo-filesystem, not on a disk/);
  });

  it('refuses a read-only data dir (node and participant), not "Database failed to open"', async () => {
    const ro = join(dir, 'read-only');
    mkdirSync(ro);
    chmodSync(ro, 0o555);
    // Root writes whatever the mode says: run the process as nobody, who can read the config but not write the folder.
    const asUser = process.getuid?.() === 0 ? 65534 : undefined;
    if (asUser !== undefined) {
      chmodSync(dir, 0o755);
      chmodSync(config, 0o644);
    }
    for (const res of [await node(ro, asUser), await participant(ro, asUser)]) {
      expectOneLine(
        res,
        ro,
        /cannot write and sync a file in it: (permission denied|the filesystem is mounted read-only)/,
      );
      expect(res.stderr).not.toMatch(/Database failed to open/);
    }
    expect(readdirSync(ro)).toEqual([]);
  });

  it('refuses a node data dir whose LevelDB MANIFEST is missing, naming the file', async () => {
    const c = await Cluster.start({ nodes: 1 });
    await c.waitForLeader();
    await c.putOnLeader('k', 'v');
    const n = c.nodes[0];
    await n.kill('SIGTERM');
    const damaged = join(dir, 'no-manifest');
    cpSync(n.dataDir, damaged, { recursive: true });
    const raft = readdirSync(damaged, { recursive: true, withFileTypes: true }).filter((e) =>
      /^MANIFEST-\d+$/.test(e.name),
    );
    expect(raft.length).toBeGreaterThan(0);
    for (const m of raft) rmSync(join(m.parentPath ?? m.path, m.name));
    const res = await node(damaged);
    expectOneLine(res, damaged, /LevelDB manifest .*MANIFEST-\d+ named by .*CURRENT is missing/);
    expect(res.stderr).toMatch(/run `verdict node repair --config <that node's config>` with the node stopped/);
    expect(res.stderr).not.toMatch(/\bdelete\b|\bremove\b|backup/);
  });
});
