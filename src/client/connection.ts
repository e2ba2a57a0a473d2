// One application's connection to a Verdict cluster: finds the leader,
// follows its redirects and retries what may be retried.
//
// Writes go to the leader; a follower answers UNAVAILABLE, verdict-reason
// NOT_LEADER, with the leader's address in metadata, and we go there at once.
// A node that is down, slow or leaderless (NO_LEADER), or one that may have
// acted without answering (DEADLINE_EXCEEDED, UNKNOWN_OUTCOME), is skipped
// for the next address; after a full round, we back off (capped exponential,
// jittered, so clients restarted together do not stampede a new leader).
// Everything is bounded by the call's deadline. Resending is only safe
// because every Coordinator RPC is idempotent by transaction id (R7); which
// attempts certainly did nothing is read from verdict-reason, never from
// message text (docs/protocol-outcomes.md).
import * as grpc from '@grpc/grpc-js';
import { isAddress } from '../transport/leader-finder.ts';
import { GroupRoutes } from '../transport/group-routes.ts';
import { GROUP_KEY } from '../transport/coordinator-rpc.ts';
import { unaryCall } from '../transport/unary.ts';
import { CommitStream } from './commit-stream.ts';
import { explainConnectError } from '../transport/tls.ts';
import { recordedOutcomeFromWire } from '../transport/protocol-wire.ts';
import {
  coordinatorService,
  LEADER_ADDRESS_KEY,
  LEADER_ID_KEY,
  RECORDED_OUTCOME_KEY,
  STATUS_REASON_KEY,
  type CoordinatorHandlers,
  type CoordinatorMethod,
} from '../transport/coordinator-rpc.ts';
import { RetriesExhaustedError, statusName, VerdictError, invalidArgument, type RefusalDetails } from './errors.ts';
import { AttemptLoop } from './attempt-loop.ts';
import { DEFAULT_BACKOFF, retryable, type AttemptFailure, type BackoffOptions } from './retry-policy.ts';

export type { BackoffOptions };

export type RequestOf<M extends CoordinatorMethod> =
  CoordinatorHandlers[M] extends grpc.handleUnaryCall<infer Q, infer _R> ? Q : never;
export type ResponseOf<M extends CoordinatorMethod> =
  CoordinatorHandlers[M] extends grpc.handleUnaryCall<infer _Q, infer R> ? R : never;

/**
 * How long a call may take. Durations, not instants: a call started now
 * ends by now + callTimeoutMs.
 */
export interface CallBounds {
  /** Bound on one call, every retry and pause included. */
  callTimeoutMs?: number;
  /** Bound on one attempt at one node, so a silent node leaves time for the others. */
  attemptTimeoutMs?: number;
}

export interface ConnectionOptions extends CallBounds {
  /**
   * TLS: `tlsCredentials({ ca, cert, key })`, or `tlsCredentials(localClusterTls())` for the local cluster of `npm
   * start`.
   */
  credentials?: grpc.ChannelCredentials;
  /**
   * Plaintext, chosen knowingly: without `credentials` a connection is refused unless this is true (docs/security.md).
   */
  insecure?: boolean;
  /** Leader hints followed per round; bounds ping-pong between nodes with stale views. */
  maxRedirects?: number;
  backoff?: Partial<BackoffOptions>;
  /** Jitter source in [0, 1); injectable for tests. */
  random?: () => number;
}

export interface CallOptions extends CallBounds {
  /** gRPC metadata sent with every attempt (e.g. `verdict-operator` for an operator's act). */
  metadata?: Record<string, string>;
  /**
   * W3C trace context this call continues (sent as `traceparent` /
   * `tracestate` metadata; docs/operations.md, "Tracing"): e.g. the
   * application's active span, as OpenTelemetry's propagation.inject writes it.
   */
  trace?: { traceparent: string; tracestate?: string };
  /**
   * A call about no one id, for one decision group: sent to that group's
   * leader, with the group in `verdict-group` metadata so the node answers
   * for that group alone (a listing: VerdictClient.transactions at G > 1).
   */
  group?: number;
}

