// The web console's JSON API and its static page, served by every node on
// its HTTP listener (metricsListen) beside /metrics. docs/console.md lists
// the routes; the page (console/ at the package root) uses nothing else, so
// curl can do what the page does.
//
// Every request is hostile input: the path, the query and the body are
// checked here and a bad one gets a JSON error naming what is wrong, never
// a stack trace. Reads are answered by any node from what it knows (the
// leader knows transactions in flight; every node knows applied decisions).
// Actions (resolve, leader transfer) go through the node's admin rule: open
// without TLS, as for the CLI; with TLS they need an admin certificate,
// presented by the browser to the HTTPS console (consoleListen, ./server.ts).
// Plain HTTP (the metrics listener) carries none, so there they are refused
// with the reason.

import { isIP } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EngineError, type CoordinatorEngine, type ListFilter, type TxnView } from '../commit/engine.ts';
import type { DecisionOutcome } from '../domain/protocol.ts';
import { isUndecidedPhase } from '../commit/engine-types.ts';
import type { DecisionTable } from '../commit/state.ts';
import { txnIdProblem } from '../domain/txn-id.ts';
import { groupOf } from '../domain/group.ts';
import type { RawNode } from '../raft/raw-node.ts';
import type { Access } from '../transport/auth.ts';
import { quote } from '../transport/validate.ts';
import { CHART_EVERY_MS, CHART_WINDOW_MS, type CommitCharts } from './charts.ts';
import { errorSentence } from './errors.ts';
import { HttpError } from './http-error.ts';
import { productRoutes, type ConsoleLeases, type ConsoleSagas } from './product-api.ts';
import type { PeerHealth } from './peer-health.ts';
import { clientCertificateName, isTlsRequest } from './server.ts';
import type { LeaderHistory, TimelineEvent, TxnTimeline } from './timeline.ts';
import { OPERATOR_CHARS_MAX, REASON_CHARS_MAX } from '../domain/text-bounds.ts';
import { packageVersion } from '../util/version.ts';
import type { HistoryQuery, HistoryStore } from '../history/store.ts';
import { HistoryQueryError, parseHistorySearch } from '../history/query.ts';
import { sagaKey } from '../history/record.ts';

/** One decision group on the cluster page: who leads it, its term and indexes on this node. */
export interface ConsoleGroup {
  group: number;
  leaderId: string;
  term: number;
  commitIndex: number;
  appliedIndex: number;
  /** Transactions in flight and decisions not yet acknowledged in this group: its leader's to know, null elsewhere. */
  inFlight: number | null;
  unacked: number | null;
}

/** One decision group's replica on this node, as the pages of transactions, participants and TCC read it. */
export interface ConsoleGroupView {
  group: number;
  driver: ConsoleRaft;
  engine: CoordinatorEngine;
  table: DecisionTable;
}

/** What the console reads of the node's config (src/node/config.ts NodeConfig has it). */
export interface ConsoleConfig {
  clusterId: string;
  nodeId: string;
  /** The config file's peers: the members until the node knows the membership. */
  peers: ReadonlyMap<string, string>;
  listen: string;
  metricsListen: string | null;
  consoleListen: string | null;
  consoleHosts: readonly string[];
}

/** What the console reads of the node's Raft driver (src/node/driver.ts Driver has it). */
export interface ConsoleRaft {
  leader(): string;
  isLeader(): boolean;
  readonly node: Pick<RawNode, 'status' | 'raft'>;
}

/**
 * The node as the console sees it once its log is recovered: a narrow
 * interface the node gives it (src/node/operator-pages.ts), so the console
 * never imports the node.
 */
export interface ConsoleNodeState {
  driver: ConsoleRaft;
  engine: CoordinatorEngine;
  table: DecisionTable;
  /** The members as the node knows them (src/node/membership.ts). */
  members: { peers(): ReadonlyMap<string, string> };
  /** Every decision group as this node sees it (docs/architecture.md, "Decision groups"); absent: one group. */
  groups?: () => ConsoleGroup[];
  /**
   * Every decision group's replica, group 0's first (its `driver`, `engine` and `table` are the ones above): the pages
   * of transactions, participants and TCC read every group. Absent: one group.
   */
  groupViews?: () => readonly ConsoleGroupView[];
  /** How long a leader transfer is waited for. */
  transferWaitMs: number;
  /**
   * Hands leadership to voter `to` and waits up to `timeoutMs` until another
   * node leads; resolves with the node that leads then ('' when none is known).
   */
  transferLeader(to: string, timeoutMs: number): Promise<string>;
  /** The saga product, when the node runs it (src/node/operator-pages.ts adapts it). */
  sagas?: ConsoleSagas;
  /** The lease table's leases, when the node runs leases. */
  leases?: () => ConsoleLeases;
}

