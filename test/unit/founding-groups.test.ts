// The number of decision groups as a founding setting: `verdict cluster
// init --groups N` records it in the data directory beside the cluster id,
// every group gets the founding hard state, and a node whose config says
// another number is refused naming both (docs/operations.md).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args.ts';
import { clusterInitCommand } from '../../src/cli/cluster-init.ts';
import { loadConfig } from '../../src/node/config.ts';
import { foundingHardState } from '../../src/raft/raw-node.ts';
import { StorageIdentityError } from '../../src/storage/dir-identity.ts';
import { FoundingRefusedError, raftStateIn } from '../../src/storage/founding.ts';
import { openGroupStorage } from '../../src/storage/group-store.ts';

const dirs: string[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A one-node cluster's config (no peers to ask), with `extra` keys. */
async function config(extra: Record<string, unknown> = {}): Promise<{ file: string; dataDir: string }> {
  const d = await mkdtemp(join(tmpdir(), 'verdict-found-'));
  dirs.push(d);
  const dataDir = join(d, 'n1');
  const file = join(d, 'n1.json');
  await writeFile(
    file,
    JSON.stringify({
      clusterId: 'c1',
      nodeId: 'n1',
      listen: '127.0.0.1:7001',
      dataDir,
      peers: { n1: '127.0.0.1:7001' },
      ...extra,
    }),
  );
  return { file, dataDir };
}

async function init(args: string[]): Promise<string> {
  let out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await clusterInitCommand(args);
  } finally {
    vi.restoreAllMocks();
  }
  return out;
}

const ID = { clusterId: 'c1', nodeId: 'n1' };

describe('cluster init --groups: G is part of the founding', () => {
  it('founds every group with term 1, records G, and a node with G = 1 (the default) is refused naming both numbers', async () => {
    const { file, dataDir } = await config({ groups: 4 });
    const out = await init(['--config', file, '--groups', '4']);
    expect(out).toMatch(/founded cluster "c1" with 4 decision groups/);
    const s = await openGroupStorage(dataDir, ID, 4);
    try {
      expect(s.groups.map((g) => g.recovered.hardState)).toEqual([0, 1, 2, 3].map(() => foundingHardState()));
    } finally {
      await s.close();
    }
    await expect(openGroupStorage(dataDir, ID, loadConfig(file, { sets: ['groups=1'] }).groups)).rejects.toThrow(
      StorageIdentityError,
    );
    await expect(openGroupStorage(dataDir, ID, 1)).rejects.toThrow(
      /founded with 4 decision groups, but the config says 1 \("groups"\)/,
    );
    // Founded once: a second init is refused, with the directory's own G.
    await expect(init(['--config', file])).rejects.toThrow(FoundingRefusedError);
    expect(await raftStateIn(dataDir, ID, 4)).toMatchObject({ kind: 'state', term: 1 });
  });

  it('without --groups the config decides (1 by default), and a directory of one group holds no groups record', async () => {
    const { file, dataDir } = await config();
    expect(loadConfig(file).groups).toBe(1);
    const out = await init(['--config', file]);
    expect(out).not.toMatch(/decision groups/);
    await expect(openGroupStorage(dataDir, ID, 2)).rejects.toThrow(
      /founded with 1 decision group, but the config says 2/,
    );
  });

  it('--groups out of range, or disagreeing with the config, is a usage error before anything is written', async () => {
    const { file } = await config({ groups: 2 });
    await expect(init(['--config', file, '--groups', '0'])).rejects.toThrow(UsageError);
    await expect(init(['--config', file, '--groups', '65'])).rejects.toThrow(/from 1 to 64/);
    await expect(init(['--config', file, '--groups', '4'])).rejects.toThrow(
      /--groups 4 but the config says "groups": 2/,
    );
    const { file: other } = await config({ groups: 99 });
    expect(() => loadConfig(other)).toThrow(/groups/);
  });
});
