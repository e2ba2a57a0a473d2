// `verdict txn ...`, `verdict participants` and `verdict participant remove`:
// the application SDK (src/client) driven from a shell. Exit codes let
// scripts tell outcomes apart: 0 committed (or a query answered), 2 aborted,
// 3 outcome unknown (ask again with `verdict txn outcome ID`), 1 any other
// error, 64 usage. One rule for every command about one transaction: an id
// the cluster does not know (never seen, or forgotten) exits 1.
import { printable } from './terminal-text.ts';
import { hostname, userInfo } from 'node:os';
import { VerdictClient, type TransactionInfo } from '../client/client.ts';
import { AcksPendingError, OutcomeUnknownError, VerdictError } from '../client/errors.ts';
import type { CommitResult, OutcomeResult } from '../client/transaction.ts';
import { bool, flag, flagAll, UsageError } from './args.ts';
import { commandTimeoutMs, requireReachable } from './reach.ts';
import { endpoints } from './status.ts';
import { clientCredentials } from './client-credentials.ts';
import { historyLines, historyNotes, historyOutcome, historyRows, readHistory, removalText } from './history.ts';
import { HistoryQueryError, parseHistorySearch, type HistorySearchText } from '../history/query.ts';
import { HISTORY_LIMIT_MAX, type HistoryQuery } from '../history/record.ts';

export const EXIT_ERROR = 1;
export const EXIT_ABORTED = 2;
export const EXIT_OUTCOME_UNKNOWN = 3;
export const EXIT_ACKS_PENDING = 4;

export const TXN_HELP = `  verdict txn commit --participant ID[=JSON] ... [--txn ID] [--txn-timeout-ms N] [--await-acks-ms N] [--json]
                                      begin and commit one transaction; exit 2 if it aborts, 3 if its outcome is unknown;
                                      with --await-acks-ms, COMMITTED is printed once every participant applied it,
                                      exit 4 if some had not within N ms (the commit stands)
  verdict txn abort ID [--reason TEXT] [--json]   abort a transaction (answers the outcome)
  verdict txn outcome ID [--json]     what the cluster decided for a transaction
  verdict txn list [--in-flight|--in-doubt|--unacked|--heuristic] [--limit N] [--json]
                                      the transactions the cluster knows: being worked on; undecided past the
                                      in-doubt threshold; decided and not acknowledged by all; with a heuristic
                                      outcome (HEURCOM, HEURRB, HEURMIX, HEURHAZ) or an operator's resolution
  verdict txn list --since T [--until T] [--participant ID] [--outcome committed|aborted] [--kind txn|saga|all] [--limit N] [--json]
                                      decided transactions from the history of the node answering (any node),
                                      newest first; T is a time ago (30m, 24h, 7d) or ISO (2026-12-04T12:00:00Z);
                                      with --participant ID also the sagas that called ID as a step service
                                      (--kind txn: transactions only); --limit 1-1000, default 100
  verdict txn show ID [--json]        one transaction: outcome, phase, age, each participant's vote, ACK and
                                      retries, heuristic outcomes and operators' resolutions, and its history
                                      record (decision time, ACKs, operator acts, what the leader saw)
  verdict txn resolve ID --commit|--abort --reason TEXT [--operator WHO] [--force-unknown] [--json]
                                      an operator's act, recorded in the log with who ($USER@host by default),
                                      when and why: --abort decides an undecided transaction; --commit is refused
                                      unless every participant voted YES (AC2); a decision is never reversed;
                                      an id the cluster has no record of is refused unless --force-unknown
  exit codes: 0 done (or answered), 1 error or a transaction id the cluster does not know (outcome, show,
  resolve), 2 aborted (commit), 3 outcome unknown (commit: ask again with txn outcome), 4 committed but
  not yet applied by every participant (commit --await-acks-ms), 64 usage
  (each also takes --timeout-ms N: how long to wait for the cluster, retries included; default 10000)
`;

export const PARTICIPANTS_HELP = `  verdict participants [--json]       the registered participants: endpoint, whether the leader's stream to each
                                      is open, and how many of its YES votes wait for a decision or an ACK
  verdict participant remove ID [--operator WHO] [--json]
                                      unregister a participant (admin); refused while it has transactions in doubt
  verdict participant remove ID --force --reason TEXT [--operator WHO] [--json]
                                      a participant gone for good (admin): removed although decisions still name it;
                                      they stay in the log for it (GetOutcome answers them) and are no longer delivered
  (each also takes --timeout-ms N: how long to wait for the cluster, retries included; default 10000)
`;

