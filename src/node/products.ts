// The products whose tables ride the node's state machine beside the
// decision table (src/commit/product-table.ts): sagas on the decision log's
// commands, leases on entries of their own. The one list: the node process
// (./node.ts) and the whole-system simulator build their state machines from
// it, so what the simulator checks is what ships.

import type { AnyProductTable } from '../commit/product-table.ts';
import { LeaseTable } from '../lease/state.ts';
import { SagaTable } from '../saga/state.ts';

export interface NodeProducts {
  /** The saga table, for the saga engine and services that read it. */
  readonly sagas: SagaTable;
  /** The lease table, for the lease service. */
  readonly leases: LeaseTable;
  /** Every product table, for the state machine. */
  readonly tables: readonly AnyProductTable[];
}

/** Fresh product tables for one node's state machine; `sagas`: the saga table to use (a test's may be broken on purpose). */
export function nodeProducts(sagas: SagaTable = new SagaTable()): NodeProducts {
  const leases = new LeaseTable();
  return { sagas, leases, tables: [sagas, leases] };
}
