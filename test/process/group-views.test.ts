// What an operator sees of a cluster of four decision groups on real
// processes (docs/operations.md, "Decision groups"): transactions and sagas
// land in every group, and on the leader of group 0 and on a node that leads
// no group the history (`verdict txn list --since`, with --participant and
// --limit; `verdict txn show`), `verdict txn list --in-flight`, `verdict saga
// list`, the metrics and the console API cover every group, each record
// naming its group; after every node was killed and started again, they
// still do.

import { afterAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { pino } from 'pino';
import { VerdictClient } from '../../src/client/client.ts';
import { groupOf } from '../../src/domain/group.ts';
import { startStepService, type StepService } from '../../src/saga/step-service.ts';
import { Cluster, fileTempDir, freePorts, runCli, useProcessCleanup, waitFor, type NodeProc } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';

useProcessCleanup();

const GROUPS = 4;
const WAIT_MS = 45_000;
let parts: Participants | null = null;
let steps: StepService | null = null;
afterAll(async () => {
  await parts?.stop();
  await steps?.stop();
});

/** `perGroup` ids in each group, in group order. */
function idsInEveryGroup(tag: string, perGroup: number): string[][] {
  const out: string[][] = Array.from({ length: GROUPS }, () => []);
  for (let i = 0; out.some((l) => l.length < perGroup); i++) {
    const id = `${tag}-${i}`;
    const l = out[groupOf(id, GROUPS)];
    if (l.length < perGroup) l.push(id);
  }
  return out;
}

type Rec = { txnId: string; group: number; decidedAtMs: number; outcome: string };

async function json<T>(n: NodeProc, path: string): Promise<T> {
  const res = await fetch(`http://${n.metricsAddress}${path}`);
  expect(res.status, `${path} on ${n.id}`).toBe(200);
  return (await res.json()) as T;
}

/** The value of each series of `name` on a node's /metrics, by its group label. */
async function byGroup(n: NodeProc, name: string): Promise<Map<number, number>> {
  const text = await (await fetch(`http://${n.metricsAddress}/metrics`)).text();
  const out = new Map<number, number>();
  for (const m of text.matchAll(new RegExp(`^${name}\\{[^}]*group="(\\d+)"[^}]*\\} (\\S+)$`, 'gm')))
    out.set(Number(m[1]), Number(m[2]));
  return out;
}

async function plain(n: NodeProc, name: string): Promise<number> {
  const text = await (await fetch(`http://${n.metricsAddress}/metrics`)).text();
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m === null ? Number.NaN : Number(m[1]);
}

describe('what an operator sees of four decision groups', () => {
  it('lists every group in the history, txn list, txn show, saga list, the metrics and the console, on any node, and after a restart', async () => {
    const c = await Cluster.start({ nodes: 3, metrics: true, configExtra: () => ({ groups: GROUPS }) });
    const all = c.nodes.map((n) => n.address);
    const client = new VerdictClient({ insecure: true, endpoints: all, callTimeoutMs: 20_000 });
    try {
      const leaders = async (): Promise<string[]> =>
        waitFor('a leader in every group', WAIT_MS, async () => {
          const s = await client.status().catch(() => undefined);
          return s !== undefined && s.groups.length === GROUPS && s.groups.every((g) => g.leaderId !== '')
            ? s.groups.map((g) => g.leaderId)
            : undefined;
        });
      await leaders();
      parts = await startParticipants(c, ['shop', 'ledger']);
      const [port] = await freePorts(1);
      steps = await startStepService({
        clusterId: c.clusterId,
        serviceId: 'travel',
        listen: `127.0.0.1:${port}`,
        endpointsOfCluster: all,
        dataDir: join(fileTempDir('verdict-group-views-steps-'), 'travel'),
        logger: pino({ level: 'silent' }),
        insecure: true,
        registerRetryMs: 200,
        handlers: {
          book: {
            // "wait": a transient error, retried: the saga keeps running (and stays in the saga table).
            action: (req) => {
              if (req.input === 'wait') throw new Error('the airline does not answer');
              return { status: 'done', output: `booked-${req.sagaId}`, effect: `book ${req.sagaId}` };
            },
            compensate: (req) => ({ status: 'done', output: '', effect: `cancel ${req.sagaId}` }),
          },
        },
      });
      await steps.registered;

      // Two transactions in every group (one commits, one aborts), and two sagas (one finishes, one keeps running).
      const txns = new Map<string, { group: number; outcome: string }>();
      for (const [g, [ok, no]] of idsInEveryGroup(`v-${c.clusterId}`, 2).entries()) {
        const a = await (await client.begin({ txnId: ok }))
          .enlist('shop', { set: { [ok]: '1' } })
          .enlist('ledger', { set: { [ok]: '1' } })
          .commit();
        expect(a.outcome).toBe('COMMITTED');
        txns.set(ok, { group: g, outcome: 'commit' });
        const b = await (await client.begin({ txnId: no }))
          .enlist('shop', { set: { [no]: '1' } })
          .enlist('ledger', { fail: 'no funds' })
          .commit();
        expect(b.outcome).toBe('ABORTED');
        txns.set(no, { group: g, outcome: 'abort' });
      }
      const sagas = new Map<string, number>();
      const running: string[] = [];
      for (const [g, [done, waiting]] of idsInEveryGroup(`vs-${c.clusterId}`, 2).entries()) {
        const r = await (await client.saga({ id: done, steps: [{ service: 'travel', name: 'book' }] })).result();
        expect(r.end).toBe('finished');
        await client.saga({ id: waiting, steps: [{ service: 'travel', name: 'book', input: 'wait' }] });
        sagas.set(done, g);
        sagas.set(waiting, g);
        running.push(waiting);
      }
      // A lease in every group (placed by its name).
      const leases = idsInEveryGroup(`vl-${c.clusterId}`, 1).map(([name]) => name);
      for (const name of leases) {
        const r = await client.connection.call('AcquireLease', { name, holder: 'relay-a', epoch: 0, ttlMs: 300_000 });
        expect(r.granted).toBe(true);
      }
      // Begun and left open in every group: what the groups' leaders track in flight.
      const open = idsInEveryGroup(`vo-${c.clusterId}`, 1).map(([id]) => id);
      for (const id of open) await client.begin({ txnId: id, timeoutMs: 120_000 });

      const status = await client.status();
      const lead0 = c.nodes.find((n) => n.id === status.groups[0].leaderId) as NodeProc;
      // A node that leads no group if there is one, else one that does not lead group 0.
      const follower = (c.nodes.find((n) => !status.groups.some((g) => g.leaderId === n.id)) ??
        c.nodes.find((n) => n !== lead0)) as NodeProc;

      const ids = [...txns.keys()];
      const check = async (n: NodeProc, afterRestart: boolean): Promise<void> => {
        const ep = ['--endpoints', n.address];
        // txn list --since: every group's transactions, each with its group, newest first.
        const listed = await waitFor(`${n.id} lists every transaction`, WAIT_MS, async () => {
          const r = await runCli(['txn', 'list', '--since', '1h', '--json', ...ep]);
          if (r.code !== 0) return undefined;
          const page = JSON.parse(r.stdout) as { records: Rec[]; groups: number; nodeId: string };
          return ids.every((id) => page.records.some((x) => x.txnId === id)) ? page : undefined;
        });
        expect(listed.nodeId).toBe(n.id);
        expect(listed.groups).toBe(GROUPS);
        for (const r of listed.records.filter((x) => txns.has(x.txnId))) {
          expect(r.group, r.txnId).toBe(txns.get(r.txnId)?.group);
          expect(r.outcome, r.txnId).toBe(txns.get(r.txnId)?.outcome);
        }
        const times = listed.records.map((r) => r.decidedAtMs);
        expect(times).toEqual([...times].sort((a, b) => b - a));
        const text = await runCli(['txn', 'list', '--since', '1h', ...ep]);
        expect(text.stdout).toMatch(/^TXN\s+GROUP\s+OUTCOME/m);
        // --participant and --limit: merged over the groups, cut to the limit.
        const ledger = await runCli(['txn', 'list', '--since', '1h', '--participant', 'ledger', '--json', ...ep]);
        const lp = JSON.parse(ledger.stdout) as { records: Rec[] };
        // Every COMMIT names both participants in its decision (an ABORT after a NO names the participants only where
        // its group's leader saw them).
        const commits = ids.filter((id) => txns.get(id)?.outcome === 'commit');
        for (const id of commits) expect(lp.records.find((r) => r.txnId === id)?.group, id).toBe(txns.get(id)?.group);
        const three = await runCli(['txn', 'list', '--since', '1h', '--limit', '3', '--json', ...ep]);
        const tp = JSON.parse(three.stdout) as { records: Rec[]; truncated: boolean };
        expect(tp.records.map((r) => r.txnId)).toEqual(listed.records.slice(0, 3).map((r) => r.txnId));
        expect(tp.truncated).toBe(true);
        // The sagas' records, in every group.
        const sagaPage = await runCli(['txn', 'list', '--since', '1h', '--kind', 'saga', '--json', ...ep]);
        const sp = JSON.parse(sagaPage.stdout) as { records: (Rec & { saga: { sagaId: string } })[] };
        for (const [id, g] of sagas)
          expect(
            sp.records.find((r) => r.saga.sagaId === id),
            `saga ${id}`,
          ).toMatchObject({ group: g });
        // txn show: one transaction of each group, from this node's history.
        for (const [id, { group }] of [...txns].filter((_, i) => i % 2 === 0)) {
          const shown = await runCli(['txn', 'show', id, ...ep]);
          expect(shown.code, shown.stderr).toBe(0);
          expect(shown.stdout).toMatch(new RegExp(`history +on node ${n.id} \\(group ${group}\\): COMMITTED`));
        }
        // saga list: the sagas of every group still in the saga tables (the running ones stay).
        const sl = await waitFor(`${n.id} lists the running sagas`, WAIT_MS, async () => {
          const r = await runCli(['saga', 'list', '--json', ...ep]);
          if (r.code !== 0) return undefined;
          const got = (JSON.parse(r.stdout) as { id: string }[]).map((x) => x.id);
          return running.every((id) => got.includes(id)) ? got : undefined;
        });
        expect(sl.length).toBeGreaterThanOrEqual(running.length);
        // txn list without a search: each group's leader's transactions in flight, asked of it wherever it is.
        if (!afterRestart) {
          const inFlight = await runCli([
            'txn',
            'list',
            '--in-flight',
            '--json',
            '--endpoints',
            [n.address, ...all].join(','),
          ]);
          expect(inFlight.code, inFlight.stderr).toBe(0);
          const got = JSON.parse(inFlight.stdout) as { txnId: string; group: number }[];
          for (const id of open)
            expect(
              got.find((t) => t.txnId === id),
              `${id} in flight`,
            ).toMatchObject({ group: groupOf(id, GROUPS) });
        }

        // Metrics: one series per group, and every group led by exactly one node.
        const applied = await byGroup(n, 'verdict_group_raft_applied_index');
        expect([...applied.keys()].sort()).toEqual([0, 1, 2, 3]);
        for (const v of applied.values()) expect(v).toBeGreaterThan(0);
        expect([...(await byGroup(n, 'verdict_group_leader')).keys()].sort()).toEqual([0, 1, 2, 3]);

        // The console API: the history search, a transaction of each group, the sagas.
        const h = await json<{ records: Rec[]; groups: number }>(n, '/api/history?since=1h&limit=100');
        expect(h.groups).toBe(GROUPS);
        for (const id of ids) expect(h.records.find((r) => r.txnId === id)?.group, id).toBe(txns.get(id)?.group);
        for (const [id, { group }] of txns) {
          const t = await json<{ group: number; history: Rec | null }>(n, `/api/transactions/${id}`);
          expect(t.group).toBe(group);
          expect(t.history?.txnId).toBe(id);
        }
        const sp2 = await json<{ sagas: { sagaId: string; group: number }[] }>(n, '/api/sagas?filter=all&limit=1000');
        for (const id of running) expect(sp2.sagas.find((x) => x.sagaId === id)?.group, id).toBe(sagas.get(id));
        const ps = await json<{ groupCount: number; participants: { id: string }[] }>(n, '/api/participants');
        expect(ps.groupCount).toBe(GROUPS);
        const ls = await waitFor(`${n.id} shows every lease`, WAIT_MS, async () => {
          const r = await json<{ leases: { name: string; live: boolean }[] }>(n, '/api/leases');
          return leases.every((name) => r.leases.some((l) => l.name === name && l.live)) ? r : undefined;
        });
        expect(ls.leases.filter((l) => leases.includes(l.name))).toHaveLength(GROUPS);
        if (!afterRestart) {
          // The cluster page: a group's in flight is its leader's figure (the transaction left open in it) and null on
          // the other nodes; the summary sums the groups this node leads, null when it leads none.
          type Page = {
            transactions: { inFlight: number | null };
            groups: { group: number; leaderId: string; inFlight: number | null }[];
          };
          const page = await waitFor(
            `${n.id}'s cluster page shows each group's open transaction`,
            WAIT_MS,
            async () => {
              const r = await json<Page>(n, '/api/cluster');
              const right = r.groups.every((g) => (g.leaderId === n.id ? g.inFlight === 1 : g.inFlight === null));
              return right && r.groups.length === GROUPS ? r : undefined;
            },
          );
          const led = page.groups.filter((g) => g.leaderId === n.id).length;
          expect(page.transactions.inFlight).toBe(led === 0 ? null : led);
        }
      };

      for (const n of [lead0, follower]) await check(n, false);

      // Every group's metrics on every node: exactly one leader per group, and the COMMITs summed over the groups.
      await waitFor('one leader per group in the metrics', WAIT_MS, async () => {
        const each = await Promise.all(c.nodes.map((n) => byGroup(n, 'verdict_group_leader')));
        return [0, 1, 2, 3].every((g) => each.reduce((k, m) => k + (m.get(g) ?? 0), 0) === 1) ? true : undefined;
      });
      const perGroup = await Promise.all(c.nodes.map((n) => byGroup(n, 'verdict_group_transactions_committed_total')));
      for (const g of [0, 1, 2, 3])
        expect(
          perGroup.reduce((k, m) => k + (m.get(g) ?? 0), 0),
          `commits of group ${g}`,
        ).toBe(1);
      const summed = await Promise.all(c.nodes.map((n) => plain(n, 'verdict_transactions_committed_total')));
      expect(summed.reduce((a, b) => a + b, 0)).toBe(GROUPS);

      // Every node killed and started again: the histories, the saga tables and the pages still cover every group.
      for (const n of c.nodes) await n.kill('SIGKILL');
      for (const n of c.nodes) n.start();
      await leaders();
      for (const n of [lead0, follower]) await check(n, true);
    } finally {
      await client.close();
    }
  }, 420_000);
});