export async function txnCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  switch (sub) {
    case 'commit':
      return withClient(args, commit);
    case 'abort':
      return withClient(args, abort);
    case 'outcome':
      return withClient(args, outcome);
    case 'list':
      return withClient(args, list);
    case 'show':
      return withClient(args, show);
    case 'resolve':
      return withClient(args, resolve);
    default:
      throw new UsageError(`usage: verdict txn commit|abort|outcome|list|show|resolve ...; run verdict txn --help`);
  }
}

export async function participantsCommand(args: string[]): Promise<void> {
  return withClient(args, async (client, rest) => {
    const json = bool(rest, '--json');
    noMore(rest);
    const ps = await client.participants({ withActivity: true });
    if (json) return printJson(ps);
    if (ps.length === 0) return print('(no participants registered)');
    const nowMs = Date.now();
    // The leader's connection says whether a participant is reachable; the
    // last contact alone made every idle participant look dead.
    table([
      // SERVES: the optional protocol methods it registered; without Status its transactions commit the classic way.
      ['PARTICIPANT', 'KIND', 'ENDPOINT', 'REGISTERED', 'CONNECTION', 'LAST CONTACT', 'IN DOUBT', 'SERVES'],
      ...ps.map((p) => [
        p.participantId,
        p.resourceKind || 'unknown',
        p.endpoint,
        new Date(p.registeredAtMs).toISOString(),
        p.connection || '?',
        p.lastSeenAtMs ? `${age(Math.max(0, nowMs - p.lastSeenAtMs))} ago` : 'none since the leader took over',
        String(p.inDoubt ?? 0),
        p.serves.length > 0 ? p.serves.join(',') : '-',
      ]),
    ]);
  });
}

/**
 * `verdict participant remove ID`: unregister a participant (admin); the cluster refuses while it has transactions in
 * doubt.
 */
export async function participantRemoveCommand(args: string[]): Promise<void> {
  return withClient(args, async (client, rest) => {
    const json = bool(rest, '--json');
    const force = bool(rest, '--force');
    const reason = flag(rest, '--reason');
    const operator = flag(rest, '--operator') ?? defaultOperator();
    const id = oneId(rest, 'usage: verdict participant remove ID [--force --reason TEXT] [--operator WHO] [--json]');
    if (force && (reason === undefined || reason.trim() === ''))
      throw new UsageError(
        'verdict participant remove --force needs --reason TEXT: it is recorded in the log with who asked and when',
      );
    if (!force && reason !== undefined)
      throw new UsageError('--reason goes with --force (a plain remove records who asked, not why)');
    const { removed, owed } = await client.removeParticipantWith(id, operator, force ? { force, reason } : {});
    if (json) return printJson({ participantId: id, removed, owed });
    if (!removed) return print(`participant ${id} is not registered; nothing to remove`);
    print(`removed participant ${id}`);
    if (owed.length > 0)
      print(
        `${owed.length} decision(s) it did not acknowledge stay in the log for it, no longer delivered: ${owed.slice(0, 20).join(', ')}${owed.length > 20 ? ' …' : ''}`,
      );
  });
}

async function commit(client: VerdictClient, args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const txnId = flag(args, '--txn');
  // The transaction's own deadline, which the cluster enforces (not how long this command waits: --timeout-ms).
  const timeoutRaw = flag(args, '--txn-timeout-ms');
  const timeoutMs = timeoutRaw === undefined ? undefined : Number(timeoutRaw);
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0))
    throw new UsageError('--txn-timeout-ms needs a positive integer (milliseconds)');
  const awaitRaw = flag(args, '--await-acks-ms');
  const awaitMs = awaitRaw === undefined ? undefined : Number(awaitRaw);
  if (awaitMs !== undefined && !(Number.isInteger(awaitMs) && awaitMs > 0))
    throw new UsageError('--await-acks-ms needs a positive integer (milliseconds)');
  const enlistments = flagAll(args, '--participant').map(parseParticipant);
  noMore(args);
  if (enlistments.length === 0) throw new UsageError('verdict txn commit needs at least one --participant ID[=JSON]');
  const tx = await client.begin({ txnId, timeoutMs });
  for (const [id, payload] of enlistments) tx.enlist(id, payload);
  let r: CommitResult;
  try {
    r = await tx.commit(awaitMs === undefined ? {} : { awaitAcks: { timeoutMs: awaitMs } });
  } catch (err) {
    if (!(err instanceof AcksPendingError)) throw err;
    if (json) printJson({ ...err.result, acksPending: err.pending });
    else
      print(
        `${describeOutcome(err.result)}; not yet applied by ${err.pending.join(', ')} after ${err.waitedMs} ms (the cluster keeps delivering it)`,
      );
    process.exitCode = EXIT_ACKS_PENDING;
    return;
  }
  if (json) printJson(r);
  else print(describeOutcome(r));
  if (r.outcome === 'ABORTED') process.exitCode = EXIT_ABORTED;
}

