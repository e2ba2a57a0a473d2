// The replicated lease table (src/lease/state.ts): one holder at a time, an
// epoch that grows with every new grant, a clock that never runs backwards
// across leaders, snapshots, and the edge check of lease entries; and R9:
// released and expired leases are deleted, epochs stay monotonic across a
// deletion, a holder is bound to its identity, and each client has a quota.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkedLeaseCommand,
  encodeLeaseCommand,
  LEASE_TTL_MAX_MS,
  LeaseTable,
  type LeaseCommand,
} from '../../src/lease/state.ts';
import { NodeStateMachine } from '../../src/node/machine.ts';
import { nodeProducts } from '../../src/node/products.ts';
import { EntryType } from '../../src/raft/types.ts';

const acquire = (holder: string, atMs: number, ttlMs = 1_000): LeaseCommand => ({
  t: 'lease.acquire',
  name: 'outbox/p0',
  holder,
  ttlMs,
  atMs,
});

describe('lease table', () => {
  it('grants one holder at a time; a second holder is refused until the lease ends, then gets a larger epoch', () => {
    const t = new LeaseTable();
    const a = t.apply(acquire('relay-a', 1_000), 1);
    expect(a.granted).toBe(true);
    expect(a.lease).toMatchObject({ holder: 'relay-a', epoch: 1, expiresAtMs: 2_000 });
    const b = t.apply(acquire('relay-b', 1_500), 2);
    expect(b.granted).toBe(false);
    expect(b.reason).toMatch(/held by relay-a \(epoch 1\) for 500 ms more/);
    const b2 = t.apply(acquire('relay-b', 2_000), 3);
    expect(b2.granted).toBe(true);
    expect(b2.lease).toMatchObject({ holder: 'relay-b', epoch: 2 });
    // The old holder's renewal is refused: it lost the lease.
    const late = t.apply(
      { t: 'lease.renew', name: 'outbox/p0', holder: 'relay-a', epoch: 1, ttlMs: 1_000, atMs: 2_100 },
      4,
    );
    expect(late.granted).toBe(false);
    expect(late.reason).toMatch(/held by relay-b at epoch 2/);
  });

  it('R7: the holder acquiring again keeps its epoch; renew extends; release lets the next holder in with a larger epoch', () => {
    const t = new LeaseTable();
    t.apply(acquire('relay-a', 0), 1);
    expect(t.apply(acquire('relay-a', 500), 2).lease).toMatchObject({ epoch: 1, expiresAtMs: 1_500 });
    expect(
      t.apply({ t: 'lease.renew', name: 'outbox/p0', holder: 'relay-a', epoch: 1, ttlMs: 1_000, atMs: 1_400 }, 3).lease
        .expiresAtMs,
    ).toBe(2_400);
    expect(
      t.apply({ t: 'lease.release', name: 'outbox/p0', holder: 'relay-a', epoch: 1, atMs: 1_500 }, 4).granted,
    ).toBe(true);
    const b = t.apply(acquire('relay-b', 1_600), 5);
    expect(b.lease).toMatchObject({ holder: 'relay-b', epoch: 2 });
  });

  it('a renewal after the lease ended is refused even with nobody else holding it', () => {
    const t = new LeaseTable();
    t.apply(acquire('relay-a', 0, 5_000), 1);
    t.apply({ ...acquire('relay-a', 0), name: 'other' }, 2);
    const r = t.apply({ t: 'lease.renew', name: 'other', holder: 'relay-a', epoch: 2, ttlMs: 1_000, atMs: 1_000 }, 3);
    expect(r.granted).toBe(false);
    expect(r.reason).toMatch(/expired 0 ms ago/);
    // Once swept, the refusal says the lease is not held.
    const late = t.apply(
      { t: 'lease.renew', name: 'outbox/p0', holder: 'relay-a', epoch: 1, ttlMs: 1_000, atMs: 5_000 },
      4,
    );
    expect(late.granted).toBe(false);
    expect(late.reason).toMatch(/lease outbox\/p0 is not held/);
  });

  it('the clock never runs backwards: a new leader with a slower clock lengthens leases, never shortens them', () => {
    const t = new LeaseTable();
    t.apply(acquire('relay-a', 10_000), 1);
    // A leader whose clock reads 2 s earlier: the table still reads 10 000.
    const b = t.apply(acquire('relay-b', 8_000), 2);
    expect(b.granted).toBe(false);
    expect(b.clockAtMs).toBe(10_000);
  });

  it('bounds the number of live leases', () => {
    const t = new LeaseTable(2);
    expect(t.apply({ ...acquire('a', 0), name: 'x' }, 1).granted).toBe(true);
    expect(t.apply({ ...acquire('b', 0), name: 'y' }, 2).granted).toBe(true);
    const z = t.apply({ ...acquire('c', 0), name: 'z' }, 3);
    expect(z.granted).toBe(false);
    expect(z.reason).toBe('the cluster holds 2 live leases, its limit; release leases that are no longer needed');
  });

  it('R9: a released lease is deleted from the table; the next grant of its name gets a larger epoch than any before', () => {
    const t = new LeaseTable();
    t.apply(acquire('relay-a', 0), 1);
    t.apply({ ...acquire('relay-b', 0), name: 'q' }, 2);
    expect(t.apply({ t: 'lease.release', name: 'outbox/p0', holder: 'relay-a', epoch: 1, atMs: 10 }, 3).granted).toBe(
      true,
    );
    expect(t.get('outbox/p0')).toBeNull();
    expect(t.leases.size).toBe(1);
    expect(t.heldBy('', 'relay-a')).toBe(0);
    // A repeated release finds nothing to release.
    expect(t.apply({ t: 'lease.release', name: 'outbox/p0', holder: 'relay-a', epoch: 1, atMs: 11 }, 4).reason).toMatch(
      /is not held/,
    );
    const again = t.apply(acquire('relay-c', 20), 5);
    expect(again.lease.epoch).toBe(3);
  });

  it('R9: expired leases are deleted by later commands, at the latest one longest ttl after their last renewal, on every replica alike', () => {
    const t = new LeaseTable();
    // 9,997 throw-away leases, as the attack made them (from ten certificates: one holds at most 1,000).
    for (let i = 0; i < 9_997; i++)
      t.apply(
        {
          t: 'lease.acquire',
          name: `junk/${i}`,
          holder: 'mallory',
          owner: `CN=mallory-${i % 10}`,
          ttlMs: 500,
          atMs: 1_000,
        },
        i + 1,
      );
    expect(t.leases.size).toBe(9_997);
    // Any later command applied after they ended drops them (the oldest first, while expired).
    t.apply(acquire('relay-a', 2_000), 10_000);
    expect(t.leases.size).toBe(1);
    // A lease with the longest ttl ahead of a short one keeps the short one until the long one ends.
    const u = new LeaseTable();
    u.apply({ ...acquire('a', 0, LEASE_TTL_MAX_MS), name: 'long' }, 1);
    u.apply({ ...acquire('b', 0, 500), name: 'short' }, 2);
    u.apply({ ...acquire('c', 1_000), name: 'x' }, 3);
    expect(u.get('short')).not.toBeNull();
    u.apply({ ...acquire('c', LEASE_TTL_MAX_MS), name: 'x' }, 4);
    expect(u.get('long')).toBeNull();
    expect(u.get('short')).toBeNull();
    // Two replicas fed the same entries hold the same leases.
    const r1 = new LeaseTable();
    const r2 = new LeaseTable();
    for (const [i, at] of [0, 300, 900, 1_400, 2_600].entries()) {
      const c = { ...acquire(`h${i}`, at, 500 + i * 400), name: `n${i % 3}` };
      r1.apply(c, i + 1);
      r2.apply(c, i + 1);
    }
    expect(JSON.stringify(r1.toJSON())).toBe(JSON.stringify(r2.toJSON()));
  });

  it('R9: a full table of expired leases never refuses a new name: the bound sweeps them first', () => {
    const t = new LeaseTable(3);
    t.apply({ ...acquire('a', 0, LEASE_TTL_MAX_MS), name: 'long' }, 1);
    t.apply({ ...acquire('a', 0, 500), name: 'x' }, 2);
    t.apply({ ...acquire('a', 0, 500), name: 'y' }, 3);
    const z = t.apply({ ...acquire('relay', 1_000), name: 'z' }, 4);
    expect(z.granted).toBe(true);
    expect([...t.leases.keys()].sort()).toEqual(['long', 'z']);
  });

  it('R9: only the holder renews or releases: under TLS the holder is its certificate CN as well as its name', () => {
    const t = new LeaseTable();
    const mine = { name: 'outbox/p0', holder: 'relay-a', owner: 'CN=relay-1' };
    expect(t.apply({ t: 'lease.acquire', ...mine, ttlMs: 1_000, atMs: 0 }, 1).lease).toMatchObject({
      holder: 'relay-a',
      owner: 'CN=relay-1',
      epoch: 1,
    });
    // Another certificate naming the same holder takes nothing, keeps nothing alive, releases nothing.
    const other = { ...mine, owner: 'CN=mallory' };
    const steal = t.apply({ t: 'lease.acquire', ...other, ttlMs: 1_000, atMs: 100 }, 2);
    expect(steal.granted).toBe(false);
    expect(steal.reason).toMatch(/held by relay-a \(CN=relay-1\) \(epoch 1\)/);
    const renew = t.apply({ t: 'lease.renew', ...other, epoch: 1, ttlMs: 1_000, atMs: 200 }, 3);
    expect(renew.granted).toBe(false);
    expect(renew.reason).toMatch(/held by relay-a \(CN=relay-1\) at epoch 1, not by relay-a \(CN=mallory\) at epoch 1/);
    expect(t.apply({ t: 'lease.release', ...other, epoch: 1, atMs: 300 }, 4).granted).toBe(false);
    // Without an owner (a plaintext caller) is another holder too.
    expect(
      t.apply({ t: 'lease.renew', name: 'outbox/p0', holder: 'relay-a', epoch: 1, ttlMs: 1_000, atMs: 300 }, 5).granted,
    ).toBe(false);
    expect(t.get('outbox/p0')).toMatchObject({ owner: 'CN=relay-1', expiresAtMs: 1_000 });
    // The holder itself renews, re-acquires at the same epoch, and releases.
    expect(t.apply({ t: 'lease.renew', ...mine, epoch: 1, ttlMs: 1_000, atMs: 400 }, 6).granted).toBe(true);
    expect(t.apply({ t: 'lease.acquire', ...mine, ttlMs: 1_000, atMs: 500 }, 7).lease.epoch).toBe(1);
    expect(t.apply({ t: 'lease.release', ...mine, epoch: 1, atMs: 600 }, 8).granted).toBe(true);
    expect(t.apply({ t: 'lease.acquire', ...other, ttlMs: 1_000, atMs: 700 }, 9).lease).toMatchObject({
      owner: 'CN=mallory',
      epoch: 2,
    });
  });

  it('R9: a client holds at most its quota of live leases, counted by certificate (or holder name without TLS); others are not affected', () => {
    const t = new LeaseTable(100, 2);
    const by = (owner: string | undefined, holder: string, name: string, atMs = 0): LeaseCommand => ({
      t: 'lease.acquire',
      name,
      holder,
      ...(owner ? { owner } : {}),
      ttlMs: 1_000,
      atMs,
    });
    expect(t.apply(by('CN=m', 'h1', 'a'), 1).granted).toBe(true);
    expect(t.apply(by('CN=m', 'h2', 'b'), 2).granted).toBe(true);
    const third = t.apply(by('CN=m', 'h3', 'c'), 3);
    expect(third.granted).toBe(false);
    expect(third.reason).toBe(
      'client CN=m holds 2 live leases, the limit per client; release some before acquiring more',
    );
    // Re-acquiring one it holds is not a new lease.
    expect(t.apply(by('CN=m', 'h1', 'a'), 4).granted).toBe(true);
    expect(t.apply(by('CN=relay', 'h1', 'c'), 5).granted).toBe(true);
    // Without TLS each holder name has its own share.
    expect(t.apply(by(undefined, 'p', 'd'), 6).granted).toBe(true);
    expect(t.apply(by(undefined, 'p', 'e'), 7).granted).toBe(true);
    expect(t.apply(by(undefined, 'p', 'f'), 8).reason).toMatch(/client holder p holds 2 live leases/);
    // Once its leases end, the client's share is free again.
    expect(t.apply(by('CN=m', 'h3', 'c2', 1_000), 9).granted).toBe(true);
    expect(t.heldBy('CN=m', 'h3')).toBe(1);
  });

  it('every transition asserts what makes it safe: a table whose epoch counter fell behind a held epoch stops at the next grant instead of granting an old epoch', () => {
    const t = new LeaseTable();
    // A long lease granted first keeps p0's expired record from being swept (the oldest goes first).
    t.apply({ t: 'lease.acquire', name: 'outbox/p9', holder: 'relay-z', ttlMs: 60_000, atMs: 1_000 }, 1);
    t.apply(acquire('relay-a', 1_100), 2);
    expect(t.get('outbox/p0')?.epoch).toBe(2);
    // A bug elsewhere (a bad restore, a wrong edit) that set the counter back: the grant refuses to go on.
    t.epochMax = 0;
    expect(() => t.apply(acquire('relay-c', 3_000), 3)).toThrow(
      /lease outbox\/p0: a grant's epoch 1 follows every earlier one/,
    );
    // Releasing under the same fault stops too: the held epoch was never granted as far as the counter knows.
    const u = new LeaseTable();
    u.apply(acquire('relay-a', 1_000), 1);
    u.epochMax = 0;
    expect(() =>
      u.apply({ t: 'lease.release', name: 'outbox/p0', holder: 'relay-a', epoch: 1, atMs: 1_100 }, 2),
    ).toThrow(/a held epoch 1 was granted/);
  });

  it('property: with deletions, every grant of any name gets an epoch above every earlier one, and the table holds no released lease', () => {
    const cmd = fc.record({
      kind: fc.constantFrom('acquire', 'renew', 'release'),
      who: fc.constantFrom('a', 'b'),
      owner: fc.constantFrom(undefined, 'CN=x', 'CN=y'),
      name: fc.constantFrom('p', 'q', 'r'),
      dtMs: fc.integer({ min: 0, max: 400_000 }),
      ttlMs: fc.constantFrom(500, 2_000, LEASE_TTL_MAX_MS),
    });
    fc.assert(
      fc.property(fc.array(cmd, { maxLength: 80 }), (cmds) => {
        const t = new LeaseTable(2, 2);
        let at = 0;
        let granted = 0;
        const held = new Map<string, number>();
        for (const [i, c] of cmds.entries()) {
          at += c.dtMs % 3 === 0 ? c.dtMs : c.dtMs % 3_000;
          const epoch = t.get(c.name)?.epoch ?? 1;
          const base = { name: c.name, holder: c.who, ...(c.owner ? { owner: c.owner } : {}), atMs: at };
          const r =
            c.kind === 'acquire'
              ? t.apply({ t: 'lease.acquire', ...base, ttlMs: c.ttlMs }, i + 1)
              : c.kind === 'renew'
                ? t.apply({ t: 'lease.renew', ...base, epoch, ttlMs: c.ttlMs }, i + 1)
                : t.apply({ t: 'lease.release', ...base, epoch }, i + 1);
          if (r.granted && c.kind === 'acquire' && r.lease.epoch !== held.get(c.name)) {
            expect(r.lease.epoch).toBeGreaterThan(granted);
            granted = r.lease.epoch;
          }
          if (r.granted) held.set(c.name, r.lease.epoch);
          expect(t.epochMax).toBe(granted);
          expect(t.leases.size).toBeLessThanOrEqual(2);
          for (const l of t.leases.values()) expect(l.holder).not.toBe('');
        }
      }),
    );
  });

  it('property: at every instant at most one live holder, and epochs only grow, under any schedule of requests', () => {
    const holders = ['a', 'b', 'c'];
    const cmd = fc.record({
      kind: fc.constantFrom('acquire', 'renew', 'release'),
      who: fc.constantFrom(...holders),
      dtMs: fc.integer({ min: -300, max: 700 }),
      epoch: fc.integer({ min: 1, max: 6 }),
    });
    fc.assert(
      fc.property(fc.array(cmd, { maxLength: 60 }), (cmds) => {
        const t = new LeaseTable();
        let at = 1_000;
        let lastEpoch = 0;
        let lastHolder = '';
        for (const [i, c] of cmds.entries()) {
          at = Math.max(0, at + c.dtMs);
          const base = { name: 'p', holder: c.who, atMs: at };
          const r =
            c.kind === 'acquire'
              ? t.apply({ t: 'lease.acquire', ...base, ttlMs: 1_000 }, i + 1)
              : c.kind === 'renew'
                ? t.apply({ t: 'lease.renew', ...base, epoch: c.epoch, ttlMs: 1_000 }, i + 1)
                : t.apply({ t: 'lease.release', ...base, epoch: c.epoch }, i + 1);
          const l = t.get('p');
          if (l === null) continue;
          expect(l.epoch).toBeGreaterThanOrEqual(lastEpoch);
          // A grant to a holder other than the last live one comes with a new epoch.
          if (r.granted && c.kind === 'acquire' && l.holder !== lastHolder) expect(l.epoch).toBeGreaterThan(lastEpoch);
          lastEpoch = l.epoch;
          lastHolder = l.expiresAtMs > t.clockAtMs ? l.holder : '';
        }
      }),
    );
  });
});

