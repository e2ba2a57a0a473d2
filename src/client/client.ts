// The application API of Verdict: begin a transaction, enlist participants,
// commit, and ask about outcomes; plus the listings operators and
// participants use. All calls go through one CoordinatorConnection, which
// finds the leader and retries idempotent requests (R7).
import type * as grpc from '@grpc/grpc-js';
import { newTxnId } from '../domain/txn-id.ts';
import { pooledRandomBytes } from '../util/random-pool.ts';
import {
  OPERATOR_KEY,
  type ClusterStatusResponse,
  type HeuristicInfo,
  type ListTransactionsResponse,
  type OutcomeName,
  type ParticipantInfo,
  type ParticipantState,
  type RemovalInfo,
  type ResolutionInfo,
} from '../transport/coordinator-rpc.ts';
import { CoordinatorConnection, plaintext, type CallOptions, type ConnectionOptions } from './connection.ts';
import { VerdictError } from './errors.ts';
import { SagaCaller, type SagaHandle, type SagaSpec, type SagaStatus } from './saga.ts';
import {
  checkId,
  checkTxnId,
  toOutcomeResult,
  Transaction,
  type ClusterOutcome,
  type OutcomeResult,
} from './transaction.ts';
import { decisionToOutcomeWire, outcomeFromWire } from '../transport/protocol-wire.ts';
import { NO_TRACING, openTracing, otlpEndpointFrom, type Tracing } from '../transport/tracing.ts';
import { checkedTrace, tracedCall } from './trace.ts';

/** A listing's size when none is asked for, and the most one answers (as the node bounds it). */
const LIST_LIMIT_DEFAULT = 1_000;
const LIST_LIMIT_MAX = 10_000;

export interface VerdictClientOptions extends ConnectionOptions {
  /** Node addresses, host:port; one reachable node is enough, the rest is learnt. */
  endpoints: string[];
  /** The cluster's id for participant registration; asked of the cluster when absent. */
  clusterId?: string;
  /**
   * OTLP/HTTP endpoint (e.g. http://127.0.0.1:4318) for the client's spans
   * (verdict.begin, verdict.commit); needs OpenTelemetry's packages installed.
   * Without it the client makes no span and only passes on a `trace` it is given.
   */
  otlpEndpoint?: string;
  /** service.name of the client's spans; `verdict-client` by default. */
  serviceName?: string;
}

export interface BeginOptions {
  /** The participants' prepare timeout; 0 or absent: the cluster's default. */
  timeoutMs?: number;
  /**
   * Parallel commit (docs/protocol.md, "Parallel commit"): true, the leader
   * answers COMMITTED after one round of durable writes (every YES in, its
   * STAGING record committed) and logs COMMIT afterwards; false, classic
   * two-phase commit; absent, the cluster's default (node config parallelCommit).
   */
  parallelCommit?: boolean;
  /**
   * The transaction id (R7): 1–128 of [A-Za-z0-9_.:-]. Absent: a new UUIDv7,
   * which carries its creation time so the cluster can prove it new
   * (docs/protocol-outcomes.md). Reuse it only to retry the same transaction:
   * a decided id is refused (ALREADY_EXISTS, with the recorded outcome).
   */
  txnId?: string;
}

export interface TransactionInfo {
  txnId: string;
  /** The decision group that decides it (groupOf(txnId, G)); 0 in a cluster of one group. */
  group: number;
  outcome: ClusterOutcome;
  reason: string;
  /** preparing | deciding | delivering | decided */
  phase: string;
  participants: ParticipantState[];
  ageMs: number;
  decisionIndex: number;
  /** Heuristic outcomes participants reported (R4), compared with the decision: HEURCOM, HEURRB, HEURMIX, HEURHAZ. */
  heuristics: (Omit<HeuristicInfo, 'outcome' | 'decision'> & { outcome: ClusterOutcome; decision: ClusterOutcome })[];
  /** Operators' `txn resolve` acts on the cluster side. */
  resolutions: (Omit<ResolutionInfo, 'outcome'> & { outcome: ClusterOutcome })[];
  /**
   * Participants removed with `participant remove --force` while this decision was still owed to them (no longer
   * delivered).
   */
  removals: RemovalInfo[];
}

