// Sagas on real processes with PostgreSQL: the travel-booking example
// (examples/travel-booking). Three node processes; flight and hotel step
// services on PostgreSQL, payment (the pivot) and email on journaled memory,
// each in its own process. While trips are booked the leader and the hotel
// service are killed with SIGKILL (the hotel restarts); afterwards the
// databases say every trip is all booked or all released, no seat or room is
// taken twice, nothing is left pending or stuck, and every inbox row is gone
// once its saga's end was acknowledged.

import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { TRIP_PIVOT, TRIP_STEPS } from '../../examples/travel-booking/steps.mjs';
import { cliEnv, Cluster, freePorts, ROOT, tempDir, useProcessCleanup, waitFor } from '../process/harness.ts';
import { sql, startPostgres, type PgServer } from './harness.ts';

useProcessCleanup();

const children = new Set<ChildProcess>();
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** Starts one step service of the example in its own process; resolves once it registered. */
function service(name: string, env: Record<string, string>): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join('examples', 'travel-booking', 'service.mjs'), name], {
      cwd: ROOT,
      // The harness's clusters serve plaintext: VERDICT_INSECURE=true (examples/cluster-security.mjs).
      env: cliEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not become ready within 60 s:\n${out}`)), 60_000);
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes(`${name} ready`)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.once('exit', () => children.delete(child));
  });
}

describe('travel booking: sagas across processes on PostgreSQL', () => {
  let pgServer: PgServer | null = null;
  afterAll(async () => {
    await pgServer?.stop();
  });

  it('every trip is all booked or all released through kill -9 of the leader and of the hotel service', async () => {
    pgServer = await startPostgres({ databases: ['flight', 'hotel'] });
    // The hotel is down from its SIGKILL until a new process has loaded (seconds on a loaded
    // machine). With the default bound (5 errors, about 1.5 s of backoff) every trip waiting on
    // the hotel would be abandoned and compensated; here an action outlasts the outage, so a
    // trip whose card is not declined must finish.
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn', configExtra: () => ({ sagaActionAttemptsMax: 40 }) });
    await c.waitForLeader({ timeoutMs: 120_000 });
    const ports = await freePorts(4);
    const dir = tempDir('verdict-travel-');
    const envOf = (name: string, i: number): Record<string, string> => ({
      VERDICT_CLUSTER: c.clusterId,
      VERDICT_ENDPOINTS: c.nodes.map((n) => n.address).join(','),
      LISTEN: `127.0.0.1:${ports[i]}`,
      DATA: join(dir, name),
      ...(name === 'flight' || name === 'hotel' ? { PG_URL: (pgServer as PgServer).url(name) } : {}),
    });
    const names = ['flight', 'hotel', 'payment', 'email'];
    const procs = new Map<string, ChildProcess>();
    for (const [i, name] of names.entries()) procs.set(name, await service(name, envOf(name, i)));
    const client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address) });
    try {
      const ids = Array.from({ length: 24 }, (_, i) => `trip-${i}`);
      let ended = 0;
      const runs = ids.map((id, i) =>
        client
          .saga({ id, steps: TRIP_STEPS(i % 4 === 0), pivot: TRIP_PIVOT })
          .then((h) => h.result())
          .then((r) => (ended++, r)),
      );
      const { node: leader } = await c.waitForLeader();
      await leader.kill('SIGKILL');
      procs.get('hotel')?.kill('SIGKILL');
      const endedAtKill = ended;
      await new Promise((r) => setTimeout(r, 1_000));
      procs.set('hotel', await service('hotel', envOf('hotel', 1)));
      const ends = await Promise.all(runs);
      expect(endedAtKill, 'the kills did not land mid-saga').toBeLessThan(ids.length);

      const flightUrl = pgServer.url('flight');
      const hotelUrl = pgServer.url('hotel');
      for (const [i, r] of ends.entries()) {
        const id = ids[i];
        expect(r.end, id).toBe(i % 4 === 0 ? 'compensated' : 'finished');
        for (const [url, table] of [
          [flightUrl, 'seats'],
          [hotelUrl, 'rooms'],
        ] as const) {
          const booked = await sql<{ n: string }>(url, `SELECT count(*) AS n FROM ${table} WHERE booked_by = $1`, [id]);
          const pending = await sql<{ n: string }>(url, `SELECT count(*) AS n FROM ${table} WHERE saga_pending = $1`, [
            id,
          ]);
          // Exactly once: one seat and one room per finished trip, none per released one; nothing left pending.
          expect(Number(booked[0].n), `${id} ${table} booked`).toBe(r.end === 'finished' ? 1 : 0);
          expect(Number(pending[0].n), `${id} ${table} pending`).toBe(0);
        }
      }
      expect(await client.sagas.list(true)).toEqual([]);
      // Every saga's end is acknowledged by its step services, and their inbox rows go.
      await waitFor('the inboxes to drop every ended saga', 60_000, async () => {
        const left =
          Number((await sql<{ n: string }>(flightUrl, 'SELECT count(*) AS n FROM verdict_saga_inbox'))[0].n) +
          Number((await sql<{ n: string }>(hotelUrl, 'SELECT count(*) AS n FROM verdict_saga_inbox'))[0].n);
        return left === 0 ? true : undefined;
      });
      // Every trip reached the hotel (step 1 is before the pivot), so every trip's end is recorded there.
      expect(Number((await sql<{ n: string }>(hotelUrl, 'SELECT count(*) AS n FROM verdict_saga_ended'))[0].n)).toBe(
        ids.length,
      );

      // The example's own client, as a user runs it.
      const trip = await new Promise<string>((resolve) => {
        const p = spawn(process.execPath, [join('examples', 'travel-booking', 'trip.mjs'), '1'], {
          cwd: ROOT,
          env: cliEnv({ VERDICT_ENDPOINTS: c.nodes.map((n) => n.address).join(',') }),
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        p.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
        p.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
        p.once('close', () => resolve(out));
      });
      expect(trip).toMatch(/^FINISHED \S+: seats-\d+ rooms-\d+ charged \S+ seats-\d+ rooms-\d+ mailed \S+$/m);
    } finally {
      client.close();
      for (const p of procs.values()) p.kill('SIGKILL');
      await c.destroy();
    }
  }, 300_000);
});
