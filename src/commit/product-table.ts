// The node's extension point for products: a product keeps its own
// replicated table beside the decision table, fed from the same log, its
// commands checked at the edge like the decision table's, applied in log
// order on every node, and kept in the same snapshots under a section of its
// own. Its commands ride the log one of two ways:
//   - a ProductTable's (sagas) ride the decision log's JSON command entries
//     under kinds of its own (`<product>.<verb>`, e.g. `saga.start`), and its
//     section sits inside the decision table's snapshot object;
//   - a TaggedProductTable's (leases) are entries of their own, named by
//     their first byte, and its section sits at the snapshot's top level.
//
// The kernel knows a product only through these interfaces; the node's
// composition (src/node/node.ts, and the simulator) hands the state machine
// its tables (src/node/machine.ts). A kernel file never imports a product.

/** A command a product table applies. Its kind names the product: `<product>.<verb>`. */
export interface ProductCommand {
  readonly t: `${string}.${string}`;
}

/** What applying a product command did; `product` names the table, so the node routes it to that product's engine. */
export interface ProductApplyResult {
  readonly t: 'product';
  readonly product: string;
}

export interface ProductTable {
  /** The product's name, as its results carry it in `product`. */
  readonly product: string;
  /** The command kinds it applies, each `<product>.<verb>`. */
  readonly kinds: readonly string[];
  /**
   * The key of its section in the snapshot's table object. The sections sit
   * where the saga table's has always been (src/commit/state.ts toJSON): the
   * snapshot's bytes do not move when a table moves between modules.
   */
  readonly section: string;
  /**
   * Why a decoded command of one of `kinds` is not well formed, or null.
   * Checked where the entry enters the node (src/commit/command-check.ts),
   * so apply only ever sees well-formed commands.
   */
  commandProblem(c: Readonly<Record<string, unknown>>): string | null;
  /** Applies one committed command at log index `index`. Pure and deterministic: time comes inside the command. */
  apply(cmd: ProductCommand, index: number): ProductApplyResult;
  toJSON(): unknown;
  /** Replaces the table with a snapshot's section; throws, saying why, when the section is malformed. */
  restoreFrom(json: unknown): void;
  /** An empty table of the same kind and bounds (a snapshot is checked by restoring it into scratch tables). */
  empty(): ProductTable;
}

/**
 * A product table whose commands are log entries of their own: the first
 * byte of each is its tag (leases: 0x03). Its section sits at the snapshot's
 * top level, after the members, where the lease table's has always been.
 */
export interface TaggedProductTable {
  readonly product: string;
  /** The first byte of its entries; no other table's. */
  readonly tag: number;
  /** The key of its section at the snapshot's top level. */
  readonly section: string;
  /** Why an entry of its tag is not one it can apply, or null (what a follower checks before it accepts an append). */
  entryProblem(data: Uint8Array): string | null;
  /**
   * Applies one committed entry of its tag at log index `index`; returns
   * why it cannot (the node then stops: its own log is damaged), or null.
   * Its result is the table's to hand to the proposer, not the core's.
   */
  applyEntry(data: Uint8Array, index: number): string | null;
  toJSON(): unknown;
  restoreFrom(json: unknown): void;
  empty(): TaggedProductTable;
}

/** A product table of either kind. */
export type AnyProductTable = ProductTable | TaggedProductTable;