export const DEFAULT_CALL_TIMEOUT_MS = 10_000;
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 5_000;
export const DEFAULT_MAX_REDIRECTS = 3;

export class CoordinatorConnection {
  /** One leader finder per decision group (src/transport/group-routes.ts); one at G = 1. */
  readonly routes: GroupRoutes;
  private readonly clients = new Map<string, grpc.Client>();
  /** Per node, the stream that carries Commits (src/client/commit-stream.ts). */
  private readonly commitStreams = new Map<string, CommitStream>();
  private readonly credentials: grpc.ChannelCredentials;
  private readonly callTimeoutMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly backoff: BackoffOptions;
  private readonly random: () => number;
  private closed = false;

  constructor(addresses: readonly string[], options: ConnectionOptions = {}) {
    if (addresses.length === 0) throw invalidArgument('a connection needs at least one node address (host:port)');
    for (const a of addresses) if (!isAddress(a)) throw invalidArgument(`"${a}" is not a host:port address`);
    this.routes = new GroupRoutes(addresses, { redirectsMax: options.maxRedirects ?? DEFAULT_MAX_REDIRECTS });
    this.credentials = options.credentials ?? plaintext(options.insecure);
    const bounds = callBounds(options);
    this.callTimeoutMs = positive(bounds.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS, 'callTimeoutMs');
    this.attemptTimeoutMs = positive(bounds.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS, 'attemptTimeoutMs');
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.random = options.random ?? Math.random;
  }

  /** The node the next call that names no transaction goes to first (group 0's leader), if one is known. */
  get leaderAddress(): string | undefined {
    return this.routes.base.leader;
  }

  /**
   * Asks the cluster's status once and routes by it from then on: G and each
   * group's leader (docs/architecture.md, "Leaders spread, clients route").
   * Optional: without it the connection learns them at the first refusal that
   * names a group, and at G = 1 nothing changes either way.
   */
  async connect(options: CallOptions = {}): Promise<ResponseOf<'ClusterStatus'>> {
    return this.call('ClusterStatus', {}, options);
  }

  /** The bounds a call gets when it names none. */
  get defaults(): { callTimeoutMs: number; attemptTimeoutMs: number } {
    return { callTimeoutMs: this.callTimeoutMs, attemptTimeoutMs: this.attemptTimeoutMs };
  }

  get knownAddresses(): readonly string[] {
    return this.routes.base.addresses;
  }

