// A small key/value state machine: what the Raft foundation replicates until
// the commit engine takes its place. Commands are [u16 key length][key][value].

import type { Entry } from '../raft/types.ts';
import type { StateMachine } from './driver.ts';

export function encodePut(key: string, value: Uint8Array): Uint8Array {
  const k = Buffer.from(key, 'utf8');
  if (k.byteLength > 0xffff) throw new RangeError('key longer than 65535 bytes');
  const out = new Uint8Array(2 + k.byteLength + value.byteLength);
  new DataView(out.buffer).setUint16(0, k.byteLength);
  out.set(k, 2);
  out.set(value, 2 + k.byteLength);
  return out;
}

export function decodePut(data: Uint8Array): { key: string; value: Uint8Array } {
  const n = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint16(0);
  return { key: Buffer.from(data.subarray(2, 2 + n)).toString('utf8'), value: data.slice(2 + n) };
}

export class KvStateMachine implements StateMachine<void> {
  readonly map = new Map<string, Uint8Array>();

  apply(e: Entry): void {
    const { key, value } = decodePut(e.data);
    this.map.set(key, value);
  }

  snapshot(): Uint8Array {
    const pairs: [string, string][] = [];
    for (const [k, v] of this.map) pairs.push([k, Buffer.from(v).toString('base64')]);
    return Buffer.from(JSON.stringify(pairs));
  }

  restore(data: Uint8Array): void {
    this.map.clear();
    for (const [k, v] of JSON.parse(Buffer.from(data).toString()) as [string, string][]) this.map.set(k, Buffer.from(v, 'base64'));
  }
}
