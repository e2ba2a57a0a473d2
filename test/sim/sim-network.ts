// The simulated network shared by the simulators: every message is subject
// to cuts (partitions, one way or both), loss, duplication and a jittered
// delay that reorders messages between the same two endpoints. A cut raised
// while a message travels drops it on arrival. Every choice comes from the
// simulator's seeded generator, in a fixed order, so runs replay exactly.

import type { Rng } from '../../src/raft/rng.ts';
import type { EventQueue } from './event-queue.ts';

export class SimNetwork {
  /** "from>to" → how many faults currently cut that direction. */
  private readonly cuts = new Map<string, number>();
  lossPercent = 0;
  dupPercent = 0;
  extraDelayMs = 0;

  constructor(
    private readonly q: EventQueue,
    private readonly rng: Rng,
  ) {}

  isBlocked(from: string, to: string): boolean {
    return this.cuts.has(`${from}>${to}`);
  }

  /** Cuts from→to (one more fault holding it). */
  block(from: string, to: string): void {
    const k = `${from}>${to}`;
    this.cuts.set(k, (this.cuts.get(k) ?? 0) + 1);
  }

  /** One fault holding from→to ends; the direction opens when none is left. */
  unblock(from: string, to: string): void {
    const k = `${from}>${to}`;
    const c = this.cuts.get(k) ?? 0;
    if (c <= 1) this.cuts.delete(k);
    else this.cuts.set(k, c - 1);
  }

  /** Opens from→to whatever holds it. */
  open(from: string, to: string): void {
    this.cuts.delete(`${from}>${to}`);
  }

  /** Opens every direction. */
  openAll(): void {
    this.cuts.clear();
  }

  /** A clean network: no cuts, no loss, duplication or extra delay. */
  heal(): void {
    this.cuts.clear();
    this.lossPercent = 0;
    this.dupPercent = 0;
    this.extraDelayMs = 0;
  }

  /** Sends one message: dropped, or delivered once or twice, each copy after its own delay. */
  send(from: string, to: string, deliver: () => void): void {
    if (this.isBlocked(from, to)) return;
    if (this.lossPercent > 0 && this.rng.int(100) < this.lossPercent) return;
    const copies = this.dupPercent > 0 && this.rng.int(100) < this.dupPercent ? 2 : 1;
    for (let c = 0; c < copies; c++) {
      // Jitter reorders messages between the same two endpoints.
      const delay = 1 + this.rng.int(5) + (this.extraDelayMs > 0 ? this.rng.int(this.extraDelayMs) : 0);
      this.q.after(delay, () => {
        if (this.isBlocked(from, to)) return;
        deliver();
      });
    }
  }
}
