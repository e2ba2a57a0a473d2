// The one leader finder: how every client of the cluster (the SDK, the CLI,
// a participant's link, the saga caller) finds the node that leads.
//
// Writes go to the leader. A follower refuses with UNAVAILABLE and names the
// leader's address in the `verdict-leader-address` metadata; a node that is
// down, silent or leaderless names nobody. So a search asks the known leader
// first (else the first endpoint), follows a named leader at once, skips to
// the next endpoint not yet tried when nobody is named, and ends its round
// when every endpoint was tried. Everything is bounded: redirects per round
// (two nodes with stale views could otherwise send a caller back and forth
// forever), addresses learned from hints (a misbehaving server could
// otherwise grow the list), rounds or time (the caller's).
//
// `LeaderFinder` and `LeaderSearch` are the policy, without I/O: which
// address next, what was learned. `callLeader` is the thin async loop most
// callers need around it; the SDK (src/client/connection.ts) drives a search
// itself, because it clips each attempt to the call's deadline and changes
// the request once an attempt may have been acted on.

import { LEADER_ADDRESS_KEY } from './coordinator-rpc.ts';
import { sleep } from '../util/sleep.ts';

/** Hints can add addresses; a bound keeps a misbehaving server from growing the list forever. */
export const LEARNED_ADDRESSES_MAX = 64;

export interface LeaderFinderOptions {
  /** Leader hints followed per round. */
  redirectsMax: number;
  /** Addresses known at most, the given endpoints included. */
  addressesMax?: number;
}

/** host:port, the form a hint must have to be followed. */
export function isAddress(a: string): boolean {
  return /^\S+:\d{1,5}$/.test(a);
}

/** The leader address a refusal names in its metadata (a follower's UNAVAILABLE), bounded: it came from the network. */
export function namedLeader(err: unknown): string | undefined {
  const md = (err as { metadata?: { get(key: string): unknown[] } } | null)?.metadata;
  const v = typeof md?.get === 'function' ? md.get(LEADER_ADDRESS_KEY)[0] : undefined;
  return typeof v === 'string' && v !== '' && v.length <= 256 ? v : undefined;
}

/** The addresses a caller knows and the leader it last reached; lives as long as the caller's connection. */
export class LeaderFinder {
  private readonly known: string[];
  private readonly addressesMax: number;
  /** The node that last answered (normally the leader), or the one a follower named; tried first. */
  private leaderAddress: string | undefined;

  constructor(
    endpoints: readonly string[],
    readonly o: LeaderFinderOptions,
  ) {
    this.addressesMax = o.addressesMax ?? LEARNED_ADDRESSES_MAX;
    this.known = [...new Set(endpoints)].slice(0, this.addressesMax);
    if (this.known.length === 0) throw new Error('finding the leader needs at least one endpoint');
  }

  get leader(): string | undefined {
    return this.leaderAddress;
  }

  get addresses(): readonly string[] {
    return this.known;
  }

  /** A new search, for one call. */
  search(): LeaderSearch {
    return new LeaderSearch(this);
  }

  /** @internal A search's report: `address` answered. */
  reached(address: string): void {
    this.leaderAddress = address;
  }

  /** @internal A search's report: `address` failed; it is no longer the presumed leader. */
  lost(address: string): void {
    if (this.leaderAddress === address) this.leaderAddress = undefined;
  }

  /** @internal Adds a hinted leader address to the list and presumes it leads; false if it cannot be used. */
  learn(address: string): boolean {
    if (!this.known.includes(address)) {
      if (!isAddress(address) || this.known.length >= this.addressesMax) return false;
      this.known.push(address);
    }
    this.leaderAddress = address;
    return true;
  }
}

/** One call's walk over the addresses, round by round. */
export class LeaderSearch {
  /** Rounds started so far, this one included. */
  round = 1;
  /** Why each address failed, as last seen, in the order first tried. */
  readonly failures = new Map<string, string>();
  private tried = new Set<string>();
  private redirects = 0;
  private pending: string | undefined;

