// The products whose tables ride the node's state machine beside the
// decision table (src/commit/product-table.ts). The one list: the node
// process (./node.ts) and the whole-system simulator build their state
// machines from it, so what the simulator checks is what ships.

import type { ProductTable } from '../commit/product-table.ts';
import { SagaTable } from '../saga/state.ts';

export interface NodeProducts {
  /** The saga table, for the saga engine and services that read it. */
  readonly sagas: SagaTable;
  /** Every product table, in the order their sections sit in a snapshot. */
  readonly tables: readonly ProductTable[];
}

/** Fresh product tables for one node's state machine; `sagas`: the saga table to use (a test's may be broken on purpose). */
export function nodeProducts(sagas: SagaTable = new SagaTable()): NodeProducts {
  return { sagas, tables: [sagas] };
}
