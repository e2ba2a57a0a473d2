// The node's client-facing services over its decision groups
// (docs/architecture.md, "Decision groups"): every group's replica has the
// handlers a node of one group has, and this is the door in front of them.
// A call about one transaction, saga or lease goes to the replica of
// groupOf(id, G); a follower of that group answers NOT_LEADER as ever,
// naming that group's leader, with the group in `verdict-group`. A
// registration, an endpoint change or a removal is made in every group
// (each commit path reads the registry from its own group's applied state)
// and answered once every group has applied it. With one group the handlers
// are used as they are: nothing here runs.

import * as grpc from '@grpc/grpc-js';
import { groupOf } from '../domain/group.ts';
import {
  GROUP_KEY,
  STATUS_REASON_KEY,
  type ClusterStatusResponse,
  type CoordinatorHandlers,
  type ListTransactionsResponse,
  type OutcomesResponse,
  type RemoveParticipantResponse,
} from '../transport/coordinator-rpc.ts';
import type { SagasHandlers, SagaStatesResponse } from '../transport/saga-rpc.ts';

type Callback = (err: Partial<grpc.StatusObject> | grpc.ServiceError | null, value?: unknown) => void;
type Handler = (call: { request: unknown; metadata: grpc.Metadata; getPeer(): string }, cb: Callback) => void;

/** A redirect (NOT_LEADER or NO_LEADER) names the group it is about, so a client follows that group's leader. */
function tagged(group: number, cb: Callback): Callback {
  return (err, value) => {
    const md = err?.metadata;
    if (md instanceof grpc.Metadata) {
      const reason = md.get(STATUS_REASON_KEY)[0];
      if (reason === 'NOT_LEADER' || reason === 'NO_LEADER') md.set(GROUP_KEY, String(group));
    }
    cb(err, value);
  };
}

function isRedirect(err: NonNullable<Parameters<Callback>[0]>): boolean {
  const reason = err.metadata instanceof grpc.Metadata ? err.metadata.get(STATUS_REASON_KEY)[0] : undefined;
  return reason === 'NOT_LEADER' || reason === 'NO_LEADER';
}

/** The handler of group groupOf(id) for each call, id read from the request. */
function byId(
  perGroup: readonly Record<string, Handler>[],
  method: string,
  idOf: (request: unknown) => string,
): Handler {
  return (call, cb) => {
    const g = groupOf(idOf(call.request), perGroup.length);
    perGroup[g][method](call, tagged(g, cb));
  };
}

/**
 * Calls `method` on every group with the same call; `done` gets every group's answer (error or value), in group order.
 */
function everyGroup(
  perGroup: readonly Record<string, Handler>[],
  method: string,
  call: Parameters<Handler>[0],
  done: (answers: { err: Parameters<Callback>[0]; value: unknown }[]) => void,
): void {
  const answers: { err: Parameters<Callback>[0]; value: unknown }[] = new Array(perGroup.length);
  let left = perGroup.length;
  perGroup.forEach((h, g) =>
    h[method](
      call,
      tagged(g, (err, value) => {
        answers[g] = { err, value };
        if (--left === 0) done(answers);
      }),
    ),
  );
}

/** The first refusal among the groups' answers, or null when every group did it. */
function firstError(answers: { err: Parameters<Callback>[0] }[]): Parameters<Callback>[0] {
  return answers.find((a) => a.err !== null && a.err !== undefined)?.err ?? null;
}

const txnIdOf = (r: unknown): string => (r as { txnId: string }).txnId;

/**
 * The Coordinator handlers of every group (coordinatorApi and leaseApi, each with its client limits) behind one door.
 */