export interface ConsoleDeps {
  cfg: ConsoleConfig;
  /**
   * Whether the node serves mutual TLS: then an action needs an admin certificate, over HTTPS (see the top of this
   * file).
   */
  tls: boolean;
  /** Who may act (src/transport/auth.ts). */
  access: Access;
  /** host:port of the HTTPS console, when there is one; named in the refusals on plain HTTP. */
  httpsConsole: () => string | null;
  /** Null until the node has recovered its log. */
  state: () => ConsoleNodeState | null;
  timeline: TxnTimeline;
  /** The node's transaction history (src/history/store.ts); null while the node starts, or when it keeps none. */
  history?: () => Pick<HistoryStore, 'query'> | null;
  leaders: LeaderHistory;
  health: PeerHealth;
  /** The leader's connection to a participant endpoint; '' when unknown. */
  connection?: (endpoint: string) => string;
  /**
   * Since when the participant at an endpoint has answered nothing this node asked (src/node/participant-link.ts); 0:
   * not waiting on it.
   */
  unansweredSinceAtMs?: (endpoint: string) => number;
  /** The last 15 minutes of commit traffic (./charts.ts). */
  charts?: CommitCharts;
  /** A participant unanswered this long is shown silent (PARTICIPANT_SILENT_AFTER_MS). */
  silentAfterMs?: number;
}

/**
 * A participant that has answered nothing asked of it for this long is shown
 * "silent". Participants answer PREPARE and DECISION in milliseconds (one
 * fsync); five seconds is past any healthy disk, and short of the engine's
 * 10 s call deadline, so a stopped process shows before its calls time out.
 */
export const PARTICIPANT_SILENT_AFTER_MS = 5_000;

const FILTERS: readonly ListFilter[] = ['in-flight', 'in-doubt', 'unacked', 'heuristic', 'all'];
const LIMIT_DEFAULT = 200;
const LIMIT_MAX = 1_000;
const BODY_BYTES_MAX = 8 * 1024;

/** The page's files: console/ two levels above this module (src/console/ or dist/console/). */
const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/console/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/console/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};
const assetCache = new Map<string, Buffer>();

function asset(name: string): Buffer | null {
  let b = assetCache.get(name);
  if (b === undefined) {
    try {
      b = readFileSync(fileURLToPath(new URL(`../../console/${name}`, import.meta.url)));
    } catch {
      return null;
    }
    assetCache.set(name, b);
  }
  return b;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res
    .writeHead(status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    })
    .end(`${JSON.stringify(body)}\n`);
}

/**
 * The console's request handler: true when it answered the request (a
 * console path), false to let the caller answer (/metrics).
 */
