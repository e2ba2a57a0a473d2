// A node core on the simulator's event queue and disk (test/sim/), as the
// node core's and the group host's tests build one: the time is the queue's
// (a timer cancelled does not fire), randomness fixed, no participant links,
// a fatal error thrown.

import type { ApplyResult } from '../../src/commit/state.ts';
import { NodeCore } from '../../src/node/core.ts';
import type { NodeStateMachine } from '../../src/node/machine.ts';
import type { RawNode } from '../../src/raft/raw-node.ts';
import type { LogStore } from '../../src/storage/types.ts';
import type { Transport } from '../../src/transport/types.ts';
import type { EventQueue } from '../sim/event-queue.ts';
import type { SimDisk } from '../sim/sim-disk.ts';

export function queueCore(o: {
  id: string;
  ids: readonly string[];
  node: RawNode;
  machine: NodeStateMachine;
  disk: SimDisk;
  q: EventQueue;
  transport: Transport;
  /** What the core persists through; the disk itself unless given. */
  store?: LogStore;
  /** Each applied result, as the core's observer hears it. */
  onResult?: (result: ApplyResult) => void;
}): NodeCore {
  const { q } = o;
  return new NodeCore({
    id: o.id,
    node: o.node,
    machine: o.machine,
    io: {
      nowMs: () => q.now,
      random: () => 0.5,
      endOfTurn: (fn) => q.after(0, fn),
      after: (ms, fn) => {
        let on = true;
        q.after(ms, () => on && fn());
        return () => {
          on = false;
        };
      },
      store: o.store ?? o.disk,
      transport: o.transport,
      links: { sendPrepare: () => {}, sendDecision: () => {}, sendStatus: () => {} },
    },
    seedPeers: new Map(o.ids.map((x) => [x, x])),
    selfAddress: o.id,
    driver: { snapshotEntries: 1_000_000, snapshotKeepEntries: 2, waitersMax: 100 },
    engine: {},
    proposeTimeoutMs: 3_000,
    observe: {
      onFatal: (err) => {
        throw err;
      },
      ...(o.onResult ? { onResult: (_e, r) => o.onResult?.(r) } : {}),
    },
  });
}
