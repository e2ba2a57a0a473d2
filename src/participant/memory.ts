// The `memory` resource: a key/value store held in memory, for tests, demos
// and benchmarks. Durability comes from the participant's journal: the store
// is rebuilt on start from the committed writes and the prepared
// transactions' locks (see memory-state.ts).
//
// Payload (the bytes the application enlists this participant with), UTF-8 JSON:
//
//   {"set": {"key": "value", ...}, "fail": "reason"}
//
//   set   keys to write and their string values; may be empty or absent.
//   fail  optional; when present PREPARE votes NO with this reason and holds
//         nothing. Handy for demonstrating an abort.
//
// PREPARE locks every key it writes. A key locked by another prepared
// transaction makes PREPARE vote NO, at once by default; with a lock wait
// (waitForLocks, which the participant process turns on) PREPARE first waits
// up to that long for the holder's decision, the way a database waits on a
// row lock. A waiting PREPARE holds no key, and its wait is bounded, so two
// transactions waiting on each other across participants both vote NO when
// their waits end instead of deadlocking. The wait is what lets a client
// that heard COMMITTED write the same key again at once: under parallel
// commit the participants hear COMMIT one log round after the client does.
// COMMIT applies the writes and releases the locks; ABORT releases them.
import { assert } from '../util/assert.ts';
import { type Resource, type ResourceVote, type Schedule, type TxnId } from './types.ts';

export const PAYLOAD_BYTES_MAX = 1024 * 1024;
export const KEYS_PER_TXN_MAX = 1_000;
export const KEY_CHARS_MAX = 1_024;

export type Writes = ReadonlyMap<string, string>;

