// What the leader knows about each follower, and how much it may send.
//
// Invariants (asserted): 0 <= match < next; in Replicate state the in-flight
// window holds only indexes in (match, next).

import { assert } from '../util/assert.ts';
import { type NodeId } from './types.ts';

export enum ProgressState {
  /** Unknown match: send one append per heartbeat interval and wait. */
  Probe = 'probe',
  /** Match known: stream appends optimistically, bounded by the window. */
  Replicate = 'replicate',
  /** The follower needs a snapshot; appends pause until it reports back. */
  Snapshot = 'snapshot',
}

/**
 * The flow-control window: the appends sent but not yet acknowledged, each
 * remembered by its last index and payload size. Full when either bound is
 * reached, so neither message count nor bytes in flight grow without limit.
 */
export class Inflights {
  private readonly indexes: number[] = [];
  private readonly sizes: number[] = [];
  private head = 0;
  private bytes = 0;

  constructor(
    readonly countMax: number,
    readonly bytesMax: number,
  ) {
    assert(countMax > 0, 'inflight count bound must be positive');
  }

  count(): number {
    return this.indexes.length - this.head;
  }

  bytesInFlight(): number {
    return this.bytes;
  }

  full(): boolean {
    return this.count() >= this.countMax || (this.bytesMax > 0 && this.bytes >= this.bytesMax);
  }

  add(index: number, sizeBytes: number): void {
    assert(!this.full(), 'inflights: add to a full window');
    const n = this.indexes.length;
    assert(n === this.head || this.indexes[n - 1] < index, 'inflights: indexes must increase');
    this.indexes.push(index);
    this.sizes.push(sizeBytes);
    this.bytes += sizeBytes;
  }

  /** Frees every message whose last index is <= `index` (it was acknowledged). */
  freeLE(index: number): void {
    while (this.head < this.indexes.length && this.indexes[this.head] <= index) {
      this.bytes -= this.sizes[this.head];
      this.head++;
    }
    // Compact now and then so the arrays do not grow with the history.
    if (this.head > 64 && this.head * 2 > this.indexes.length) {
      this.indexes.splice(0, this.head);
      this.sizes.splice(0, this.head);
      this.head = 0;
    }
  }

  /**
   * Frees the oldest message: a heartbeat answer proves the follower alive, so lost appends must not stall the window
   * forever.
   */
  freeFirstOne(): void {
    if (this.count() > 0) this.freeLE(this.indexes[this.head]);
  }

  reset(): void {
    this.indexes.length = 0;
    this.sizes.length = 0;
    this.head = 0;
    this.bytes = 0;
  }
}

export class Progress {
  match = 0;
  next: number;
  state = ProgressState.Probe;
  /** In Snapshot state: the index of the snapshot being sent. */
  pendingSnapshot = 0;
  /** Heard from since the last CheckQuorum round. */
  recentActive = false;
  /** In Probe state: one append is out, wait for its answer or a heartbeat. */
  probeSent = false;
  /** In Snapshot state: heartbeat answers since the snapshot was sent. */
  snapshotHeartbeats = 0;
  /**
   * The follower is rejoining (its data directory started empty; see
   * Raft.rejoining): the nonce of its start, from its answers' mark; null
   * when it is not, or once it was proven whole and answered without it.
   */
  rejoinNonce: Uint8Array | null = null;
  /** The empty entry this leader appended after the follower's first mark (0: none yet). */
  rejoinFence = 0;
  readonly inflights: Inflights;

  constructor(
    readonly id: NodeId,
    next: number,
    inflightCountMax: number,
    inflightBytesMax: number,
    public isLearner = false,
  ) {
    this.next = next;
    this.inflights = new Inflights(inflightCountMax, inflightBytesMax);
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshotHeartbeats = 0;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    if (this.state === ProgressState.Snapshot) {
      // Resume right after the snapshot if it was delivered; otherwise after match.
      const pending = this.pendingSnapshot;
      this.resetState(ProgressState.Probe);
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState(ProgressState.Probe);
      this.next = this.match + 1;
    }
  }

  /**
   * The follower's disk lost entries it had acknowledged (it restarted in the
   * recovering state): its match goes back to what it still holds, so the
   * leader neither counts it for entries it no longer has nor waits forever
   * for an append that its stale match says is not needed.
   */
  lostEntriesAfter(lastIndex: number): void {
    this.match = Math.min(this.match, lastIndex);
    this.becomeProbe();
    this.next = this.match + 1;
  }

  becomeReplicate(): void {
    this.resetState(ProgressState.Replicate);
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.resetState(ProgressState.Snapshot);
    this.pendingSnapshot = snapshotIndex;
  }

  /** Records that an append ending at `lastIndex` (with `bytes` of payload) was sent. */
  sentEntries(count: number, lastIndex: number, bytes: number): void {
    switch (this.state) {
      case ProgressState.Replicate:
        if (count > 0) {
          this.next = lastIndex + 1;
          this.inflights.add(lastIndex, bytes);
        }
        break;
      case ProgressState.Probe:
        this.probeSent = true;
        break;
      default:
        assert(false, `sending entries to ${this.id} in state ${this.state}`);
    }
  }

  /** An acknowledgement up to `n`. Returns whether match moved. */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, n + 1);
    return updated;
  }

  /**
   * A rejected append at `rejected`; `matchHint` is the follower's guess of
   * the last index where the logs may agree. Returns false for a stale
   * rejection that must be ignored.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === ProgressState.Replicate) {
      // Stale unless it rejects the entry right after match.
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    // Probe: only the answer to the probe we sent counts.
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case ProgressState.Probe:
        return this.probeSent;
      case ProgressState.Replicate:
        return this.inflights.full();
      case ProgressState.Snapshot:
        return true;
    }
  }
}