export function consoleHandler(deps: ConsoleDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { cfg } = deps;
  /** The members as the node knows them (src/node/membership.ts); the config's peers until the node is up. */
  const peers = (): ReadonlyMap<string, string> => deps.state()?.members.peers() ?? cfg.peers;
  const ready = (): NonNullable<ReturnType<ConsoleDeps['state']>> => {
    const s = deps.state();
    if (s === null)
      throw new HttpError(503, `node ${cfg.nodeId} is starting: its log is not recovered yet; retry in a moment`);
    return s;
  };

  const notLeader = (d: ConsoleRaft, what: string): HttpError => {
    const leader = d.leader();
    const where =
      leader !== '' && leader !== cfg.nodeId
        ? `the leader is ${leader} at ${peers().get(leader) ?? '?'}; open its console`
        : 'no leader is known yet; retry shortly';
    return new HttpError(409, `${what} runs on the leader, and node ${cfg.nodeId} is not the leader: ${where}`, {
      leaderId: leader,
    });
  };

  /**
   * The leader as this node knows it, with where its console answers (from
   * the leader's own status answer): what a follower's page links its
   * actions and leader-only figures to.
   */
  async function leaderRef(leaderId: string): Promise<{ leaderId: string; address: string; consoleUrl: string }> {
    if (leaderId === '' || leaderId === cfg.nodeId)
      return { leaderId, address: leaderId === '' ? '' : cfg.listen, consoleUrl: '' };
    const row = (await deps.health.list()).find((h) => h.id === leaderId);
    return { leaderId, address: peers().get(leaderId) ?? '', consoleUrl: row?.consoleUrl ?? '' };
  }

  /** Why an act cannot run on this node (a follower, or none leads), with where it can; null on the leader. */
  function notHere(d: ConsoleRaft, what: string): string | null {
    if (d.isLeader()) return null;
    const leader = d.leader();
    return leader === ''
      ? `${what} runs on the leader, and no leader is known yet`
      : `${what} runs on the leader, ${leader}: open its console`;
  }

  /** Every group's replica (one: the node's driver, engine and table). */
  function viewsOf(s: ConsoleNodeState): readonly ConsoleGroupView[] {
    return s.groupViews?.() ?? [{ group: 0, driver: s.driver, engine: s.engine, table: s.table }];
  }

  /** The replica of the group that decides transaction `txnId`. */
  function viewOf(s: ConsoleNodeState, txnId: string): ConsoleGroupView {
    const vs = viewsOf(s);
    return vs.length === 1 ? vs[0] : vs[groupOf(txnId, vs.length)];
  }

  /**
   * With more than one group: which groups this node leads, and a sentence on where the figures of the others are
   * (each group's leader tracks its own transactions in flight); null with one group.
   */
  async function groupsLed(
    vs: readonly ConsoleGroupView[],
    what: string,
  ): Promise<{ led: number[]; note: string; leaders: unknown[] } | null> {
    if (vs.length === 1) return null;
    const led = vs.filter((v) => v.engine.isLeader()).map((v) => v.group);
    const others = vs.filter((v) => !v.engine.isLeader());
    const leaders = await Promise.all(
      vs.map(async (v) => ({ group: v.group, leader: v.engine.isLeader(), ...(await leaderRef(v.driver.leader())) })),
    );
    const note =
      others.length === 0
        ? ''
        : `node ${cfg.nodeId} leads ${led.length === 0 ? 'no decision group' : `group${led.length > 1 ? 's' : ''} ${led.join(', ')}`} of ${vs.length}: ${what} of group${others.length > 1 ? 's' : ''} ${others.map((v) => v.group).join(', ')} ${others.length > 1 ? 'are' : 'is'} known to ${others.length > 1 ? 'their leaders' : 'its leader'} (see leaders)`;
    return { led, note, leaders };
  }

  async function cluster(req: IncomingMessage): Promise<unknown> {
    const { driver, engine, table } = ready();
    // First, as it may wait for a round of peer answers: what follows is then as fresh as they are.
    const health = new Map((await deps.health.list()).map((h) => [h.id, h]));
    const s = driver.node.status();
    const progress = new Map(s.progress.map((p) => [p.id, p]));
    const leaderId = s.softState.leader;
    deps.leaders.note(Date.now(), s.hardState.term, leaderId);
    const members = [...peers()].map(([id, address]) => {
      const p = progress.get(id);
      const h = health.get(id);
      return {
        id,
        address,
        self: id === cfg.nodeId,
        leader: id === leaderId,
        // Only the leader tracks each follower's match index; lag is how far behind its log is.
        matchIndex: p?.match ?? null,
        lag: p !== undefined && id !== cfg.nodeId ? Math.max(0, s.lastIndex - p.match) : null,
        replication: p?.state ?? null,
        learner: p?.learner ?? false,
        health:
          id === cfg.nodeId
            ? {
                up: true,
                role: s.softState.role,
                term: s.hardState.term,
                commitIndex: s.hardState.commit,
                appliedIndex: s.applied,
                lastIndex: s.lastIndex,
                version: packageVersion(),
                error: '',
                checkedAtMs: Date.now(),
              }
            : h === undefined
              ? null
              : {
                  up: h.up,
                  role: h.role,
                  term: h.term,
                  commitIndex: h.commitIndex,
                  appliedIndex: h.appliedIndex,
                  lastIndex: h.lastIndex,
                  version: h.version,
                  error: h.error,
                  checkedAtMs: h.checkedAtMs,
                  lastUpAtMs: h.lastUpAtMs,
                },
      };
    });
    const phases = engine.phases();
    const isLeader = driver.isLeader();
    const groups = ready().groups?.() ?? [];
    const allowed = actionsAllowed(req);
    // "make leader": from the leader's page, to a voter that answers and is caught up enough to be handed leadership.
    for (const m of members) {
      const why = makeLeaderRefusal(m, isLeader, allowed, s.lastIndex);
      Object.assign(m, { makeLeader: { offered: why === null, why: why ?? '' } });
    }
    return {
      clusterId: cfg.clusterId,
      nodeId: cfg.nodeId,
      version: packageVersion(),
      role: s.softState.role,
      term: s.hardState.term,
      leaderId,
      commitIndex: s.hardState.commit,
      appliedIndex: s.applied,
      lastIndex: s.lastIndex,
      members,
      leaderChanges: deps.leaders.list(),
      // In flight and unacked are the leader's to know: a follower says so (null) rather than show 0. With decision
      // groups, the sums over the groups this node leads (each group's own in `groups`), null when it leads none.
      transactions:
        groups.length > 1
          ? summedOverLed(groups, table.decisions.size)
          : isLeader
            ? {
                inFlight: phases.begun + phases.preparing + phases.deciding,
                unacked: phases.delivering,
                decisions: table.decisions.size,
                onLeader: false,
              }
            : { inFlight: null, unacked: null, decisions: table.decisions.size, onLeader: true },
      leader: await leaderRef(leaderId),
      participants: table.participants.size,
      actions: allowed,
      groups,
      nowMs: Date.now(),
    };
  }

  /** Why this page is plain HTTP on a TLS node and cannot act; null when it is not. */
  function plainOnTls(req: IncomingMessage): string | null {
    if (!deps.tls || isTlsRequest(req)) return null;
    const https = deps.httpsConsole();
    return `this node serves mutual TLS, and this page is plain HTTP, which carries no client certificate to prove an admin: ${https !== null ? `open the HTTPS console at https://${https}/ with an admin certificate in your browser` : 'set "consoleListen" for an HTTPS console (docs/console.md)'}, or use \`verdict txn resolve\` / \`verdict leader transfer\` with an admin certificate`;
  }

  function actionsAllowed(req: IncomingMessage): { allowed: boolean; why: string } {
    if (!deps.tls)
      return { allowed: true, why: 'without TLS every caller that can reach the node may act, as with the CLI' };
    const plain = plainOnTls(req);
    if (plain !== null) return { allowed: false, why: plain };
    const cn = clientCertificateName(req);
    const refused = deps.access.adminNameRefusal(cn, 'an action');
    return refused === null
      ? { allowed: true, why: `your certificate CN=${cn} is an admin (tls.adminNames)` }
      : { allowed: false, why: refused };
  }

  /**
   * The admin rule of the CLI's operator acts (src/transport/auth.ts), for the browser's certificate (none on plain
   * HTTP).
   */
  function requireAdmin(req: IncomingMessage, what: string): void {
    const refused = deps.access.adminNameOnly(clientCertificateName(req), what);
    if (refused === null) return;
    const plain = plainOnTls(req);
    throw new HttpError(403, plain !== null ? `${refused}. The page cannot present one: ${plain}` : refused);
  }

  function txnJson(v: TxnView): unknown {
    return {
      txnId: v.txnId,
      phase: v.phase,
      outcome: v.outcome,
      reason: v.reason,
      ageMs: Math.max(0, v.ageMs),
      decisionIndex: v.decisionIndex,
      participants: v.participants,
      heuristics: v.heuristics,
      resolutions: v.resolutions,
    };
  }

  async function transactions(q: URLSearchParams): Promise<unknown> {
    const s = ready();
    const { driver, engine } = s;
    const vs = viewsOf(s);
    const filterText = q.get('filter') ?? 'in-flight';
    const filter = FILTERS.find((f) => f === filterText);
    if (filter === undefined)
      throw new HttpError(400, `filter ${quote(filterText)} is not one of ${FILTERS.join(', ')}`);
    const limitText = q.get('limit') ?? String(LIMIT_DEFAULT);
    if (!/^\d{1,5}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > LIMIT_MAX)
      throw new HttpError(400, `limit ${quote(limitText)} must be a whole number from 1 to ${LIMIT_MAX}`);
    const id = q.get('id');
    let views: { v: TxnView; group: number }[];
    if (id !== null && id !== '') {
      const problem = txnIdProblem(id);
      if (problem !== null) throw new HttpError(400, `transaction id ${quote(id)}: ${problem}`);
      const gv = viewOf(s, id);
      const v = gv.engine.view(id);
      views = v === null ? [] : [{ v, group: gv.group }];
    } else views = vs.flatMap((gv) => gv.engine.list(filter, Number(limitText)).map((v) => ({ v, group: gv.group })));
    // Oldest first: the one stuck longest is what an operator looks at first.
    views.sort((a, b) => b.v.ageMs - a.v.ageMs);
    views = views.slice(0, Number(limitText));
    const groups = await groupsLed(vs, 'transactions in flight');
    if (groups !== null)
      return {
        nodeId: cfg.nodeId,
        leader: groups.led.length === vs.length,
        leaderId: driver.leader(),
        filter,
        leaderRef: groups.led.length === vs.length ? null : await leaderRef(driver.leader()),
        note: groups.note,
        groupCount: vs.length,
        groupsLed: groups.led,
        leaders: groups.leaders,
        transactions: views.map(({ v, group }) => ({ ...(txnJson(v) as object), group })),
      };
    return {
      nodeId: cfg.nodeId,
      leader: engine.isLeader(),
      leaderId: driver.leader(),
      filter,
      leaderRef: engine.isLeader() ? null : await leaderRef(driver.leader()),
      note: engine.isLeader()
        ? ''
        : `node ${cfg.nodeId} is not the leader: transactions in flight are known to the leader${driver.leader() ? ` (${driver.leader()} at ${peers().get(driver.leader()) ?? '?'})` : ''}; this list shows decisions applied here`,
      transactions: views.map(({ v }) => txnJson(v)),
    };
  }

  /**
   * This node's history: one transaction (?txn=ID) or saga (?saga=ID), or a search newest first (since, until,
   * participant, outcome, kind, limit).
   */
  async function history(q: URLSearchParams): Promise<unknown> {
    const h = deps.history?.() ?? null;
    if (h === null) {
      if (deps.state() === null) ready();
      throw new HttpError(
        404,
        `node ${cfg.nodeId} keeps no transaction history ("history": false in its config, or its history could not be opened: see its log)`,
      );
    }
    const known = ['txn', 'saga', 'since', 'until', 'participant', 'outcome', 'kind', 'limit'];
    for (const k of q.keys())
      if (!known.includes(k))
        throw new HttpError(400, `unknown search parameter ${quote(k)}: the history takes ${known.join(', ')}`);
    const txn = q.get('txn');
    const saga = q.get('saga');
    if (txn !== null && saga !== null) throw new HttpError(400, 'give txn or saga, not both');
    for (const [what, id] of [
      ['transaction', txn],
      ['saga', saga],
    ] as const) {
      const problem = id === null ? null : txnIdProblem(id);
      if (problem !== null) throw new HttpError(400, `${what} id ${quote(id ?? '')}: ${problem}`);
    }
    const kindText = q.get('kind');
    if (kindText !== null && kindText !== 'txn' && kindText !== 'saga')
      throw new HttpError(400, `kind ${quote(kindText)} is not txn or saga (leave it out for both)`);
    const text = (k: string): string | undefined => q.get(k) ?? undefined;
    let search: HistoryQuery;
    try {
      search = parseHistorySearch(
        {
          since: text('since'),
          until: text('until'),
          participant: text('participant'),
          outcome: text('outcome'),
          limit: text('limit'),
        },
        Date.now(),
        {
          since: 'since',
          until: 'until',
          participant: 'participant',
          outcome: 'outcome',
          limit: 'limit',
        },
      );
    } catch (err) {
      if (err instanceof HistoryQueryError) throw new HttpError(400, err.message);
      throw err;
    }
    if (kindText !== null) search.kind = kindText;
    const a = await h.query(txn !== null ? { txnId: txn } : saga !== null ? { txnId: sagaKey(saga) } : search);
    return { nodeId: cfg.nodeId, ...a };
  }

  async function transaction(id: string): Promise<unknown> {
    const problem = txnIdProblem(id);
    if (problem !== null) throw new HttpError(400, `transaction id ${quote(id)}: ${problem}`);
    const s = ready();
    // Its decision group's replica: that group's leader tracks it in flight, and its table holds its decision.
    const { driver, engine, table, group } = viewOf(s, id);
    const grouped = viewsOf(s).length > 1;
    const v = engine.view(id);
    const t = deps.timeline.get(id);
    // This node's history record: what is left of a transaction forgotten after every ACK, and who acted on it.
    const h = (await deps.history?.()?.query({ txnId: id }))?.records[0] ?? null;
    if (v === null && t === null && h === null) {
      const more = engine.isLeader()
        ? ''
        : ` (node ${cfg.nodeId} is not the leader; the leader may know it while it is in flight)`;
      throw new HttpError(
        404,
        `no transaction ${quote(id)} is known to node ${cfg.nodeId}: it never began, or it was forgotten after every ACK, left this node's timeline ring and is not in its history${more}`,
        {
          leaderRef: engine.isLeader() ? null : await leaderRef(driver.leader()),
        },
      );
    }
    const events = t?.events ?? [];
    // Begin is recorded with the first PREPARE; a transaction begun and not committed yet shows it from its age.
    if (v !== null && v.phase === 'begun' && events[0]?.kind !== 'begin') {
      const atMs = Date.now() - Math.max(0, v.ageMs);
      events.unshift({ atMs, kind: 'begin', participantId: '', detail: '', index: 0, count: 1, lastAtMs: atMs });
    }
    // Resolve is offered only where it can succeed: on the leader, for a transaction not decided yet.
    const resolveWhy =
      notHere(driver, 'resolve') ??
      (v === null
        ? 'this transaction is decided and forgotten: there is nothing left to resolve'
        : v.phase === 'decided' || !isUndecidedPhase(v.phase)
          ? `this transaction is decided (${v.outcome}): a decision is never changed (a participant that applied otherwise reports a heuristic outcome)`
          : null);
    return {
      nodeId: cfg.nodeId,
      ...(grouped ? { group } : {}),
      leader: engine.isLeader(),
      leaderRef: await leaderRef(driver.leader()),
      transaction: v === null ? null : txnJson(v),
      removed: removedOf(table, id),
      history: h,
      timeline: events.map(eventJson),
      timelineDropped: t?.dropped ?? 0,
      actions: { resolve: { offered: resolveWhy === null, why: resolveWhy ?? '' } },
    };
  }

  async function participants(): Promise<unknown> {
    const s = ready();
    const { driver, table } = s;
    const vs = viewsOf(s);
    // Every group this node leads: a participant's in-doubt count summed over them, its last sighting the latest.
    const activity = new Map<string, { lastSeenAtMs: number; inDoubt: number }>();
    for (const gv of vs) {
      if (!gv.engine.isLeader()) continue;
      for (const a of gv.engine.participantActivity()) {
        const was = activity.get(a.id);
        activity.set(a.id, {
          lastSeenAtMs: Math.max(was?.lastSeenAtMs ?? 0, a.lastSeenAtMs),
          inDoubt: (was?.inDoubt ?? 0) + a.inDoubt,
        });
      }
    }
    const groups = await groupsLed(vs, 'last seen and in-doubt counts');
    // With groups: the figures of the groups led here (none led: the leaders' to say).
    const isLeader = groups === null ? s.engine.isLeader() : groups.led.length > 0;
    const nowMs = Date.now();
    const silentAfterMs = deps.silentAfterMs ?? PARTICIPANT_SILENT_AFTER_MS;
    return {
      nodeId: cfg.nodeId,
      leader: isLeader,
      leaderRef: await leaderRef(driver.leader()),
      ...(groups !== null ? { groupCount: vs.length, groupsLed: groups.led, leaders: groups.leaders } : {}),
      silentAfterMs,
      nowMs,
      note:
        groups !== null
          ? groups.note
          : isLeader
            ? ''
            : `node ${cfg.nodeId} is not the leader: last seen, in-doubt counts and connections are known to the leader only`,
      participants: [...table.participants.values()].map((p) => {
        const connection = isLeader ? (deps.connection?.(p.endpoint) ?? '') : '';
        const unansweredSinceAtMs = isLeader ? (deps.unansweredSinceAtMs?.(p.endpoint) ?? 0) : 0;
        const silentForMs = unansweredSinceAtMs > 0 ? Math.max(0, nowMs - unansweredSinceAtMs) : 0;
        return {
          id: p.id,
          endpoint: p.endpoint,
          registeredAtMs: p.registeredAtMs,
          lastSeenAtMs: isLeader ? (activity.get(p.id)?.lastSeenAtMs ?? 0) : null,
          inDoubt: isLeader ? (activity.get(p.id)?.inDoubt ?? 0) : null,
          connection,
          unansweredSinceAtMs,
          // A stopped process keeps its TCP connection: silence, not the socket, says it is gone.
          state: !isLeader ? 'on the leader' : silentForMs >= silentAfterMs ? 'silent' : connection || 'idle',
          silentForMs: silentForMs >= silentAfterMs ? silentForMs : 0,
          kind: p.resourceKind,
        };
      }),
    };
  }

  /**
   * TCC participants and the reserves each holds for a transaction the
   * leader works on (it voted YES: its Try reserved, and the decision, or
   * its ACK, is still owed): what the client enlisted it with, the age, and
   * how long the cluster lets it stand (an undecided transaction is aborted
   * at its deadline). A reserve's own TTL is the participant's (its Try
   * gave it; on expiry it asks the cluster to abort): its YES carries what
   * is left of it, so the page shows when it runs out (unknown when the vote
   * carried none).
   */
  async function tcc(): Promise<unknown> {
    const s = ready();
    const { driver, table } = s;
    const vs = viewsOf(s);
    // The reserves of every group this node leads.
    const isLeader = vs.some((gv) => gv.engine.isLeader());
    const nowMs = Date.now();
    const tccs = [...table.participants.values()].filter((p) => p.resourceKind.startsWith('tcc'));
    const ids = new Set(tccs.map((p) => p.id));
    const held = vs.flatMap((gv) => (gv.engine.isLeader() ? gv.engine.heldBy(ids, TCC_RESERVES_MAX + 1) : []));
    const count = new Map<string, number>();
    for (const h of held) count.set(h.participantId, (count.get(h.participantId) ?? 0) + 1);
    return {
      nodeId: cfg.nodeId,
      leader: isLeader,
      leaderRef: await leaderRef(driver.leader()),
      nowMs,
      note: isLeader
        ? ''
        : `node ${cfg.nodeId} is not the leader: the reserves held for transactions in flight are known to the leader`,
      participants: tccs.map((p) => ({
        id: p.id,
        kind: p.resourceKind,
        endpoint: p.endpoint,
        held: isLeader ? (count.get(p.id) ?? 0) : null,
      })),
      reserves: isLeader
        ? held.slice(0, TCC_RESERVES_MAX).map((h) => ({
            participantId: h.participantId,
            txnId: h.txnId,
            phase: h.phase,
            outcome: h.outcome,
            ageMs: h.ageMs,
            deadlineInMs: h.deadlineAtMs === null ? null : h.deadlineAtMs - Date.now(),
            holds: payloadText(h.payload),
            retries: h.retries,
            // The leader's clock, like the vote's arrival it counts from; null: the vote carried no TTL.
            reserveExpiresAtMs: h.reserveExpiresAtMs,
            reserveExpiresInMs: h.reserveExpiresAtMs === null ? null : h.reserveExpiresAtMs - nowMs,
          }))
        : null,
      truncated: held.length > TCC_RESERVES_MAX,
    };
  }

  async function resolve(id: string, body: Record<string, unknown>, req: IncomingMessage): Promise<unknown> {
    const s = ready();
    requireAdmin(req, 'txn resolve');
    const problem = txnIdProblem(id);
    if (problem !== null) throw new HttpError(400, `transaction id ${quote(id)}: ${problem}`);
    // Resolved by the leader of the transaction's decision group.
    const { driver, engine } = viewOf(s, id);
    const outcome: DecisionOutcome | null =
      body.outcome === 'commit' ? 'commit' : body.outcome === 'abort' ? 'abort' : null;
    if (outcome === null) throw new HttpError(400, 'outcome must be "commit" or "abort"');
    const reason = typeof body.reason === 'string' ? body.reason.trim() : '';
    if (reason === '')
      throw new HttpError(400, 'a resolve needs a reason: it is recorded in the log with who asked and when');
    if (reason.length > REASON_CHARS_MAX)
      throw new HttpError(400, `the reason is limited to ${REASON_CHARS_MAX} characters`);
    const operator = operatorOf(req, body);
    if (!engine.isLeader()) throw notLeader(driver, 'txn resolve');
    const r = await new Promise<{ decided: boolean; outcome: string; decisionIndex: number; reason: string }>(
      (ok, fail) =>
        engine.resolve(id, outcome, { operator, reason, forceUnknown: false }, (err, res) => {
          if (err || !res) return fail(engineHttpError(err ?? new EngineError('outcome-unknown', 'no answer'), driver));
          ok({
            decided: res.decided,
            outcome: res.answer.outcome,
            decisionIndex: res.answer.decisionIndex,
            reason: res.answer.reason,
          });
        }),
    );
    return { txnId: id, operator, ...r };
  }

  async function transfer(body: Record<string, unknown>, req: IncomingMessage): Promise<unknown> {
    const { driver, transferWaitMs, transferLeader } = ready();
    requireAdmin(req, 'leader transfer');
    const to = typeof body.to === 'string' ? body.to : '';
    const known = peers();
    if (!known.has(to))
      throw new HttpError(
        400,
        `"to" must name a voter of cluster ${cfg.clusterId} (${[...known.keys()].join(', ')}), not ${quote(to)}`,
      );
    if (!driver.isLeader()) throw notLeader(driver, 'leader transfer');
    if (to === cfg.nodeId) return { leaderId: to, term: driver.node.raft.term };
    const waitMs = transferWaitMs;
    const leader = await transferLeader(to, waitMs);
    if (leader !== to)
      throw new HttpError(
        504,
        `leadership did not move to ${to} within ${waitMs} ms (${leader ? `${leader} leads` : 'no leader is known'}); is ${to} running and caught up?`,
      );
    return { leaderId: to, term: driver.node.raft.term };
  }

  function engineHttpError(err: EngineError, d: ConsoleRaft): HttpError {
    if (err.code === 'not-leader') return notLeader(d, 'this act');
    const status =
      err.code === 'invalid' ? 400 : err.code === 'exhausted' ? 503 : err.code === 'outcome-unknown' ? 504 : 409;
    return new HttpError(status, err.message);
  }

  /**
   * Who an act is recorded under: the certificate's CN (with the name typed), else the name typed; with this node and
   * the caller's address.
   */
  function operatorOf(req: IncomingMessage, body: Record<string, unknown>): string {
    const named = typeof body.operator === 'string' ? body.operator.trim().slice(0, OPERATOR_CHARS_MAX - 40) : '';
    const cn = clientCertificateName(req);
    const who = cn !== undefined ? `CN=${cn}${named ? ` (${named})` : ''}` : named || 'console user';
    return `${who} via console of ${cfg.nodeId} from ${req.socket.remoteAddress ?? '?'}`.slice(0, OPERATOR_CHARS_MAX);
  }

  const products = productRoutes({
    nodeId: cfg.nodeId,
    ready,
    leaderRef,
    notHere,
    notLeader,
    requireAdmin,
    operatorOf,
    history: deps.history,
  });

  async function route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const get = method === 'GET' || method === 'HEAD';
    if (path === '/api/cluster' && get) return send(res, 200, await cluster(req));
    if (path === '/api/transactions' && get) return send(res, 200, await transactions(url.searchParams));
    if (path === '/api/participants' && get) return send(res, 200, await participants());
    if (path === '/api/tcc' && get) return send(res, 200, await tcc());
    if (path === '/api/history' && get) return send(res, 200, await history(url.searchParams));
    const one = /^\/api\/transactions\/([^/]+)$/.exec(path);
    if (one && get) return send(res, 200, await transaction(decodeSegment(one[1]!)));
    const act = /^\/api\/transactions\/([^/]+)\/resolve$/.exec(path);
    if (act && method === 'POST')
      return send(res, 200, await resolve(decodeSegment(act[1]!), await jsonBody(req), req));
    if (path === '/api/leader/transfer' && method === 'POST')
      return send(res, 200, await transfer(await jsonBody(req), req));
    if (path === '/api/charts' && get)
      return send(res, 200, {
        nodeId: cfg.nodeId,
        everyMs: CHART_EVERY_MS,
        windowMs: CHART_WINDOW_MS,
        nowMs: Date.now(),
        samples: deps.charts?.list() ?? [],
      });
    const product = await products(req, url, method, () => jsonBody(req));
    if (product !== undefined) return send(res, 200, product);
    if (act || path === '/api/leader/transfer') throw new HttpError(405, `${path} takes POST with a JSON body`);
    if (path.startsWith('/api/'))
      throw new HttpError(404, `no console API at ${quote(path)}: see docs/console.md for the routes`);
    throw new HttpError(404, `${quote(path)} is not a console path`);
  }

  const names = consoleHostNames(cfg);
  return (req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://console.invalid');
    } catch {
      send(res, 400, { error: 'the request URL cannot be parsed' });
      return true;
    }
    const page = ASSETS[url.pathname];
    if (page === undefined && !url.pathname.startsWith('/api/')) return false;
    // Never inside another site's frame (clickjacking), on every console answer.
    res.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
    res.setHeader('X-Frame-Options', 'DENY');
    const refused = hostRefusal(req.headers.host, names);
    if (refused !== null) {
      send(res, 421, { error: refused });
      return true;
    }
    if (page !== undefined) {
      const b = asset(page.file);
      if (b === null)
        res
          .writeHead(500, { 'Content-Type': 'text/plain' })
          .end(
            `the console's ${page.file} is missing from this install (console/ ships with the package); reinstall verdict\n`,
          );
      else
        res
          .writeHead(200, {
            'Content-Type': page.type,
            'Cache-Control': 'no-cache',
            'X-Content-Type-Options': 'nosniff',
          })
          .end(req.method === 'HEAD' ? undefined : b);
      return true;
    }
    route(req, res, url).catch((err: unknown) => {
      if (res.headersSent) return;
      if (err instanceof HttpError) send(res, err.status, { error: err.message, ...err.extra });
      else
        send(res, 500, { error: `the console failed to answer: ${err instanceof Error ? err.message : String(err)}` });
    });
    return true;
  };
}

