// What one client may impose on a node through the Coordinator service, and
// the checks that hold it, applied around the handlers of
// coordinator-service.ts (so the handlers stay about the protocol):
//
// - every string field is bounded (ids by their rules: src/domain/id.ts and
//   txn-id.ts; reasons 1,000 characters) and a
//   participant's endpoint must be a host:port that can be dialled;
// - a client holds at most clientInFlightMax undecided transactions (begun,
//   not yet committed or aborted). A client is its TLS certificate's CN, or
//   without TLS the connection's peer address. At the bound Begin answers
//   RESOURCE_EXHAUSTED naming the limit, how many the client holds and its
//   oldest ids; a transaction stops counting the moment it is decided or
//   aborted.
//
// The request size and undecodable bodies are checked earlier, at the
// deserializer (src/transport/validate.ts). Every refusal is logged once,
// with the method, the peer and the reason, and counted.

import * as grpc from '@grpc/grpc-js';
import type { CoordinatorHandlers, CoordinatorMethod } from '../transport/coordinator-rpc.ts';
import { peerCertificate, subjectField, type AuthenticatedCall } from '../transport/tls.ts';
import { TXN_ID_CHARS_MAX, TXN_ID_PATTERN } from '../domain/txn-id.ts';
import {
  checkString,
  endpointProblem,
  invalidArgument,
  quote,
  Refusals,
  type RefusalClass,
} from '../transport/validate.ts';
import { ID, ID_CHARS_MAX, ID_FORM } from '../domain/id.ts';
import { REASON_CHARS_MAX } from '../domain/text-bounds.ts';
import { HISTORY_LIMIT_MAX } from '../history/record.ts';

export { REFUSAL_CLASSES, Refusals, type RefusalClass } from '../transport/validate.ts';

export interface ClientLimits {
  /** Undecided transactions one client may hold on the leader. */
  clientInFlightMax: number;
}

/** What the quota asks the engine: does this transaction still hold a place? */
export interface UndecidedSource {
  isUndecided(txnId: string): boolean;
}

const TXN_ID_FORM = 'letters, digits, ".", "_", ":" or "-"';

/**
 * Transaction ids one GetOutcomes call may ask about (the participant's in-doubt resolver asks at most this many per
 * question).
 */
export const OUTCOMES_ASKED_MAX = 1_024;

type Check = (field: string, v: unknown) => string | null;
const txnId: Check = (f, v) =>
  checkString(f, v, { maxChars: TXN_ID_CHARS_MAX, pattern: TXN_ID_PATTERN, form: TXN_ID_FORM });
const id: Check = (f, v) => checkString(f, v, { maxChars: ID_CHARS_MAX, pattern: ID, form: ID_FORM });
const optionalId: Check = (f, v) =>
  checkString(f, v, { maxChars: ID_CHARS_MAX, pattern: ID, form: ID_FORM, optional: true });
const optionalTxnId: Check = (f, v) =>
  checkString(f, v, { maxChars: TXN_ID_CHARS_MAX, pattern: TXN_ID_PATTERN, form: TXN_ID_FORM, optional: true });
const text: Check = (f, v) => checkString(f, v, { maxChars: REASON_CHARS_MAX, optional: true });

/** The first problem among the fields of a request, or null. */
function firstProblem(checks: [Check, string, unknown][]): string | null {
  for (const [check, field, v] of checks) {
    const p = check(field, v);
    if (p !== null) return p;
  }
  return null;
}

/** Problems of each Coordinator request's fields, by method (the others carry no strings). */
type RequestOf<M extends CoordinatorMethod> =
  CoordinatorHandlers[M] extends grpc.handleUnaryCall<infer Req, unknown> ? Req : never;
/** The first problem of a Coordinator request's fields, or null: what the edge refuses before any handler. */
export function coordinatorRequestProblem(method: CoordinatorMethod, request: unknown): string | null {
  return (REQUEST_CHECKS as Record<string, ((r: unknown) => string | null) | undefined>)[method]?.(request) ?? null;
}