  constructor(private readonly finder: LeaderFinder) {
    this.pending = finder.leader ?? finder.addresses[0];
  }

  /** The address to try now, or undefined when this round tried every address. */
  next(): string | undefined {
    const a = this.pending;
    if (a !== undefined) this.tried.add(a);
    return a;
  }

  /** `address` answered: it is the leader for the next call too. */
  answered(address: string): void {
    this.finder.reached(address);
    this.pending = undefined;
  }

  /**
   * `address` failed with a reason worth trying elsewhere (`why`, for the
   * refusal that names every endpoint); `hint` is the leader it named, if any.
   */
  failed(address: string, why: string, hint?: string): void {
    this.failures.set(address, why);
    this.finder.lost(address);
    if (
      hint !== undefined &&
      hint !== '' &&
      hint !== address &&
      this.redirects < this.finder.o.redirectsMax &&
      this.finder.learn(hint)
    ) {
      this.redirects++;
      this.pending = hint;
      return;
    }
    this.pending = this.finder.addresses.find((a) => !this.tried.has(a));
  }

  /** Starts the next round: every address may be tried again, from the presumed leader. */
  nextRound(): void {
    this.round++;
    this.tried = new Set();
    this.redirects = 0;
    this.pending = this.finder.leader ?? this.finder.addresses[0];
  }

  /** Every address tried and why it failed, on one line: "a:1 (connection refused), b:2 (NOT_LEADER)". */
  describe(): string {
    return [...this.failures].map(([a, why]) => `${a} (${why})`).join(', ') || 'no endpoint was tried';
  }
}

/** No node answered within the rounds or the time allowed; the message names every endpoint tried and why. */
export class NoLeaderError extends Error {
  constructor(
    readonly failures: ReadonlyMap<string, string>,
    /** The last attempt's error, for callers that report it in their own words. */
    readonly last: unknown,
    tried: string,
  ) {
    super(`no node answered: tried ${tried}`);
    this.name = 'NoLeaderError';
  }
}

export interface LeaderCallPolicy {
  /**
   * Why a failed attempt may be retried on another node, and the leader it
   * names; null when the error is the cluster's answer, rethrown as it is.
   */
  retryable(err: unknown): { why: string; hint?: string } | null;
  /** Rounds over the addresses before NoLeaderError. */
  roundsMax: number;
  /** The pause after round `round` (1, 2, ...) before the next one. */
  pauseMs(round: number): number;
  /** No attempt starts after this instant (Date.now() clock); absent: rounds alone bound the call. */
  giveUpAtMs?: number;
  nowMs?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs `attempt` on the leader: follows hints, skips failed addresses, pauses between rounds, and gives up within the
 * policy's bounds.
 */
export async function callLeader<T>(
  finder: LeaderFinder,
  attempt: (address: string) => Promise<T>,
  policy: LeaderCallPolicy,
): Promise<T> {
  const nowMs = policy.nowMs ?? Date.now;
  const pause = policy.sleep ?? sleep;
  const search = finder.search();
  let last: unknown = null;
  for (;;) {
    for (let address = search.next(); address !== undefined; address = search.next()) {
      if (policy.giveUpAtMs !== undefined && nowMs() >= policy.giveUpAtMs)
        throw new NoLeaderError(search.failures, last, search.describe());
      try {
        const r = await attempt(address);
        search.answered(address);
        return r;
      } catch (err) {
        const retry = policy.retryable(err);
        if (retry === null) throw err;
        last = err;
        search.failed(address, retry.why, retry.hint);
      }
    }
    if (search.round >= policy.roundsMax) throw new NoLeaderError(search.failures, last, search.describe());
    let pauseMs = policy.pauseMs(search.round);
    if (policy.giveUpAtMs !== undefined) pauseMs = Math.min(pauseMs, Math.max(0, policy.giveUpAtMs - nowMs()));
    await pause(pauseMs);
    search.nextRound();
  }
}