/** Reserves listed at most on the TCC page. */
const TCC_RESERVES_MAX = 500;
const PAYLOAD_CHARS_MAX = 200;

/** A payload as a person reads it: its UTF-8 text, cut; "(N bytes)" when it is not text. */
function payloadText(payload: Uint8Array): string {
  if (payload.byteLength === 0) return '';
  const text = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is looked for
  if (text.includes('\ufffd') || /[\u0000-\u0008\u000e-\u001f]/.test(text))
    return `(${payload.byteLength} bytes, not text)`;
  return text.length > PAYLOAD_CHARS_MAX ? `${text.slice(0, PAYLOAD_CHARS_MAX)}… (${payload.byteLength} bytes)` : text;
}

/**
 * The participants removed with `participant remove --force` that the
 * decision of `txnId` is still owed to, with who removed each, when and
 * why (the decision table keeps them on every node).
 */
function removedOf(
  table: DecisionTable,
  txnId: string,
): { participantId: string; operator: string; atMs: number; reason: string; index: number }[] {
  return table.owedToRemoved(txnId).flatMap((id) => {
    const r = table.removed.get(id);
    return r === undefined
      ? []
      : [{ participantId: id, operator: r.operator, atMs: r.atMs, reason: r.reason, index: r.index }];
  });
}

