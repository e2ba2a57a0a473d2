// R7: one data-directory identity check for nodes and participants
// (src/storage/dir-identity.ts): one file name, the old participant file
// still read, damaged files refused with one line, and neither kind of
// process taking over the other's directory.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  claimDir,
  IDENTITY_FILE,
  readDirIdentity,
  StorageIdentityError,
  type DirOwner,
} from '../../src/storage/dir-identity.ts';
import { DiskLogStore } from '../../src/storage/store.ts';

const P1: DirOwner = { clusterId: 'alpha', role: 'participant', id: 'p1' };
const FIX = 'use another --data directory';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'verdict-dir-identity-'));
  dirs.push(d);
  return d;
}

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StorageIdentityError);
  const msg = (err as Error).message;
  expect(msg).not.toContain('\n');
  return msg;
}

describe('R7: a data directory names its one owner in identity.json', () => {
  it('R7: a fresh directory is claimed, and claimed again by the same participant', async () => {
    const dir = await tempDir();
    await claimDir(dir, P1, FIX);
    expect(await readFile(join(dir, IDENTITY_FILE), 'utf8')).toBe('{"clusterId":"alpha","participantId":"p1"}\n');
    await claimDir(dir, P1, FIX);
    expect(await readDirIdentity(dir)).toEqual({ state: 'found', file: join(dir, IDENTITY_FILE), owner: P1 });
  });

  it.each<[string, DirOwner]>([
    ['another participant id', { clusterId: 'alpha', role: 'participant', id: 'p2' }],
    ['another cluster id', { clusterId: 'beta', role: 'participant', id: 'p1' }],
    ['a node of the same name', { clusterId: 'alpha', role: 'node', id: 'p1' }],
  ])('%s is refused in one line naming the directory and both owners, and nothing is written', async (_name, other) => {
    const dir = await tempDir();
    await claimDir(dir, P1, FIX);
    const before = await readFile(join(dir, IDENTITY_FILE), 'utf8');
    const msg = await refusal(claimDir(dir, other, FIX));
    expect(msg).toBe(
      `data directory ${dir} belongs to participant "p1" of cluster "alpha", but the config says ${other.role} "${other.id}" of cluster "${other.clusterId}"; ${FIX}`,
    );
    expect(await readFile(join(dir, IDENTITY_FILE), 'utf8')).toBe(before);
  });

  it('only identity.json names the owner: a participant.json of an earlier development build is not read', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'participant.json'), '{"clusterId":"alpha","participantId":"p1"}\n');
    expect(await readDirIdentity(dir)).toEqual({ state: 'none' });
  });

  it.each([
    ['truncated JSON', '{"clusterId":"alpha","partici', /is damaged \(it is not valid JSON\)/],
    ['an array', '["alpha","p1"]', /is damaged \(it is not a JSON object\)/],
    ['no cluster id', '{"participantId":"p1"}', /is damaged \(it has no clusterId\)/],
    ['an empty participant id', '{"clusterId":"alpha","participantId":""}', /neither a nodeId nor a participantId/],
    [
      'both ids',
      '{"clusterId":"alpha","participantId":"p1","nodeId":"n1"}',
      /neither a nodeId nor a participantId, or both/,
    ],
    ['a huge file', `{"clusterId":"${'a'.repeat(10_000)}","participantId":"p1"}`, /more than 4096/],
  ])('a damaged identity file (%s) is refused, naming the file, and left as it was', async (_name, text, why) => {
    const dir = await tempDir();
    await writeFile(join(dir, IDENTITY_FILE), text);
    const msg = await refusal(claimDir(dir, P1, FIX));
    expect(msg).toMatch(why);
    expect(msg).toContain(join(dir, IDENTITY_FILE));
    expect(msg).toContain(FIX);
    expect(await readFile(join(dir, IDENTITY_FILE), 'utf8')).toBe(text);
  });
});

describe("R7: a node and a participant never take each other's directory", () => {
  it("R7: a node refuses a participant's directory, even one holding nothing else yet", async () => {
    const dir = await tempDir();
    await claimDir(dir, P1, FIX);
    const msg = await refusal(DiskLogStore.open(dir, { clusterId: 'alpha', nodeId: 'n1' }));
    expect(msg).toMatch(
      /belongs to participant "p1" of cluster "alpha", but the config says node "n1" of cluster "alpha"/,
    );
    expect(await readdir(dir)).toEqual([IDENTITY_FILE]);
  });

  it("a participant refuses a node's directory", async () => {
    const dir = await tempDir();
    const { store } = await DiskLogStore.open(dir, { clusterId: 'alpha', nodeId: 'n1' });
    await store.close();
    expect(await readFile(join(dir, IDENTITY_FILE), 'utf8')).toBe('{"clusterId":"alpha","nodeId":"n1"}\n');
    await expect(refusal(claimDir(dir, P1, FIX))).resolves.toMatch(
      /belongs to node "n1" of cluster "alpha", but the config says participant "p1"/,
    );
  });

  it("a node's damaged identity file is rewritten from LevelDB, which holds the authoritative copy", async () => {
    const dir = await tempDir();
    const first = await DiskLogStore.open(dir, { clusterId: 'alpha', nodeId: 'n1' });
    await first.store.close();
    await writeFile(join(dir, IDENTITY_FILE), '{"clusterId":');
    const again = await DiskLogStore.open(dir, { clusterId: 'alpha', nodeId: 'n1' });
    await again.store.close();
    expect(await readFile(join(dir, IDENTITY_FILE), 'utf8')).toBe('{"clusterId":"alpha","nodeId":"n1"}\n');
    // With the file damaged, LevelDB's record still refuses another node.
    await writeFile(join(dir, IDENTITY_FILE), 'garbage');
    await expect(refusal(DiskLogStore.open(dir, { clusterId: 'alpha', nodeId: 'n2' }))).resolves.toMatch(
      /belongs to node "n1" of cluster "alpha"/,
    );
  });
});
