// The node's replicated state machine: the decision table of the commit
// engine, plus a small key/value map kept for exercising the raw replicated
// log (`verdict put/get`, the Raft benchmarks). Each command's first byte
// says which one it is for.

import { DecisionTable, decodeCommand, isCommand, type ApplyResult } from '../commit/state.ts';
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

export class NodeStateMachine implements StateMachine<ApplyResult | null> {
  readonly kv = new Map<string, Uint8Array>();
  readonly table = new DecisionTable();

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
    return Buffer.from(JSON.stringify({ kv, table: this.table.toJSON() }));
  }

  restore(data: Uint8Array): void {
    const o = JSON.parse(Buffer.from(data).toString()) as { kv: [string, string][]; table: unknown };
    this.kv.clear();
    for (const [k, v] of o.kv) this.kv.set(k, Buffer.from(v, 'base64'));
    this.table.restoreFrom(o.table);
  }
}
