// Sagas from the application: start one, wait for its end, ask its status
// (docs/sagas.md). Calls go to the Sagas service of whichever node leads,
// found by the one leader finder (src/transport/leader-finder.ts).
// A start is retried with the same saga id (R7): the cluster answers a
// repeated start with the saga as it is. Generated ids are UUIDv7s (timed
// ids, src/domain/txn-id.ts), which the cluster can prove new for ever.

import { traceToMetadata } from '../transport/trace-context.ts';
import { checkedTrace, type TraceContext } from './trace.ts';
import * as grpc from '@grpc/grpc-js';
import { newTxnId } from '../domain/txn-id.ts';
import { OPERATOR_KEY } from '../transport/coordinator-rpc.ts';
import { callLeader, namedLeader, NoLeaderError } from '../transport/leader-finder.ts';
import { GroupRoutes } from '../transport/group-routes.ts';
import { SagasClient, type SagaInfo } from '../transport/saga-rpc.ts';
import { pooledRandomBytes } from '../util/random-pool.ts';
import { sleep } from '../util/sleep.ts';
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
  /** Absent: a new UUIDv7. Reuse it only to retry the same saga; a saga id runs once. */
  id?: string;
  steps: SagaStepSpec[];
  /** Index of the pivot step: a failure after it is retried forward, never compensated. */
  pivot?: number;
  /**
   * The saga's type (`order-refund`): 1–64 letters, digits, "_", ".", ":" or
   * "-". A stuck saga's warn line names it, and the stuck metrics count by it.
   */
  type?: string;
  /**
   * Business labels for the person a stuck saga is shown to: `{ order:
   * 'ORD-7731', amount: '12,400 RUB' }`. At most 16; a name as a type, a
   * value at most 256 bytes of one line of text. Refused with
   * INVALID_ARGUMENT naming the label otherwise.
   */
  labels?: Record<string, string>;
  /**
   * W3C trace context the saga continues: the node's spans of its steps, and the step calls' `traceparent`, follow it.
   */
  trace?: TraceContext;
}

export type SagaEnd = 'finished' | 'compensated';

/** A call's failed attempts, as the cluster's log counts them (across leaders). */
export interface SagaCallAttempts {
  attempts: number;
  /** null after an operator's retry, which counts afresh. */
  firstFailureAtMs: number | null;
  lastFailureAtMs: number;
  lastError: string;
}

/** One step of a saga as `SagaStatus.stepDetails` shows it. */
export interface SagaStepStatus {
  step: number;
  service: string;
  /** The handler at the step service. */
  handler: string;
  input: string;
  /** pending, running, done, failed, compensating or compensated */
  state: string;
  output: string;
  /** The failed attempts of its action and of its compensation; null for a call that never failed. */
  action: SagaCallAttempts | null;
  compensation: SagaCallAttempts | null;
}

export interface SagaStatus {
  id: string;
  state: 'running' | 'compensating' | 'finished' | 'compensated';
  /** The saga's type and labels as given at its start (null and {} when none were). */
  type: string | null;
  labels: Record<string, string>;
  /** Each step's state, in order (stepDetails has the rest). */
  steps: string[];
  /** Each step: its service, handler, input, state, output, and the attempts and last error of its calls. */
  stepDetails: SagaStepStatus[];
  outputs: string[];
  pivot: number | null;
  stuck: { step: number; kind: string; attempts: number; lastError: string } | null;
  timeline: {
    atMs: number;
    index: number;
    what: string;
    step: number | null;
    kind: string;
    detail: string;
    operator: string;
  }[];
}

/** How long one call may take, and how long a call keeps looking for the leader. */
const CALL_MS = 10_000;
const LOOK_MS = 30_000;
const WAIT_SLICE_MS = 20_000;
/** Leader hints followed per round without a pause, so that nodes with stale views cannot make a call spin. */
const REDIRECTS_MAX = 3;
/** Rounds over the endpoints, a backstop behind LOOK_MS (the pauses grow to a second). */
const ROUNDS_MAX = 100;

export class SagaCaller {
  private readonly clients = new Map<string, SagasClient>();
  /** A saga is decided by group groupOf(sagaId, G): one leader finder per group. */
  private readonly routes: GroupRoutes;

  constructor(
    endpoints: string[],
    /** TLS credentials, or grpc.credentials.createInsecure() for a plaintext cluster (chosen knowingly). */
    private readonly credentials: grpc.ChannelCredentials,
    private readonly operator?: string,
    /**
     * The client connection's routes, whose learned groups this caller takes over (its own hints stay its own, as at G
     * = 1).
     */
    private readonly learnedFrom?: GroupRoutes,
  ) {
    if (endpoints.length === 0) throw new VerdictError('INVALID_ARGUMENT', 'sagas need at least one node endpoint');
    this.routes = new GroupRoutes(endpoints, { redirectsMax: REDIRECTS_MAX });
  }

  private client(endpoint: string): SagasClient {
    let c = this.clients.get(endpoint);
    if (!c) {
      c = new SagasClient(endpoint, this.credentials);
      this.clients.set(endpoint, c);
    }
    return c;
  }

