// Holds a relay's partition leases from the Verdict cluster: acquires the
// free ones, renews its own, and says which are valid now (the Fence the
// relays publish under). A lease counts as valid locally until
//   (when the request that granted or renewed it was sent) + ttlMs - guardMs,
// measured on this process's monotonic clock. The cluster starts the lease no
// earlier than it received the request, so the relay stops publishing a guard
// interval before the cluster could hand the partition to someone else, as
// long as the nodes' clocks agree within guardMs (src/lease/state.ts).
//
// Fair split (`balance`): each relay also holds one member lease
// `${prefix}/m${i}` (the lowest slot free), and counts the live member leases
// to learn how many relays run. It then holds at most fairShare(partitions,
// relays) partitions, releasing the extras so a relay that joins gets its
// share, and taking partitions whose lease ended (a relay that died) up to
// its share. The member count comes from the cluster's answers, so every
// relay sees the same figure within one refresh.
import { performance } from 'node:perf_hooks';
import type { CoordinatorConnection } from '../client/connection.ts';
import type { Fence } from './polling-relay.ts';

export interface LeaseKeeperOptions {
  conn: Pick<CoordinatorConnection, 'call'>;
  /** Lease names are `${prefix}/p${partition}`. */
  prefix: string;
  partitions: number;
  holder: string;
  ttlMs?: number;
  guardMs?: number;
  /** Monotonic milliseconds; performance.now() by default. */
  nowMs?: () => number;
  onChange?: (partition: number, epoch: number | null, why: string) => void;
  /** Split the partitions fairly with the other relays of this prefix (see above); otherwise take every free one. */
  balance?: boolean;
}

/** The most partitions one of `relays` relays holds under a fair split: ceil(partitions / relays). */
export function fairShare(partitions: number, relays: number): number {
  return Math.ceil(partitions / Math.max(1, relays));
}

/**
 * Which partitions to release and which to try, given those held and the
 * share: extras go from the top; tries start at an offset that differs per
 * member slot, so relays joining together ask for different partitions first.
 */
export function planShare(
  partitions: number,
  held: readonly number[],
  share: number,
  slot: number,
): { release: number[]; tryAcquire: number[] } {
  const mine = [...held].sort((a, b) => a - b);
  if (mine.length > share) return { release: mine.slice(share), tryAcquire: [] };
  const have = new Set(mine);
  const tryAcquire: number[] = [];
  for (let i = 0; i < partitions; i++) {
    const p = (i + slot * share) % partitions;
    if (!have.has(p)) tryAcquire.push(p);
  }
  return { release: [], tryAcquire };
}

/** Member slots probed: more relays than partitions would hold nothing. */
export const MEMBER_SLOTS_MAX = 64;

interface Held {
  epoch: number;
  /** When this relay stops trusting the lease: its request's send time plus the TTL, less the guard. */
  lapsesAtMs: number;
}

export class LeaseKeeper implements Fence {
  private readonly held = new Map<number, Held>();
  /** The member slot this relay holds (balance only). */
  private member: { slot: number; held: Held } | null = null;
  /** Live relays (this one included) at the last refresh; 1 until known. */
  relays = 1;
  private readonly ttlMs: number;
  private readonly guardMs: number;
  private readonly nowMs: () => number;

  constructor(private readonly o: LeaseKeeperOptions) {
    this.ttlMs = o.ttlMs ?? 6_000;
    this.guardMs = o.guardMs ?? Math.floor(this.ttlMs / 3);
    if (this.guardMs <= 0 || this.guardMs >= this.ttlMs / 2)
      throw new Error(`lease guard ${this.guardMs} ms must be above 0 and below half the ttl (${this.ttlMs} ms)`);
    this.nowMs = o.nowMs ?? (() => performance.now());
  }

  /** How often refresh() should run: well inside the guarded validity. */
  get refreshEveryMs(): number {
    return Math.floor((this.ttlMs - this.guardMs) / 3);
  }

  owned(): ReadonlyMap<number, number> {
    const now = this.nowMs();
    const out = new Map<number, number>();
    for (const [p, h] of this.held) if (now < h.lapsesAtMs) out.set(p, h.epoch);
    return out;
  }

  leaseName(partition: number): string {
    return `${this.o.prefix}/p${partition}`;
  }

  valid(partition: number, epoch: number): boolean {
    const h = this.held.get(partition);
    return h !== undefined && h.epoch === epoch && this.nowMs() < h.lapsesAtMs;
  }

  /**
   * One pass: renew what is held, try to acquire the rest (up to the fair share with `balance`). Errors reaching the
   * cluster leave leases to lapse locally.
   */
  async refresh(): Promise<void> {
    if (this.o.balance !== true) {
      await Promise.all(Array.from({ length: this.o.partitions }, (_, p) => this.refreshOne(p)));
      return;
    }
    const slots = Math.min(this.o.partitions, MEMBER_SLOTS_MAX);
    const live = await this.refreshMembers(slots);
    if (live === null) {
      // The cluster did not answer: keep renewing what is held, take nothing new.
      await Promise.all([...this.held.keys()].map((p) => this.refreshOne(p)));
      return;
    }
    this.relays = live;
    const share = fairShare(this.o.partitions, live);
    await Promise.all([...this.held.keys()].map((p) => this.refreshOne(p)));
    const plan = planShare(this.o.partitions, [...this.owned().keys()], share, this.member?.slot ?? 0);
    for (const p of plan.release)
      await this.releaseOne(p, `fair share is ${share} of ${this.o.partitions} partitions among ${live} relays`);
    for (const p of plan.tryAcquire) {
      if (this.owned().size >= share) break;
      await this.refreshOne(p);
    }
  }