/** Which transactions `transactions()` lists; at most one filter applies. */
export interface TransactionFilter {
  inFlight?: boolean;
  /** Undecided, older than the cluster's in-doubt threshold. */
  inDoubt?: boolean;
  /** Decided, not acknowledged by every participant. */
  unacked?: boolean;
  /** With a heuristic record or an operator's resolution. */
  heuristic?: boolean;
  /** Only this transaction. */
  txnId?: string;
  limit?: number;
}

export interface ResolveResult {
  outcome: OutcomeResult;
  /** True when the act decided the transaction; false when it confirmed the decision already logged. */
  decided: boolean;
  /** Who the cluster recorded as having asked. */
  operator: string;
}

/** A listed outcome; an unset one is not known. */
const outcomeName = (o: OutcomeName): ClusterOutcome => outcomeFromWire(o) ?? 'UNKNOWN';

export class VerdictClient {
  readonly connection: CoordinatorConnection;
  private clusterId: string | undefined;

  private readonly endpoints: string[];
  private readonly credentials: grpc.ChannelCredentials;
  private sagaCaller: SagaCaller | null = null;
  /**
   * Loaded on demand (OpenTelemetry's packages only with an endpoint); a failure to load surfaces at the first traced
   * call.
   */
  private readonly tracing: Promise<Tracing>;

  constructor(options: VerdictClientOptions) {
    this.connection = new CoordinatorConnection(options.endpoints, options);
    this.clusterId = options.clusterId;
    this.endpoints = [...options.endpoints];
    this.credentials = options.credentials ?? plaintext(options.insecure);
    const otlpEndpoint = otlpEndpointFrom(options.otlpEndpoint, {});
    this.tracing =
      otlpEndpoint === undefined
        ? Promise.resolve(NO_TRACING)
        : openTracing({ serviceName: options.serviceName ?? 'verdict-client', otlpEndpoint });
    this.tracing.catch(() => {});
  }

  /** The Sagas service's caller (src/client/saga.ts), made on first use; over TLS when the client is. */
  get sagas(): SagaCaller {
    this.sagaCaller ??= new SagaCaller(this.endpoints, this.credentials, undefined, this.connection.routes);
    return this.sagaCaller;
  }

  /** Starts a saga (docs/sagas.md); `await (await client.saga(spec)).result()` waits for its end. */
  saga(spec: SagaSpec): Promise<SagaHandle> {
    return this.sagas.start(spec);
  }

  sagaStatus(id: string): Promise<SagaStatus> {
    return this.sagas.status(id);
  }

