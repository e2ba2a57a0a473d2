// The node's replicated state machine: the decision table of the commit
// engine, plus a small key/value map kept for exercising the raw replicated
// log (`verdict put/get`, the Raft benchmarks). Each command's first byte
// says which one it is for.

import { DecisionTable, decodeCommand, isCommand, type ApplyResult } from '../commit/state.ts';
import type { ConfChange } from '../raft/confchange.ts';
import type { Entry } from '../raft/types.ts';
import type { StateMachine } from './driver.ts';

const TAG_PUT = 0x01;

/** A key/value write: [0x01][u16 key length][key][value]. */
export function encodePut(key: string, value: Uint8Array): Uint8Array {
  const k = Buffer.from(key, 'utf8');
  if (k.byteLength > 0xffff) throw new RangeError('key longer than 65535 bytes');
  const out = new Uint8Array(3 + k.byteLength + value.byteLength);
  out[0] = TAG_PUT;
  new DataView(out.buffer).setUint16(1, k.byteLength);
  out.set(k, 3);
  out.set(value, 3 + k.byteLength);
  return out;
}

export function decodePut(data: Uint8Array): { key: string; value: Uint8Array } {
  const n = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint16(1);
  return { key: Buffer.from(data.subarray(3, 3 + n)).toString('utf8'), value: data.slice(3 + n) };
}

/**
 * The context of a membership change entry (opaque to the Raft core): the
 * address of every member after the change. Carrying the whole map, not just
 * the new member's address, lets a node that starts from the log or a
 * snapshot reach everyone, seed members included.
 */
export function encodeMemberContext(addresses: ReadonlyMap<string, string>): Uint8Array {
  return new Uint8Array(Buffer.from(JSON.stringify({ addresses: Object.fromEntries(addresses) })));
}

export function decodeMemberContext(data: Uint8Array): Map<string, string> {
  if (data.byteLength === 0) return new Map();
  const o = JSON.parse(Buffer.from(data).toString('utf8')) as { addresses?: Record<string, string> };
  return new Map(Object.entries(o.addresses ?? {}));
}

export class NodeStateMachine implements StateMachine<ApplyResult | null> {
  readonly kv = new Map<string, Uint8Array>();
  readonly table = new DecisionTable();
  /** Members' addresses as of the last applied membership change; empty until the first one (the config file's peers hold until then). */
  readonly members = new Map<string, string>();

  applyConfChange(cc: ConfChange): void {
    const addresses = decodeMemberContext(cc.context);
    if (addresses.size === 0) return;
    this.members.clear();
    for (const [id, a] of addresses) this.members.set(id, a);
  }

  apply(e: Entry): ApplyResult | null {
    if (isCommand(e.data)) return this.table.apply(decodeCommand(e.data), e.index);
    if (e.data[0] === TAG_PUT) {
      const { key, value } = decodePut(e.data);
      this.kv.set(key, value);
      return null;
    }
    // An entry this version does not understand must stop the node, not be skipped:
    // skipping would let this replica diverge from the others.
    throw new Error(`log entry ${e.index} has unknown command tag ${e.data[0]}`);
  }

  snapshot(): Uint8Array {
    const kv: [string, string][] = [];
    for (const [k, v] of this.kv) kv.push([k, Buffer.from(v).toString('base64')]);
    return Buffer.from(JSON.stringify({ kv, table: this.table.toJSON(), members: [...this.members] }));
  }

  restore(data: Uint8Array): void {
    const o = JSON.parse(Buffer.from(data).toString()) as { kv: [string, string][]; table: unknown; members?: [string, string][] };
    this.members.clear();
    for (const [id, a] of o.members ?? []) this.members.set(id, a);
    this.kv.clear();
    for (const [k, v] of o.kv) this.kv.set(k, Buffer.from(v, 'base64'));
    this.table.restoreFrom(o.table);
  }
}