export function routeCoordinator(
  perGroupTyped: readonly CoordinatorHandlers[],
  registered: (group: number, participantId: string) => boolean,
): CoordinatorHandlers {
  const perGroup = perGroupTyped as unknown as readonly Record<string, Handler>[];
  const groups = perGroup.length;
  const g0 = perGroup[0];
  const out: Record<string, Handler> = {
    Begin: byId(perGroup, 'Begin', txnIdOf),
    Commit: byId(perGroup, 'Commit', txnIdOf),
    Abort: byId(perGroup, 'Abort', txnIdOf),
    GetOutcome: byId(perGroup, 'GetOutcome', txnIdOf),
    ReportHeuristic: byId(perGroup, 'ReportHeuristic', txnIdOf),
    ResolveTransaction: byId(perGroup, 'ResolveTransaction', txnIdOf),
    AcquireLease: byId(perGroup, 'AcquireLease', (r) => (r as { name: string }).name),
    RenewLease: byId(perGroup, 'RenewLease', (r) => (r as { name: string }).name),
    ReleaseLease: byId(perGroup, 'ReleaseLease', (r) => (r as { name: string }).name),
    // Every group keeps the registry (read here from group 0, whose ReadIndex makes the answer current).
    ListParticipants: (call, cb) => g0.ListParticipants(call, tagged(0, cb)),
    // Made in every group; answered when every group applied it (idempotent: a retry after a partial failure completes
    // it).
    RegisterParticipant: (call, cb) =>
      everyGroup(perGroup, 'RegisterParticipant', call, (answers) => {
        const err = firstError(answers);
        cb(err, err === null ? answers[0].value : undefined);
      }),
    RemoveParticipant: (call, cb) =>
      everyGroup(perGroup, 'RemoveParticipant', call, (answers) => {
        // A group led elsewhere whose applied registry no longer holds the participant was done by its leader (an
        // earlier redirect, or an earlier attempt whose answer was lost). Counted as removed: a retry of a removal
        // must answer as the first attempt would have (an id no group ever held then reads removed too when some
        // groups are led elsewhere; the registry keeps no tombstone to tell the two apart).
        const id = (call.request as { participantId: string }).participantId;
        const settled = answers.map((a, g) =>
          a.err && isRedirect(a.err) && !registered(g, id) ? { err: null, value: { removed: true, owed: [] } } : a,
        );
        const err = firstError(settled);
        if (err !== null) return cb(err);
        const each = settled.map((a) => a.value as RemoveParticipantResponse);
        // Removed when some group removed it now (a group whose answer says it holds no such participant was done by an
        // earlier attempt of this removal that a redirect cut short); what is owed lives in each transaction's group,
        // and a group that is owed anything refuses with an error above.
        const out: RemoveParticipantResponse = {
          removed: each.some((r) => r.removed),
          owed: each.flatMap((r) => r.owed),
        };
        cb(null, out);
      }),
    GetOutcomes: (call, cb) => getOutcomes(perGroup, call, cb),
    ListTransactions: (call, cb) => listTransactions(perGroup, call, cb),
    ClusterStatus: (call, cb) =>
      everyGroup(perGroup, 'ClusterStatus', call, (answers) => {
        const err = firstError(answers);
        if (err !== null) return cb(err);
        const each = answers.map((a) => a.value as ClusterStatusResponse);
        const out: ClusterStatusResponse = {
          ...each[0],
          inFlight: each.reduce((n, s) => n + s.inFlight, 0),
          decided: each.reduce((n, s) => n + s.decided, 0),
          groupCount: groups,
          groups: each.map((s, g) => ({ ...s.groups[0], group: g })),
        };
        cb(null, out);
      }),
  };
  for (const method of Object.keys(g0))
    if (!(method in out)) throw new Error(`routeCoordinator: no route for Coordinator.${method}`);
  return out as unknown as CoordinatorHandlers;
}

/** A participant's batched question: each id asked of its group, the answers put back in the order asked. */
function getOutcomes(perGroup: readonly Record<string, Handler>[], call: Parameters<Handler>[0], cb: Callback): void {
  const req = call.request as { txnIds: string[]; participantId: string };
  const byGroup = new Map<number, number[]>();
  req.txnIds.forEach((id, i) => {
    const g = groupOf(id, perGroup.length);
    let list = byGroup.get(g);
    if (list === undefined) byGroup.set(g, (list = []));
    list.push(i);
  });
  if (byGroup.size === 0) return perGroup[0].GetOutcomes(call, cb);
  // Asked of one group only (what a routing participant sends): that group's answer as it is, redirect included.
  if (byGroup.size === 1) {
    const [g] = byGroup.keys();
    return perGroup[g].GetOutcomes(call, tagged(g, cb));
  }
  const answers: OutcomesResponse['answers'] = new Array(req.txnIds.length);
  let left = byGroup.size;
  for (const [g, indexes] of byGroup) {
    const sub = Object.assign(Object.create(call) as object, {
      request: { ...req, txnIds: indexes.map((i) => req.txnIds[i]) },
    }) as Parameters<Handler>[0];
    perGroup[g].GetOutcomes(
      sub,
      tagged(g, (err, value) => {
        // A group this node does not lead answers every one of its ids with its redirect, as a per-id refusal.
        const mine = err
          ? indexes.map(() => ({
              outcome: null,
              code: err.code ?? grpc.status.UNAVAILABLE,
              details: err.details ?? '',
            }))
          : (value as OutcomesResponse).answers;
        indexes.forEach((i, k) => (answers[i] = mine[k]));
        if (--left === 0) cb(null, { answers });
      }),
    );
  }
}

/**
 * One transaction: its group's. A listing for one group (`verdict-group`): that group's. A listing of all: the
 * transactions of every group this node leads (group 0's redirect when it leads none), as a client of one group asks.
 */
