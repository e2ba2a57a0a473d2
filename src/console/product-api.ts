// The console's pages of the products beside the decision table: sagas
// (list, one saga — from the node's history once the table collected it —
// retry and resolve) and leases (with the outbox relays read
// from them). The node adapts each product to the narrow interfaces below
// (src/node/operator-pages.ts), so the console imports no product.

import type { IncomingMessage } from 'node:http';
import { sagaIdProblem } from '../domain/saga-id.ts';
import { REASON_CHARS_MAX } from '../domain/text-bounds.ts';
import { quote } from '../transport/validate.ts';
import { HttpError } from './http-error.ts';
import { sagaKey, type HistorySaga } from '../history/record.ts';
import type { HistoryStore } from '../history/store.ts';

/** A saga as the console shows it: the saga product's record in the console's own words. */
export interface ConsoleSaga {
  sagaId: string;
  /** The decision group that decides it; absent in a cluster of one group. */
  group?: number;
  state: string;
  type: string;
  labels: Record<string, string>;
  startedAtMs: number;
  endedAtMs: number | null;
  /** The call it keeps retrying and how often, when it waits for someone. */
  stuck: { step: number; kind: 'action' | 'compensate'; attempts: number; lastError: string; atMs: number } | null;
  steps: {
    service: string;
    name: string;
    status: string;
    attempts: number;
    lastError: string;
    lastFailureAtMs: number;
  }[];
  timeline: {
    atMs: number;
    index: number;
    what: string;
    step: number;
    kind: string;
    detail: string;
    operator: string;
  }[];
}

/** What the console reads and does of sagas; the acts reject with a ConsoleActError. */
export interface ConsoleSagas {
  isLeader(): boolean;
  /** Sagas kept in the table, oldest start first. */
  list(): ConsoleSaga[];
  get(sagaId: string): ConsoleSaga | null;
  /**
   * The leadership of the decision group that decides `sagaId`, whose leader acts on it; absent: one group, the node's
   * driver.
   */
  driverOf?(sagaId: string): ConsoleRaft;
  retry(sagaId: string, operator: string, reason: string): Promise<ConsoleSaga | null>;
  resolve(
    sagaId: string,
    step: number,
    as: 'done' | 'compensated',
    operator: string,
    reason: string,
  ): Promise<ConsoleSaga | null>;
}

