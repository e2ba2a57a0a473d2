// Leases with an epoch, replicated through the Raft log: the fencing
// authority of the outbox relays (src/outbox/). A relay that holds lease
// `outbox/orders/p3` publishes the events of partition 3 and stamps each with
// the lease's epoch; a relay that lost it stops, and a consumer drops what a
// stale holder still sent (an older epoch after a newer one).
//
// Pure and deterministic like the decision table: time comes inside the
// command (the leader's clock when it proposed it). The table's own clock
// only moves forward (clockAtMs = the largest atMs applied so far), so a new
// leader whose clock is behind the old one's never shortens a lease: it
// lengthens it, which is the safe side. A leader whose clock is ahead ends
// leases early in the cluster's view; the holder allows for that by stopping
// a guard interval before its lease could end (src/outbox/lease-keeper.ts),
// which is safe while node clocks agree within that guard.
//
// Invariants (checked by test/unit/lease-state.test.ts):
//   a lease's epoch never decreases, and a new holder always gets a larger one;
//   at any clockAtMs at most one holder has expiresAtMs > clockAtMs.

export const LEASES_MAX = 10_000;
export const LEASE_TTL_MIN_MS = 500;
export const LEASE_TTL_MAX_MS = 300_000;
export const LEASE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$/;
export const LEASE_HOLDER = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;

export interface Lease {
  name: string;
  /** '' once released or never held. */
  holder: string;
  /** Grows by one each time the lease is granted anew; 0 before the first grant. */
  epoch: number;
  /** Cluster time (the table's clock) at which the lease ends; 0 once released. */
  expiresAtMs: number;
}

export type LeaseCommand =
  | { t: 'lease.acquire'; name: string; holder: string; ttlMs: number; atMs: number }
  | { t: 'lease.renew'; name: string; holder: string; epoch: number; ttlMs: number; atMs: number }
  | { t: 'lease.release'; name: string; holder: string; epoch: number; atMs: number };

/** `granted`: the command took effect; otherwise `reason` says why, and `lease` is the lease as it stands. */
export interface LeaseResult {
  index: number;
  granted: boolean;
  reason: string;
  lease: Lease;
  /** The table's clock when the command applied. */
  clockAtMs: number;
}

type Fields = Record<string, unknown>;
const isTime = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isTtl = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= LEASE_TTL_MIN_MS && v <= LEASE_TTL_MAX_MS;
const isEpoch = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
const isName = (v: unknown): boolean => typeof v === 'string' && LEASE_NAME.test(v);
const isHolder = (v: unknown): boolean => typeof v === 'string' && LEASE_HOLDER.test(v);

/** One check per lease command kind, as src/commit/command-check.ts has for the decision table's. */
const CHECKS: { [K in LeaseCommand['t']]: (c: Fields) => string | null } = {
  'lease.acquire': (c) => (isName(c.name) && isHolder(c.holder) && isTtl(c.ttlMs) && isTime(c.atMs) ? null : 'lease.acquire needs name, holder, ttlMs and atMs'),
  'lease.renew': (c) => (isName(c.name) && isHolder(c.holder) && isEpoch(c.epoch) && isTtl(c.ttlMs) && isTime(c.atMs) ? null : 'lease.renew needs name, holder, epoch, ttlMs and atMs'),
  'lease.release': (c) => (isName(c.name) && isHolder(c.holder) && isEpoch(c.epoch) && isTime(c.atMs) ? null : 'lease.release needs name, holder, epoch and atMs'),
};

export const TAG_LEASE = 0x03;

export function encodeLeaseCommand(cmd: LeaseCommand): Uint8Array {
  const json = Buffer.from(JSON.stringify(cmd), 'utf8');
  const out = Buffer.alloc(json.byteLength + 1);
  out[0] = TAG_LEASE;
  json.copy(out, 1);
  return out;
}

export function isLeaseCommand(data: Uint8Array): boolean {
  return data.byteLength > 0 && data[0] === TAG_LEASE;
}

/** The lease command in `data`, or why it is not one. Decodes once. */
export function checkedLeaseCommand(data: Uint8Array): { cmd: LeaseCommand; problem: null } | { cmd: null; problem: string } {
  const no = (problem: string): { cmd: null; problem: string } => ({ cmd: null, problem });
  if (!isLeaseCommand(data)) return no(`not a lease command (tag ${data.byteLength === 0 ? '(empty)' : data[0]})`);
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(data.buffer, data.byteOffset + 1, data.byteLength - 1).toString('utf8'));
  } catch (err) {
    return no(`lease command does not decode: ${(err as Error).message}`);
  }
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return no('lease command is not an object');
  const t = (c as Fields).t;
  if (typeof t !== 'string' || !Object.hasOwn(CHECKS, t)) return no(`unknown lease command kind ${String(JSON.stringify(t)).slice(0, 40)}`);
  const problem = CHECKS[t as LeaseCommand['t']](c as Fields);
  return problem === null ? { cmd: c as LeaseCommand, problem: null } : no(problem);
}