function listTransactions(
  perGroup: readonly Record<string, Handler>[],
  call: Parameters<Handler>[0],
  cb: Callback,
): void {
  const req = call.request as { txnId?: string; limit: number };
  const one = req.txnId ?? '';
  if (one !== '') {
    const g = groupOf(one, perGroup.length);
    return perGroup[g].ListTransactions(call, tagged(g, cb));
  }
  // One group's listing (the SDK asks each group's leader in turn, `verdict-group` naming the group): that group's
  // answer, its redirect included.
  const asked = call.metadata.get(GROUP_KEY)[0];
  if (asked !== undefined) {
    const g = typeof asked === 'string' && /^\d{1,2}$/.test(asked) ? Number(asked) : -1;
    if (g < 0 || g >= perGroup.length)
      return cb({
        code: grpc.status.INVALID_ARGUMENT,
        details: `${GROUP_KEY} ${JSON.stringify(String(asked).slice(0, 20))} is not a group of this cluster (0 to ${perGroup.length - 1})`,
      });
    return perGroup[g].ListTransactions(call, tagged(g, cb));
  }
  everyGroup(perGroup, 'ListTransactions', call, (answers) => {
    const led = answers.filter((a) => a.err === null || a.err === undefined);
    if (led.length === 0) return cb(answers[0].err);
    const limit = req.limit > 0 ? Math.min(req.limit, 10_000) : 1_000;
    const out: ListTransactionsResponse = {
      transactions: led.flatMap((a) => (a.value as ListTransactionsResponse).transactions).slice(0, limit),
    };
    cb(null, out);
  });
}

/**
 * The Sagas handlers of every group behind one door: a saga goes to groupOf(saga id); a listing pages through every
 * group's saga table (listSagas).
 */
export function routeSagas(perGroupTyped: readonly SagasHandlers[]): SagasHandlers {
  const perGroup = perGroupTyped as unknown as readonly Record<string, Handler>[];
  const sagaIdOf = (r: unknown): string => (r as { sagaId: string }).sagaId;
  const out: Record<string, Handler> = {
    StartSaga: byId(perGroup, 'StartSaga', sagaIdOf),
    SagaStatus: byId(perGroup, 'SagaStatus', sagaIdOf),
    RetrySaga: byId(perGroup, 'RetrySaga', sagaIdOf),
    ResolveSaga: byId(perGroup, 'ResolveSaga', sagaIdOf),
    ListSagas: (call, cb) => listSagas(perGroup, call, cb, 0, ''),
    // Each group answers every id from its own table; a saga's state is the answer of its group.
    SagaStates: (call, cb) =>
      everyGroup(perGroup, 'SagaStates', call, (answers) => {
        const err = firstError(answers);
        if (err) return cb(err);
        const ids = (call.request as { sagaIds: string[] }).sagaIds;
        const of = (g: number): SagaStatesResponse['sagas'] => (answers[g].value as SagaStatesResponse).sagas;
        cb(null, { sagas: ids.map((id, i) => of(groupOf(id, perGroup.length))[i]) });
      }),
  };
  return out as unknown as SagasHandlers;
}

/** A listing's page token over groups: the group of the page, a dot, and that group's own token ('' its first). */
const GROUP_PAGE_TOKEN = /^(\d{1,2})\.(\d{0,16})$/;

/**
 * ListSagas over every group: each group's saga table in turn (any node
 * answers from what it applied), group 0's first. A page holds the sagas of
 * one group, so each group's bound on a page's bytes holds; a group with
 * none matching is passed over within the same call. The next page's token
 * names the group and that group's own token.
 */
function listSagas(
  perGroup: readonly Record<string, Handler>[],
  call: Parameters<Handler>[0],
  cb: Callback,
  from: number,
  fromToken: string,
): void {
  const req = call.request as { stuckOnly: boolean; limit: number; pageToken: string };
  let g = from;
  let token = fromToken;
  if (from === 0 && fromToken === '' && req.pageToken !== '') {
    const m = GROUP_PAGE_TOKEN.exec(req.pageToken);
    if (m === null || Number(m[1]) >= perGroup.length)
      return cb({
        code: grpc.status.INVALID_ARGUMENT,
        details: `page_token ${JSON.stringify(req.pageToken.slice(0, 40))} is not one this cluster gave: pass next_page_token of the page before, or nothing for the first page`,
      });
    g = Number(m[1]);
    token = m[2];
  }
  const sub = Object.assign(Object.create(call) as object, {
    request: { ...req, pageToken: token },
  }) as Parameters<Handler>[0];
  perGroup[g].ListSagas(
    sub,
    tagged(g, (err, value) => {
      if (err) return cb(err);
      const page = value as { sagas: unknown[]; nextPageToken: string };
      if (page.nextPageToken !== '') return cb(null, { ...page, nextPageToken: `${g}.${page.nextPageToken}` });
      if (g + 1 >= perGroup.length) return cb(null, page);
      if (page.sagas.length > 0) return cb(null, { ...page, nextPageToken: `${g + 1}.` });
      listSagas(perGroup, call, cb, g + 1, '');
    }),
  );
}