describe('lease entries at the edge and in snapshots', () => {
  /** A state machine as the node builds it, with the lease table beside the decision table. */
  const machine = (): NodeStateMachine => new NodeStateMachine(nodeProducts().tables);
  const leasesOf = (m: NodeStateMachine): LeaseTable => {
    const t = m.products.find((p): p is LeaseTable => p instanceof LeaseTable);
    if (!t) throw new Error('no lease table');
    return t;
  };
  const entryProblem = (type: EntryType, data: Uint8Array): string | null => machine().entryProblem(type, data);
  const snapshotProblem = (data: Uint8Array): string | null => machine().snapshotProblem(data);

  it("a well-formed lease entry passes the edge and applies; its result is the table's last", () => {
    const data = encodeLeaseCommand(acquire('relay-a', 5));
    expect(entryProblem(EntryType.Normal, data)).toBeNull();
    const m = machine();
    expect(m.apply({ type: EntryType.Normal, term: 1, index: 7, data })).toBeNull();
    expect(leasesOf(m).last).toMatchObject({ index: 7, granted: true });
  });

  it('refuses malformed lease entries with a reason: bad name, ttl out of range, missing epoch, unknown kind, not JSON', () => {
    const raw = (o: unknown): Uint8Array => Buffer.concat([Buffer.of(0x03), Buffer.from(JSON.stringify(o))]);
    expect(entryProblem(EntryType.Normal, raw({ ...acquire('a', 0), name: '../x' }))).toMatch(/lease.acquire needs/);
    expect(entryProblem(EntryType.Normal, raw({ ...acquire('a', 0), ttlMs: 10 }))).toMatch(/lease.acquire needs/);
    expect(
      entryProblem(EntryType.Normal, raw({ t: 'lease.renew', name: 'p', holder: 'a', ttlMs: 1_000, atMs: 0 })),
    ).toMatch(/lease.renew needs/);
    expect(entryProblem(EntryType.Normal, raw({ t: 'lease.steal', name: 'p' }))).toMatch(/unknown lease command kind/);
    expect(entryProblem(EntryType.Normal, Buffer.from([0x03, 0x7b]))).toMatch(/does not decode/);
    expect(checkedLeaseCommand(raw([1])).problem).toMatch(/not an object/);
  });

  it('property: no byte string after the lease tag throws at the edge', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 200 }),
        (b) => typeof (entryProblem(EntryType.Normal, Buffer.concat([Buffer.of(0x03), b])) ?? '') === 'string',
      ),
    );
  });

  it('snapshots carry the leases and the clock; a snapshot without a lease table or with a damaged one is refused', () => {
    const m = machine();
    m.apply({ type: EntryType.Normal, term: 1, index: 1, data: encodeLeaseCommand(acquire('relay-a', 5_000)) });
    const snap = m.snapshot();
    const r = machine();
    r.restore(snap);
    expect(leasesOf(r).get('outbox/p0')).toMatchObject({ holder: 'relay-a', epoch: 1, expiresAtMs: 6_000 });
    expect(leasesOf(r).clockAtMs).toBe(5_000);
    const old = JSON.parse(Buffer.from(snap).toString());
    expect(snapshotProblem(Buffer.from(JSON.stringify(old)))).toBeNull();
    delete old.leases;
    expect(snapshotProblem(Buffer.from(JSON.stringify(old)))).toMatch(
      /^snapshot data does not restore: the snapshot has no lease table$/,
    );
    old.leases = { l: [{ name: 'p', holder: 'a', epoch: 'one', expiresAtMs: 0 }], c: 0 };
    expect(snapshotProblem(Buffer.from(JSON.stringify(old)))).toMatch(/lease in the snapshot is malformed/);
    old.leases = { l: [{ name: 'p', holder: 'a', epoch: 4, expiresAtMs: 0 }], c: 0, e: 3 };
    expect(snapshotProblem(Buffer.from(JSON.stringify(old)))).toMatch(/epoch counter 3 is below a lease's epoch 4/);
  });

  it('snapshots carry owners and the epoch counter, so a name re-acquired after a restore still gets a larger epoch', () => {
    const m = machine();
    const cmds: LeaseCommand[] = [
      { t: 'lease.acquire', name: 'p', holder: 'r1', owner: 'CN=relay-1', ttlMs: 1_000, atMs: 0 },
      { t: 'lease.acquire', name: 'q', holder: 'r1', owner: 'CN=relay-1', ttlMs: 1_000, atMs: 0 },
      { t: 'lease.release', name: 'q', holder: 'r1', owner: 'CN=relay-1', epoch: 2, atMs: 1 },
    ];
    for (const [i, c] of cmds.entries())
      m.apply({ type: EntryType.Normal, term: 1, index: i + 1, data: encodeLeaseCommand(c) });
    const r = machine();
    r.restore(m.snapshot());
    expect(leasesOf(r).get('q')).toBeNull();
    expect(leasesOf(r).get('p')).toMatchObject({ owner: 'CN=relay-1', epoch: 1 });
    expect(leasesOf(r).epochMax).toBe(2);
    expect(leasesOf(r).heldBy('CN=relay-1', 'r1')).toBe(1);
    expect(
      leasesOf(r).apply({ t: 'lease.acquire', name: 'q', holder: 'r2', ttlMs: 1_000, atMs: 2 }, 4).lease.epoch,
    ).toBe(3);
  });

  it('a snapshot of the earlier lease table (no owners, no epoch counter, released leases kept) is read: the counter starts at its largest epoch', () => {
    const m = machine();
    const snap = JSON.parse(Buffer.from(m.snapshot()).toString());
    snap.leases = {
      l: [
        { name: 'p', holder: 'relay-a', epoch: 3, expiresAtMs: 9_000 },
        { name: 'q', holder: '', epoch: 7, expiresAtMs: 0 },
      ],
      c: 5_000,
    };
    const r = machine();
    r.restore(Buffer.from(JSON.stringify(snap)));
    expect(leasesOf(r).get('p')).toMatchObject({ holder: 'relay-a', owner: '', epoch: 3 });
    expect(leasesOf(r).get('q')).toBeNull();
    expect(leasesOf(r).epochMax).toBe(7);
    expect(
      leasesOf(r).apply({ t: 'lease.acquire', name: 'q', holder: 'relay-b', ttlMs: 1_000, atMs: 5_000 }, 9).lease.epoch,
    ).toBe(8);
  });

  it('an owner in a lease entry must be a CN the node could have written', () => {
    const raw = (o: unknown): Uint8Array => Buffer.concat([Buffer.of(0x03), Buffer.from(JSON.stringify(o))]);
    expect(entryProblem(EntryType.Normal, raw({ ...acquire('a', 0), owner: 'CN=relay-1' }))).toBeNull();
    expect(entryProblem(EntryType.Normal, raw({ ...acquire('a', 0), owner: 'relay-1' }))).toMatch(
      /owner, when present, of the form CN=/,
    );
    expect(entryProblem(EntryType.Normal, raw({ ...acquire('a', 0), owner: `CN=${'x'.repeat(300)}` }))).toMatch(
      /lease.acquire needs/,
    );
  });
});