/** A timeline event for the page: failures as a sentence led by the gRPC code name; the raw text kept beside it. */
function eventJson(e: TimelineEvent): unknown {
  const failed = e.kind === 'no-ack' || (e.kind === 'status' && e.detail.startsWith('no answer: '));
  if (!failed || e.detail === '') return { ...e, code: '', raw: '' };
  const raw = e.kind === 'status' ? e.detail.slice('no answer: '.length) : e.detail;
  const { code, sentence } = errorSentence(raw, `participant ${e.participantId}`);
  return { ...e, detail: sentence, code, raw };
}

interface MemberRow {
  id: string;
  self: boolean;
  learner: boolean;
  matchIndex: number | null;
  health: { up: boolean } | null;
}

/** Why "make leader" is not offered for member `m` (null: it is). */
function makeLeaderRefusal(
  m: MemberRow,
  isLeader: boolean,
  allowed: { allowed: boolean; why: string },
  lastIndex: number,
): string | null {
  if (!isLeader) return 'a leader transfer runs on the leader: open its console';
  if (m.self) return 'this node leads already';
  if (!allowed.allowed) return allowed.why;
  if (m.learner) return `${m.id} is a learner: it has no vote and cannot lead`;
  if (m.health === null || !m.health.up) return `${m.id} is down: a node that does not answer cannot take over`;
  // A voter far behind would need the log shipped first: the transfer waits for that, and usually times out.
  if (m.matchIndex !== null && lastIndex - m.matchIndex > TRANSFER_LAG_MAX)
    return `${m.id} is ${lastIndex - m.matchIndex} entries behind: wait until it catches up`;
  return null;
}

