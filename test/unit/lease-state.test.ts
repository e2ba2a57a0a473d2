// The replicated lease table (src/lease/state.ts): one holder at a time, an
// epoch that grows with every new grant, a clock that never runs backwards
// across leaders, snapshots, and the edge check of lease entries.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkedLeaseCommand, encodeLeaseCommand, LeaseTable, type LeaseCommand } from '../../src/lease/state.ts';
import { entryProblem, NodeStateMachine, snapshotProblem } from '../../src/node/machine.ts';
import { EntryType } from '../../src/raft/types.ts';

const acquire = (holder: string, atMs: number, ttlMs = 1_000): LeaseCommand => ({ t: 'lease.acquire', name: 'outbox/p0', holder, ttlMs, atMs });

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
    const late = t.apply({ t: 'lease.renew', name: 'outbox/p0', holder: 'relay-a', epoch: 1, ttlMs: 1_000, atMs: 2_100 }, 4);
    expect(late.granted).toBe(false);
    expect(late.reason).toMatch(/held by relay-b at epoch 2/);
  });

  it('R7: the holder acquiring again keeps its epoch; renew extends; release lets the next holder in with a larger epoch', () => {
    const t = new LeaseTable();
    t.apply(acquire('relay-a', 0), 1);
    expect(t.apply(acquire('relay-a', 500), 2).lease).toMatchObject({ epoch: 1, expiresAtMs: 1_500 });
    expect(t.apply({ t: 'lease.renew', name: 'outbox/p0', holder: 'relay-a', epoch: 1, ttlMs: 1_000, atMs: 1_400 }, 3).lease.expiresAtMs).toBe(2_400);
    expect(t.apply({ t: 'lease.release', name: 'outbox/p0', holder: 'relay-a', epoch: 1, atMs: 1_500 }, 4).granted).toBe(true);
    const b = t.apply(acquire('relay-b', 1_600), 5);
    expect(b.lease).toMatchObject({ holder: 'relay-b', epoch: 2 });
  });

  it('a renewal after the lease ended is refused even with nobody else holding it', () => {
    const t = new LeaseTable();
    t.apply(acquire('relay-a', 0), 1);
    const r = t.apply({ t: 'lease.renew', name: 'outbox/p0', holder: 'relay-a', epoch: 1, ttlMs: 1_000, atMs: 1_000 }, 2);
    expect(r.granted).toBe(false);
    expect(r.reason).toMatch(/expired 0 ms ago/);
  });

  it('the clock never runs backwards: a new leader with a slower clock lengthens leases, never shortens them', () => {
    const t = new LeaseTable();
    t.apply(acquire('relay-a', 10_000), 1);
    // A leader whose clock reads 2 s earlier: the table still reads 10 000.
    const b = t.apply(acquire('relay-b', 8_000), 2);
    expect(b.granted).toBe(false);
    expect(b.clockAtMs).toBe(10_000);
  });

  it('bounds the number of leases', () => {
    const t = new LeaseTable(2);
    expect(t.apply({ ...acquire('a', 0), name: 'x' }, 1).granted).toBe(true);
    expect(t.apply({ ...acquire('a', 0), name: 'y' }, 2).granted).toBe(true);
    const z = t.apply({ ...acquire('a', 0), name: 'z' }, 3);
    expect(z.granted).toBe(false);
    expect(z.reason).toMatch(/limit/);
  });

  it('property: at every instant at most one live holder, and epochs only grow, under any schedule of requests', () => {
    const holders = ['a', 'b', 'c'];
    const cmd = fc.record({ kind: fc.constantFrom('acquire', 'renew', 'release'), who: fc.constantFrom(...holders), dtMs: fc.integer({ min: -300, max: 700 }), epoch: fc.integer({ min: 1, max: 6 }) });
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
  const machine = (): NodeStateMachine => new NodeStateMachine();

  it("a well-formed lease entry passes the edge and applies; its result is the table's last", () => {
    const data = encodeLeaseCommand(acquire('relay-a', 5));
    expect(entryProblem(EntryType.Normal, data)).toBeNull();
    const m = machine();
    expect(m.apply({ type: EntryType.Normal, term: 1, index: 7, data })).toBeNull();
    expect(m.leases.last).toMatchObject({ index: 7, granted: true });
  });

  it('refuses malformed lease entries with a reason: bad name, ttl out of range, missing epoch, unknown kind, not JSON', () => {
    const raw = (o: unknown): Uint8Array => Buffer.concat([Buffer.of(0x03), Buffer.from(JSON.stringify(o))]);
    expect(entryProblem(EntryType.Normal, raw({ ...acquire('a', 0), name: '../x' }))).toMatch(/lease.acquire needs/);
    expect(entryProblem(EntryType.Normal, raw({ ...acquire('a', 0), ttlMs: 10 }))).toMatch(/lease.acquire needs/);
    expect(entryProblem(EntryType.Normal, raw({ t: 'lease.renew', name: 'p', holder: 'a', ttlMs: 1_000, atMs: 0 }))).toMatch(/lease.renew needs/);
    expect(entryProblem(EntryType.Normal, raw({ t: 'lease.steal', name: 'p' }))).toMatch(/unknown lease command kind/);
    expect(entryProblem(EntryType.Normal, Buffer.from([0x03, 0x7b]))).toMatch(/does not decode/);
    expect(checkedLeaseCommand(raw([1])).problem).toMatch(/not an object/);
  });

  it('property: no byte string after the lease tag throws at the edge', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (b) => typeof (entryProblem(EntryType.Normal, Buffer.concat([Buffer.of(0x03), b])) ?? '') === 'string'));
  });

  it('snapshots carry the leases and the clock; a snapshot without a lease table or with a damaged one is refused', () => {
    const m = machine();
    m.apply({ type: EntryType.Normal, term: 1, index: 1, data: encodeLeaseCommand(acquire('relay-a', 5_000)) });
    const snap = m.snapshot();
    const r = machine();
    r.restore(snap);
    expect(r.leases.get('outbox/p0')).toMatchObject({ holder: 'relay-a', epoch: 1, expiresAtMs: 6_000 });
    expect(r.leases.clockAtMs).toBe(5_000);
    const old = JSON.parse(Buffer.from(snap).toString());
    expect(snapshotProblem(Buffer.from(JSON.stringify(old)))).toBeNull();
    delete old.leases;
    expect(snapshotProblem(Buffer.from(JSON.stringify(old)))).toMatch(/^snapshot data does not restore: the snapshot has no lease table$/);
    old.leases = { l: [{ name: 'p', holder: 'a', epoch: 'one', expiresAtMs: 0 }], c: 0 };
    expect(snapshotProblem(Buffer.from(JSON.stringify(old)))).toMatch(/lease in the snapshot is malformed/);
  });
});
