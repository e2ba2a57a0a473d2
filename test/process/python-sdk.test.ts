// The Python SDK (sdk/python) against three real node processes: a Python
// participant process and a Python client process, both on Debian's
// /usr/bin/python3. The client commits and aborts; then the participant is
// SIGKILLed after it voted YES and before it applied the COMMIT, and its
// restart recovers the decision from its journal and the cluster (R4, AC4).
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, freePorts, tempDir, uniqueClusterId, useProcessCleanup, waitFor } from './harness.ts';
import { PythonProc, pythonClient, stopPythonProcs } from './python-procs.ts';
import { certDir, TestCa } from '../tls-certs.ts';
import { tlsCredentials } from '../../src/client/tls.ts';
import { Leader } from '../conformance/driver.ts';
import * as grpc from '@grpc/grpc-js';
import { runCli } from './harness.ts';
import { checkListingAcrossGroups, type ListedTxn } from './sdk-group-listing.ts';

const WAIT_MS = 60_000;

useProcessCleanup();
afterEach(stopPythonProcs);
afterAll(stopPythonProcs);

describe('the Python SDK on a real cluster', () => {
  it("lists the transactions of every decision group at G = 4: Client.transactions asks each group's leader", async () => {
    await checkListingAcrossGroups('Python', 'pyl', async (nodes) => {
      const [r] = await pythonClient(nodes, [{ op: 'list' }]);
      return (r.transactions ?? []) as ListedTxn[];
    });
  });

  it('R4: a Python client commits and aborts with a Python participant, which recovers a YES vote after SIGKILL, and is shown closed after SIGTERM', async () => {
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await c.waitForLeader();
    const nodes = c.nodes.map((n) => n.address);
    const dir = tempDir('verdict-python-');
    const hold = join(dir, 'hold');
    const [port] = await freePorts(1);
    const participantArgs = [
      '--id',
      'py',
      '--nodes',
      nodes.join(','),
      '--data-dir',
      join(dir, 'py'),
      '--listen',
      `127.0.0.1:${port}`,
      '--hold-file',
      hold,
    ];
    let py = new PythonProc('participant.py', participantArgs);
    await py.waitLine('the Python participant registered', (e) => e.event === 'ready');

    const ts = new VerdictClient({ endpoints: nodes, insecure: true, callTimeoutMs: 30_000 });
    try {
      // The registry shows what it serves (waited for: a node that answers may not have applied the registration yet).
      const listed = await waitFor('the registration in the list', WAIT_MS, async () =>
        (await ts.participants()).find((p) => p.participantId === 'py'),
      );
      expect(listed).toMatchObject({
        endpoint: `127.0.0.1:${port}`,
        resourceKind: 'memory',
        serves: ['Exchange', 'Status'],
      });

      // A commit, an abort before commit, a NO vote (a payload the memory resource refuses), and an outcome question.
      const results = await pythonClient(nodes, [
        { op: 'commit', txn: 'py-c1', enlist: { py: { set: { k1: 'v1' } } } },
        { op: 'begin-abort', txn: 'py-a1', enlist: { py: { set: { k2: 'v2' } } } },
        { op: 'commit', txn: 'py-n1', enlist: { py: 'not json' } },
        { op: 'outcome', txn: 'py-c1' },
      ]);
      expect(results.map((r) => [r.txn, r.outcome ?? r.error])).toEqual([
        ['py-c1', 'COMMITTED'],
        ['py-a1', 'ABORTED'],
        ['py-n1', 'ABORTED'],
        ['py-c1', 'COMMITTED'],
      ]);
      await py.waitLine(
        'py-c1 applied at the participant',
        (e) => e.event === 'decided' && e.txn_id === 'py-c1' && e.outcome === 'COMMITTED',
      );
      // The leader's hot path: PREPARE and DECISION on the Exchange stream the participant serves (its lines waited
      // for: they reach this process asynchronously).
      await py.waitLine('the Exchange stream opened', (e) => e.event === 'exchange-opened');
      expect(await py.waitLine('py-n1 voted', (e) => e.event === 'vote' && e.txn_id === 'py-n1')).toMatchObject({
        vote: 'NO',
      });

      // Commits are held at the participant: it votes YES (durably) and then waits inside COMMIT.
      writeFileSync(hold, '');
      const committing = pythonClient(nodes, [{ op: 'commit', txn: 'py-k1', enlist: { py: { set: { k3: 'v3' } } } }]);
      await py.waitLine('py-k1 voted YES', (e) => e.event === 'vote' && e.txn_id === 'py-k1' && e.vote === 'YES');
      await py.waitLine('py-k1 held inside COMMIT', (e) => e.event === 'holding' && e.txn_id === 'py-k1');
      // The decision was logged before it was delivered (R1): the client hears COMMITTED without the participant's ACK.
      expect((await committing).map((r) => r.outcome ?? r.error)).toEqual(['COMMITTED']);
      await py.kill('SIGKILL');
      rmSync(hold, { force: true });
      expect(existsSync(hold)).toBe(false);

      // Restarted on the same data directory: py-k1 is in doubt from its journal, and is resolved to the cluster's
      // decision.
      py = new PythonProc('participant.py', participantArgs);
      const ready = await py.waitLine('the restarted participant registered', (e) => e.event === 'ready');
      const started = await py.waitLine('started', (e) => e.event === 'started');
      expect(started.in_doubt).toEqual(['py-k1']);
      // The committed value of py-c1 came back from the journal.
      expect(ready.values).toMatchObject({ k1: 'v1' });
      const decided = await py.waitLine(
        'py-k1 applied after the restart',
        (e) => e.event === 'decided' && e.txn_id === 'py-k1',
      );
      expect(decided).toMatchObject({ outcome: 'COMMITTED', prepared: true });
      expect((await ts.outcome('py-k1')).outcome).toBe('COMMITTED');
      // Nothing left in doubt on the cluster's side either: the leader's view has no YES waiting for py.
      await waitFor('the leader sees py with nothing in doubt', WAIT_MS, async () => {
        const p = (await ts.participants({ withActivity: true })).find((x) => x.participantId === 'py');
        return p !== undefined && p.inDoubt === 0 ? true : undefined;
      });
      // Issue 42: SIGTERM closes the participant cleanly; it says so on the leader's Exchange stream, and the leader
      // shows it closed, not disconnected.
      expect((await ts.participants({ withActivity: true })).find((x) => x.participantId === 'py')?.connection).toBe(
        'connected',
      );
      expect(await py.kill('SIGTERM')).toBe(0);
      const shown = await waitFor('the leader to show py closed', WAIT_MS, async () => {
        const p = (await ts.participants({ withActivity: true })).find((x) => x.participantId === 'py');
        return p?.connection === 'closed' ? p.connection : undefined;
      });
      expect(shown).toBe('closed');
    } finally {
      ts.close();
    }
  });

  it('R8: under mutual TLS the Python client commits through a Python participant that takes PREPARE only from nodes', async () => {
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
      const dir = tempDir('verdict-python-tls-');
      const [port] = await freePorts(1);
      const pcert = ca.issue('pytls', { ou: clusterId, file: `${clusterId}-pytls` });
      const py = new PythonProc('participant.py', [
        ...[
          '--id',
          'pytls',
          '--nodes',
          nodes.join(','),
          '--data-dir',
          join(dir, 'pytls'),
          '--listen',
          `127.0.0.1:${port}`,
          '--hold-file',
          join(dir, 'hold'),
        ],
        ...['--tls', [ca.cert, pcert.cert, pcert.key].join(',')],
      ]);
      await py.waitLine('the TLS participant registered', (e) => e.event === 'ready');
      const app = ca.issue('app');
      const results = await pythonClient(
        nodes,
        [
          { op: 'commit', txn: 'tls-c1', enlist: { pytls: { set: { k: 'v' } } } },
          { op: 'outcome', txn: 'tls-c1' },
        ],
        [ca.cert, app.cert, app.key].join(','),
      );
      expect(results.map((r) => r.outcome ?? `${r.error}: ${r.message}`)).toEqual(['COMMITTED', 'COMMITTED']);
      await py.waitLine(
        'tls-c1 applied at the participant',
        (e) => e.event === 'decided' && e.txn_id === 'tls-c1' && e.outcome === 'COMMITTED',
      );
      // A client without a certificate of the cluster's CA gets nothing: plaintext to a TLS node fails, and no
      // transaction was begun.
      const plain = await pythonClient(nodes, [{ op: 'outcome', txn: 'tls-c1' }], undefined, 2_000);
      expect(plain[0].error).toBeDefined();
      await py.kill('SIGTERM');
    } finally {
      rmSync(certs, { recursive: true, force: true });
    }
  });

  it('R8: with certificates made by verdict certs, the Python participant takes PREPARE from the node and refuses a client, an admin, another participant and a node certificate of no member calling as if they were nodes', async () => {
    const root = tempDir('verdict-python-certs-');
    const real = join(root, 'certs');
    const clusterId = uniqueClusterId();
    const [port] = await freePorts(1);
    // One CA: the node, the participant, and what may call a participant but is no node of the cluster: a client, an
    // admin, another participant, and a second node certificate (n2) for a cluster of one node.
    const made = await runCli([
      'certs',
      '--dir',
      real,
      '--cluster-id',
      clusterId,
      '--nodes',
      '2',
      '--participant',
      `py=127.0.0.1:${port}`,
      '--participant',
      'shop=127.0.0.1:1',
      '--client',
      'ops',
      '--admin',
      'root',
    ]);
    expect(made.code, made.stderr).toBe(0);
    const ca = join(real, 'ca.crt');
    const files = (dir: string, name: string): { ca: string; cert: string; key: string } => ({
      ca,
      cert: join(dir, `${name}.crt`),
      key: join(dir, `${name}.key`),
    });

    const c = await Cluster.start({
      nodes: 1,
      clusterId,
      logLevel: 'warn',
      configExtra: (id) => ({ tls: files(real, id) }),
      clientCredentials: tlsCredentials(files(real, 'ops')),
    });
    await c.waitForLeader();
    const nodes = c.nodes.map((n) => n.address);
    const py = new PythonProc('participant.py', [
      ...[
        '--id',
        'py',
        '--cluster-id',
        clusterId,
        '--nodes',
        nodes.join(','),
        '--data-dir',
        join(root, 'py'),
        '--listen',
        `127.0.0.1:${port}`,
        '--hold-file',
        join(root, 'hold'),
      ],
      ...['--tls', Object.values(files(real, 'py')).join(',')],
    ]);
    await py.waitLine('the TLS participant registered', (e) => e.event === 'ready');
    // The node's certificate passes: a transaction through the cluster commits at the participant.
    const ops = files(real, 'ops');
    const results = await pythonClient(
      nodes,
      [{ op: 'commit', txn: 'certs-c1', enlist: { py: { set: { k: 'v' } } } }],
      [ops.ca, ops.cert, ops.key].join(','),
    );
    expect(results.map((r) => r.outcome ?? `${r.error}: ${r.message}`)).toEqual(['COMMITTED']);
    await py.waitLine(
      'certs-c1 applied',
      (e) => e.event === 'decided' && e.txn_id === 'certs-c1' && e.outcome === 'COMMITTED',
    );

    const callers: Leader[] = [];
    try {
      const as = (identity: { ca: string; cert: string; key: string }): Leader => {
        const l = new Leader(`127.0.0.1:${port}`, clusterId, 'py', identity);
        callers.push(l);
        return l;
      };
      // The real node's certificate, called directly: answered (so what refuses the others is the caller check, not
      // TLS).
      expect((await as(files(real, 'n1')).status('certs-c1')).code).toBe(grpc.status.OK);
      for (const [who, identity, why] of [
        ['a client certificate', files(real, 'ops'), /not of cluster/],
        ['an admin certificate', files(real, 'root'), /not of cluster/],
        [
          "another participant's certificate",
          files(real, 'shop'),
          /not a node's: it lacks the node mark O=verdict-node/,
        ],
        [
          'the node certificate of a node the cluster does not have',
          files(real, 'n2'),
          /CN=n2 names no node of cluster .* \(its nodes: n1\)/,
        ],
      ] as const) {
        const l = as(identity);
        const p = await l.prepare(`certs-x-${callers.length}`, Buffer.from(JSON.stringify({ set: { k: 'stolen' } })));
        expect([who, grpc.status[p.code]]).toEqual([who, 'PERMISSION_DENIED']);
        expect(p.details).toMatch(why);
        expect(grpc.status[(await l.decide('certs-c1', false)).code]).toBe('PERMISSION_DENIED');
        expect(grpc.status[(await l.status('certs-c1')).code]).toBe('PERMISSION_DENIED');
        const x = await l.exchange(
          [[{ id: 1, prepare: l.prepareRequest(`certs-y-${callers.length}`, Buffer.from('{}')) }]],
          5_000,
        );
        expect([x.answers.length, grpc.status[x.code]]).toEqual([0, 'PERMISSION_DENIED']);
      }
      // Nothing the impostors sent was taken: the committed value stands, no vote was cast for them.
      expect(py.lines.filter((e) => e.event === 'vote' && String(e.txn_id).startsWith('certs-x')).length).toBe(0);
      await py.kill('SIGTERM');
    } finally {
      for (const l of callers) l.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