  /** Holds (or renews) one member slot and counts the live ones; null when the cluster did not answer. */
  private async refreshMembers(slots: number): Promise<number | null> {
    const call = (rpc: 'AcquireLease' | 'RenewLease', slot: number, epoch: number) =>
      this.o.conn.call(
        rpc,
        { name: `${this.o.prefix}/m${slot}`, holder: this.o.holder, epoch, ttlMs: this.ttlMs },
        { callTimeoutMs: this.guardMs },
      );
    try {
      const m = this.member;
      if (m !== null) {
        const sentAtMs = this.nowMs();
        const r = await call('RenewLease', m.slot, m.held.epoch);
        if (r.granted) m.held.lapsesAtMs = sentAtMs + this.ttlMs - this.guardMs;
        else this.member = null;
      }
      let others = 0;
      const seen = (r: { lease: { holder: string; expiresAtMs: number } | null; clockAtMs: number }): void => {
        if (
          r.lease !== null &&
          r.lease.holder !== '' &&
          r.lease.holder !== this.o.holder &&
          r.lease.expiresAtMs > r.clockAtMs
        )
          others++;
      };
      let slot = 0;
      // Without a slot: acquire the lowest free one, in order.
      for (; this.member === null && slot < slots; slot++) {
        const sentAtMs = this.nowMs();
        const r = await call('AcquireLease', slot, 0);
        if (r.granted && r.lease !== null && r.lease.holder === this.o.holder)
          this.member = { slot, held: { epoch: r.lease.epoch, lapsesAtMs: sentAtMs + this.ttlMs - this.guardMs } };
        else seen(r);
      }
      // The rest are read, in parallel, with a renew that cannot match (it changes nothing).
      const rest = Array.from({ length: slots }, (_, s) => s).filter((s) => s >= slot && s !== this.member?.slot);
      for (const r of await Promise.all(rest.map((s) => call('RenewLease', s, 1)))) seen(r);
      return this.member === null ? null : others + 1;
    } catch {
      return null;
    }
  }

  private async releaseOne(p: number, why: string): Promise<void> {
    const h = this.held.get(p);
    if (h === undefined) return;
    this.held.delete(p);
    this.o.onChange?.(p, null, `released: ${why}`);
    await this.o.conn
      .call(
        'ReleaseLease',
        { name: `${this.o.prefix}/p${p}`, holder: this.o.holder, epoch: h.epoch, ttlMs: 0 },
        { callTimeoutMs: 2_000 },
      )
      .catch(() => null);
  }

  private async refreshOne(p: number): Promise<void> {
    const name = `${this.o.prefix}/p${p}`;
    const h = this.held.get(p);
    const live = h !== undefined && this.nowMs() < h.lapsesAtMs;
    const sentAtMs = this.nowMs();
    try {
      const r = live
        ? await this.o.conn.call(
            'RenewLease',
            { name, holder: this.o.holder, epoch: h.epoch, ttlMs: this.ttlMs },
            { callTimeoutMs: this.guardMs },
          )
        : await this.o.conn.call(
            'AcquireLease',
            { name, holder: this.o.holder, epoch: 0, ttlMs: this.ttlMs },
            { callTimeoutMs: this.guardMs },
          );
      if (r.granted && r.lease !== null) {
        if (h?.epoch !== r.lease.epoch) this.o.onChange?.(p, r.lease.epoch, 'granted');
        this.held.set(p, { epoch: r.lease.epoch, lapsesAtMs: sentAtMs + this.ttlMs - this.guardMs });
      } else if (h !== undefined) {
        this.held.delete(p);
        this.o.onChange?.(p, null, r.reason);
      }
    } catch (err) {
      // Not answered: the lease lapses locally at lapsesAtMs; nothing else to do.
      if (h !== undefined && this.nowMs() >= h.lapsesAtMs) {
        this.held.delete(p);
        this.o.onChange?.(p, null, `lease not renewed in time: ${(err as Error).message}`);
      }
    }
  }

  /** Gives every held lease back, so another relay need not wait for them to end. */
  async releaseAll(): Promise<void> {
    const held = [...this.held];
    this.held.clear();
    const m = this.member;
    this.member = null;
    if (m !== null) held.push([-1, m.held]);
    await Promise.all(
      held.map(([p, h]) =>
        this.o.conn
          .call(
            'ReleaseLease',
            {
              name: p === -1 ? `${this.o.prefix}/m${m?.slot}` : `${this.o.prefix}/p${p}`,
              holder: this.o.holder,
              epoch: h.epoch,
              ttlMs: 0,
            },
            { callTimeoutMs: 2_000 },
          )
          .catch(() => null),
      ),
    );
  }
}
