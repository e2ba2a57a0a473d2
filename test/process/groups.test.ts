// Decision groups on real processes (docs/architecture.md, "Decision
// groups"): three node processes founded with four groups, one gRPC stream
// per pair of nodes carrying every group's Raft traffic, and two memory
// participants registered in every group over one Exchange stream per node.
// Transactions whose ids land in every group commit and abort; each outcome
// is answered by every node; with a node killed, every group still decides.

import * as grpc from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { coordinatorService } from '../../src/transport/coordinator-rpc.ts';
import { VerdictClient } from '../../src/client/client.ts';
import { groupOf } from '../../src/domain/group.ts';
import { join } from 'node:path';
import { pino } from 'pino';
import { startStepService, type StepService } from '../../src/saga/step-service.ts';
import { Cluster, fileTempDir, freePorts, runCli, useProcessCleanup, waitFor } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';

useProcessCleanup();

const GROUPS = 4;
const TXN_TIMEOUT_MS = 5_000;
let parts: Participants | null = null;
let steps: StepService | null = null;
afterAll(async () => {
  await parts?.stop();
  await steps?.stop();
});

/** A raw Begin of `txnId` at `address`: the status and metadata it answers. */
function beginAt(address: string, txnId: string): Promise<{ code: grpc.status; metadata: grpc.Metadata }> {
  const Client = grpc.makeGenericClientConstructor(
    coordinatorService as unknown as grpc.ServiceDefinition,
    'Coordinator',
  );
  const cl = new Client(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    (
      cl as unknown as Record<
        string,
        (r: unknown, o: grpc.CallOptions, cb: (err: grpc.ServiceError | null) => void) => void
      >
    ).Begin({ txnId, timeoutMs: 1_000 }, { deadline: Date.now() + 5_000 }, (err) => {
      cl.close();
      resolve(
        err === null
          ? { code: grpc.status.OK, metadata: new grpc.Metadata() }
          : { code: err.code, metadata: err.metadata },
      );
    });
  });
}

/** `perGroup` ids in each group, in group order: ids chosen by their placement, as a client's ids fall anywhere. */
function idsInEveryGroup(tag: string, perGroup: number): string[][] {
  const out: string[][] = Array.from({ length: GROUPS }, () => []);
  for (let i = 0; out.some((l) => l.length < perGroup); i++) {
    const id = `${tag}-${i}`;
    const l = out[groupOf(id, GROUPS)];
    if (l.length < perGroup) l.push(id);
  }
  return out;
}