  /**
   * Sends one Coordinator RPC, following redirects and retrying UNAVAILABLE
   * and DEADLINE_EXCEEDED on other nodes for `callTimeoutMs`. Any other error
   * is the cluster's answer and surfaces at once as a VerdictError; running
   * out of time is a RetriesExhaustedError.
   *
   * `nextRequest`, when given, hears every failed attempt that is retried
   * (as src/client/retry-policy.ts classifies it) and gives the request for
   * the next one: a Commit that also begins the transaction is retried as a
   * plain Commit once an attempt may have been acted on (R2).
   */
  async call<M extends CoordinatorMethod>(
    method: M,
    request: RequestOf<M>,
    options: CallOptions = {},
    nextRequest?: (failure: AttemptFailure) => RequestOf<M>,
  ): Promise<ResponseOf<M>> {
    let req = request;
    const bounds = callBounds(options);
    // The loop itself is a pure step (./attempt-loop.ts); this drives it with the wall clock, gRPC and sleep.
    const loopOptions = {
      deadlineAtMs: Date.now() + (bounds.callTimeoutMs ?? this.callTimeoutMs),
      attemptTimeoutMs: bounds.attemptTimeoutMs ?? this.attemptTimeoutMs,
      backoff: this.backoff,
    };
    // A call about one id goes to the leader of that id's decision group (src/transport/group-routes.ts).
    const id = routedId(method, request);
    let finder =
      options.group !== undefined
        ? (this.routes.finderOfGroup(options.group) ?? this.routes.base)
        : this.routes.finderFor(id);
    const metadata =
      options.group !== undefined ? { ...options.metadata, [GROUP_KEY]: String(options.group) } : options.metadata;
    let loop = new AttemptLoop(finder, loopOptions);
    let asked = false;
    let action = loop.start(Date.now(), this.random);
    for (;;) {
      switch (action.t) {
        case 'pause':
          await sleep(action.pauseMs);
          action = loop.paused(Date.now(), this.random);
          break;
        case 'give-up':
          throw new RetriesExhaustedError(
            action.code,
            `no node answered ${method} in time; last: ${action.last ?? 'no node was tried'}`,
          );
        case 'done':
          throw new Error(`the call of ${method} is done without its answer`);
        case 'attempt': {
          this.checkOpen();
          const { address } = action;
          try {
            const response = await this.attempt(address, method, req, action.timeoutMs, metadata);
            loop.answered(address);
            if (method === 'ClusterStatus') this.routes.learn(response as ResponseOf<'ClusterStatus'>);
            return response;
          } catch (err) {
            if (err instanceof VerdictError) throw err;
            const e = err as grpc.ServiceError;
            const code = statusName(e.code);
            const { failure, next } = loop.failed(
              address,
              {
                code,
                reason: metadataText(e, STATUS_REASON_KEY),
                neverConnected: neverConnected(e),
                why: `${code} ${describe(e, this.credentials._isSecure())}`,
                hint: leaderHint(e),
              },
              Date.now(),
              this.random,
            );
            if (!retryable(failure)) throw new VerdictError(code, e.details || e.message, address, refusalDetails(e));
            if (nextRequest !== undefined) req = nextRequest(failure);
            action = next;
            const hint = leaderHint(e);
            if (hint !== undefined && id !== undefined && !asked && this.routes.stale(metadataText(e, GROUP_KEY))) {
              // A refusal naming a group this connection does not route by: learn the groups from the node that
              // refused, then go on with the id's group, asking its leader first.
              asked = true;
              await this.learnGroups(
                address,
                Math.min(loopOptions.attemptTimeoutMs, loopOptions.deadlineAtMs - Date.now()),
              );
              const routed = this.routes.finderFor(id);
              if (routed !== finder) {
                finder = routed;
                finder.learn(hint);
                loop = new AttemptLoop(finder, loopOptions);
                action = loop.start(Date.now(), this.random);
              }
            }
          }
          break;
        }
      }
    }
  }

  /** One ClusterStatus attempt at `address`, routed by when it answers; a failure leaves routing as it was. */
  private async learnGroups(address: string, timeoutMs: number): Promise<void> {
    if (timeoutMs <= 0) return;
    try {
      this.routes.learn(await this.attempt(address, 'ClusterStatus', {}, timeoutMs));
    } catch {
      // The call goes on by the redirect it was given.
    }
  }