  async begin(options: BeginOptions = {}, call: CallOptions = {}): Promise<Transaction> {
    const txnId = options.txnId ?? newTxnId(Date.now(), pooledRandomBytes(10));
    checkTxnId(txnId);
    const timeoutMs = options.timeoutMs ?? 0;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 0)
      throw new VerdictError('INVALID_ARGUMENT', 'timeoutMs must be a non-negative integer');
    const trace = checkedTrace(call.trace);
    const r = await tracedCall(this.tracing, 'verdict.begin', trace, { 'verdict.txn_id': txnId }, call, (c) =>
      this.connection.call('Begin', { txnId, timeoutMs }, c),
    );
    if (r.txnId !== '' && r.txnId !== txnId)
      throw new VerdictError('INTERNAL', `began ${txnId}, the cluster answered ${r.txnId}`);
    return new Transaction(
      this.connection,
      txnId,
      timeoutMs,
      r.deadlineAtMs,
      r.leaderId,
      true,
      options.parallelCommit,
      { tracing: this.tracing, parent: trace },
    );
  }

  /**
   * A new transaction, without a round trip: the cluster begins it when its
   * first Commit arrives (one RPC per transaction instead of Begin + Commit).
   * Prefer it to begin() unless the Begin answer (deadline, leader) is needed.
   */
  transaction(options: BeginOptions & { trace?: CallOptions['trace'] } = {}): Transaction {
    const txnId = options.txnId ?? newTxnId(Date.now(), pooledRandomBytes(10));
    checkTxnId(txnId);
    const timeoutMs = options.timeoutMs ?? 0;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 0)
      throw new VerdictError('INVALID_ARGUMENT', 'timeoutMs must be a non-negative integer');
    return new Transaction(this.connection, txnId, timeoutMs, 0, '', false, options.parallelCommit, {
      tracing: this.tracing,
      parent: checkedTrace(options.trace),
    });
  }

  /** What the cluster's applied state says about txnId (R1); asking never decides anything. */
  async outcome(txnId: string, call: CallOptions = {}): Promise<OutcomeResult> {
    checkTxnId(txnId);
    const r = await this.connection.call('GetOutcome', { txnId, participantId: '' }, call);
    return toOutcomeResult(txnId, r);
  }

  /**
   * Aborts a transaction by id (for operators and tools holding no Transaction); answers the outcome, COMMITTED if too
   * late.
   */
  async abort(txnId: string, reason = '', call: CallOptions = {}): Promise<OutcomeResult> {
    checkTxnId(txnId);
    return toOutcomeResult(txnId, await this.connection.call('Abort', { txnId, reason }, call));
  }

  /**
   * Registers a participant; `resourceKind` (e.g. "postgres"; 1–32 of a-z, 0-9 and "-") is shown by `verdict
   * participants` and the console, "" reads as "unknown". `serves`: the optional methods of the participant protocol it
   * serves ("Status", "Exchange"); none by default, so its transactions commit by classic two-phase commit
   * (docs/protocol.md, "Compatibility").
   */
  async registerParticipant(
    participantId: string,
    endpoint: string,
    call: CallOptions = {},
    resourceKind = '',
    serves: readonly string[] = [],
  ): Promise<ParticipantInfo> {
    checkId(participantId, 'participant id');
    checkId(endpoint, 'participant endpoint');
    this.clusterId ??= (await this.status(call)).clusterId;
    const r = await this.connection.call(
      'RegisterParticipant',
      { clusterId: this.clusterId, participantId, endpoint, resourceKind, serves: [...serves] },
      call,
    );
    if (r.participant === null)
      throw new VerdictError('INTERNAL', `registering ${participantId}: the cluster answered without the participant`);
    return r.participant;
  }

  /** The registry; `withActivity` adds the leader's view (last seen, in-doubt count) and is answered by the leader. */
  async participants(options: { withActivity?: boolean } = {}, call: CallOptions = {}): Promise<ParticipantInfo[]> {
    return (await this.connection.call('ListParticipants', { withActivity: options.withActivity ?? false }, call))
      .participants;
  }

  /** Transactions the cluster knows; `inFlight` keeps those still being prepared or delivered. */
  async transactions(options: TransactionFilter = {}, call: CallOptions = {}): Promise<TransactionInfo[]> {
    const request = {
      inFlight: options.inFlight ?? false,
      limit: options.limit ?? 0,
      inDoubt: options.inDoubt ?? false,
      unacked: options.unacked ?? false,
      heuristic: options.heuristic ?? false,
      txnId: options.txnId ?? '',
    };
    const routes = this.connection.routes;
    // The groups, once per client; a node that cannot say (an older version) is listed as a cluster of one group.
    if (request.txnId === '' && !routes.known) await this.connection.connect(call).catch(() => undefined);
    if (request.txnId !== '' || routes.groups === 1)
      return this.transactionInfos((await this.connection.call('ListTransactions', request, call)).transactions);
    // Decision groups: what a group's leader tracks is that leader's to say, so each group is asked of its own leader,
    // and the lists are merged, oldest first, to the limit (the node's own: 1,000 when none is given).
    const each = await Promise.all(
      Array.from({ length: routes.groups }, (_, group) =>
        this.connection.call('ListTransactions', request, { ...call, group }),
      ),
    );
    const limit = request.limit > 0 ? Math.min(request.limit, LIST_LIMIT_MAX) : LIST_LIMIT_DEFAULT;
    const all = this.transactionInfos(each.flatMap((r) => r.transactions)).sort((a, b) => b.ageMs - a.ageMs);
    return all.slice(0, limit);
  }

  /** The wire's transactions as the SDK gives them, each with its decision group. */
  private transactionInfos(ts: ListTransactionsResponse['transactions']): TransactionInfo[] {
    const routes = this.connection.routes;
    // A listing is for reading, not deciding: an unset outcome is shown as UNKNOWN rather than failing the whole list.
    return ts.map((t) => ({
      ...t,
      group: routes.groupOf(t.txnId),
      outcome: outcomeName(t.outcome),
      heuristics: (t.heuristics ?? []).map((h) => ({
        ...h,
        outcome: outcomeName(h.outcome),
        decision: outcomeName(h.decision),
      })),
      resolutions: (t.resolutions ?? []).map((x) => ({ ...x, outcome: outcomeName(x.outcome) })),
      // A node of an earlier version sends none.
      removals: t.removals ?? [],
    }));
  }

  /**
   * An operator's act on the cluster side (`verdict txn resolve`), recorded in
   * the log with `operator`, the time and `reason`. ABORT decides an
   * undecided transaction; COMMIT is refused unless every participant voted
   * YES (AC2); a decided transaction is never reversed (R1).
   */
  async resolve(
    txnId: string,
    outcome: 'commit' | 'abort',
    reason: string,
    operator: string,
    call: CallOptions & { forceUnknown?: boolean } = {},
  ): Promise<ResolveResult> {
    checkTxnId(txnId);
    const r = await this.connection.call(
      'ResolveTransaction',
      // Without forceUnknown the cluster refuses an id it has no record of (a mistyped id).
      { txnId, outcome: decisionToOutcomeWire(outcome), reason, forceUnknown: call.forceUnknown === true },
      { ...call, metadata: { ...call.metadata, [OPERATOR_KEY]: operator } },
    );
    if (r.outcome === null)
      throw new VerdictError('INTERNAL', `resolving ${txnId}: the cluster answered without an outcome`);
    return { outcome: toOutcomeResult(txnId, r.outcome), decided: r.decided, operator: r.operator };
  }

  /**
   * Unregisters a participant (an operator's act, like resolve). The cluster
   * refuses while the participant has transactions in doubt and lists them;
   * answers false when the id was not registered (R7).
   */
  async removeParticipant(participantId: string, operator: string, call: CallOptions = {}): Promise<boolean> {
    return (await this.removeParticipantWith(participantId, operator, {}, call)).removed;
  }

  /**
   * `force` with a `reason`: a participant gone for good is removed although
   * decisions still name it; `owed` lists those it had not acknowledged
   * (kept in the log for it, no longer delivered).
   */
  async removeParticipantWith(
    participantId: string,
    operator: string,
    o: { force?: boolean; reason?: string },
    call: CallOptions = {},
  ): Promise<{ removed: boolean; owed: string[] }> {
    checkId(participantId, 'participant id');
    this.clusterId ??= (await this.status(call)).clusterId;
    const r = await this.connection.call(
      'RemoveParticipant',
      { clusterId: this.clusterId, participantId, force: o.force === true, reason: o.reason ?? '' },
      { ...call, metadata: { ...call.metadata, [OPERATOR_KEY]: operator } },
    );
    return { removed: r.removed, owed: r.owed };
  }

  /**
   * Learns the cluster's decision groups and their leaders now (one
   * ClusterStatus), so that the first transaction of each group goes straight
   * to its leader. Optional: without it the client learns them at the first
   * redirect that names a group; at G = 1 it changes nothing.
   */
  async connect(call: CallOptions = {}): Promise<ClusterStatusResponse> {
    return this.connection.connect(call);
  }

  async status(call: CallOptions = {}): Promise<ClusterStatusResponse> {
    return this.connection.call('ClusterStatus', {}, call);
  }

  /** Closes the connections; spans not yet exported are sent (await the promise to know they went). */
  close(): Promise<void> {
    this.connection.close();
    this.sagaCaller?.close();
    return this.tracing.then(
      (t) => t.shutdown(),
      () => {},
    );
  }
}