  /** One call to the leader (src/transport/leader-finder.ts), retrying what may be retried until LOOK_MS has passed. */
  async call<Req, Res>(
    method: 'StartSaga' | 'SagaStatus' | 'ListSagas' | 'RetrySaga' | 'ResolveSaga',
    req: Req,
    callMs = CALL_MS,
    trace?: TraceContext,
  ): Promise<Res> {
    // An operator's retry or resolution that timed out may have been acted on: its answer is the timeout, not a second
    // try.
    const retriesDeadline = method !== 'ResolveSaga' && method !== 'RetrySaga';
    let endpoint = '';
    const sagaId = (req as { sagaId?: unknown }).sagaId;
    const learned = this.learnedFrom;
    if (learned !== undefined && learned.groups > 1 && learned.groups !== this.routes.groups)
      this.routes.learn(learned.view());
    try {
      return await callLeader(
        this.routes.finderFor(typeof sagaId === 'string' && sagaId !== '' ? sagaId : undefined),
        (address) => {
          endpoint = address;
          const md = new grpc.Metadata();
          if (this.operator) md.set(OPERATOR_KEY, this.operator);
          if (trace !== undefined) traceToMetadata(trace, md);
          return this.client(address).call<Req, Res>(method, req, callMs, md);
        },
        {
          retryable: (err) => {
            const e = err as grpc.ServiceError;
            if (e.code !== grpc.status.UNAVAILABLE && !(e.code === grpc.status.DEADLINE_EXCEEDED && retriesDeadline))
              return null;
            return { why: e.details || e.message, hint: namedLeader(err) };
          },
          roundsMax: ROUNDS_MAX,
          pauseMs: (round) => Math.min(1_000, 50 * 2 ** (round - 1)),
          giveUpAtMs: Date.now() + LOOK_MS + callMs,
        },
      );
    } catch (err) {
      const e = (err instanceof NoLeaderError ? err.last : err) as Partial<grpc.ServiceError> | null;
      throw new VerdictError(
        statusName(e?.code ?? grpc.status.UNKNOWN),
        e?.details ?? e?.message ?? String(err),
        endpoint,
      );
    }
  }

  /** Starts a saga; `result()` waits for its end. */
  async start(spec: SagaSpec): Promise<SagaHandle> {
    const id = spec.id ?? newTxnId(Date.now(), pooledRandomBytes(10));
    const steps = spec.steps.map((s) => ({ service: s.service, name: s.name, input: s.input ?? '' }));
    await this.call(
      'StartSaga',
      {
        sagaId: id,
        steps,
        pivotPlusOne: spec.pivot === undefined ? 0 : spec.pivot + 1,
        type: spec.type ?? '',
        labels: spec.labels ?? {},
      },
      CALL_MS,
      checkedTrace(spec.trace),
    );
    return new SagaHandle(this, id);
  }

  async status(id: string, waitMs = 0): Promise<SagaStatus> {
    return toStatus(
      await this.call<{ sagaId: string; waitMs: number }, SagaInfo>(
        'SagaStatus',
        { sagaId: id, waitMs },
        CALL_MS + waitMs,
      ),
    );
  }

  /** The sagas this client may read (an admin: all), oldest first, up to `limit`, page by page. */
  async list(stuckOnly: boolean, limit = 1_000): Promise<SagaStatus[]> {
    const out: SagaStatus[] = [];
    let pageToken = '';
    do {
      const r = await this.call<
        { stuckOnly: boolean; limit: number; pageToken: string },
        { sagas: SagaInfo[]; nextPageToken: string }
      >('ListSagas', {
        stuckOnly,
        limit: Math.min(1_000, limit - out.length),
        pageToken,
      });
      out.push(...r.sagas.map(toStatus));
      pageToken = r.nextPageToken;
    } while (pageToken !== '' && out.length < limit);
    return out;
  }

  async retry(id: string, reason: string): Promise<SagaStatus> {
    return toStatus(await this.call<{ sagaId: string; reason: string }, SagaInfo>('RetrySaga', { sagaId: id, reason }));
  }

  async resolve(id: string, step: number, as: 'done' | 'compensated', reason: string): Promise<SagaStatus> {
    return toStatus(
      await this.call<{ sagaId: string; step: number; done: boolean; reason: string }, SagaInfo>('ResolveSaga', {
        sagaId: id,
        step,
        done: as === 'done',
        reason,
      }),
    );
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
        await sleep(100);
      }
      if (s && (s.state === 'finished' || s.state === 'compensated')) return { end: s.state, status: s };
    }
  }
}

function toStatus(i: SagaInfo): SagaStatus {
  const tries = (step: number, kind: string): SagaCallAttempts | null => {
    const a = i.attempts.find((x) => x.step === step && x.kind === kind);
    return a
      ? {
          attempts: a.attempts,
          firstFailureAtMs: a.firstFailureAtMs === 0 ? null : a.firstFailureAtMs,
          lastFailureAtMs: a.lastFailureAtMs,
          lastError: a.lastError,
        }
      : null;
  };
  return {
    id: i.sagaId,
    state: i.state as SagaStatus['state'],
    type: i.type === '' ? null : i.type,
    labels: { ...i.labels },
    steps: i.stepStatus,
    stepDetails: i.steps.map((d, k) => ({
      step: k,
      service: d.service,
      handler: d.name,
      input: d.input,
      state: i.stepStatus[k] ?? '',
      output: i.outputs[k] ?? '',
      action: tries(k, 'action'),
      compensation: tries(k, 'compensate'),
    })),
    outputs: i.outputs,
    pivot: i.pivotPlusOne === 0 ? null : i.pivotPlusOne - 1,
    stuck: i.stuck
      ? { step: i.stuckStep, kind: i.stuckKind, attempts: i.stuckAttempts, lastError: i.stuckError }
      : null,
    timeline: i.timeline.map((e) => ({
      atMs: e.atMs,
      index: e.index,
      what: e.what,
      step: e.step < 0 ? null : e.step,
      kind: e.kind,
      detail: e.detail,
      operator: e.operator,
    })),
  };
}
