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
// Every record a client creates here is bounded and collected (R9):
//
// - A released lease is deleted when its release applies. An expired one is
//   deleted by a later lease command: each command first drops the leases
//   granted or renewed longest ago while they have expired (the table keeps
//   them in that order), so an expired lease is gone at the first lease
//   command applied LEASE_TTL_MAX_MS after its last grant or renewal; and a
//   grant that meets a bound first sweeps every expired lease. Deletion runs
//   while entries apply, on the table's clock, so every replica deletes the
//   same leases at the same index.
// - Epochs come from one cluster-wide counter (epochMax), not from the
//   lease's own record, because the record may be gone: a per-name high-water
//   mark would need a record per name ever used, which is the unbounded table
//   this replaces. One counter is one number in the state and in snapshots,
//   and it makes every new grant's epoch larger than every earlier grant of
//   any lease, so a re-acquired name never repeats an epoch. Epochs of one
//   lease therefore grow, but not by one (2^53 grants at a million a second
//   would take 285 years).
// - A holder is a pair: the holder name the request gives, and the caller's
//   identity (`owner`), under mutual TLS its certificate's CN (`CN=relay-1`),
//   set by the node that took the request, never by the request. Only the
//   same pair renews or releases, and re-acquiring keeps the epoch only for
//   the same pair. Without TLS there are no identities: the owner is empty
//   and the holder name alone says who holds (whoever can reach the port can
//   claim any name, as docs/security.md says of plaintext).
// - A client holds at most LEASES_PER_CLIENT_MAX leases (counted by owner;
//   without TLS by holder name), and the cluster LEASES_MAX in all.
//
// Invariants (checked by test/unit/lease-state.test.ts):
//   a lease's epoch never decreases, and a new holder always gets a larger one;
//   every epoch granted is at most epochMax, and epochMax never decreases;
//   at any clockAtMs at most one holder has expiresAtMs > clockAtMs;
//   the table holds no released lease, and at most LEASES_MAX leases.

import type { TaggedProductTable } from '../commit/product-table.ts';
import { OldestFirst } from '../util/oldest-first.ts';
import { assert } from '../util/assert.ts';

export const LEASES_MAX = 10_000;
/** Leases one client (one certificate CN; without TLS, one holder name) holds at once. */
export const LEASES_PER_CLIENT_MAX = 1_000;
export const LEASE_TTL_MIN_MS = 500;
export const LEASE_TTL_MAX_MS = 300_000;
export const LEASE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$/;
export const LEASE_HOLDER = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;
/**
 * A caller's identity as the node writes it: `CN=<common name>` of its certificate, at most 256 characters, no control
 * characters.
 */
export function isLeaseOwner(v: unknown): v is string {
  if (typeof v !== 'string' || !v.startsWith('CN=') || v.length < 4 || v.length > 256) return false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return false;
  }
  return true;
}

export interface Lease {
  name: string;
  /** The holder name the request gave; '' for a lease nobody holds (never stored). */
  holder: string;
  /** The holder's identity: `CN=<name>` of its certificate under mutual TLS, '' without TLS. */
  owner: string;
  /** Larger than every epoch granted before it, of any lease (the cluster-wide counter); 0 before the first grant. */
  epoch: number;
  /** Cluster time (the table's clock) at which the lease ends; 0 for a lease nobody holds. */
  expiresAtMs: number;
}

export type LeaseCommand =
  // `owner` is absent without TLS (and in entries logged before leases had owners).
  | { t: 'lease.acquire'; name: string; holder: string; owner?: string; ttlMs: number; atMs: number }
  | { t: 'lease.renew'; name: string; holder: string; owner?: string; epoch: number; ttlMs: number; atMs: number }
  | { t: 'lease.release'; name: string; holder: string; owner?: string; epoch: number; atMs: number };

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
const isTtl = (v: unknown): boolean =>
  typeof v === 'number' && Number.isInteger(v) && v >= LEASE_TTL_MIN_MS && v <= LEASE_TTL_MAX_MS;
const isEpoch = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
const isName = (v: unknown): boolean => typeof v === 'string' && LEASE_NAME.test(v);
const isHolder = (v: unknown): boolean => typeof v === 'string' && LEASE_HOLDER.test(v);
const isOwner = (v: unknown): boolean => v === undefined || isLeaseOwner(v);
const who = (c: Fields): boolean => isName(c.name) && isHolder(c.holder) && isOwner(c.owner);