/** A voter further behind than this is not offered leadership. */
const TRANSFER_LAG_MAX = 1_000;

/**
 * The host names the console answers to: those in the node's own addresses
 * (listen, metricsListen, consoleListen, the peers), localhost, and the
 * config's consoleHosts (a DNS name, a reverse proxy's). Any IP
 * literal is accepted too: DNS rebinding needs a name the attacker controls,
 * which this list never holds.
 */
export function consoleHostNames(
  cfg: Pick<ConsoleConfig, 'listen' | 'metricsListen' | 'consoleListen' | 'peers' | 'consoleHosts'>,
): ReadonlySet<string> {
  const hostOf = (address: string): string =>
    address
      .slice(0, address.lastIndexOf(':'))
      .replace(/^\[|\]$/g, '')
      .toLowerCase();
  const out = new Set(['localhost']);
  for (const a of [cfg.listen, cfg.metricsListen, cfg.consoleListen, ...cfg.peers.values()])
    if (a !== null) out.add(hostOf(a));
  for (const name of cfg.consoleHosts) out.add(name.toLowerCase());
  return out;
}

/** Why a request's Host header is refused (a name this console does not have: DNS rebinding), or null. */
export function hostRefusal(host: string | undefined, names: ReadonlySet<string>): string | null {
  if (host === undefined || host === '') return 'the request has no Host header';
  const m = /^(\[[^\]]+\]|[^:]+)(?::\d{1,5})?$/.exec(host);
  const name = (m?.[1] ?? '').replace(/^\[|\]$/g, '').toLowerCase();
  if (name !== '' && (isIP(name) !== 0 || names.has(name))) return null;
  return `Host ${JSON.stringify(host.slice(0, 100))} is not a name of this console (${[...names].join(', ')}, or an IP address); a page that rebinds its own name to this address gets no answer. Open the console by one of those names, or add the name to "consoleHosts" in the node's config`;
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new HttpError(400, `the path segment ${quote(s)} is not valid percent-encoding`);
  }
}

