// `verdict txn ...` and `verdict participants`: the application SDK
// (src/client) driven from a shell. Exit codes let scripts tell outcomes
// apart: 0 committed (or a query answered), 2 aborted, 3 outcome unknown
// (ask again with `verdict txn outcome ID`), 1 any other error, 64 usage.
import { VerdictClient } from '../client/client.ts';
import { OutcomeUnknownError, VerdictError } from '../client/errors.ts';
import type { OutcomeResult } from '../client/transaction.ts';
import { bool, flag, UsageError } from './args.ts';
import { endpoints } from './status.ts';

export const EXIT_ERROR = 1;
export const EXIT_ABORTED = 2;
export const EXIT_OUTCOME_UNKNOWN = 3;

export const TXN_HELP = `  verdict txn commit --participant ID[=JSON] ... [--txn ID] [--timeout-ms N] [--json]
                                      begin and commit one transaction; exit 2 if it aborts, 3 if its outcome is unknown
  verdict txn abort ID [--reason TEXT] [--json]   abort a transaction (answers the outcome)
  verdict txn outcome ID [--json]     what the cluster decided for a transaction
  verdict txn list [--in-flight] [--limit N] [--json]   the transactions the cluster knows
  verdict txn show ID [--json]        one transaction: outcome, phase, age, and each participant's vote, ACK and retries
  verdict participants [--json]       the registered participants
  (each also takes --deadline-ms N: how long one request may take, retries included; default 10000)
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
    default:
      throw new UsageError(`usage: verdict txn commit|abort|outcome|list|show ...; run verdict txn --help`);
  }
}

export async function participantsCommand(args: string[]): Promise<void> {
  return withClient(args, async (client, rest) => {
    const json = bool(rest, '--json');
    noMore(rest);
    const ps = await client.participants();
    if (json) return print(JSON.stringify(ps, null, 2));
    if (ps.length === 0) return print('(no participants registered)');
    table([['PARTICIPANT', 'ENDPOINT', 'REGISTERED'], ...ps.map((p) => [p.participantId, p.endpoint, new Date(p.registeredAtMs).toISOString()])]);
  });
}

async function commit(client: VerdictClient, args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const txnId = flag(args, '--txn');
  const timeoutRaw = flag(args, '--timeout-ms');
  const timeoutMs = timeoutRaw === undefined ? undefined : Number(timeoutRaw);
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) throw new UsageError('--timeout-ms needs a positive integer');
  const enlistments = flags(args, '--participant').map(parseParticipant);
  noMore(args);
  if (enlistments.length === 0) throw new UsageError('verdict txn commit needs at least one --participant ID[=JSON]');
  const tx = await client.begin({ txnId, timeoutMs });
  for (const [id, payload] of enlistments) tx.enlist(id, payload);
  const r = await tx.commit();
  if (json) print(JSON.stringify(r, null, 2));
  else print(describeOutcome(r));
  if (r.outcome === 'ABORTED') process.exitCode = EXIT_ABORTED;
}

async function abort(client: VerdictClient, args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const reason = flag(args, '--reason') ?? 'aborted by verdict txn abort';
  const txnId = oneId(args, 'usage: verdict txn abort ID [--reason TEXT]');
  const r = await client.abort(txnId, reason);
  print(json ? JSON.stringify(r, null, 2) : describeOutcome(r));
}

async function outcome(client: VerdictClient, args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const txnId = oneId(args, 'usage: verdict txn outcome ID');
  const r = await client.outcome(txnId);
  print(json ? JSON.stringify(r, null, 2) : describeOutcome(r));
}

async function list(client: VerdictClient, args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const inFlight = bool(args, '--in-flight');
  const limitRaw = flag(args, '--limit');
  const limit = limitRaw === undefined ? 0 : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 0) throw new UsageError('--limit needs a non-negative integer');
  noMore(args);
  const txns = await client.transactions({ inFlight, limit });
  if (json) return print(JSON.stringify(txns, null, 2));
  if (txns.length === 0) return print(inFlight ? '(no transactions in flight)' : '(no transactions)');
  const rows = [['TXN', 'OUTCOME', 'PHASE', 'AGE', 'DECISION', 'PARTICIPANTS', 'REASON']];
  for (const t of txns) {
    const ps = t.participants.map((p) => `${p.participantId}:${p.vote || '-'}${p.acked ? '+ack' : ''}`).join(',');
    rows.push([t.txnId, t.outcome, t.phase, age(t.ageMs), t.decisionIndex ? String(t.decisionIndex) : '', ps, t.reason]);
  }
  table(rows);
}

/** The most ListTransactions returns; `show` looks for the id among them. */
const LIST_LIMIT_MAX = 10_000;

/**
 * What the cluster knows of one transaction: its outcome from applied state
 * (GetOutcome) and, while the leader still tracks it (undecided, or decided
 * and not yet acknowledged by every participant), each participant's vote,
 * ACK and DECISION retries (ListTransactions).
 */
async function show(client: VerdictClient, args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const txnId = oneId(args, 'usage: verdict txn show ID [--json]');
  const [o, listed] = await Promise.all([client.outcome(txnId), client.transactions({ limit: LIST_LIMIT_MAX })]);
  const t = listed.find((x) => x.txnId === txnId);
  const known = t !== undefined || o.outcome !== 'UNKNOWN';
  if (json) {
    print(JSON.stringify({ txnId, outcome: o.outcome, reason: t?.reason || o.reason, decisionIndex: o.decisionIndex || t?.decisionIndex || 0, phase: t?.phase ?? null, ageMs: t?.ageMs ?? null, participants: t?.participants ?? null }, null, 2));
  } else {
    print(`transaction  ${txnId}`);
    print(`outcome      ${o.outcome}${o.decisionIndex ? ` (decision index ${o.decisionIndex})` : ''}`);
    const reason = t?.reason || o.reason;
    if (reason) print(`reason       ${reason}`);
    if (t) {
      print(`phase        ${t.phase}`);
      print(`age          ${age(t.ageMs)}`);
      print('');
      const rows = [['PARTICIPANT', 'VOTE', 'ACKED', 'RETRIES']];
      for (const p of t.participants) rows.push([p.participantId, p.vote || '-', p.acked ? 'yes' : 'no', String(p.retries)]);
      table(rows);
    } else if (known) {
      print('participants (not tracked any more: every participant acknowledged the decision, or it was a presumed abort)');
    } else {
      print('never heard of, or forgotten after every participant acknowledged it');
    }
  }
  if (!known) process.exitCode = EXIT_ERROR;
}

/** Runs one subcommand with a client, turning the SDK's errors into one line and an exit code. */
async function withClient(args: string[], f: (client: VerdictClient, rest: string[]) => Promise<void>): Promise<void> {
  const deadlineRaw = flag(args, '--deadline-ms');
  const deadlineMs = deadlineRaw === undefined ? undefined : Number(deadlineRaw);
  if (deadlineMs !== undefined && !(Number.isInteger(deadlineMs) && deadlineMs > 0)) throw new UsageError('--deadline-ms needs a positive integer');
  const client = new VerdictClient({ endpoints: endpoints(args), deadlineMs });
  try {
    await f(client, args);
  } catch (err) {
    if (err instanceof OutcomeUnknownError) {
      process.stderr.write(`verdict: ${err.message}; run: verdict txn outcome ${err.txnId}\n`);
      process.exitCode = EXIT_OUTCOME_UNKNOWN;
    } else if (err instanceof VerdictError) {
      process.stderr.write(`verdict: ${err.message}\n`);
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
  if (r.outcome === 'UNKNOWN') return `UNKNOWN ${r.txnId}: never heard of, or forgotten after every participant acknowledged it`;
  return `${r.outcome} ${r.txnId}${index}${reason}`;
}

/** Every value of a repeatable flag, removed from args. */
function flags(args: string[], name: string): string[] {
  const values: string[] = [];
  for (let v = flag(args, name); v !== undefined; v = flag(args, name)) values.push(v);
  return values;
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

function table(rows: string[][]): void {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) print(r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd());
}

function print(line: string): void {
  process.stdout.write(line + '\n');
}
