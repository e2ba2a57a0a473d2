// A committed entry in a node's own log that it cannot apply (command tag
// 127, as in the report): peers cannot send one any more (fuzz-raft.test.ts),
// so here it is written into a stopped node's log through the storage API.
// The node must stop with exit code 3 and one line naming the index, the
// same way on every restart, instead of a crash loop with a stack trace.

import { describe, expect, it } from 'vitest';
import { EntryType } from '../../src/raft/types.ts';
import { DiskLogStore } from '../../src/storage/store.ts';
import { Cluster, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

describe('a committed entry this node cannot apply', { timeout: 240_000 }, () => {
  it('stops the node with exit code 3 and one line naming the index, on every restart, with no stack trace', async () => {
    const c = await Cluster.start({ nodes: 1 });
    await c.waitForLeader();
    await c.putOnLeader('before', 'v');
    const n = c.nodes[0];
    await n.kill('SIGKILL');

    const { store, recovered } = await DiskLogStore.open(n.dataDir, { clusterId: c.clusterId, nodeId: n.id });
    const index = recovered.snapshot.metadata.index + recovered.entries.length + 1;
    const term = recovered.hardState.term;
    await new Promise<void>((resolve, reject) =>
      store.persist(
        {
          hardState: { ...recovered.hardState, commit: index },
          entries: [{ term, index, type: EntryType.Normal, data: new Uint8Array([127, 0x7b, 0x7d]) }],
          snapshot: null,
          localSnapshot: null,
          compactTo: 0,
          sync: true,
        },
        (err) => (err ? reject(err) : resolve()),
      ),
    );
    await store.close();

    for (let attempt = 1; attempt <= 2; attempt++) {
      n.start();
      await waitFor(`${n.id} to stop (start ${attempt})`, 60_000, async () => (n.lastExit !== null ? true : undefined));
      expect(n.lastExit, `start ${attempt}`).toEqual({ code: 3, signal: null });
      const run = n.logTail(10_000).split('--- harness: starting').at(-1) ?? '';
      expect(run).toContain(`log entry ${index} cannot be applied: unknown command tag 127`);
      expect(run).toContain(`"index":${index}`);
      // One line for the operator, not a stack trace.
      expect(run).not.toMatch(/\n\s+at /);
      expect(run).not.toMatch(/\\n\s+at /);
    }
  });
});
