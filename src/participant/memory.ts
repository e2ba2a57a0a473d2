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
// transaction makes PREPARE vote NO (no waiting, so no deadlock). COMMIT
// applies the writes and releases the locks; ABORT releases them.
import { assert } from '../util/assert.ts';
import { type Resource, type ResourceVote, type TxnId } from './types.ts';

export const PAYLOAD_BYTES_MAX = 1024 * 1024;
export const KEYS_PER_TXN_MAX = 1_000;
export const KEY_CHARS_MAX = 1_024;

export type Writes = ReadonlyMap<string, string>;

export type ParsedPayload = { ok: true; writes: Writes } | { ok: false; reason: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Parses and validates a memory-resource payload; every failure has a reason a user can act on. */
export function parsePayload(payload: Uint8Array): ParsedPayload {
  if (payload.byteLength > PAYLOAD_BYTES_MAX) return bad(`payload is ${payload.byteLength} bytes; at most ${PAYLOAD_BYTES_MAX}`);
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
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return bad('payload must be a JSON object like {"set": {"key": "value"}}');
  const obj = v as Record<string, unknown>;
  for (const k of Object.keys(obj)) if (k !== 'set' && k !== 'fail') return bad(`payload has an unknown field "${k}"; allowed: set, fail`);
  if ('fail' in obj) {
    if (typeof obj.fail !== 'string') return bad('payload "fail" must be a string');
    return bad(obj.fail === '' ? 'payload asked to fail' : obj.fail);
  }
  const set = obj.set ?? {};
  if (typeof set !== 'object' || set === null || Array.isArray(set)) return bad('payload "set" must be an object of string values');
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
  /** key → the prepared transaction holding it. Invariant: every lock belongs to a txn in `prepared` and to one of its writes. */
  private readonly locks = new Map<string, TxnId>();
  private readonly prepared = new Map<TxnId, Writes>();
  /** Told the writes of every payload this resource votes YES on (MemoryState.offerWrites), so the journal's fold need not parse it again. */
  private readonly onPrepared: ((txnId: TxnId, writes: Writes) => void) | null;

  constructor(onPrepared?: (txnId: TxnId, writes: Writes) => void) {
    this.onPrepared = onPrepared ?? null;
  }

  /** A store holding `data` and the prepared transactions' writes (and so their locks), as the journal left them. */
  static restore(data: ReadonlyMap<string, string>, prepared: ReadonlyMap<TxnId, Writes>, onPrepared?: (txnId: TxnId, writes: Writes) => void): MemoryResource {
    const r = new MemoryResource(onPrepared);
    for (const [k, v] of data) r.data.set(k, v);
    for (const [txnId, writes] of prepared) {
      const conflict = r.conflict(txnId, writes);
      // Two prepared transactions holding the same key would mean the journal disagrees with the rules above.
      assert(conflict === null, `journal: prepared ${txnId} holds keys no other prepared transaction holds (${conflict ?? ''})`);
      r.lock(txnId, writes);
    }
    return r;
  }

  prepare(txnId: TxnId, payload: Uint8Array, cb: (err: Error | null, vote: ResourceVote) => void): void {
    if (this.prepared.has(txnId)) return cb(null, { yes: true, reason: '' });
    const parsed = parsePayload(payload);
    if (!parsed.ok) return cb(null, { yes: false, reason: parsed.reason });
    const conflict = this.conflict(txnId, parsed.writes);
    if (conflict !== null) return cb(null, { yes: false, reason: conflict });
    this.lock(txnId, parsed.writes);
    this.onPrepared?.(txnId, parsed.writes);
    cb(null, { yes: true, reason: '' });
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
    for (const k of writes.keys()) {
      assert(this.locks.get(k) === txnId, `lock on ${k} belongs to ${txnId}`);
      this.locks.delete(k);
    }
    this.prepared.delete(txnId);
  }
}