async function abort(client: VerdictClient, args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const reason = flag(args, '--reason') ?? 'aborted by verdict txn abort';
  const txnId = oneId(args, 'usage: verdict txn abort ID [--reason TEXT]');
  const r = await client.abort(txnId, reason);
  if (json) printJson(r);
  else print(describeOutcome(r));
}

async function outcome(client: VerdictClient, args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const txnId = oneId(args, 'usage: verdict txn outcome ID');
  const r = await client.outcome(txnId);
  if (json) printJson(r);
  else print(describeOutcome(r));
  // The rule for every command about one transaction: an id the cluster does not know exits 1.
  if (r.outcome === 'UNKNOWN') process.exitCode = EXIT_ERROR;
}

async function list(client: VerdictClient, args: string[], addrs: string[]): Promise<void> {
  const json = bool(args, '--json');
  const search = {
    since: flag(args, '--since'),
    until: flag(args, '--until'),
    participant: flag(args, '--participant'),
    outcome: flag(args, '--outcome'),
  };
  const kind = flag(args, '--kind');
  if (Object.values(search).some((v) => v !== undefined) || kind !== undefined)
    return listHistory(args, addrs, json, search, kind);
  const filters = {
    inFlight: bool(args, '--in-flight'),
    inDoubt: bool(args, '--in-doubt'),
    unacked: bool(args, '--unacked'),
    heuristic: bool(args, '--heuristic'),
  };
  const chosen = Object.entries(filters).filter(([, on]) => on);
  if (chosen.length > 1) throw new UsageError('give at most one of --in-flight, --in-doubt, --unacked, --heuristic');
  const limitRaw = flag(args, '--limit');
  const limit = limitRaw === undefined ? 0 : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 0) throw new UsageError('--limit needs a non-negative integer');
  noMore(args);
  const txns = await client.transactions({ ...filters, limit });
  if (json) return printJson(txns);
  if (txns.length === 0) {
    const what = {
      inFlight: 'in flight',
      inDoubt: 'in doubt',
      unacked: 'waiting for an ACK',
      heuristic: 'with a heuristic outcome or an operator resolution',
    }[chosen[0]?.[0] ?? ''] as string | undefined;
    return print(what ? `(no transactions ${what})` : '(no transactions)');
  }
  // With decision groups, each transaction's group after its id.
  const grouped = client.connection.routes.groups > 1;
  const rows = [
    [
      'TXN',
      ...(grouped ? ['GROUP'] : []),
      'OUTCOME',
      'PHASE',
      'AGE',
      'DECISION',
      'PARTICIPANTS',
      'HEURISTIC',
      'REASON',
    ],
  ];
  for (const t of txns) {
    const ps = t.participants.map((p) => `${p.participantId}:${p.vote || '-'}${p.acked ? '+ack' : ''}`).join(',');
    rows.push([
      t.txnId,
      ...(grouped ? [String(t.group)] : []),
      t.outcome,
      t.phase,
      age(t.ageMs),
      t.decisionIndex ? String(t.decisionIndex) : '',
      ps,
      incidents(t),
      t.reason,
    ]);
  }
  table(rows);
}

/** Each participant removed with --force, as its row says it. */
function removedBy(
  removals: readonly { participantId: string; operator: string; atMs: number; reason: string }[],
): Map<string, string> {
  return new Map(removals.map((r) => [r.participantId, removalText(r)]));
}