const REQUEST_CHECKS: { [M in CoordinatorMethod]?: (r: RequestOf<M>) => string | null } = {
  RegisterParticipant: (r) =>
    firstProblem([
      [id, 'cluster_id', r.clusterId],
      [id, 'participant_id', r.participantId],
    ]) ?? endpointProblem(r.endpoint ?? ''),
  Begin: (r) => txnId('txn_id', r.txnId),
  Commit: (r) => {
    const p = txnId('txn_id', r.txnId);
    if (p !== null) return p;
    for (const e of r.participants ?? []) {
      const q = id('participant_id', e.participantId);
      if (q !== null) return q;
    }
    return null;
  },
  Abort: (r) =>
    firstProblem([
      [txnId, 'txn_id', r.txnId],
      [text, 'reason', r.reason],
    ]),
  GetOutcome: (r) =>
    firstProblem([
      [txnId, 'txn_id', r.txnId],
      [optionalId, 'participant_id', r.participantId],
    ]),
  GetOutcomes: (r) => {
    const p = id('participant_id', r.participantId);
    if (p !== null) return p;
    const n = r.txnIds?.length ?? 0;
    if (n === 0 || n > OUTCOMES_ASKED_MAX)
      return `txn_ids holds ${n} ids; ask about 1 to ${OUTCOMES_ASKED_MAX} per call`;
    for (const [i, t] of (r.txnIds ?? []).entries()) {
      const q = txnId(`txn_ids[${i}]`, t);
      if (q !== null) return q;
    }
    return null;
  },
  ListTransactions: (r) => optionalTxnId('txn_id', r.txnId ?? ''),
  ReportHeuristic: (r) =>
    firstProblem([
      [id, 'cluster_id', r.clusterId],
      [id, 'participant_id', r.participantId],
      [txnId, 'txn_id', r.txnId],
      [text, 'gid', r.gid],
      [text, 'operator', r.operator],
      [text, 'reason', r.reason],
    ]),
  ResolveTransaction: (r) =>
    firstProblem([
      [txnId, 'txn_id', r.txnId],
      [text, 'reason', r.reason],
    ]),
};

/** Longest key of a log probe (RaftNode.Put, PutStream): opaque, bounded like every field a caller sends. */
export const KEY_CHARS_MAX = 1_024;
const key: Check = (f, v) => checkString(f, v, { maxChars: KEY_CHARS_MAX });

/** Problems of each RaftNode request's fields (operators' and the foundation's calls). */
export const RAFT_NODE_CHECKS: Record<string, (r: never) => string | null> = {
  Put: (r: { key?: unknown }) => key('key', r.key),
  TransferLeader: (r: { to?: unknown }) => optionalId('to', r.to ?? ''),
  AddMember: (r: { nodeId?: unknown; address?: unknown }) =>
    id('node_id', r.nodeId) ?? endpointProblem(typeof r.address === 'string' ? r.address : ''),
  RemoveMember: (r: { nodeId?: unknown }) => id('node_id', r.nodeId),
  History: (r: {
    txnId?: unknown;
    sagaId?: unknown;
    participantId?: unknown;
    outcome?: unknown;
    kind?: unknown;
    limit?: unknown;
  }) =>
    optionalTxnId('txn_id', r.txnId ?? '') ??
    optionalTxnId('saga_id', r.sagaId ?? '') ??
    (r.kind === '' || r.kind === 'txn' || r.kind === 'saga' || r.kind === undefined
      ? null
      : `kind ${quote(String(r.kind))} is not "", "txn" or "saga"`) ??
    optionalId('participant_id', r.participantId ?? '') ??
    (r.outcome === '' || r.outcome === 'commit' || r.outcome === 'abort' || r.outcome === undefined
      ? null
      : `outcome ${quote(String(r.outcome))} is not "", "commit" or "abort"`) ??
    (typeof r.limit === 'number' && r.limit > HISTORY_LIMIT_MAX
      ? `limit ${r.limit} is above ${HISTORY_LIMIT_MAX}`
      : null),
};

/**
 * The handlers with `checks` in front: a request with a bad field is answered INVALID_ARGUMENT with the reason, logged
 * and counted.
 */
export function withFieldChecks<H extends grpc.UntypedServiceImplementation>(
  h: H,
  checks: Record<string, ((r: never) => string | null) | undefined>,
  refusals: Refusals,
): H {
  const out: Record<string, unknown> = {};
  for (const [method, handler] of Object.entries(h)) {
    const check = checks[method] as ((r: unknown) => string | null) | undefined;
    if (check === undefined) {
      out[method] = handler;
      continue;
    }
    out[method] = (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const problem = check(call.request);
      if (problem === null) return (handler as Handler)(call, cb);
      refusals.refuse('invalid_field', { method, peer: call.getPeer() }, problem);
      cb(invalidArgument(problem));
    };
  }
  return out as H;
}

/**
 * Who a call comes from, for per-client limits: the client certificate's CN with TLS, else the connection's peer
 * address.
 */
export function clientOf(call: AuthenticatedCall & { getPeer(): string }): string {
  const cn = subjectField(peerCertificate(call)?.subject, 'CN');
  return cn !== undefined ? `CN=${cn}` : call.getPeer();
}