/** An act refused: `code` says how (mapped to an HTTP status here). */
export class ConsoleActError extends Error {
  constructor(
    readonly code: 'not-leader' | 'not-found' | 'precondition' | 'outcome-unknown' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

/** The leases as the lease table holds them, and its clock (cluster time). */
export interface ConsoleLeases {
  clockAtMs: number;
  leases: { name: string; holder: string; owner: string; epoch: number; expiresAtMs: number }[];
}

const SAGA_FILTERS = ['running', 'stuck', 'ended', 'all'] as const;
/** An outbox relay's lease: `<prefix>/p<partition>` (src/outbox/). */
const RELAY_LEASE = /^(.+)\/p(\d{1,5})$/;
const LIMIT_DEFAULT = 200;
const LIMIT_MAX = 1_000;

/** The node's Raft driver, as far as these pages need it (./api.ts ConsoleRaft has it). */
export interface ConsoleRaft {
  leader(): string;
  isLeader(): boolean;
}

/** What the product pages need of the console's handler (./api.ts). */
export interface ProductRouteContext {
  nodeId: string;
  /** The node's state; throws 503 while it starts. */
  ready(): { driver: ConsoleRaft; sagas?: ConsoleSagas; leases?: () => ConsoleLeases };
  leaderRef(leaderId: string): Promise<{ leaderId: string; address: string; consoleUrl: string }>;
  notHere(d: ConsoleRaft, what: string): string | null;
  notLeader(d: ConsoleRaft, what: string): HttpError;
  requireAdmin(req: IncomingMessage, what: string): void;
  operatorOf(req: IncomingMessage, body: Record<string, unknown>): string;
  /** The node's history, where a saga the table collected is still kept; null or absent when it keeps none. */
  history?: () => Pick<HistoryStore, 'query'> | null;
}

/** A saga read from the history, in the console's words (each call's failures summed over operator retries). */
export function consoleSagaOf(g: HistorySaga): ConsoleSaga {
  const callOf = (step: number): HistorySaga['calls'][number] | undefined =>
    g.calls.find((x) => x.step === step && x.kind === 'compensate' && x.attemptsTotal > 0) ??
    g.calls.find((x) => x.step === step && x.kind === 'action');
  return {
    sagaId: g.sagaId,
    state: g.state,
    type: g.type,
    labels: { ...g.labels },
    startedAtMs: g.startedAtMs,
    endedAtMs: g.endedAtMs > 0 ? g.endedAtMs : null,
    stuck: null,
    steps: g.steps.map((d) => {
      const call = callOf(d.step);
      return {
        service: d.service,
        name: d.name,
        status: d.status,
        attempts: call?.attemptsTotal ?? 0,
        lastError: call?.lastError ?? '',
        lastFailureAtMs: call?.lastFailureAtMs ?? 0,
      };
    }),
    timeline: g.timeline.map((e) => ({ ...e })),
  };
}

/**
 * The product routes: the answer of a request to one of them, or undefined
 * when the path is none of theirs. `body` reads the request's JSON body.
 */
export function productRoutes(
  c: ProductRouteContext,
): (req: IncomingMessage, url: URL, method: string, body: () => Promise<Record<string, unknown>>) => Promise<unknown> {
  function sagasOf(): ConsoleSagas {
    const { sagas } = c.ready();
    if (sagas === undefined) throw new HttpError(404, `node ${c.nodeId} runs no sagas`);
    return sagas;
  }

  function sagaIdOf(raw: string): string {
    // The saga table's own rule, so every saga the cluster started can be shown.
    const bad = sagaIdProblem(raw);
    if (bad !== null) throw new HttpError(400, bad);
    return raw;
  }

  async function sagaList(q: URLSearchParams): Promise<unknown> {
    const { driver } = c.ready();
    const sagas = sagasOf();
    const filterText = q.get('filter') ?? 'running';
    const filter = SAGA_FILTERS.find((f) => f === filterText);
    if (filter === undefined)
      throw new HttpError(400, `filter ${quote(filterText)} is not one of ${SAGA_FILTERS.join(', ')}`);
    const limitText = q.get('limit') ?? String(LIMIT_DEFAULT);
    if (!/^\d{1,5}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > LIMIT_MAX)
      throw new HttpError(400, `limit ${quote(limitText)} must be a whole number from 1 to ${LIMIT_MAX}`);
    const ended = (x: ConsoleSaga): boolean => x.state === 'finished' || x.state === 'compensated';
    const all = sagas.list();
    const chosen = all.filter(
      (x) => filter === 'all' || (filter === 'stuck' ? x.stuck !== null : filter === 'ended' ? ended(x) : !ended(x)),
    );
    return {
      nodeId: c.nodeId,
      leader: sagas.isLeader(),
      leaderRef: sagas.isLeader() ? null : await c.leaderRef(driver.leader()),
      filter,
      counts: {
        running: all.filter((x) => !ended(x)).length,
        stuck: all.filter((x) => x.stuck !== null).length,
        ended: all.filter(ended).length,
      },
      sagas: chosen.slice(0, Number(limitText)).map(({ timeline: _t, ...rest }) => rest),
    };
  }

  async function sagaOne(id: string): Promise<unknown> {
    const sagas = sagasOf();
    // The leader of the saga's decision group acts on it.
    const driver = sagas.driverOf?.(id) ?? c.ready().driver;
    const leads = sagas.driverOf !== undefined ? driver.isLeader() : sagas.isLeader();
    const x = sagas.get(id);
    if (x === null) {
      // Ended and collected from the saga table: this node's history keeps it.
      const g = (await c.history?.()?.query({ txnId: sagaKey(id) }))?.records[0]?.saga;
      if (g === undefined)
        throw new HttpError(
          404,
          `no saga ${quote(id)} is kept on node ${c.nodeId}: it never started, or it ended and was collected and is not in this node's history`,
        );
      const why = 'this saga is gone from the saga table (read from the history): nothing waits for an operator';
      return {
        nodeId: c.nodeId,
        leader: leads,
        leaderRef: await c.leaderRef(driver.leader()),
        saga: consoleSagaOf(g),
        fromHistory: true,
        actions: { retry: { offered: false, why }, resolve: { offered: false, why, step: -1, as: null } },
      };
    }
    // Retry and resolve are offered only where they can succeed: on the leader, for a saga stuck on a call.
    const here = c.notHere(driver, 'a saga act');
    const why =
      here ?? (x.stuck === null ? `this saga is ${x.state} and not stuck: nothing waits for an operator` : null);
    const resolveAs = x.stuck === null ? null : x.stuck.kind === 'action' ? 'done' : 'compensated';
    return {
      nodeId: c.nodeId,
      leader: leads,
      leaderRef: await c.leaderRef(driver.leader()),
      saga: x,
      actions: {
        retry: { offered: why === null, why: why ?? '' },
        resolve: { offered: why === null, why: why ?? '', step: x.stuck?.step ?? -1, as: resolveAs },
      },
    };
  }

  async function sagaAct(
    id: string,
    act: 'retry' | 'resolve',
    body: Record<string, unknown>,
    req: IncomingMessage,
  ): Promise<unknown> {
    const sagas = sagasOf();
    const driver = sagas.driverOf?.(id) ?? c.ready().driver;
    c.requireAdmin(req, `saga ${act}`);
    const reason = typeof body.reason === 'string' ? body.reason.trim() : '';
    if (reason === '')
      throw new HttpError(400, `a saga ${act} needs a reason: it is recorded in the log with who asked and when`);
    if (reason.length > REASON_CHARS_MAX)
      throw new HttpError(400, `the reason is limited to ${REASON_CHARS_MAX} characters`);
    const operator = c.operatorOf(req, body);
    if (!driver.isLeader()) throw c.notLeader(driver, `saga ${act}`);
    try {
      if (act === 'retry') return { sagaId: id, operator, saga: await sagas.retry(id, operator, reason) };
      const step = body.step;
      if (typeof step !== 'number' || !Number.isInteger(step) || step < 0)
        throw new HttpError(400, '"step" must be the number of the stuck step (from 0)');
      const as = body.as === 'done' ? 'done' : body.as === 'compensated' ? 'compensated' : null;
      if (as === null) throw new HttpError(400, '"as" must be "done" or "compensated"');
      return { sagaId: id, operator, saga: await sagas.resolve(id, step, as, operator, reason) };
    } catch (err) {
      if (!(err instanceof ConsoleActError)) throw err;
      if (err.code === 'not-leader') throw c.notLeader(driver, `saga ${act}`);
      throw new HttpError(
        err.code === 'not-found' ? 404 : err.code === 'invalid' ? 400 : err.code === 'outcome-unknown' ? 504 : 409,
        err.message,
      );
    }
  }

  /**
   * Leases, and outbox relays read from them: a relay holds `<prefix>/p<partition>` for each partition it publishes.
   */
  function leasesPage(): unknown {
    const { leases } = c.ready();
    if (leases === undefined) throw new HttpError(404, `node ${c.nodeId} runs no leases`);
    const { clockAtMs, leases: all } = leases();
    const rows = all
      .map((l) => ({ ...l, expiresInMs: l.expiresAtMs - clockAtMs, live: l.expiresAtMs > clockAtMs }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const relays = new Map<
      string,
      { prefix: string; holder: string; partitions: number[]; live: boolean; expiresInMs: number }
    >();
    for (const l of rows) {
      const m = RELAY_LEASE.exec(l.name);
      if (m === null || !l.live) continue;
      const key = `${m[1]}\u0000${l.holder}`;
      const r = relays.get(key) ?? {
        prefix: m[1]!,
        holder: l.holder,
        partitions: [],
        live: true,
        expiresInMs: l.expiresInMs,
      };
      r.partitions.push(Number(m[2]));
      r.expiresInMs = Math.min(r.expiresInMs, l.expiresInMs);
      relays.set(key, r);
    }
    for (const r of relays.values()) r.partitions.sort((a, b) => a - b);
    return { nodeId: c.nodeId, clockAtMs, leases: rows, relays: [...relays.values()] };
  }

  return async (req, url, method, body) => {
    const path = url.pathname;
    const get = method === 'GET' || method === 'HEAD';
    if (path === '/api/sagas' && get) return sagaList(url.searchParams);
    if (path === '/api/leases' && get) return leasesPage();
    const saga = /^\/api\/sagas\/([^/]+)$/.exec(path);
    if (saga && get) return sagaOne(sagaIdOf(decodeSegment(saga[1]!)));
    const sagaAction = /^\/api\/sagas\/([^/]+)\/(retry|resolve)$/.exec(path);
    if (sagaAction && method === 'POST')
      return sagaAct(sagaIdOf(decodeSegment(sagaAction[1]!)), sagaAction[2] as 'retry' | 'resolve', await body(), req);
    if (sagaAction) throw new HttpError(405, `${path} takes POST with a JSON body`);
    return undefined;
  };
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new HttpError(400, `the path segment ${quote(s)} is not valid percent-encoding`);
  }
}