/** `txn list --since ...`: the history of the first node that answers, newest first. */
async function listHistory(
  args: string[],
  addrs: string[],
  json: boolean,
  search: Omit<HistorySearchText, 'limit'>,
  kindText: string | undefined,
): Promise<void> {
  const other = ['--in-flight', '--in-doubt', '--unacked', '--heuristic'].find((f) => args.includes(f));
  if (other !== undefined)
    throw new UsageError(
      `${other} lists what the leader tracks now; --since, --until, --participant and --outcome search the history: give one kind`,
    );
  if (search.since === undefined)
    throw new UsageError('a history search needs --since T (a time ago, e.g. 24h, or an ISO time)');
  let q: HistoryQuery;
  try {
    q = parseHistorySearch({ ...search, limit: flag(args, '--limit') }, Date.now(), HISTORY_FLAG_NAMES);
  } catch (err) {
    if (err instanceof HistoryQueryError) throw new UsageError(err.message);
    throw err;
  }
  const kind = historyKind(kindText, q);
  noMore(args);
  const page = await readHistory(addrs, {
    sinceAtMs: q.sinceAtMs ?? 0,
    untilAtMs: q.untilAtMs ?? 0,
    participantId: q.participantId ?? '',
    outcome: q.outcome ?? '',
    kind,
    limit: q.limit ?? 0,
  });
  if (json) return printJson(page);
  for (const n of historyNotes(page)) process.stderr.write(`verdict: ${printable(n)}\n`);
  if (page.records.length === 0) print(`(no transactions decided in that range in node ${page.nodeId}'s history)`);
  else table(historyRows(page.records, page.groups));
  if (page.truncated) print(`(more matched: narrow the range or raise --limit, at most ${HISTORY_LIMIT_MAX})`);
}

/**
 * What a history search lists: `--kind txn|saga|all`; by default
 * transactions, and with --participant ID also the sagas that called ID as
 * a step service (what happened at ID). An outcome filter is a transaction's.
 */
function historyKind(raw: string | undefined, q: HistoryQuery): '' | 'txn' | 'saga' {
  if (raw === undefined) return q.participantId !== undefined && q.outcome === undefined ? '' : 'txn';
  if (raw === 'txn' || raw === 'saga') return raw;
  if (raw === 'all') return '';
  throw new UsageError(`--kind "${raw}" is not txn, saga or all`);
}

const HISTORY_FLAG_NAMES = {
  since: '--since',
  until: '--until',
  participant: '--participant',
  outcome: '--outcome',
  limit: '--limit',
};

/** The heuristic column: `shop:HEURMIX` per report, `resolved-by:bob` per operator act. */
function incidents(t: TransactionInfo): string {
  return [
    ...t.heuristics.map((h) => `${h.participantId}:${h.kind}`),
    ...t.resolutions.map((r) => `resolved-by:${r.operator}`),
  ].join(',');
}

/** Who performs an operator's act: --operator, or $USER@hostname. */
export function defaultOperator(env: NodeJS.ProcessEnv = process.env): string {
  let user = env.USER ?? env.LOGNAME ?? '';
  if (user === '') {
    try {
      user = userInfo().username;
    } catch {
      user = 'unknown';
    }
  }
  return `${user}@${hostname()}`;
}

/**
 * `verdict txn resolve ID --commit|--abort --reason TEXT`: the operator's act
 * on the cluster side, recorded in the log with who, when and why. The
 * cluster refuses what would break AC2 or R1 and says why (exit 1).
 */
async function resolve(client: VerdictClient, args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const commit = bool(args, '--commit');
  const abortIt = bool(args, '--abort');
  const forceUnknown = bool(args, '--force-unknown');
  const reason = flag(args, '--reason');
  const operator = flag(args, '--operator') ?? defaultOperator();
  const usage = 'usage: verdict txn resolve ID --commit|--abort --reason TEXT [--operator WHO] [--force-unknown]';
  const txnId = oneId(args, usage);
  if (commit === abortIt) throw new UsageError(`give exactly one of --commit and --abort; ${usage}`);
  if (reason === undefined || reason.trim() === '')
    throw new UsageError(`--reason TEXT is required: it is recorded in the log with who asked and when; ${usage}`);
  if (operator.trim() === '') throw new UsageError('--operator must not be empty');
  const r = await client.resolve(txnId, commit ? 'commit' : 'abort', reason, operator, { forceUnknown });
  if (json) return printJson(r);
  print(`${describeOutcome(r.outcome)}`);
  print(
    r.decided
      ? `decided by ${r.operator}'s resolution (recorded in the log)`
      : `already decided so; ${r.operator}'s request is recorded in the log`,
  );
}