export class LeaseTable {
  readonly leases = new Map<string, Lease>();
  /** The cluster's lease clock: the largest atMs applied. Only grows. */
  clockAtMs = 0;
  /** The result of the last lease command applied, for the proposer's callback (it fires right after the apply). */
  last: LeaseResult | null = null;

  constructor(private readonly leasesMax = LEASES_MAX) {}

  apply(cmd: LeaseCommand, index: number): LeaseResult {
    this.clockAtMs = Math.max(this.clockAtMs, cmd.atMs);
    const now = this.clockAtMs;
    const cur = this.leases.get(cmd.name) ?? { name: cmd.name, holder: '', epoch: 0, expiresAtMs: 0 };
    const live = cur.holder !== '' && cur.expiresAtMs > now;
    const answer = (granted: boolean, reason: string, lease: Lease): LeaseResult => {
      if (granted) this.leases.set(cmd.name, lease);
      this.last = { index, granted, reason, lease: { ...lease }, clockAtMs: now };
      return this.last;
    };
    switch (cmd.t) {
      case 'lease.acquire': {
        // R7: the holder asking again while it holds the lease gets the same epoch, extended.
        if (live && cur.holder === cmd.holder) return answer(true, '', { ...cur, expiresAtMs: now + cmd.ttlMs });
        if (live) return answer(false, `held by ${cur.holder} (epoch ${cur.epoch}) for ${cur.expiresAtMs - now} ms more`, cur);
        if (!this.leases.has(cmd.name) && this.leases.size >= this.leasesMax) return answer(false, `the cluster holds ${this.leasesMax} leases, its limit`, cur);
        return answer(true, '', { name: cmd.name, holder: cmd.holder, epoch: cur.epoch + 1, expiresAtMs: now + cmd.ttlMs });
      }
      case 'lease.renew': {
        if (!live || cur.holder !== cmd.holder || cur.epoch !== cmd.epoch) return answer(false, lostReason(cur, cmd.holder, cmd.epoch, now), cur);
        return answer(true, '', { ...cur, expiresAtMs: now + cmd.ttlMs });
      }
      case 'lease.release': {
        if (cur.holder !== cmd.holder || cur.epoch !== cmd.epoch) return answer(false, lostReason(cur, cmd.holder, cmd.epoch, now), cur);
        // The record stays (holder cleared), so the next grant's epoch is larger than every earlier one.
        return answer(true, '', { ...cur, holder: '', expiresAtMs: 0 });
      }
    }
  }

  /** The lease as the table holds it now (a copy), or null when it was never granted. */
  get(name: string): Lease | null {
    const l = this.leases.get(name);
    return l ? { ...l } : null;
  }

  toJSON(): unknown {
    return { l: [...this.leases.values()], c: this.clockAtMs };
  }

  restoreFrom(json: unknown): void {
    this.leases.clear();
    this.clockAtMs = 0;
    this.last = null;
    if (json === undefined || json === null) throw new Error('the snapshot has no lease table');
    const o = json as { l?: unknown; c?: unknown };
    if (!Array.isArray(o.l) || !isTime(o.c)) throw new Error('lease table in the snapshot is malformed');
    for (const l of o.l as Lease[]) {
      if (l === null || typeof l !== 'object' || !isName(l.name) || typeof l.holder !== 'string' || !Number.isSafeInteger(l.epoch) || !isTime(l.expiresAtMs))
        throw new Error('a lease in the snapshot is malformed');
      this.leases.set(l.name, { name: l.name, holder: l.holder, epoch: l.epoch, expiresAtMs: l.expiresAtMs });
    }
    this.clockAtMs = o.c as number;
  }
}

function lostReason(cur: Lease, holder: string, epoch: number, now: number): string {
  if (cur.holder === '') return `lease ${cur.name} is not held`;
  if (cur.holder !== holder || cur.epoch !== epoch) return `lease ${cur.name} is held by ${cur.holder} at epoch ${cur.epoch}, not by ${holder} at epoch ${epoch}`;
  return `lease ${cur.name} expired ${now - cur.expiresAtMs} ms ago`;
}
