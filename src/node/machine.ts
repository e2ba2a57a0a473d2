// The node's replicated state machine: the decision table of the commit
// engine and the product tables beside it (sagas, leases:
// src/commit/product-table.ts; the node's composition hands them in:
// ./products.ts). Each entry's first byte says which one it is for; a JSON
// command's kind says which table applies it. A log probe entry (the raw-log
// benchmark's RaftNode.Put) is for none: it is checked, replicated, synced
// and applied like any other, and applying it changes nothing.

import { checkedCommand, commandProblem } from '../commit/command-check.ts';
import {
  decodeDecisionBatch,
  isDecisionBatch,
  type BatchDecoded,
  TAG_DECISION_BATCH,
} from '../commit/decision-batch.ts';
import type { AnyProductTable, ProductCommand, ProductTable, TaggedProductTable } from '../commit/product-table.ts';
import { DecisionTable, isCommand, TAG_COMMAND, type ApplyResult, type DecisionCommand } from '../commit/state.ts';
import { decodeConfChange, type ConfChange } from '../raft/confchange.ts';
import { EntryType, type Entry } from '../raft/types.ts';
import { assert } from '../util/assert.ts';
import { UnappliableEntryError, type StateMachine } from './driver.ts';

/** A log probe's tag: the byte the key/value puts of earlier versions carried, so their entries still apply. */
const TAG_PROBE = 0x01;
/**
 * The entry tags the kernel reads itself: a log probe, a JSON command (src/commit/state.ts), a decision batch
 * (src/commit/decision-batch.ts).
 */
const KERNEL_TAGS: readonly number[] = [TAG_PROBE, TAG_COMMAND, TAG_DECISION_BATCH];

const isTagged = (p: AnyProductTable): p is TaggedProductTable => 'tag' in p;
const commandTables = (products: readonly AnyProductTable[]): ProductTable[] =>
  products.filter((p): p is ProductTable => !isTagged(p));

/**
 * A log probe: [0x01][u16 key length][key][value], the layout of an earlier
 * version's key/value put. The key and the value are opaque: they give the
 * entry the size and shape of a small replicated write, and nothing reads
 * them back.
 */
export function encodeProbe(key: string, value: Uint8Array): Uint8Array {
  const k = Buffer.from(key, 'utf8');
  if (k.byteLength > 0xffff) throw new RangeError('key longer than 65535 bytes');
  const out = new Uint8Array(3 + k.byteLength + value.byteLength);
  out[0] = TAG_PROBE;
  new DataView(out.buffer).setUint16(1, k.byteLength);
  out.set(k, 3);
  out.set(value, 3 + k.byteLength);
  return out;
}

/** Why `data` is not a well-formed log probe, or null. */
function probeProblem(data: Uint8Array): string | null {
  if (data.byteLength < 3) return `log probe of ${data.byteLength} bytes is shorter than its 3-byte header`;
  const n = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint16(1);
  return 3 + n <= data.byteLength ? null : `log probe key of ${n} bytes runs past the entry's ${data.byteLength} bytes`;
}

/**
 * Why this node could not apply an entry with this payload, or null: what a
 * follower checks before it accepts an append (src/transport/raft-edge.ts).
 * An entry it accepted is one it can apply, so no peer can plant an entry
 * that stops this node on every restart. `products`: the product tables
 * the node's state machine holds, whose commands it checks too.
 */
export function entryProblem(
  type: EntryType,
  data: Uint8Array,
  products: readonly AnyProductTable[] = [],
): string | null {
  if (type === EntryType.ConfChange) {
    try {
      return addressesProblem(decodeMemberContext(decodeConfChange(data).context));
    } catch (err) {
      return `membership change does not decode: ${(err as Error).message}`;
    }
  }
  // A leader's empty entry carries no command.
  if (data.byteLength === 0) return null;
  if (data[0] === TAG_PROBE) return probeProblem(data);
  // A product's entries of its own tag (leases): its own checks.
  const tagged = products.find((p): p is TaggedProductTable => isTagged(p) && p.tag === data[0]);
  if (tagged) return tagged.entryProblem(data);
  // The Decides and Forgets of one proposal batch (src/commit/decision-batch.ts).
  if (isDecisionBatch(data)) return decodeDecisionBatch(data).problem;
  return commandProblem(data, commandTables(products));
}

/** Why a member address map (a membership change's context, a snapshot's members) is unusable, or null. */
function addressesProblem(addresses: ReadonlyMap<unknown, unknown>): string | null {
  for (const [id, a] of addresses) {
    if (typeof id !== 'string' || id === '' || typeof a !== 'string' || a === '')
      return 'a member without an id or an address';
  }
  return null;
}

/**
 * Why this node could not restore a snapshot with this data, or null: the
 * data is restored into a scratch state machine, so whatever passes is
 * exactly what restore() takes (snapshots are rare; the double work is not).
 * `products`: the product tables the node's state machine holds; the
 * scratch machine holds empty ones of the same kinds.
 */
