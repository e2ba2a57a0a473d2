// Holds a relay's partition leases from the Verdict cluster: acquires the
// free ones, renews its own, and says which are valid now (the Fence the
// relays publish under). A lease counts as valid locally until
//   (when the request that granted or renewed it was sent) + ttlMs - guardMs,
// measured on this process's monotonic clock. The cluster starts the lease no
// earlier than it received the request, so the relay stops publishing a guard
// interval before the cluster could hand the partition to someone else, as
// long as the nodes' clocks agree within guardMs (src/lease/state.ts).
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
}

interface Held {
  epoch: number;
  validUntilMs: number;
}

export class LeaseKeeper implements Fence {
  private readonly held = new Map<number, Held>();
  private readonly ttlMs: number;
  private readonly guardMs: number;
  private readonly nowMs: () => number;

  constructor(private readonly o: LeaseKeeperOptions) {
    this.ttlMs = o.ttlMs ?? 6_000;
    this.guardMs = o.guardMs ?? Math.floor(this.ttlMs / 3);
    if (this.guardMs <= 0 || this.guardMs >= this.ttlMs / 2) throw new Error(`lease guard ${this.guardMs} ms must be above 0 and below half the ttl (${this.ttlMs} ms)`);
    this.nowMs = o.nowMs ?? (() => performance.now());
  }

  /** How often refresh() should run: well inside the guarded validity. */
  get refreshEveryMs(): number {
    return Math.floor((this.ttlMs - this.guardMs) / 3);
  }

  owned(): ReadonlyMap<number, number> {
    const now = this.nowMs();
    const out = new Map<number, number>();
    for (const [p, h] of this.held) if (now < h.validUntilMs) out.set(p, h.epoch);
    return out;
  }

  valid(partition: number, epoch: number): boolean {
    const h = this.held.get(partition);
    return h !== undefined && h.epoch === epoch && this.nowMs() < h.validUntilMs;
  }

  /** One pass: renew what is held, try to acquire the rest. Errors reaching the cluster leave leases to lapse locally. */
  async refresh(): Promise<void> {
    await Promise.all(
      Array.from({ length: this.o.partitions }, async (_, p) => {
        const name = `${this.o.prefix}/p${p}`;
        const h = this.held.get(p);
        const live = h !== undefined && this.nowMs() < h.validUntilMs;
        const sentAtMs = this.nowMs();
        try {
          const r = live
            ? await this.o.conn.call('RenewLease', { name, holder: this.o.holder, epoch: h.epoch, ttlMs: this.ttlMs }, { deadlineMs: this.guardMs })
            : await this.o.conn.call('AcquireLease', { name, holder: this.o.holder, epoch: 0, ttlMs: this.ttlMs }, { deadlineMs: this.guardMs });
          if (r.granted && r.lease !== null) {
            if (h?.epoch !== r.lease.epoch) this.o.onChange?.(p, r.lease.epoch, 'granted');
            this.held.set(p, { epoch: r.lease.epoch, validUntilMs: sentAtMs + this.ttlMs - this.guardMs });
          } else if (h !== undefined) {
            this.held.delete(p);
            this.o.onChange?.(p, null, r.reason);
          }
        } catch (err) {
          // Not answered: the lease lapses locally at validUntilMs; nothing else to do.
          if (h !== undefined && this.nowMs() >= h.validUntilMs) {
            this.held.delete(p);
            this.o.onChange?.(p, null, `lease not renewed in time: ${(err as Error).message}`);
          }
        }
      }),
    );
  }

  /** Gives every held lease back, so another relay need not wait for them to end. */
  async releaseAll(): Promise<void> {
    const held = [...this.held];
    this.held.clear();
    await Promise.all(
      held.map(([p, h]) => this.o.conn.call('ReleaseLease', { name: `${this.o.prefix}/p${p}`, holder: this.o.holder, epoch: h.epoch, ttlMs: 0 }, { deadlineMs: 2_000 }).catch(() => null)),
    );
  }
}
