// The PostgreSQL TCC resource on a real PostgreSQL 15 (issue 16): the
// barrier table written in the same local transaction as the handlers' SQL,
// under every order of Try / Confirm / Cancel a network can deliver, with
// duplicates; a failing handler leaves nothing behind; a bad TTL votes NO
// with nothing reserved; reserves held survive a restart of the resource; a
// role without CREATE is refused with the grant that fixes it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TccRefusal, type BarrierOp, type TccBranch } from '../../src/participant/tcc/barrier.ts';
import { PostgresTccResource, type TccPgHandlers } from '../../src/participant/tcc/postgres.ts';
import type { PgTxnClient } from '../../src/participant/postgres.ts';
import { sql, startPostgres, type PgServer } from './harness.ts';

let server: PgServer;
let url: string;
let failConfirm = false;
let ttlMs: number | undefined = 60_000;

beforeAll(async () => {
  server = await startPostgres({ private: true, databases: ['theatre'] });
  url = server.url('theatre');
  await sql(
    url,
    'CREATE TABLE shows (id text PRIMARY KEY, free integer NOT NULL CHECK (free >= 0), held integer NOT NULL DEFAULT 0, sold integer NOT NULL DEFAULT 0)',
  );
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

const seatsOf = (b: TccBranch): number => Number(new TextDecoder().decode(b.payload));
const handlers: TccPgHandlers = {
  async try(tx: PgTxnClient, b) {
    const r = await tx.query("UPDATE shows SET free = free - $1, held = held + $1 WHERE id = 'show' AND free >= $1", [
      seatsOf(b),
    ]);
    if (r.rowCount === 0) throw new TccRefusal('not enough free seats');
    return ttlMs === undefined ? undefined : { ttlMs };
  },
  async confirm(tx, b) {
    await tx.query("UPDATE shows SET held = held - $1, sold = sold + $1 WHERE id = 'show'", [seatsOf(b)]);
    if (failConfirm) throw new Error('ticket printer offline');
  },
  async cancel(tx, b) {
    await tx.query("UPDATE shows SET held = held - $1, free = free + $1 WHERE id = 'show'", [seatsOf(b)]);
  },
};

const open = (participantId = 'seats'): Promise<PostgresTccResource> =>
  PostgresTccResource.open({ participantId, url, handlers, concurrency: 2 });
const show = async () =>
  (
    await sql<{ free: number; held: number; sold: number }>(url, "SELECT free, held, sold FROM shows WHERE id = 'show'")
  )[0];
const reset = () =>
  sql(
    url,
    "INSERT INTO shows (id, free) VALUES ('show', 10) ON CONFLICT (id) DO UPDATE SET free = 10, held = 0, sold = 0",
  );

function op(r: PostgresTccResource, txnId: string, o: BarrierOp, seats = 3): Promise<string> {
  return new Promise((resolve) => {
    if (o === 'try')
      r.prepare(txnId, new TextEncoder().encode(String(seats)), (_e, v) => resolve(v.yes ? 'yes' : `no: ${v.reason}`));
    else r[o === 'confirm' ? 'commit' : 'abort'](txnId, (e) => resolve(e === null ? 'ok' : `err: ${e.message}`));
  });
}

describe('PostgreSQL TCC barrier', () => {
  it('every order of up to three messages: Confirm and Cancel applied once, no Try after a Cancel, seats conserved', async () => {
    const r = await open();
    try {
      const ops: BarrierOp[] = ['try', 'confirm', 'cancel'];
      const seqs: BarrierOp[][] = [];
      for (const a of ops) for (const b of ops) for (const c of ops) seqs.push([a, b, c]);
      let k = 0;
      for (const seq of seqs) {
        await reset();
        const txnId = `order-${k++}`;
        const answers: string[] = [];
        for (const o of seq) answers.push(await op(r, txnId, o));
        const what = `${seq.join(',')} → ${answers.join(' | ')}`;
        const s = await show();
        expect(s.free + s.held + s.sold, what).toBe(10);
        const tried = answers.some((a, i) => seq[i] === 'try' && a === 'yes');
        const confirmed = answers.some((a, i) => seq[i] === 'confirm' && a === 'ok');
        const cancelledFirst = seq[0] === 'cancel';
        if (cancelledFirst) expect(tried, `${what}: a Try after an empty rollback reserved`).toBe(false);
        // The effects the handlers applied, read from the data: exactly one of held, sold or released.
        expect(s.sold, what).toBe(confirmed ? 3 : 0);
        const state = await r.branchState(txnId);
        if (state === 'tried') expect(s.held, what).toBe(3);
        else expect(s.held, what).toBe(0);
        for (const [i, a] of answers.entries()) {
          const cancelledBefore = seq.slice(0, i).some((o, j) => o === 'cancel' && answers[j] === 'ok');
          if (seq[i] === 'try' && cancelledBefore) expect(a, what).toMatch(/^no: .*hanging Try/);
        }
      }
      expect(r.tccCounts().emptyRollbacks).toBeGreaterThan(0);
      expect(r.tccCounts().hangingRefused).toBeGreaterThan(0);
    } finally {
      await r.close();
    }
  }, 120_000);

  it('a Confirm that fails rolls back its SQL and stays tried; it is never turned into a Cancel; it succeeds once retried', async () => {
    await reset();
    const r = await open();
    try {
      expect(await op(r, 'pay-1', 'try', 4)).toBe('yes');
      failConfirm = true;
      for (let i = 0; i < 3; i++)
        expect(await op(r, 'pay-1', 'confirm')).toMatch(/Confirm handler failed for pay-1: ticket printer offline/);
      expect(await show()).toEqual({ free: 6, held: 4, sold: 0 });
      expect(await r.branchState('pay-1')).toBe('tried');
      failConfirm = false;
      expect(await op(r, 'pay-1', 'confirm')).toBe('ok');
      expect(await op(r, 'pay-1', 'confirm')).toBe('ok');
      expect(await show()).toEqual({ free: 6, held: 0, sold: 4 });
    } finally {
      failConfirm = false;
      await r.close();
    }
  });

  it('a TTL of zero or below votes NO and reserves nothing; a Try refused by its handler votes NO with the reason', async () => {
    await reset();
    const r = await open();
    try {
      for (const bad of [0, -1]) {
        ttlMs = bad;
        expect(await op(r, `ttl-${bad}`, 'try')).toMatch(
          /^no: the Try handler gave ttlMs .*a TTL must be a positive whole number of milliseconds/,
        );
        expect(await r.branchState(`ttl-${bad}`)).toBeUndefined();
      }
      ttlMs = 60_000;
      expect(await op(r, 'too-many', 'try', 50)).toBe('no: Try failed: not enough free seats');
      expect(await show()).toEqual({ free: 10, held: 0, sold: 0 });
    } finally {
      ttlMs = 60_000;
      await r.close();
    }
  });

  it('reserves held survive a restart of the resource, with their expiry', async () => {
    await reset();
    const r = await open('seats-restart');
    await op(r, 'keep-1', 'try', 2);
    await r.close();
    const again = await open('seats-restart');
    try {
      const held = again.heldReserves();
      expect(held.map((h) => h.txnId)).toEqual(['keep-1']);
      expect(held[0]?.expiresAtMs).toBeGreaterThan(Date.now());
      expect(await op(again, 'keep-1', 'cancel')).toBe('ok');
      expect(again.heldReserves()).toEqual([]);
    } finally {
      await again.close();
    }
  });

  it('a role that may not create the barrier table is refused with the grant that fixes it', async () => {
    await sql(server.url('postgres'), "CREATE ROLE tcc_nobody LOGIN PASSWORD 'x'").catch(() => {});
    await sql(server.url('postgres'), 'CREATE DATABASE tcc_locked');
    const u = new URL(server.url('tcc_locked'));
    u.username = 'tcc_nobody';
    u.password = 'x';
    const err = await PostgresTccResource.open({ participantId: 'seats', url: u.toString(), handlers }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.name).toBe('PostgresConfigError');
    expect(err?.message).toMatch(/verdict_tcc_barrier/);
    expect(err?.message).toMatch(/GRANT CREATE ON SCHEMA public TO tcc_nobody/);
  });
});
