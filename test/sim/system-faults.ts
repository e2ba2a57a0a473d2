// The fault schedule of a whole-system run: each fault starts at its time
// (after load starts) and, unless the world has healed meanwhile, ends after
// its duration. Endpoint indexes count the nodes first, then the participants.

import type { EventQueue } from './event-queue.ts';
import type { SimNetwork } from './sim-network.ts';
import type { SysFault } from './system-scenario.ts';

/** What a fault can do to the world. */
export interface FaultWorld {
  readonly q: EventQueue;
  readonly net: SimNetwork;
  readonly nodeIds: readonly string[];
  readonly participantIds: readonly string[];
  /** Once true, faults have stopped: nothing a fault scheduled acts any more. */
  readonly healed: boolean;
  partitions: number;
  /** Counts a fault that strikes any of these nodes while it leads a quiesced group (system-world.ts). */
  countQuietFault?(ids: readonly string[]): void;
  leaderId(): string | null;
  /** Crash (losing unsynced writes) or restart a node or a participant, by id. */
  crash(id: string): void;
  restart(id: string): void;
  setSlowDisk(id: string, extraMs: number): void;
  /** Crashes node `index` (or the node an earlier disk fault chose) and damages its disk. */
  diskFault?(index: number, fault: DiskFault): string | null;
  transferLeadership(to: string): void;
  log(line: () => string): void;
}

/** What a disk fault does to the node's store (system-world.ts, diskFault). */
export type DiskFault = { kind: 'lose-tail'; records: number } | { kind: 'corrupt' } | { kind: 'wipe' };

export function scheduleFault(w: FaultWorld, f: SysFault, t0: number): void {
  const at = t0 + f.at;
  const nodes = w.nodeIds;
  const parts = w.participantIds;
  const node = (i: number): string => nodes[i % nodes.length];
  const part = (i: number): string => parts[i % parts.length];
  const endpoint = (i: number): string => {
    const k = i % (nodes.length + parts.length);
    return k < nodes.length ? nodes[k] : parts[k - nodes.length];
  };
  const later = (ms: number, fn: () => void): void => w.q.after(ms, () => !w.healed && fn());
  const during = (start: () => void, end: () => void, durMs: number): void => {
    w.q.at(at, start);
    w.q.at(at + durMs, () => !w.healed && end());
  };
  /** Cuts both directions of each pair for durMs. */
  const cut = (pairs: [string, string][], durMs: number): void => {
    if (pairs.length === 0) return;
    w.partitions++;
    // A cut between nodes may leave a quiesced group's followers without its leader's node.
    w.countQuietFault?.(pairs.filter(([a, b]) => nodes.includes(a) && nodes.includes(b)).flat());
    for (const [a, b] of pairs) w.net.block(a, b), w.net.block(b, a);
    later(durMs, () => {
      for (const [a, b] of pairs) w.net.unblock(a, b), w.net.unblock(b, a);
    });
  };
  w.q.at(at, () => w.log(() => `fault ${JSON.stringify(f)}`));
  switch (f.kind) {
    case 'crash-node':
      w.q.at(at, () => w.crash(node(f.node)));
      w.q.at(at + f.downMs, () => !w.healed && w.restart(node(f.node)));
      return;
    case 'crash-leader':
      w.q.at(at, () => {
        const l = w.leaderId();
        if (!l) return;
        w.crash(l);
        later(f.downMs, () => w.restart(l));
      });
      return;
    case 'crash-participant':
      w.q.at(at, () => w.crash(part(f.participant)));
      w.q.at(at + f.downMs, () => !w.healed && w.restart(part(f.participant)));
      return;
    case 'partition':
      w.q.at(at, () => {
        const everyone = [...nodes, ...parts];
        const side = (i: number): number => f.side[i] ?? 0;
        const pairs: [string, string][] = [];
        // Nodes talk to nodes and to participants; participants only to nodes.
        for (let i = 0; i < nodes.length; i++)
          for (let j = i + 1; j < everyone.length; j++) if (side(i) !== side(j)) pairs.push([everyone[i], everyone[j]]);
        cut(pairs, f.durMs);
      });
      return;
    case 'isolate-leader':
      // From the other nodes only: clients and participants still reach it.
      w.q.at(at, () => {
        const l = w.leaderId();
        if (l)
          cut(
            nodes.filter((b) => b !== l).map((b) => [l, b]),
            f.durMs,
          );
      });
      return;
    case 'isolate-participant':
      w.q.at(at, () =>
        cut(
          nodes.map((n) => [part(f.participant), n]),
          f.durMs,
        ),
      );
      return;
    case 'one-way': {
      const a = endpoint(f.from);
      const b = endpoint(f.to);
      if (a === b) return;
      during(
        () => {
          w.partitions++;
          if (nodes.includes(a) && nodes.includes(b)) w.countQuietFault?.([a]);
          w.net.block(a, b);
        },
        () => w.net.unblock(a, b),
        f.durMs,
      );
      return;
    }
    case 'loss':
      during(
        () => (w.net.lossPercent = f.percent),
        () => (w.net.lossPercent = 0),
        f.durMs,
      );
      return;
    case 'duplicate':
      during(
        () => (w.net.dupPercent = f.percent),
        () => (w.net.dupPercent = 0),
        f.durMs,
      );
      return;
    case 'delay':
      during(
        () => (w.net.extraDelayMs = f.extraMs),
        () => (w.net.extraDelayMs = 0),
        f.durMs,
      );
      return;
    case 'slow-disk': {
      const id = endpoint(f.target);
      during(
        () => w.setSlowDisk(id, f.extraMs),
        () => w.setSlowDisk(id, 0),
        f.durMs,
      );
      return;
    }
    case 'transfer':
      w.q.at(at, () => w.transferLeadership(node(f.to)));
      return;
    case 'lose-tail':
    case 'corrupt':
    case 'wipe':
      w.q.at(at, () => {
        // Worlds without a Raft log (the 2PC/3PC baselines) have no such disk.
        const id = w.diskFault?.(
          f.node,
          f.kind === 'lose-tail' ? { kind: 'lose-tail', records: f.records } : { kind: f.kind },
        );
        if (id !== null && id !== undefined) later(f.downMs, () => w.restart(id));
      });
      return;
  }
}
