// The node's one extension point for products (sagas, and whatever joins
// them): a product keeps its own replicated table beside the decision table,
// fed from the same log. Its commands ride the decision log's JSON command
// entries under kinds of its own (`<product>.<verb>`, e.g. `saga.start`),
// checked at the edge like the decision table's, applied in log order on
// every node, and kept in the same snapshots under a section of its own.
//
// The kernel knows a product only through this interface; the node's
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