/**
 * What the cluster knows of one transaction: its outcome from applied state
 * (GetOutcome) and, while the leader still tracks it (undecided, or decided
 * and not yet acknowledged by every participant), each participant's vote,
 * ACK and DECISION retries (ListTransactions).
 */
async function show(client: VerdictClient, args: string[], addrs: string[]): Promise<void> {
  const json = bool(args, '--json');
  const txnId = oneId(args, 'usage: verdict txn show ID [--json]');
  // The history is the node's own record beside the cluster's answer: a node that cannot give it (an older version)
  // leaves it out, and says why.
  const [o, listed, page] = await Promise.all([
    client.outcome(txnId),
    client.transactions({ txnId }),
    readHistory(addrs, { txnId }).catch((err: Error) => ({
      nodeId: '',
      records: [],
      lacks: [],
      enabled: false,
      unread: err.message,
    })),
  ]);
  const t = listed.find((x) => x.txnId === txnId);
  const h = page.records[0];
  const known = t !== undefined || o.outcome !== 'UNKNOWN' || h !== undefined;
  const tracked = t !== undefined && t.phase !== 'decided';
  if (json) {
    printJson({
      txnId,
      outcome: o.outcome,
      reason: t?.reason || o.reason,
      decisionIndex: o.decisionIndex || t?.decisionIndex || 0,
      phase: t?.phase ?? null,
      ageMs: t?.ageMs ?? null,
      participants: tracked ? t.participants : null,
      heuristics: t?.heuristics ?? [],
      resolutions: t?.resolutions ?? [],
      removals: t?.removals ?? [],
      history: h ?? null,
      historyNode: page.nodeId,
      historyLacks: page.lacks,
    });
  } else {
    print(`transaction  ${txnId}`);
    // Forgotten past the tombstones, the outcome is still in the history.
    const outcomeText =
      o.outcome === 'UNKNOWN' && h !== undefined
        ? `${historyOutcome(h.outcome)} (from node ${page.nodeId}'s history)`
        : o.outcome;
    print(`outcome      ${outcomeText}${o.decisionIndex ? ` (decision index ${o.decisionIndex})` : ''}`);
    const reason = t?.reason || o.reason;
    if (reason) print(`reason       ${reason}`);
    if (tracked) {
      print(`phase        ${t.phase}`);
      print(`age          ${age(t.ageMs)}`);
      print('');
      const gaps = t.participants.some((p) => p.unimplemented !== '');
      const removed = removedBy(t.removals);
      const rows = [
        [
          'PARTICIPANT',
          'VOTE',
          'ACKED',
          'RETRIES',
          ...(gaps ? ['PROBLEM'] : []),
          ...(removed.size > 0 ? ['REMOVED'] : []),
        ],
      ];
      // A presumed abort needs no ACK (R5): "no" there would read as a stuck participant.
      const ackOf = (acked: boolean): string => (acked ? 'yes' : t.phase === 'aborted' ? 'not needed' : 'no');
      const problem = (method: string): string =>
        method === '' ? '' : `does not implement ${method} (answers UNIMPLEMENTED)`;
      for (const p of t.participants)
        rows.push([
          p.participantId,
          p.vote || '-',
          ackOf(p.acked),
          String(p.retries),
          ...(gaps ? [problem(p.unimplemented)] : []),
          ...(removed.size > 0 ? [removed.get(p.participantId) ?? ''] : []),
        ]);
      table(rows);
    } else if (t !== undefined && t.removals.length > 0 && h === undefined) {
      // Decided, owed to a participant removed with --force (so never forgotten), and no history to show it: the
      // leader's table says who removed it.
      print('');
      print(
        'participants (the decision is no longer delivered to those removed with --force; still answered if they return)',
      );
      const removed = removedBy(t.removals);
      const rows = [['PARTICIPANT', 'REMOVED']];
      for (const p of t.participants) rows.push([p.participantId, removed.get(p.participantId) ?? '']);
      table(rows);
    } else if (known && h === undefined) {
      print(
        'participants (not tracked any more: every participant acknowledged the decision, or it was a presumed abort)',
      );
    } else if (!known) {
      print('never heard of, or forgotten after every participant acknowledged it and gone from the history');
    }
    if ('unread' in page) print(`history      not read: ${page.unread}`);
    else for (const n of historyNotes(page)) print(n);
    if (h !== undefined) {
      const { lines, tables } = historyLines(h, page.nodeId, 'groups' in page ? page.groups : 1);
      print('');
      for (const l of lines) print(l);
      for (const rows of tables) {
        print('');
        table(rows);
      }
    }
    if (t && t.heuristics.length > 0) {
      print('');
      print('heuristic outcomes (a participant decided by hand, R4):');
      const rows = [['PARTICIPANT', 'KIND', 'DONE', 'DECISION', 'BY', 'AT', 'GID', 'REASON']];
      for (const h of t.heuristics)
        rows.push([
          h.participantId,
          h.kind,
          h.outcome,
          h.decision,
          h.operator,
          new Date(h.atMs).toISOString(),
          h.gid,
          h.reason,
        ]);
      table(rows);
    }
    if (t && t.resolutions.length > 0) {
      print('');
      print('operator resolutions (verdict txn resolve):');
      const rows = [['OUTCOME', 'EFFECT', 'BY', 'AT', 'REASON']];
      for (const r of t.resolutions)
        rows.push([
          r.outcome,
          r.decided ? 'decided' : 'confirmed',
          r.operator,
          new Date(r.atMs).toISOString(),
          r.reason,
        ]);
      table(rows);
    }
  }
  if (!known) process.exitCode = EXIT_ERROR;
}