/**
 * Undecided transactions per client. Entries are dropped lazily: only when a
 * client reaches its bound are its transactions asked whether they still
 * count, so the common path costs one set insert. The map of clients is
 * pruned the same way when it grows past the engine's own bound, so it never
 * holds more clients than there are undecided transactions.
 */
export class ClientQuota {
  private readonly held = new Map<string, Map<string, number>>();

  constructor(
    private readonly limits: ClientLimits,
    private readonly engine: UndecidedSource,
    private readonly clientsMax: number,
  ) {}

  /** Why `client` may not begin `txnId` now, or null. A retry of a transaction it holds is always allowed (R7). */
  refusal(client: string, txnId: string, nowMs: number): string | null {
    const mine = this.held.get(client);
    if (mine === undefined || mine.has(txnId) || mine.size < this.limits.clientInFlightMax) return null;
    this.prune(client, mine);
    if (mine.size < this.limits.clientInFlightMax) return null;
    const oldest = [...mine].sort((a, b) => a[1] - b[1]).slice(0, 3);
    const list = oldest.map(([t, at]) => `${quote(t)} (${Math.round((nowMs - at) / 1000)} s)`).join(', ');
    return `client ${quote(client)} holds ${mine.size} undecided transactions (limit clientInFlightMax=${this.limits.clientInFlightMax}); oldest: ${list}; commit or abort them before beginning more`;
  }

  add(client: string, txnId: string, nowMs: number): void {
    let mine = this.held.get(client);
    if (mine === undefined) {
      if (this.held.size >= this.clientsMax) for (const [c, m] of this.held) this.prune(c, m);
      mine = new Map();
      this.held.set(client, mine);
    }
    if (!mine.has(txnId)) mine.set(txnId, nowMs);
  }

  /** Undecided transactions `client` holds (after dropping decided ones). */
  count(client: string): number {
    const mine = this.held.get(client);
    if (mine === undefined) return 0;
    this.prune(client, mine);
    return mine.size;
  }

  private prune(client: string, mine: Map<string, number>): void {
    for (const t of mine.keys()) if (!this.engine.isUndecided(t)) mine.delete(t);
    if (mine.size === 0) this.held.delete(client);
  }
}

export interface EdgeDeps {
  quota: ClientQuota;
  refusals: Refusals;
  nowMs: () => number;
}

type Handler = (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => void;

/**
 * The Coordinator handlers with the checks above in front: a request with a
 * bad field is answered INVALID_ARGUMENT, a Begin (or a Commit that begins)
 * over the client's bound RESOURCE_EXHAUSTED, each with its reason.
 */
export function withClientLimits(h: CoordinatorHandlers, d: EdgeDeps): CoordinatorHandlers {
  const refuse = (
    method: string,
    call: grpc.ServerUnaryCall<unknown, unknown>,
    cb: grpc.sendUnaryData<unknown>,
    cls: RefusalClass,
    details: string,
  ): void => {
    d.refusals.refuse(cls, { method, peer: call.getPeer() }, details);
    cb(
      cls === 'client_limit'
        ? Object.assign(new Error(`RESOURCE_EXHAUSTED: ${details}`), {
            code: grpc.status.RESOURCE_EXHAUSTED,
            details,
            metadata: new grpc.Metadata(),
          })
        : invalidArgument(details),
    );
  };
  const out: Record<string, Handler> = {};
  for (const [method, handler] of Object.entries(h) as [string, Handler][]) {
    const check = (r: unknown): string | null => coordinatorRequestProblem(method as CoordinatorMethod, r);
    const begins = method === 'Begin' || method === 'Commit';
    out[method] = (call, cb) => {
      const problem = check?.(call.request) ?? null;
      if (problem !== null) return refuse(method, call, cb, 'invalid_field', problem);
      const r = call.request as { txnId?: string; begin?: boolean };
      if (!begins || (method === 'Commit' && r.begin !== true)) return handler(call, cb);
      const client = clientOf(call as unknown as AuthenticatedCall & { getPeer(): string });
      const txn = r.txnId ?? '';
      const full = d.quota.refusal(client, txn, d.nowMs());
      if (full !== null) return refuse(method, call, cb, 'client_limit', full);
      // Counted from now: a Commit that begins answers only once decided. A
      // Begin that fails holds nothing, and is dropped at the next prune.
      d.quota.add(client, txn, d.nowMs());
      handler(call, cb);
    };
  }
  return out as unknown as CoordinatorHandlers;
}
