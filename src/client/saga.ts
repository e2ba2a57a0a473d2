// Sagas from the application: start one, wait for its end, ask its status
// (docs/sagas.md). Calls go to the Sagas service of whichever node leads:
// a follower's UNAVAILABLE names the leader's address, which is tried next.
// A start is retried with the same saga id (R7): the cluster answers a
// repeated start with the saga as it is.

import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { LEADER_ADDRESS_KEY, OPERATOR_KEY } from '../transport/coordinator-rpc.ts';
import { SagasClient, type SagaInfo } from '../transport/saga-rpc.ts';
import { statusName, VerdictError } from './errors.ts';

export interface SagaStepSpec {
  /** The registered step service. */
  service: string;
  /** The handler's name at the step service. */
  name: string;
  /** The step's input, as text (JSON, say). */
  input?: string;
}

export interface SagaSpec {
  /** Absent: a new UUID. Reuse it only to retry the same saga. */
  id?: string;
  steps: SagaStepSpec[];
  /** Index of the pivot step: a failure after it is retried forward, never compensated. */
  pivot?: number;
}

export type SagaEnd = 'finished' | 'compensated';

export interface SagaStatus {
  id: string;
  state: 'running' | 'compensating' | 'finished' | 'compensated';
  steps: string[];
  outputs: string[];
  pivot: number | null;
  stuck: { step: number; kind: string; attempts: number; lastError: string } | null;
  timeline: { atMs: number; index: number; what: string; step: number | null; kind: string; detail: string; operator: string }[];
}

/** How long one call may take, and how long a call keeps looking for the leader. */
const CALL_MS = 10_000;
const LOOK_MS = 30_000;
const WAIT_SLICE_MS = 20_000;
const REDIRECTS_WITHOUT_PAUSE_MAX = 3;

export class SagaCaller {
  private readonly clients = new Map<string, SagasClient>();
  private at = 0;

  constructor(
    private readonly endpoints: string[],
    private readonly credentials?: grpc.ChannelCredentials,
    private readonly operator?: string,
  ) {
    if (endpoints.length === 0) throw new VerdictError('INVALID_ARGUMENT', 'sagas need at least one node endpoint');
  }

  private client(endpoint: string): SagasClient {
    let c = this.clients.get(endpoint);
    if (!c) {
      c = new SagasClient(endpoint, this.credentials);
      this.clients.set(endpoint, c);
    }
    return c;
  }

  /** One call to the leader, following redirects and retrying what may be retried until LOOK_MS has passed. */
  async call<Req, Res>(method: 'StartSaga' | 'SagaStatus' | 'ListSagas' | 'RetrySaga' | 'ResolveSaga', req: Req, callMs = CALL_MS): Promise<Res> {
    const giveUpAtMs = Date.now() + LOOK_MS + callMs;
    let leader: string | null = null;
    let backoffMs = 50;
    let hops = 0;
    for (;;) {
      const endpoint: string = leader ?? this.endpoints[this.at % this.endpoints.length];
      const md = new grpc.Metadata();
      if (this.operator) md.set(OPERATOR_KEY, this.operator);
      try {
        const r = await this.client(endpoint).call<Req, Res>(method, req, callMs, md);
        if (leader) this.at = Math.max(0, this.endpoints.indexOf(leader));
        return r;
      } catch (e) {
        const err = e as grpc.ServiceError;
        const retry = err.code === grpc.status.UNAVAILABLE || (err.code === grpc.status.DEADLINE_EXCEEDED && method !== 'ResolveSaga' && method !== 'RetrySaga');
        if (!retry || Date.now() > giveUpAtMs) throw new VerdictError(statusName(err.code), err.details ?? err.message, endpoint);
        const hint = err.metadata?.get(LEADER_ADDRESS_KEY)[0];
        leader = typeof hint === 'string' && hint !== '' && hint !== endpoint ? hint : null;
        // A follower that names the leader costs no pause: the next attempt goes there at once
        // (a few times in a row at most, so that nodes with stale views cannot make it spin).
        if (leader && hops++ < REDIRECTS_WITHOUT_PAUSE_MAX) continue;
        if (!leader) this.at++;
        await new Promise((r) => setTimeout(r, backoffMs));
        backoffMs = Math.min(1_000, backoffMs * 2);
      }
    }
  }

  /** Starts a saga; `result()` waits for its end. */
  async start(spec: SagaSpec): Promise<SagaHandle> {
    const id = spec.id ?? randomUUID();
    const steps = spec.steps.map((s) => ({ service: s.service, name: s.name, input: s.input ?? '' }));
    await this.call('StartSaga', { sagaId: id, steps, pivotPlusOne: spec.pivot === undefined ? 0 : spec.pivot + 1 });
    return new SagaHandle(this, id);
  }

  async status(id: string, waitMs = 0): Promise<SagaStatus> {
    return toStatus(await this.call<{ sagaId: string; waitMs: number }, SagaInfo>('SagaStatus', { sagaId: id, waitMs }, CALL_MS + waitMs));
  }

  async list(stuckOnly: boolean, limit = 1_000): Promise<SagaStatus[]> {
    const r = await this.call<{ stuckOnly: boolean; limit: number }, { sagas: SagaInfo[] }>('ListSagas', { stuckOnly, limit });
    return r.sagas.map(toStatus);
  }

  async retry(id: string, reason: string): Promise<SagaStatus> {
    return toStatus(await this.call<{ sagaId: string; reason: string }, SagaInfo>('RetrySaga', { sagaId: id, reason }));
  }

  async resolve(id: string, step: number, as: 'done' | 'compensated', reason: string): Promise<SagaStatus> {
    return toStatus(await this.call<{ sagaId: string; step: number; done: boolean; reason: string }, SagaInfo>('ResolveSaga', { sagaId: id, step, done: as === 'done', reason }));
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}

export class SagaHandle {
  constructor(
    private readonly caller: SagaCaller,
    readonly id: string,
  ) {}

  /** Waits until the saga is FINISHED or COMPENSATED (however long: compensations never give up). */
  async result(): Promise<{ end: SagaEnd; status: SagaStatus }> {
    for (;;) {
      let s: SagaStatus | null = null;
      try {
        s = await this.caller.status(this.id, WAIT_SLICE_MS);
      } catch (err) {
        // A node that has not applied the start yet answers NOT_FOUND: ask again.
        if (!(err instanceof VerdictError && err.code === 'NOT_FOUND')) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
      if (s && (s.state === 'finished' || s.state === 'compensated')) return { end: s.state, status: s };
    }
  }
}

function toStatus(i: SagaInfo): SagaStatus {
  return {
    id: i.sagaId,
    state: i.state as SagaStatus['state'],
    steps: i.stepStatus,
    outputs: i.outputs,
    pivot: i.pivotPlusOne === 0 ? null : i.pivotPlusOne - 1,
    stuck: i.stuck ? { step: i.stuckStep, kind: i.stuckKind, attempts: i.stuckAttempts, lastError: i.stuckError } : null,
    timeline: i.timeline.map((e) => ({ atMs: e.atMs, index: e.index, what: e.what, step: e.step < 0 ? null : e.step, kind: e.kind, detail: e.detail, operator: e.operator })),
  };
}
