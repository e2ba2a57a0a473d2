// The Go SDK (sdk/go) against three real node processes: a Go participant
// process and a Go client process, built offline from Debian's Go packages.
// The client commits and aborts; then the participant is SIGKILLed after it
// voted YES and before it applied the COMMIT, and its restart recovers the
// decision from its journal and the cluster (R4, AC4). Under mutual TLS the
// participant takes PREPARE only from nodes, and the client talks only to them (R8).
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { tlsCredentials } from '../../src/client/tls.ts';
import { certDir, TestCa } from '../tls-certs.ts';
import { Cluster, fileTempDir, freePorts, tempDir, uniqueClusterId, useProcessCleanup, waitFor } from './harness.ts';
import { buildGoDrivers, GoProc, goClient, stopGoProcs } from './go-procs.ts';
import { checkListingAcrossGroups, type ListedTxn } from './sdk-group-listing.ts';

const WAIT_MS = 60_000;

useProcessCleanup();
afterEach(stopGoProcs);
afterAll(stopGoProcs);

let bin = '';
beforeAll(() => {
  bin = fileTempDir('verdict-go-bin-');
  buildGoDrivers(bin);
}, 300_000);

describe('the Go SDK on a real cluster', () => {
  it("lists the transactions of every decision group at G = 4: Client.Transactions asks each group's leader", async () => {
    await checkListingAcrossGroups('Go', 'gol', async (nodes) => {
      const [r] = await goClient(join(bin, 'client'), nodes, [{ op: 'list' }]);
      return (r.transactions ?? []) as ListedTxn[];
    });
  });

  it('R4: a Go client commits and aborts with a Go participant, which recovers a YES vote after SIGKILL, and is shown closed after SIGTERM', async () => {
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await c.waitForLeader();
    const nodes = c.nodes.map((n) => n.address);
    const dir = tempDir('verdict-go-');
    const hold = join(dir, 'hold');
    const [port] = await freePorts(1);
    const participant = join(bin, 'participant');
    const client = join(bin, 'client');
    const participantArgs = [
      '--id',
      'gop',
      '--nodes',
      nodes.join(','),
      '--data-dir',
      join(dir, 'gop'),
      '--listen',
      `127.0.0.1:${port}`,
      '--hold-file',
      hold,
    ];
    let gop = new GoProc(participant, participantArgs);
    await gop.waitLine('the Go participant registered', (e) => e.event === 'ready');

    const ts = new VerdictClient({ endpoints: nodes, insecure: true, callTimeoutMs: 30_000 });
    try {
      // The registry shows what it serves (waited for: a node that answers may not have applied the registration yet).
      const listed = await waitFor('the registration in the list', WAIT_MS, async () =>
        (await ts.participants()).find((p) => p.participantId === 'gop'),
      );
      expect(listed).toMatchObject({
        endpoint: `127.0.0.1:${port}`,
        resourceKind: 'memory',
        serves: ['Exchange', 'Status'],
      });

      // A commit, an abort after Begin, a NO vote (a payload the memory resource refuses), and an outcome question.
      const results = await goClient(client, nodes, [
        { op: 'commit', txn: 'go-c1', enlist: { gop: { set: { k1: 'v1' } } } },
        { op: 'begin-abort', txn: 'go-a1', enlist: { gop: { set: { k2: 'v2' } } } },
        { op: 'commit', txn: 'go-n1', enlist: { gop: 'not json' } },
        { op: 'outcome', txn: 'go-c1' },
        { op: 'outcome', txn: 'not a txn id' },
      ]);
      expect(results.map((r) => [r.txn, r.outcome ?? r.error])).toEqual([
        ['go-c1', 'COMMITTED'],
        ['go-a1', 'ABORTED'],
        ['go-n1', 'ABORTED'],
        ['go-c1', 'COMMITTED'],
        ['not a txn id', 'INVALID_ARGUMENT'],
      ]);
      await gop.waitLine(
        'go-c1 applied at the participant',
        (e) => e.event === 'decided' && e.txn_id === 'go-c1' && e.outcome === 'COMMITTED',
      );
      // The leader's hot path: PREPARE and DECISION on the Exchange stream the participant serves.
      await gop.waitLine('the Exchange stream opened', (e) => e.event === 'exchange-opened');
      expect(await gop.waitLine('go-n1 voted', (e) => e.event === 'vote' && e.txn_id === 'go-n1')).toMatchObject({
        vote: 'NO',
      });
      // Nothing of the aborted transaction was prepared here.
      expect(gop.lines.filter((e) => e.txn_id === 'go-a1' && e.event === 'vote')).toEqual([]);

      // Commits are held at the participant: it votes YES (durably) and then waits inside COMMIT.
      writeFileSync(hold, '');
      const committing = goClient(client, nodes, [
        { op: 'commit', txn: 'go-k1', enlist: { gop: { set: { k3: 'v3' } } } },
      ]);
      await gop.waitLine('go-k1 voted YES', (e) => e.event === 'vote' && e.txn_id === 'go-k1' && e.vote === 'YES');
      await gop.waitLine('go-k1 held inside COMMIT', (e) => e.event === 'holding' && e.txn_id === 'go-k1');
      // The decision was logged before it was delivered (R1): the client hears COMMITTED without the participant's ACK.
      expect((await committing).map((r) => r.outcome ?? r.error)).toEqual(['COMMITTED']);
      await gop.kill('SIGKILL');
      rmSync(hold, { force: true });
      expect(existsSync(hold)).toBe(false);

      // Restarted on the same data directory: go-k1 is in doubt from its journal, and is resolved to the cluster's
      // decision.
      gop = new GoProc(participant, participantArgs);
      const started = await gop.waitLine('started', (e) => e.event === 'started');
      expect(started.in_doubt).toEqual(['go-k1']);
      const ready = await gop.waitLine('the restarted participant registered', (e) => e.event === 'ready');
      // The committed value of go-c1 came back from the journal.
      expect(ready.values).toMatchObject({ k1: 'v1' });
      const decided = await gop.waitLine(
        'go-k1 applied after the restart',
        (e) => e.event === 'decided' && e.txn_id === 'go-k1',
      );
      expect(decided).toMatchObject({ outcome: 'COMMITTED', prepared: true });
      expect((await ts.outcome('go-k1')).outcome).toBe('COMMITTED');
      // Nothing left in doubt on the cluster's side either: the leader's view has no YES waiting for gop.
      await waitFor('the leader sees gop with nothing in doubt', WAIT_MS, async () => {
        const p = (await ts.participants({ withActivity: true })).find((x) => x.participantId === 'gop');
        return p !== undefined && p.inDoubt === 0 ? true : undefined;
      });
      // Issue 42: SIGTERM stops the participant cleanly; its Exchange stream's last message says closing, and the
      // leader shows it closed, not disconnected.
      expect((await ts.participants({ withActivity: true })).find((x) => x.participantId === 'gop')?.connection).toBe(
        'connected',
      );
      await gop.kill('SIGTERM');
      await gop.waitLine('the Exchange stream closing', (e) => e.event === 'exchange-closing');
      const shown = await waitFor('the leader to show gop closed', WAIT_MS, async () => {
        const p = (await ts.participants({ withActivity: true })).find((x) => x.participantId === 'gop');
        return p?.connection === 'closed' ? p.connection : undefined;
      });
      expect(shown).toBe('closed');
    } finally {
      ts.close();
    }
  });

  it('R8: under mutual TLS the Go client commits through a Go participant that takes PREPARE only from nodes', async () => {
    const certs = certDir();
    try {
      const ca = TestCa.create(certs, 'cluster-ca');
      const clusterId = uniqueClusterId();
      const c = await Cluster.start({
        nodes: 3,
        clusterId,
        logLevel: 'warn',
        configExtra: (id) => {
          const n = ca.node(id, clusterId, `${clusterId}-${id}`);
          return { tls: { ca: ca.cert, cert: n.cert, key: n.key } };
        },
        clientCredentials: tlsCredentials({ ca: ca.cert, ...ca.issue('ops') }),
      });
      await c.waitForLeader();
      const nodes = c.nodes.map((n) => n.address);
      const dir = tempDir('verdict-go-tls-');
      const [port] = await freePorts(1);
      const pcert = ca.issue('gotls', { ou: clusterId, file: `${clusterId}-gotls` });
      const gop = new GoProc(join(bin, 'participant'), [
        ...[
          '--id',
          'gotls',
          '--nodes',
          nodes.join(','),
          '--data-dir',
          join(dir, 'gotls'),
          '--listen',
          `127.0.0.1:${port}`,
          '--hold-file',
          join(dir, 'hold'),
        ],
        ...['--tls', [ca.cert, pcert.cert, pcert.key].join(',')],
      ]);
      await gop.waitLine('the TLS participant registered', (e) => e.event === 'ready');
      const app = ca.issue('app');
      const results = await goClient(
        join(bin, 'client'),
        nodes,
        [
          { op: 'commit', txn: 'gotls-c1', enlist: { gotls: { set: { k: 'v' } } } },
          { op: 'outcome', txn: 'gotls-c1' },
        ],
        [ca.cert, app.cert, app.key].join(','),
      );
      expect(results.map((r) => r.outcome ?? `${r.error}: ${r.message}`)).toEqual(['COMMITTED', 'COMMITTED']);
      await gop.waitLine(
        'gotls-c1 applied at the participant',
        (e) => e.event === 'decided' && e.txn_id === 'gotls-c1' && e.outcome === 'COMMITTED',
      );
      // A PREPARE sent straight to the participant with a certificate of this cluster's CA and OU, but without the node
      // mark, is refused (R8), and nothing is prepared.
      const forger = ca.issue('forger', { ou: clusterId, file: `${clusterId}-forger` });
      const forged = await goClient(
        join(bin, 'client'),
        nodes,
        [
          {
            op: 'prepare-direct',
            txn: 'gotls-f1',
            address: `127.0.0.1:${port}`,
            participant: 'gotls',
            cluster_id: clusterId,
          },
        ],
        [ca.cert, forger.cert, forger.key].join(','),
      );
      expect(forged[0]).toMatchObject({ error: 'PermissionDenied', message: expect.stringMatching(/not a node's/) });
      expect(gop.lines.filter((e) => e.txn_id === 'gotls-f1')).toEqual([]);
      // A client whose certificate is of the same CA but who dials the participant's address instead of a node's hears
      // no node there (R8): nothing is sent, and the call runs out of time.
      const impostor = await goClient(
        join(bin, 'client'),
        [`127.0.0.1:${port}`],
        [{ op: 'outcome', txn: 'gotls-c1' }],
        [ca.cert, app.cert, app.key].join(','),
        2_000,
      );
      expect(impostor[0]).toMatchObject({ error: 'UNAVAILABLE' });
      expect(String(impostor[0].message)).toMatch(/not a node's|verdict-node/);
      // A plaintext client gets nothing from TLS nodes.
      const plain = await goClient(join(bin, 'client'), nodes, [{ op: 'outcome', txn: 'gotls-c1' }], undefined, 2_000);
      expect(plain[0].error).toBeDefined();
      await gop.kill('SIGTERM');
    } finally {
      rmSync(certs, { recursive: true, force: true });
    }
  });
});