/** One check per lease command kind, as src/commit/command-check.ts has for the decision table's. */
const CHECKS: { [K in LeaseCommand['t']]: (c: Fields) => string | null } = {
  'lease.acquire': (c) =>
    who(c) && isTtl(c.ttlMs) && isTime(c.atMs)
      ? null
      : 'lease.acquire needs name, holder, ttlMs and atMs (and owner, when present, of the form CN=…)',
  'lease.renew': (c) =>
    who(c) && isEpoch(c.epoch) && isTtl(c.ttlMs) && isTime(c.atMs)
      ? null
      : 'lease.renew needs name, holder, epoch, ttlMs and atMs (and owner, when present, of the form CN=…)',
  'lease.release': (c) =>
    who(c) && isEpoch(c.epoch) && isTime(c.atMs)
      ? null
      : 'lease.release needs name, holder, epoch and atMs (and owner, when present, of the form CN=…)',
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
export function checkedLeaseCommand(
  data: Uint8Array,
): { cmd: LeaseCommand; problem: null } | { cmd: null; problem: string } {
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
  if (typeof t !== 'string' || !Object.hasOwn(CHECKS, t))
    return no(`unknown lease command kind ${String(JSON.stringify(t)).slice(0, 40)}`);
  const problem = CHECKS[t as LeaseCommand['t']](c as Fields);
  return problem === null ? { cmd: c as LeaseCommand, problem: null } : no(problem);
}

/** Who a client is for its lease quota: its identity under TLS, its holder name without. */
const clientKey = (owner: string, holder: string): string => (owner !== '' ? owner : `holder ${holder}`);
/** A holder as a reason names it. */
const holderName = (holder: string, owner: string): string => (owner === '' ? holder : `${holder} (${owner})`);

/**
 * The lease table: a product table beside the decision table under the
 * node's state machine, fed by entries of its own tag (TAG_LEASE) and kept in
 * the snapshot's top-level `leases` (src/commit/product-table.ts).
 */
export class LeaseTable implements TaggedProductTable {
  readonly product = 'lease';
  readonly tag = TAG_LEASE;
  readonly section = 'leases';
  /**
   * The leases held, live or expired and not yet swept: never a released one.
   * In the order they were last granted or renewed (each grant or renewal
   * re-inserts its record), so the oldest entry is the first to expire
   * among those granted at least LEASE_TTL_MAX_MS ago.
   */
  readonly leases = new Map<string, Lease>();
  /** Leases held per client (clientKey), the same records as `leases`. */
  private readonly perClient = new Map<string, number>();
  private readonly oldest = new OldestFirst(this.leases);
  /** The cluster's lease clock: the largest atMs applied. Only grows. */
  clockAtMs = 0;
  /** The largest epoch ever granted, of any lease: the next grant gets epochMax + 1. Only grows. */
  epochMax = 0;
  /** The result of the last lease command applied, for the proposer's callback (it fires right after the apply). */
  last: LeaseResult | null = null;

  constructor(
    private readonly leasesMax = LEASES_MAX,
    private readonly perClientMax = LEASES_PER_CLIENT_MAX,
  ) {}

  entryProblem(data: Uint8Array): string | null {
    return checkedLeaseCommand(data).problem;
  }

  /** Applies a lease entry; its result is `last`, for the proposer's callback. */
  applyEntry(data: Uint8Array, index: number): string | null {
    const { cmd, problem } = checkedLeaseCommand(data);
    if (cmd === null) return problem;
    this.apply(cmd, index);
    return null;
  }

  empty(): LeaseTable {
    return new LeaseTable(this.leasesMax, this.perClientMax);
  }

  apply(cmd: LeaseCommand, index: number): LeaseResult {
    const was = this.clockAtMs;
    this.clockAtMs = Math.max(this.clockAtMs, cmd.atMs);
    const now = this.clockAtMs;
    assert(now >= was, `the lease clock only grows (${was} → ${now})`);
    this.sweepOldest(now);
    const owner = cmd.owner ?? '';
    const cur = this.leases.get(cmd.name) ?? { name: cmd.name, holder: '', owner: '', epoch: 0, expiresAtMs: 0 };
    const live = cur.holder !== '' && cur.expiresAtMs > now;
    const same = cur.holder === cmd.holder && cur.owner === owner;
    const answer = (granted: boolean, reason: string, lease: Lease): LeaseResult => {
      this.last = { index, granted, reason, lease: { ...lease }, clockAtMs: now };
      return this.last;
    };
    switch (cmd.t) {
      case 'lease.acquire': {
        // R7: the holder asking again while it holds the lease gets the same epoch, extended.
        if (live && same) return answer(true, '', this.extend(cur, now + cmd.ttlMs, now));
        if (live)
          return answer(
            false,
            `held by ${holderName(cur.holder, cur.owner)} (epoch ${cur.epoch}) for ${cur.expiresAtMs - now} ms more`,
            cur,
          );
        const full = this.fullFor(cmd.name, clientKey(owner, cmd.holder), now);
        if (full !== null) return answer(false, full, cur);
        return answer(
          true,
          '',
          this.grant(
            cur,
            { name: cmd.name, holder: cmd.holder, owner, epoch: this.epochMax + 1, expiresAtMs: now + cmd.ttlMs },
            now,
          ),
        );
      }
      case 'lease.renew': {
        if (!live || !same || cur.epoch !== cmd.epoch)
          return answer(false, lostReason(cur, cmd.holder, owner, cmd.epoch, now), cur);
        return answer(true, '', this.extend(cur, now + cmd.ttlMs, now));
      }
      case 'lease.release': {
        if (cur.holder === '' || !same || cur.epoch !== cmd.epoch)
          return answer(false, lostReason(cur, cmd.holder, owner, cmd.epoch, now), cur);
        return answer(true, '', this.release(cur));
      }
    }
  }

  /**
   * The three transitions of a lease, each asserting what makes it safe
   * (src/util/assert.ts: a failure is a bug in Verdict, not bad input).
   * A grant: nobody holds the lease live, and its epoch is larger than every
   * epoch ever granted, so a fenced resource refuses every earlier holder.
   */
  private grant(cur: Lease, next: Lease, now: number): Lease {
    assert(cur.holder === '' || cur.expiresAtMs <= now, `lease ${cur.name}: granted only when nobody holds it live`);
    assert(
      next.epoch === this.epochMax + 1 && next.epoch > cur.epoch,
      `lease ${cur.name}: a grant's epoch ${next.epoch} follows every earlier one (${this.epochMax})`,
    );
    assert(
      next.holder !== '' && next.expiresAtMs > now,
      `lease ${cur.name}: a grant names a holder and ends after now`,
    );
    this.epochMax = next.epoch;
    return this.put(next);
  }

  /** A renewal (or a repeated acquire, R7): the live holder keeps its epoch; only the expiry moves. */
  private extend(cur: Lease, expiresAtMs: number, now: number): Lease {
    assert(cur.holder !== '' && cur.expiresAtMs > now, `lease ${cur.name}: only a live lease is extended`);
    assert(expiresAtMs > now, `lease ${cur.name}: an extension ends after now`);
    return this.put({ ...cur, expiresAtMs });
  }

  /** A release by its holder: the record goes; epochMax keeps the next grant's epoch larger than this one. */
  private release(cur: Lease): Lease {
    assert(cur.holder !== '' && this.leases.get(cur.name) === cur, `lease ${cur.name}: only a held lease is released`);
    assert(cur.epoch <= this.epochMax, `lease ${cur.name}: a held epoch ${cur.epoch} was granted (≤ ${this.epochMax})`);
    this.drop(cur);
    return { ...cur, holder: '', owner: '', expiresAtMs: 0 };
  }

  /**
   * The lease as the table holds it now (a copy), or null when nobody holds it (never granted, released, or expired and
   * swept).
   */
  get(name: string): Lease | null {
    const l = this.leases.get(name);
    return l ? { ...l } : null;
  }

  /** Leases held by one client (an owner under TLS; without TLS, the holder name): what its quota counts. */
  heldBy(owner: string, holder: string): number {
    return this.perClient.get(clientKey(owner, holder)) ?? 0;
  }

  /** Why a new grant of `name` to client `key` would break a bound, after sweeping every expired lease; or null. */
  private fullFor(name: string, key: string, now: number): string | null {
    const over = (): boolean =>
      (!this.leases.has(name) && this.leases.size >= this.leasesMax) ||
      (this.perClient.get(key) ?? 0) >= this.perClientMax;
    if (!over()) return null;
    this.sweepAll(now);
    if (!this.leases.has(name) && this.leases.size >= this.leasesMax)
      return `the cluster holds ${this.leasesMax} live leases, its limit; release leases that are no longer needed`;
    if ((this.perClient.get(key) ?? 0) >= this.perClientMax)
      return `client ${key} holds ${this.perClientMax} live leases, the limit per client; release some before acquiring more`;
    return null;
  }

  /** Stores a granted or renewed lease at the end of the table's order (a new object, as OldestFirst needs). */
  private put(l: Lease): Lease {
    const prev = this.leases.get(l.name);
    if (prev) this.drop(prev);
    this.leases.set(l.name, l);
    const key = clientKey(l.owner, l.holder);
    this.perClient.set(key, (this.perClient.get(key) ?? 0) + 1);
    return l;
  }

  private drop(l: Lease): void {
    this.leases.delete(l.name);
    const key = clientKey(l.owner, l.holder);
    const n = (this.perClient.get(key) ?? 0) - 1;
    if (n > 0) this.perClient.set(key, n);
    else this.perClient.delete(key);
  }

  /** Drops the oldest-renewed leases while they have expired: constant work per command, amortised. */
  private sweepOldest(now: number): void {
    for (let e = this.oldest.peek(); e !== null && e[1].expiresAtMs <= now; e = this.oldest.peek()) this.drop(e[1]);
  }

  /**
   * Drops every expired lease: only when a bound is met, so a full table of dead leases never refuses a live client.
   */
  private sweepAll(now: number): void {
    for (const l of [...this.leases.values()]) if (l.expiresAtMs <= now) this.drop(l);
  }

  toJSON(): unknown {
    return { l: [...this.leases.values()], c: this.clockAtMs, e: this.epochMax };
  }

  /**
   * Restores the table from a snapshot. A snapshot written before leases
   * had owners and one epoch counter (no `e`) is read too: its leases have
   * no owner, released ones (holder '') are dropped, and the counter starts
   * at the largest epoch it holds, which is every epoch ever granted since
   * nothing was deleted then.
   */
  restoreFrom(json: unknown): void {
    this.leases.clear();
    this.perClient.clear();
    this.clockAtMs = 0;
    this.epochMax = 0;
    this.last = null;
    if (json === undefined || json === null) throw new Error('the snapshot has no lease table');
    const o = json as { l?: unknown; c?: unknown; e?: unknown };
    if (
      !Array.isArray(o.l) ||
      !isTime(o.c) ||
      !(o.e === undefined || (Number.isSafeInteger(o.e) && (o.e as number) >= 0))
    )
      throw new Error('lease table in the snapshot is malformed');
    let epochMax = 0;
    for (const l of o.l as Lease[]) {
      if (
        l === null ||
        typeof l !== 'object' ||
        !isName(l.name) ||
        typeof l.holder !== 'string' ||
        !(l.owner === undefined || l.owner === '' || isLeaseOwner(l.owner)) ||
        !Number.isSafeInteger(l.epoch) ||
        !isTime(l.expiresAtMs)
      )
        throw new Error('a lease in the snapshot is malformed');
      epochMax = Math.max(epochMax, l.epoch);
      if (l.holder === '') continue;
      this.put({ name: l.name, holder: l.holder, owner: l.owner ?? '', epoch: l.epoch, expiresAtMs: l.expiresAtMs });
    }
    if (o.e !== undefined && (o.e as number) < epochMax)
      throw new Error(
        `lease table in the snapshot is malformed: epoch counter ${o.e} is below a lease's epoch ${epochMax}`,
      );
    this.clockAtMs = o.c as number;
    this.epochMax = (o.e as number | undefined) ?? epochMax;
  }
}

function lostReason(cur: Lease, holder: string, owner: string, epoch: number, now: number): string {
  if (cur.holder === '') return `lease ${cur.name} is not held`;
  if (cur.holder !== holder || cur.owner !== owner || cur.epoch !== epoch)
    return `lease ${cur.name} is held by ${holderName(cur.holder, cur.owner)} at epoch ${cur.epoch}, not by ${holderName(holder, owner)} at epoch ${epoch}`;
  return `lease ${cur.name} expired ${now - cur.expiresAtMs} ms ago`;
}