export type ParsedPayload = { ok: true; writes: Writes } | { ok: false; reason: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Parses and validates a memory-resource payload; every failure has a reason a user can act on. */
export function parsePayload(payload: Uint8Array): ParsedPayload {
  if (payload.byteLength > PAYLOAD_BYTES_MAX)
    return bad(`payload is ${payload.byteLength} bytes; at most ${PAYLOAD_BYTES_MAX}`);
  let text: string;
  try {
    text = utf8.decode(payload);
  } catch {
    return bad('payload is not UTF-8');
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return bad(`payload is not valid JSON (${(err as Error).message}); expected {"set": {"key": "value"}}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return bad('payload must be a JSON object like {"set": {"key": "value"}}');
  const obj = v as Record<string, unknown>;
  for (const k of Object.keys(obj))
    if (k !== 'set' && k !== 'fail') return bad(`payload has an unknown field "${k}"; allowed: set, fail`);
  if ('fail' in obj) {
    if (typeof obj.fail !== 'string') return bad('payload "fail" must be a string');
    return bad(obj.fail === '' ? 'payload asked to fail' : obj.fail);
  }
  const set = obj.set ?? {};
  if (typeof set !== 'object' || set === null || Array.isArray(set))
    return bad('payload "set" must be an object of string values');
  const writes = new Map<string, string>();
  for (const [key, value] of Object.entries(set as Record<string, unknown>)) {
    if (typeof value !== 'string') return bad(`payload "set.${key}" must be a string`);
    if (key === '' || key.length > KEY_CHARS_MAX) return bad(`payload keys must have 1 to ${KEY_CHARS_MAX} characters`);
    writes.set(key, value);
  }
  if (writes.size > KEYS_PER_TXN_MAX) return bad(`payload writes ${writes.size} keys; at most ${KEYS_PER_TXN_MAX}`);
  return { ok: true, writes };
}

function bad(reason: string): ParsedPayload {
  return { ok: false, reason };
}

/** Encodes a payload of writes, for applications and tests. */
export function memoryPayload(set: Record<string, string>, fail?: string): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(fail === undefined ? { set } : { set, fail }));
}

export class MemoryResource implements Resource {
  private readonly data = new Map<string, string>();
  /**
   * key → the prepared transaction holding it. Invariant: every lock belongs to a txn in `prepared` and to one of its
   * writes.
   */
  private readonly locks = new Map<string, TxnId>();
  private readonly prepared = new Map<TxnId, Writes>();
  /**
   * Told the writes of every payload this resource votes YES on (MemoryState.offerWrites), so the journal's fold need
   * not parse it again.
   */
  private readonly onPrepared: ((txnId: TxnId, writes: Writes) => void) | null;
  /** How long a PREPARE waits for a locked key (waitForLocks); null: it votes NO at once. */
  private lockWait: { schedule: Schedule; ms: number } | null = null;
  /** key → the waiting PREPAREs to try again when it is released. */
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(onPrepared?: (txnId: TxnId, writes: Writes) => void) {
    this.onPrepared = onPrepared ?? null;
  }

  /** A store holding `data` and the prepared transactions' writes (and so their locks), as the journal left them. */
  static restore(
    data: ReadonlyMap<string, string>,
    prepared: ReadonlyMap<TxnId, Writes>,
    onPrepared?: (txnId: TxnId, writes: Writes) => void,
  ): MemoryResource {
    const r = new MemoryResource(onPrepared);
    for (const [k, v] of data) r.data.set(k, v);
    for (const [txnId, writes] of prepared) {
      const conflict = r.conflict(txnId, writes);
      // Two prepared transactions holding the same key would mean the journal disagrees with the rules above.
      assert(
        conflict === null,
        `journal: prepared ${txnId} holds keys no other prepared transaction holds (${conflict ?? ''})`,
      );
      r.lock(txnId, writes);
    }
    return r;
  }

  /**
   * A PREPARE that finds a key locked waits up to `ms` for it (instead of
   * voting NO at once); `schedule` runs its timers (the participant's own,
   * so the simulator could drive them too). `ms` 0 turns the wait off.
   */
  waitForLocks(schedule: Schedule, ms: number): void {
    assert(Number.isFinite(ms) && ms >= 0, `lock wait ${ms} ms is a non-negative number`);
    this.lockWait = ms > 0 ? { schedule, ms } : null;
  }

  prepare(txnId: TxnId, payload: Uint8Array, cb: (err: Error | null, vote: ResourceVote) => void): void {
    if (this.prepared.has(txnId)) return cb(null, { yes: true, reason: '' });
    const parsed = parsePayload(payload);
    if (!parsed.ok) return cb(null, { yes: false, reason: parsed.reason });
    const conflict = this.conflict(txnId, parsed.writes);
    if (conflict === null) return this.voteYes(txnId, parsed.writes, cb);
    if (this.lockWait === null) return cb(null, { yes: false, reason: conflict });
    this.waitThenPrepare(txnId, parsed.writes, this.lockWait, cb);
  }

  private voteYes(txnId: TxnId, writes: Writes, cb: (err: Error | null, vote: ResourceVote) => void): void {
    this.lock(txnId, writes);
    this.onPrepared?.(txnId, writes);
    cb(null, { yes: true, reason: '' });
  }

  /** Tries again whenever a key it needs is released; votes NO with the last conflict when the wait is over. */
  private waitThenPrepare(
    txnId: TxnId,
    writes: Writes,
    wait: { schedule: Schedule; ms: number },
    cb: (err: Error | null, vote: ResourceVote) => void,
  ): void {
    let done = false;
    const keys = [...writes.keys()];
    const unwatch = (): void => {
      for (const k of keys) {
        const set = this.waiting.get(k);
        set?.delete(retry);
        if (set?.size === 0) this.waiting.delete(k);
      }
    };
    const retry = (): void => {
      if (done) return;
      if (this.conflict(txnId, writes) !== null) return;
      done = true;
      cancel();
      unwatch();
      this.voteYes(txnId, writes, cb);
    };
    const cancel = wait.schedule(wait.ms, () => {
      if (done) return;
      done = true;
      unwatch();
      const conflict = this.conflict(txnId, writes);
      if (conflict === null) return this.voteYes(txnId, writes, cb);
      cb(null, { yes: false, reason: `${conflict} (waited ${wait.ms} ms)` });
    });
    for (const k of keys) {
      let set = this.waiting.get(k);
      if (set === undefined) {
        set = new Set();
        this.waiting.set(k, set);
      }
      set.add(retry);
    }
  }

  /** Idempotent: committing a transaction that holds nothing here does nothing. */
  commit(txnId: TxnId, cb: (err: Error | null) => void): void {
    const writes = this.prepared.get(txnId);
    if (writes !== undefined) {
      for (const [k, v] of writes) this.data.set(k, v);
      this.release(txnId, writes);
    }
    cb(null);
  }

  abort(txnId: TxnId, cb: (err: Error | null) => void): void {
    const writes = this.prepared.get(txnId);
    if (writes !== undefined) this.release(txnId, writes);
    cb(null);
  }

  get(key: string): string | undefined {
    return this.data.get(key);
  }

  /** The prepared transaction holding `key`, if any. */
  lockedBy(key: string): TxnId | undefined {
    return this.locks.get(key);
  }

  size(): number {
    return this.data.size;
  }

  private conflict(txnId: TxnId, writes: Writes): string | null {
    for (const k of writes.keys()) {
      const holder = this.locks.get(k);
      if (holder !== undefined && holder !== txnId) return `key ${k} is locked by prepared transaction ${holder}`;
    }
    return null;
  }

  private lock(txnId: TxnId, writes: Writes): void {
    for (const k of writes.keys()) this.locks.set(k, txnId);
    this.prepared.set(txnId, writes);
  }

  private release(txnId: TxnId, writes: Writes): void {
    const wake = new Set<() => void>();
    for (const k of writes.keys()) {
      assert(this.locks.get(k) === txnId, `lock on ${k} belongs to ${txnId}`);
      this.locks.delete(k);
      for (const w of this.waiting.get(k) ?? []) wake.add(w);
    }
    this.prepared.delete(txnId);
    // After the caller's COMMIT or ABORT has finished: a woken PREPARE starts its own journal write.
    if (wake.size > 0 && this.lockWait !== null)
      this.lockWait.schedule(0, () => {
        for (const w of wake) w();
      });
  }
}