/** The request's JSON object body, bounded; a clear 4xx for anything else. */
function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((ok, fail) => {
    const type = req.headers['content-type'] ?? '';
    if (!/^application\/json\b/i.test(type)) {
      req.resume();
      return fail(new HttpError(415, 'send the body as application/json'));
    }
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      bytes += c.length;
      if (bytes > BODY_BYTES_MAX) {
        fail(new HttpError(413, `the body exceeds ${BODY_BYTES_MAX} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('error', () => fail(new HttpError(400, 'the request body could not be read')));
    req.on('end', () => {
      let v: unknown;
      try {
        v = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return fail(new HttpError(400, 'the body is not valid JSON'));
      }
      if (typeof v !== 'object' || v === null || Array.isArray(v))
        return fail(new HttpError(400, 'the body must be a JSON object'));
      ok(v as Record<string, unknown>);
    });
  });
}

/** The cluster page's transaction figures at G > 1: summed over the groups led here, null when it leads none. */
function summedOverLed(
  groups: readonly ConsoleGroup[],
  decisions: number,
): { inFlight: number | null; unacked: number | null; decisions: number; onLeader: boolean } {
  const led = groups.filter((g) => g.inFlight !== null);
  if (led.length === 0) return { inFlight: null, unacked: null, decisions, onLeader: true };
  return {
    inFlight: led.reduce((n, g) => n + (g.inFlight ?? 0), 0),
    unacked: led.reduce((n, g) => n + (g.unacked ?? 0), 0),
    decisions,
    onLeader: false,
  };
}