/** Runs one subcommand with a client, turning the SDK's errors into one line and an exit code. */
async function withClient(
  args: string[],
  f: (client: VerdictClient, rest: string[], addrs: string[]) => Promise<void>,
): Promise<void> {
  const callTimeoutMs = commandTimeoutMs();
  const addrs = endpoints(args);
  const client = new VerdictClient({ endpoints: addrs, callTimeoutMs, credentials: clientCredentials() });
  try {
    // The SDK retries an unreachable cluster for --timeout-ms (10 s by default); the
    // reachability check beside it reports one within --timeout-ms (2 s by default), naming every
    // endpoint. It adds no round trip to the command: the two run together.
    const work = f(client, args, addrs);
    work.catch(() => {});
    await Promise.race([work, requireReachable(addrs).then(() => work)]);
  } catch (err) {
    if (err instanceof OutcomeUnknownError) {
      process.stderr.write(`verdict: ${printable(err.message)}; run: verdict txn outcome ${err.txnId}\n`);
      process.exitCode = EXIT_OUTCOME_UNKNOWN;
    } else if (err instanceof VerdictError) {
      process.stderr.write(`verdict: ${printable(err.message)}\n`);
      process.exitCode = EXIT_ERROR;
    } else throw err;
  } finally {
    client.close();
  }
}

/** `ID` or `ID=JSON`; the JSON text is checked here and sent as written. */
function parseParticipant(spec: string): [string, string | undefined] {
  const eq = spec.indexOf('=');
  const id = eq < 0 ? spec : spec.slice(0, eq);
  if (id === '') throw new UsageError(`--participant "${spec}": the participant id is empty`);
  if (eq < 0) return [id, undefined];
  const payload = spec.slice(eq + 1);
  try {
    JSON.parse(payload);
  } catch (err) {
    throw new UsageError(`--participant ${id}: the payload is not JSON (${(err as Error).message})`);
  }
  return [id, payload];
}

function describeOutcome(r: OutcomeResult): string {
  const index = r.decisionIndex ? ` at decision index ${r.decisionIndex}` : '';
  const reason = r.reason ? ` (${r.reason})` : '';
  if (r.outcome === 'UNKNOWN')
    return `UNKNOWN ${r.txnId}: never heard of, or forgotten after every participant acknowledged it`;
  return `${r.outcome} ${r.txnId}${index}${reason}`;
}

function oneId(args: string[], usage: string): string {
  const [id, ...extra] = args;
  if (id === undefined || id.startsWith('--') || extra.length > 0) throw new UsageError(usage);
  return id;
}

function noMore(args: string[]): void {
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"`);
}

function age(ms: number): string {
  if (ms < 1_000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)}m`;
  return `${Math.floor(ms / 3_600_000)}h`;
}

export function table(rows: string[][]): void {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows)
    print(
      r
        .map((c, i) => c.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    );
}

/** JSON output: JSON.stringify escapes every control character itself, and its newlines are its layout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** One line of output; control characters in it (from stored text) are shown escaped (./terminal-text.ts). */
export function print(line: string): void {
  process.stdout.write(printable(line) + '\n');
}
