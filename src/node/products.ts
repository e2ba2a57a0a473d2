// The products beside the decision table, and their engines on the node
// core. The one list and the one composition: the node process (./node.ts)
// and the whole-system simulator build their state machines from
// nodeProducts and attach the products' engines with attachProducts, so
// what the simulator checks is what ships.
//
// Tables (src/commit/product-table.ts): sagas on the decision log's
// commands, leases on entries of their own. Engines: the saga core
// (src/saga/saga-core.ts) rides the node core's extension point
// (./core.ts CoreExtension: the same leadership, applied results and ticks as
// the commit engine); leases need none (their service reads the table).

import type { AnyProductTable } from '../commit/product-table.ts';
import { LeaseTable } from '../lease/state.ts';
import type { SagaEngineConfig, SagaEngineIO } from '../saga/engine.ts';
import { SagaCore, type SagaCoreObserver, type SagaEngineFactory, type SagaLog } from '../saga/saga-core.ts';
import { isSagaResult, SagaTable } from '../saga/state.ts';
import type { NodeCore } from './core.ts';

export interface NodeProducts {
  /** The saga table, for the saga engine and services that read it. */
  readonly sagas: SagaTable;
  /** The lease table, for the lease service. */
  readonly leases: LeaseTable;
  /** Every product table, for the state machine. */
  readonly tables: readonly AnyProductTable[];
}

/**
 * Fresh product tables for one node's state machine; `sagas`: the saga table to use (a test's may be broken on
 * purpose).
 */
export function nodeProducts(sagas: SagaTable = new SagaTable()): NodeProducts {
  const leases = new LeaseTable();
  return { sagas, leases, tables: [sagas, leases] };
}

/**
 * What the products' engines take from the world, beside the node core: the same clock and timers as the core's, and
 * the step services' link.
 */
export interface ProductsIO {
  nowMs(): number;
  /** A uniform float in [0, 1). */
  random(): number;
  /** Runs `fn` after `delayMs`; the returned function cancels it. */
  after(delayMs: number, fn: () => void): () => void;
  /** Calls to step services: gRPC in the node (./saga-service.ts), the simulated network in the simulator. */
  steps: Pick<SagaEngineIO, 'callStep' | 'endSaga' | 'endSagas'>;
  log: SagaLog;
}

export interface ProductsOptions {
  saga?: Partial<SagaEngineConfig>;
  /** How often a stuck saga's warn line is repeated (NodeConfig.sagaStuckLogIntervalMs). */
  sagaStuckLogIntervalMs?: number;
  observeSagas?: SagaCoreObserver;
  /** The saga orchestrator to build (test code hands in a broken one); the production one by default. */
  newSagaEngine?: SagaEngineFactory;
}

/** The products' engines running on a node core. */
export interface AttachedProducts {
  readonly sagas: SagaCore;
  readonly leases: LeaseTable;
}

/**
 * Attaches the products' engines to `core`, whose state machine holds
 * `products`' tables: the saga core proposes through the core's batcher
 * (group commit with the decisions), reads the core's registry of step
 * services, and hears the core's leadership, saga results and ticks.
 */
export function attachProducts(
  core: NodeCore,
  products: NodeProducts,
  io: ProductsIO,
  o: ProductsOptions = {},
): AttachedProducts {
  const sagas = new SagaCore({
    table: products.sagas,
    services: core.machine.table.participants,
    io: {
      nowMs: io.nowMs,
      random: io.random,
      after: io.after,
      propose: (cmd, cb) =>
        core.propose(cmd, (err, r) =>
          err || !r || !isSagaResult(r)
            ? cb(err ?? new Error(`proposal ${cmd.t} applied without a saga result`))
            : cb(null, r),
        ),
      callStep: io.steps.callStep,
      endSaga: io.steps.endSaga,
      endSagas: io.steps.endSagas,
    },
    log: io.log,
    engine: o.saga,
    stuckLogIntervalMs: o.sagaStuckLogIntervalMs,
    observe: o.observeSagas,
    newEngine: o.newSagaEngine,
  });
  core.attach(sagas);
  return { sagas, leases: products.leases };
}
