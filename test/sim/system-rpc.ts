// Request/response over the simulated network, as gRPC unary calls behave:
// the request and the reply each cross the network (and may be lost,
// duplicated, reordered or delayed), the caller hears the first reply or a
// deadline error, once — and never after its own crash.

import type { FailedAttempt } from '../../src/client/retry-policy.ts';
import type { CoordinatorEngine, EngineError } from '../../src/commit/engine.ts';
import { engineStatusOf } from '../../src/commit/engine-types.ts';
import type { DecisionTable } from '../../src/commit/state.ts';
import type { NodeId } from '../../src/raft/types.ts';
import type { EventQueue } from './event-queue.ts';
import type { SimNetwork } from './sim-network.ts';

/** A liveness token per incarnation: callbacks of a crashed node or participant check it and do nothing. */
export interface Inc {
  alive: boolean;
}

export const DEAD: Inc = { alive: false };
export const ALWAYS: Inc = { alive: true };

export interface RpcError {
  code: string;
  message: string;
  /** For not-leader: who the answering node believes leads. */
  leader?: NodeId;
  /** For exists (ALREADY_EXISTS, ALREADY_DECIDED): the outcome the cluster recorded for the id. */
  recorded?: 'COMMITTED' | 'ABORTED';
}

export type Reply<T> = (err: RpcError | null, v?: T) => void;

export class SimRpc {
  constructor(
    private readonly q: EventQueue,
    private readonly net: SimNetwork,
  ) {}

  /**
   * One request/response exchange. The request and the reply each cross the
   * network (and may be lost, duplicated or delayed); the caller hears the
   * first reply, or a deadline error — once, and only while its incarnation lives.
   */
  call<T>(
    from: string,
    caller: Inc,
    to: string,
    timeoutMs: number,
    serve: (reply: Reply<T>) => void,
    cb: Reply<T>,
  ): void {
    let done = false;
    const finish: Reply<T> = (err, v) => {
      if (done) return;
      done = true;
      if (caller.alive) cb(err, v);
    };
    this.q.after(timeoutMs, () => finish({ code: 'deadline', message: `no answer from ${to} within ${timeoutMs} ms` }));
    this.net.send(from, to, () => serve((err, v) => this.net.send(to, from, () => finish(err, v))));
  }
}

/** A Coordinator call as a node serves it: its engine and decision table, and how to answer. */
export interface CoordinatorCall<T> {
  engine: CoordinatorEngine;
  table: DecisionTable;
  ok(v: T): void;
  /** An engine error; not-leader answers carry the node's leader hint, as the gRPC service's metadata does. */
  fail(err: EngineError | null): void;
}

/**
 * A Coordinator RPC to a node by index, served by the engine of `group` (0 when absent: the one group) if the node is
 * up.
 */
export type CallCoordinator = <T>(
  from: string,
  caller: Inc,
  node: number,
  timeoutMs: number,
  serve: (c: CoordinatorCall<T>) => void,
  cb: Reply<T>,
  group?: number,
) => void;

/**
 * A simulated failure as the gRPC Coordinator service answers it
 * (src/node/coordinator-service.ts: not-leader is UNAVAILABLE/NOT_LEADER,
 * outcome-unknown DEADLINE_EXCEEDED/UNKNOWN_OUTCOME, ...), for the SDK's
 * retry rule (src/client/retry-policy.ts). A node that is down never
 * answers: the caller's deadline.
 */
export function failedAttempt(err: RpcError): FailedAttempt {
  return STATUS_OF[err.code] ?? { code: 'UNKNOWN' };
}

/**
 * The engine's errors as the gRPC service answers them (one table: engineStatusOf), and the simulated network's own
 * two.
 */
const STATUS_OF: Readonly<Record<string, FailedAttempt>> = {
  ...Object.fromEntries(
    (['not-leader', 'outcome-unknown', 'exists', 'invalid', 'precondition', 'exhausted', 'not-found'] as const).map(
      (c) => [c, engineStatusOf(c)],
    ),
  ),
  deadline: { code: 'DEADLINE_EXCEEDED' },
  UNAVAILABLE: { code: 'UNAVAILABLE' },
};

/**
 * Codes the SDK retries (UNAVAILABLE: NOT_LEADER, NO_LEADER; DEADLINE_EXCEEDED: UNKNOWN_OUTCOME), as the engine and
 * this simulator name them.
 */
export const RETRYABLE: ReadonlySet<string> = new Set(['not-leader', 'outcome-unknown', 'deadline', 'UNAVAILABLE']);

/** Follow a not-leader hint, else try the next node (the SDK's and the ClusterLink's leader discovery). */
export function redirect(hint: number, err: RpcError | null, nodeIds: readonly string[]): number {
  const to = err?.leader ? nodeIds.indexOf(err.leader) : -1;
  return to >= 0 ? to : (hint + 1) % nodeIds.length;
}