  close(): void {
    this.closed = true;
    for (const s of this.commitStreams.values()) s.close();
    this.commitStreams.clear();
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  private checkOpen(): void {
    if (this.closed) throw new VerdictError('CANCELLED', 'the connection is closed');
  }

  private client(address: string): grpc.Client {
    let c = this.clients.get(address);
    if (c === undefined) {
      c = new grpc.Client(address, this.credentials);
      this.clients.set(address, c);
    }
    return c;
  }

  private attempt<M extends CoordinatorMethod>(
    address: string,
    method: M,
    request: RequestOf<M>,
    timeoutMs: number,
    metadata?: Record<string, string>,
  ): Promise<ResponseOf<M>> {
    if (method === 'Commit' && metadata === undefined) {
      // The hot path: one message on the node's commit stream rather than a unary call; same answers, same errors.
      let s = this.commitStreams.get(address);
      if (s === undefined) {
        s = new CommitStream(this.client(address), address);
        this.commitStreams.set(address, s);
      }
      return s.commit(request as RequestOf<'Commit'>, timeoutMs) as Promise<ResponseOf<M>>;
    }
    const def = coordinatorService[method] as grpc.MethodDefinition<RequestOf<M>, ResponseOf<M>>;
    let md: grpc.Metadata | undefined;
    if (metadata !== undefined) {
      md = new grpc.Metadata();
      for (const [k, v] of Object.entries(metadata)) md.set(k, v);
    }
    return unaryCall(this.client(address), def, request, timeoutMs, md).catch((err: Error) => {
      throw err.message === 'empty response' ? new VerdictError('INTERNAL', `empty ${method} response`, address) : err;
    });
  }
}

/**
 * The id whose group decides a request: a transaction's, a lease's; undefined for calls about no one id (they go to
 * group 0's leader).
 */
function routedId(method: CoordinatorMethod, request: unknown): string | undefined {
  switch (method) {
    case 'Begin':
    case 'Commit':
    case 'Abort':
    case 'GetOutcome':
    case 'ResolveTransaction':
    case 'ReportHeuristic':
      return (request as { txnId: string }).txnId;
    case 'ListTransactions': {
      const txnId = (request as { txnId: string }).txnId;
      return txnId === '' ? undefined : txnId;
    }
    case 'AcquireLease':
    case 'RenewLease':
    case 'ReleaseLease':
      return (request as { name: string }).name;
    default:
      return undefined;
  }
}

/**
 * True when grpc-js failed to connect at all (its own status, which carries
 * no metadata): the request never left. A node's NOT_LEADER or NO_LEADER
 * also says it did nothing; anything else (UNKNOWN_OUTCOME, a deadline, a
 * stream cut mid-way) may have reached a leader (src/client/retry-policy.ts).
 */
function neverConnected(err: grpc.ServiceError): boolean {
  return /ECONNREFUSED|No connection established/.test(err.details ?? '');
}

/** The leader a NOT_LEADER refusal names. */
function leaderHint(err: grpc.ServiceError): string | undefined {
  return metadataText(err, STATUS_REASON_KEY) === 'NOT_LEADER' ? metadataText(err, LEADER_ADDRESS_KEY) : undefined;
}

/** The verdict-* metadata of a refusal, for the application (VerdictError.details). */
export function refusalDetails(err: grpc.ServiceError): RefusalDetails {
  const out: RefusalDetails = {};
  const reason = metadataText(err, STATUS_REASON_KEY);
  if (reason !== undefined) out.statusReason = reason;
  const id = metadataText(err, LEADER_ID_KEY);
  if (id !== undefined) out.leaderId = id;
  const address = metadataText(err, LEADER_ADDRESS_KEY);
  if (address !== undefined) out.leaderAddress = address;
  const recorded = metadataText(err, RECORDED_OUTCOME_KEY);
  const recordedOutcome = recorded === undefined ? null : recordedOutcomeFromWire(recorded);
  if (recordedOutcome !== null) out.recordedOutcome = recordedOutcome;
  return out;
}

/** One metadata value as text, bounded: it came from the network. */
function metadataText(err: grpc.ServiceError, key: string): string | undefined {
  const v = err.metadata?.get(key)[0];
  return typeof v === 'string' && v !== '' && v.length <= 256 ? v : undefined;
}

/** Plaintext credentials, only when the caller said insecure. */
export function plaintext(insecure: boolean | undefined): grpc.ChannelCredentials {
  if (insecure !== true)
    throw invalidArgument(
      'no TLS: give credentials: tlsCredentials({ ca, cert, key }) (for the local cluster of `npm start`: tlsCredentials(localClusterTls())), or insecure: true to talk plaintext to a cluster that serves it',
    );
  return grpc.credentials.createInsecure();
}

function describe(err: grpc.ServiceError, tls: boolean): string {
  const text = err.details || err.message;
  return /ECONNREFUSED/.test(text) ? '(connection refused)' : explainConnectError(text, tls);
}

/** The bounds that are set, and only those. */
export function callBounds(o: CallBounds): { callTimeoutMs?: number; attemptTimeoutMs?: number } {
  const out: { callTimeoutMs?: number; attemptTimeoutMs?: number } = {};
  const callMs = o.callTimeoutMs;
  const attemptMs = o.attemptTimeoutMs;
  if (callMs !== undefined) out.callTimeoutMs = callMs;
  if (attemptMs !== undefined) out.attemptTimeoutMs = attemptMs;
  return out;
}

function positive(ms: number, name: string): number {
  if (!Number.isFinite(ms) || ms <= 0) throw invalidArgument(`${name} must be a positive number of milliseconds`);
  return ms;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