describe('a cluster of four decision groups on real processes', () => {
  it('commits and aborts in every group, answers every outcome on every node, and keeps deciding with a node killed', async () => {
    const c = await Cluster.start({ nodes: 3, metrics: true, configExtra: () => ({ groups: GROUPS }) });
    const client = new VerdictClient({
      insecure: true,
      endpoints: c.nodes.map((n) => n.address),
      callTimeoutMs: 20_000,
    });
    const perNode = c.nodes.map(
      (n) => new VerdictClient({ insecure: true, endpoints: [n.address], callTimeoutMs: 10_000 }),
    );
    try {
      // Every group elects a leader; the status names all four.
      const status = await waitFor('a leader in every group', 45_000, async () => {
        const s = await client.status().catch(() => undefined);
        return s !== undefined && s.groups.length === GROUPS && s.groups.every((g) => g.leaderId !== '')
          ? s
          : undefined;
      });
      expect(status.groupCount).toBe(GROUPS);
      expect(status.groups.map((g) => g.group)).toEqual([0, 1, 2, 3]);
      // `verdict status` lists every group, in its table and in --json.
      const endpoints = c.nodes.map((n) => n.address).join(',');
      // A node answers for the groups as it knows them: until it has heard every group's leader it says a group has
      // none (exit 1).
      const json = await waitFor('verdict status healthy', 20_000, async () => {
        const r = await runCli(['status', '--json', '--endpoints', endpoints]);
        return r.code === 0 ? r : undefined;
      });
      const st = JSON.parse(json.stdout) as { healthy: boolean; groups: { group: number; leaderId: string }[] };
      expect(st.healthy).toBe(true);
      expect(st.groups.map((g) => g.group)).toEqual([0, 1, 2, 3]);
      expect(st.groups.every((g) => g.leaderId !== '')).toBe(true);
      const text = await runCli(['status', '--endpoints', endpoints]);
      expect(text.stdout).toMatch(/^GROUP\s+LEADER\s+TERM\s+COMMIT\s+APPLIED\s+IN-FLIGHT$/m);
      for (const g of [0, 1, 2, 3]) expect(text.stdout).toMatch(new RegExp(`^${g}\\s+n\\d`, 'm'));

      // The console's cluster page lists every group too.
      const page = (await (await fetch(`http://${c.nodes[0].metricsAddress}/api/cluster`)).json()) as {
        groups: { group: number; leaderId: string }[];
      };
      expect(page.groups.map((g) => g.group)).toEqual([0, 1, 2, 3]);

      parts = await startParticipants(c, ['shop', 'ledger', 'spare']);
      // Registered in every group: each node lists both from group 0, and every group's commit path accepts them
      // (below).
      expect((await client.participants()).map((p) => p.participantId).sort()).toEqual(['ledger', 'shop', 'spare']);
      // A removal is made in every group: afterwards no group's commit path takes the participant.
      await parts.runtimes.get('spare')?.stop();
      parts.runtimes.delete('spare');
      expect((await client.removeParticipantWith('spare', 'groups-test', {})).removed).toBe(true);
      expect((await client.participants()).map((p) => p.participantId).sort()).toEqual(['ledger', 'shop']);
      for (const [g, [probe]] of idsInEveryGroup(`spare-${c.clusterId}`, 1).entries()) {
        const tx = await client.begin({ txnId: probe, timeoutMs: TXN_TIMEOUT_MS });
        await expect(
          tx
            .enlist('shop', { set: { [probe]: '1' } })
            .enlist('spare', { set: { [probe]: '1' } })
            .commit(),
          `group ${g}`,
        ).rejects.toThrow(/spare is not registered/);
      }

      // Where every group's log stands once the registrations settled: every node agrees on each group's commit index.
      const settled = await waitFor('the registrations settled in every group', 20_000, async () => {
        const all = await Promise.all(perNode.map((pc) => pc.status().catch(() => undefined)));
        if (all.some((s) => s === undefined)) return undefined;
        const first = all[0]?.groups.map((g) => g.commitIndex).join(',');
        return all.every((s) => s?.groups.map((g) => g.commitIndex).join(',') === first) ? all[0] : undefined;
      });

      const ids = idsInEveryGroup(`grp-${c.clusterId}`, 3);
      const outcomes = new Map<string, string>();
      for (const [g, list] of ids.entries()) {
        const [commitId, abortId, lateId] = list;
        const ok = await (await client.begin({ txnId: commitId, timeoutMs: TXN_TIMEOUT_MS }))
          .enlist('shop', { set: { [commitId]: '1' } })
          .enlist('ledger', { set: { [commitId]: '1' } })
          .commit();
        expect(ok.outcome, `commit in group ${g}`).toBe('COMMITTED');
        outcomes.set(commitId, 'COMMITTED');
        const no = await (await client.begin({ txnId: abortId, timeoutMs: TXN_TIMEOUT_MS }))
          .enlist('shop', { set: { [abortId]: '1' } })
          .enlist('ledger', { fail: `no funds in group ${g}` })
          .commit();
        expect(no.outcome, `abort in group ${g}`).toBe('ABORTED');
        expect(no.reason).toContain(`no funds in group ${g}`);
        outcomes.set(abortId, 'ABORTED');
        void lateId;
      }

      // Each decision was logged in its own group: every group's log grew past where it stood before these
      // transactions.
      await waitFor('every group logged its decisions', 20_000, async () => {
        const s = await client.status().catch(() => undefined);
        return s?.groups.every((g, i) => g.commitIndex > settled.groups[i].commitIndex) ? true : undefined;
      });
      // All-or-nothing at the participants: both hold every committed write, neither an aborted one.
      await waitFor('every decision applied at both participants', 20_000, async () => {
        for (const p of parts?.runtimes.values() ?? [])
          for (const [id, want] of outcomes)
            if (p.resource.get(id) !== (want === 'COMMITTED' ? '1' : undefined)) return undefined;
        return true;
      });

      // A follower of a group names that group's leader, and the group.
      const probes = idsInEveryGroup(`probe-${c.clusterId}`, 1);
      for (const [g, [probe]] of probes.entries()) {
        const now = await client.status();
        const follower = c.nodes.find((n) => n.id !== now.groups[g].leaderId);
        const refusal = await beginAt(follower?.address ?? '', probe);
        if (refusal.code === grpc.status.OK) continue; // leadership moved to it meanwhile
        expect(refusal.code).toBe(grpc.status.UNAVAILABLE);
        expect(refusal.metadata.get('verdict-group')).toEqual([String(g)]);
        expect(refusal.metadata.get('verdict-reason')[0]).toMatch(/^(NOT_LEADER|NO_LEADER)$/);
        if (refusal.metadata.get('verdict-reason')[0] === 'NOT_LEADER')
          expect(refusal.metadata.get('verdict-leader-id')).toEqual([now.groups[g].leaderId]);
      }

      // Leases are placed by their names: one in every group, granted to its first holder and refused to another.
      const leases = idsInEveryGroup(`lease-${c.clusterId}`, 1).map(([name]) => name);
      const epochs = new Map<string, number>();
      for (const name of leases) {
        const first = await client.connection.call('AcquireLease', {
          name,
          holder: 'relay-a',
          epoch: 0,
          ttlMs: 120_000,
        });
        expect(first.granted, `lease ${name} (group ${groupOf(name, GROUPS)})`).toBe(true);
        epochs.set(name, first.lease?.epoch ?? 0);
        const second = await client.connection.call('AcquireLease', {
          name,
          holder: 'relay-b',
          epoch: 0,
          ttlMs: 120_000,
        });
        expect(second.granted).toBe(false);
      }

      // Every node answers every outcome (from its own group's applied state, or by pointing at that group's leader).
      for (const [i, pc] of perNode.entries()) {
        for (const [id, want] of outcomes) {
          const got = await waitFor(`node ${c.nodes[i].id} answers ${id}`, 10_000, async () => {
            const o = await pc.outcome(id).catch(() => undefined);
            return o !== undefined && o.outcome !== 'UNKNOWN' && o.outcome !== 'IN_PROGRESS' ? o : undefined;
          });
          expect(got.outcome, `${id} on ${c.nodes[i].id}`).toBe(want);
        }
      }

      // Kill the node that leads group 0: every group (those it led elect anew) keeps deciding.
      const s0 = await client.status();
      const victim = c.nodes.find((n) => n.id === s0.groups[0].leaderId);
      expect(victim).toBeDefined();
      await victim?.kill('SIGKILL');
      for (const [g, list] of ids.entries()) {
        const lateId = list[2];
        const r = await waitFor(`a commit in group ${g} with ${victim?.id} down`, 45_000, async () => {
          try {
            const tx = await client.begin({ txnId: lateId, timeoutMs: TXN_TIMEOUT_MS });
            return await tx
              .enlist('shop', { set: { [lateId]: '1' } })
              .enlist('ledger', { set: { [lateId]: '1' } })
              .commit();
          } catch (err) {
            // A retry of the same id after an unknown answer is refused with the recorded outcome (R7): that outcome is
            // the answer.
            const o = await client.outcome(lateId).catch(() => undefined);
            if (o !== undefined && (o.outcome === 'COMMITTED' || o.outcome === 'ABORTED')) return o;
            void err;
            return undefined;
          }
        });
        expect(r.outcome, `commit in group ${g} after the kill`).toBe('COMMITTED');
      }
      // Each lease outlives the kill: its holder renews it at the epoch it was granted.
      for (const name of leases) {
        const r = await waitFor(`lease ${name} renewed after the kill`, 45_000, async () =>
          client.connection
            .call('RenewLease', { name, holder: 'relay-a', epoch: epochs.get(name) ?? 0, ttlMs: 120_000 })
            .catch(() => undefined),
        );
        expect(r.granted, `lease ${name} renewed`).toBe(true);
        expect(r.lease?.epoch).toBe(epochs.get(name));
      }
      const after = await waitFor('every group led by a live node', 45_000, async () => {
        const s = await client.status().catch(() => undefined);
        return s !== undefined && s.groups.every((g) => g.leaderId !== '' && g.leaderId !== victim?.id) ? s : undefined;
      });
      expect(after.groups).toHaveLength(GROUPS);
    } finally {
      await client.close();
      for (const pc of perNode) await pc.close();
    }
  }, 240_000);

  it('runs sagas placed by their ids in every group: each finishes or compensates, and its status is answered', async () => {
    const c = await Cluster.start({ nodes: 3, configExtra: () => ({ groups: GROUPS }) });
    const client = new VerdictClient({
      insecure: true,
      endpoints: c.nodes.map((n) => n.address),
      callTimeoutMs: 20_000,
    });
    try {
      await waitFor('a leader in every group', 45_000, async () => {
        const s = await client.status().catch(() => undefined);
        return s !== undefined && s.groups.length === GROUPS && s.groups.every((g) => g.leaderId !== '')
          ? true
          : undefined;
      });
      const [port] = await freePorts(1);
      steps = await startStepService({
        clusterId: c.clusterId,
        serviceId: 'travel',
        listen: `127.0.0.1:${port}`,
        endpointsOfCluster: c.nodes.map((n) => n.address),
        dataDir: join(fileTempDir('verdict-groups-steps-'), 'travel'),
        logger: pino({ level: 'silent' }),
        insecure: true,
        registerRetryMs: 200,
        handlers: {
          book: {
            action: (req) =>
              req.input === 'full'
                ? { status: 'failed', reason: 'full' }
                : { status: 'done', output: `booked-${req.sagaId}`, effect: `book ${req.sagaId}` },
            compensate: (req) => ({ status: 'done', output: '', effect: `cancel ${req.sagaId}` }),
          },
        },
      });
      await steps.registered;
      const placed = idsInEveryGroup(`saga-${c.clusterId}`, 2);
      for (const [g, [finishing, compensating]] of placed.entries()) {
        const ok = await (
          await client.saga({
            id: finishing,
            steps: [
              { service: 'travel', name: 'book' },
              { service: 'travel', name: 'book' },
            ],
          })
        ).result();
        expect(ok.end, `saga ${finishing} in group ${g}`).toBe('finished');
        expect(ok.status.outputs).toEqual([`booked-${finishing}`, `booked-${finishing}`]);
        const full = await (
          await client.saga({
            id: compensating,
            steps: [
              { service: 'travel', name: 'book' },
              { service: 'travel', name: 'book', input: 'full' },
            ],
          })
        ).result();
        expect(full.end, `saga ${compensating} in group ${g}`).toBe('compensated');
        expect(full.status.steps).toEqual(['compensated', 'failed']);
        expect((await client.sagas.status(finishing, 0)).state).toBe('finished');
      }
      // Every group's leader sends its End notices; the step service confirms them with SagaStates, which each node
      // answers from the table of each saga's group, and drops the sagas' keys.
      await waitFor("the step service to drop every group's ended sagas' keys", 60_000, async () =>
        placed.flat().every((id) => steps?.inbox?.get(`${id}/0/action`) === undefined) ? true : undefined,
      );
    } finally {
      await client.close();
    }
  }, 240_000);
});