export function snapshotProblem(data: Uint8Array, products: readonly AnyProductTable[] = []): string | null {
  const scratch = new NodeStateMachine(products.map((p) => p.empty()));
  try {
    scratch.restore(data);
  } catch (err) {
    return `snapshot data does not restore: ${(err as Error).message}`;
  }
  return addressesProblem(scratch.members);
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
  readonly table = new DecisionTable();
  /**
   * Members' addresses as of the last applied membership change; empty until the first one (the config file's peers
   * hold until then).
   */
  readonly members = new Map<string, string>();

  /** The product tables whose commands ride the decision log's JSON command entries (sagas). */
  private readonly commandTables: readonly ProductTable[];
  /** Each of those by the command kinds it applies. */
  private readonly productOf = new Map<string, ProductTable>();
  /** The product tables with entries of their own (leases), by tag. */
  private readonly taggedOf = new Map<number, TaggedProductTable>();

  /**
   * `products`: the product tables beside the decision table (the node's
   * composition decides which: ./products.ts), fed from the same log and
   * kept in the same snapshots. `decodeBatch`: how a decision batch entry is
   * read (the simulator injects a broken one to watch its checker catch it).
   */
  constructor(
    readonly products: readonly AnyProductTable[] = [],
    private readonly decodeBatch: (data: Uint8Array) => BatchDecoded = decodeDecisionBatch,
  ) {
    this.commandTables = commandTables(products);
    for (const p of this.commandTables) {
      for (const kind of p.kinds) {
        assert(
          kind.startsWith(`${p.product}.`),
          `product ${p.product}'s command kind ${kind} is named <product>.<verb>`,
        );
        assert(!this.productOf.has(kind), `command kind ${kind} has one product table`);
        this.productOf.set(kind, p);
      }
    }
    for (const p of products) {
      if (!isTagged(p)) continue;
      assert(
        !KERNEL_TAGS.includes(p.tag) && !this.taggedOf.has(p.tag),
        `entry tag ${p.tag} of product ${p.product} is no other table's`,
      );
      this.taggedOf.set(p.tag, p);
    }
  }

  /** Why this node could not apply an entry (see entryProblem), with this machine's product tables. */
  entryProblem(type: EntryType, data: Uint8Array): string | null {
    return entryProblem(type, data, this.products);
  }

  /** Why this node could not restore a snapshot (see snapshotProblem), with this machine's product tables. */
  snapshotProblem(data: Uint8Array): string | null {
    return snapshotProblem(data, this.products);
  }

  applyConfChange(cc: ConfChange, e: Entry): void {
    let addresses: Map<string, string>;
    try {
      addresses = decodeMemberContext(cc.context);
    } catch (err) {
      throw new UnappliableEntryError(e.index, `membership change context does not decode: ${(err as Error).message}`);
    }
    if (addresses.size === 0) return;
    this.members.clear();
    for (const [id, a] of addresses) this.members.set(id, a);
  }

  apply(e: Entry): ApplyResult | null {
    // An entry this node cannot apply must stop it, not be skipped: skipping
    // would let this replica diverge from the others. Peers cannot send one
    // (the edge checks every entry), so it is this node's own log that is damaged.
    if (isCommand(e.data)) {
      const { cmd, problem } = checkedCommand(e.data, this.commandTables);
      if (cmd === null) throw new UnappliableEntryError(e.index, problem);
      // checkedCommand took the kind as the decision table's or as one of these tables'.
      const product = this.productOf.get(cmd.t);
      if (product) return product.apply(cmd as ProductCommand, e.index);
      return this.table.apply(cmd as DecisionCommand, e.index);
    }
    if (isDecisionBatch(e.data)) {
      const { cmds, problem } = this.decodeBatch(e.data);
      if (cmds === null) throw new UnappliableEntryError(e.index, problem);
      // Every record of the entry is applied at the entry's index, in order.
      const results: ApplyResult[] = new Array(cmds.length);
      for (let i = 0; i < cmds.length; i++) results[i] = this.table.apply(cmds[i], e.index);
      return { t: 'batch', results };
    }
    const tagged = this.taggedOf.get(e.data[0]);
    if (tagged) {
      // Its result is the table's to hand to the proposer (a lease's: LeaseTable.last).
      const problem = tagged.applyEntry(e.data, e.index);
      if (problem !== null) throw new UnappliableEntryError(e.index, problem);
      return null;
    }
    if (e.data[0] === TAG_PROBE) {
      // Checked like every entry, kept by no table: its proposer learns the index it applied at, and that is all.
      const problem = probeProblem(e.data);
      if (problem !== null) throw new UnappliableEntryError(e.index, problem);
      return null;
    }
    throw new UnappliableEntryError(e.index, `unknown command tag ${e.data[0]}`);
  }

  snapshot(): Uint8Array {
    // `kv` stays, always empty: a node of an earlier version (a rolling upgrade runs two side by side) restores
    // only a snapshot that has it. Its key/value map is gone; restore() ignores what an old snapshot holds there.
    const kv: [] = [];
    // A command product's section rides in the table object (src/commit/state.ts toJSON says where);
    // a tagged product's sits at the top level after the members.
    const sections: Record<string, unknown> = {};
    for (const p of this.commandTables) sections[p.section] = p.toJSON();
    const top: Record<string, unknown> = { kv, table: this.table.toJSON(sections), members: [...this.members] };
    for (const p of this.taggedOf.values()) top[p.section] = p.toJSON();
    return Buffer.from(JSON.stringify(top));
  }

  restore(data: Uint8Array): void {
    // `kv`, the key/value map of earlier versions (a snapshot they wrote may carry entries there), is not read.
    const o = JSON.parse(Buffer.from(data).toString()) as {
      table: unknown;
      members: [string, string][];
    } & Record<string, unknown>;
    if (o === null || typeof o !== 'object' || !Array.isArray(o.members))
      throw new Error('not a snapshot of this state machine');
    this.members.clear();
    for (const [id, a] of o.members) this.members.set(id, a);
    this.table.restoreFrom(o.table);
    for (const p of this.commandTables) p.restoreFrom((o.table as Record<string, unknown>)[p.section]);
    for (const p of this.taggedOf.values()) p.restoreFrom(o[p.section]);
  }
}
