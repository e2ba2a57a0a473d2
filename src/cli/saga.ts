// `verdict saga ...`: sagas on the decision log from a shell (docs/sagas.md).
// Exit codes: 0 done (a saga FINISHED, or a query answered), 2 a saga
// COMPENSATED (start), 1 any other error, 64 usage.

import { printable } from './terminal-text.ts';
import { SagaCaller, type SagaStatus, type SagaStepStatus } from '../client/saga.ts';
import { VerdictError } from '../client/errors.ts';
import { bool, flag, flagAll, UsageError } from './args.ts';
import { clientCredentials } from './client-credentials.ts';
import { requireReachable } from './reach.ts';
import { endpoints } from './status.ts';
import { defaultOperator, EXIT_ABORTED, EXIT_ERROR, print, printJson, table } from './txn.ts';
import { historyNotes, readHistory } from './history.ts';
import type { HistoryPageWire } from '../transport/proto.ts';

/** `verdict saga service` (./saga-service.ts), here so that the help loads no step-service code. */
const SAGA_SERVICE_HELP = `  verdict saga service --id ID --listen HOST:PORT --data DIR --handler NAME [--handler NAME ...]
                    [--cluster-id ID] [--endpoints HOST:PORT,...] [--log-level LEVEL]
                    [--ca FILE --cert FILE --key FILE | --insecure]
                                      run a demo step service: each handler's action answers DONE ("ID.NAME done"),
                                      or FAILED when its input is "decline"; its compensation answers DONE; every
                                      effect once, in the inbox journaled under --data. Ctrl-C stops it
`;

export const SAGA_HELP = `${SAGA_SERVICE_HELP}  verdict saga start --step SERVICE:NAME[=INPUT] ... [--pivot K] [--id ID] [--type TYPE] [--label NAME=VALUE ...] [--json]
                                      start a saga (a demo: steps run at registered step services) and wait
                                      for its end; exit 0 FINISHED, 2 COMPENSATED. --type and --label: what a
                                      stuck saga's warn line, metrics and saga show name it by
  verdict saga list [--stuck] [--limit N] [--json]
                                      the sagas the cluster keeps; --stuck: those retrying a call past the
                                      stuck threshold, with the call, its attempts and its last error
  verdict saga show ID [--json]       one saga: its type and labels, state, each step's service, handler, input,
                                      state, output, attempts and last error, and its timeline; a saga the
                                      cluster no longer keeps is read from the answering node's history
  verdict saga retry ID [--reason TEXT] [--operator WHO] [--json]
                                      make a stuck saga's call again now (admin; recorded with who and why)
  verdict saga resolve ID --step K --done|--compensated --reason TEXT [--operator WHO] [--json]
                                      say a stuck step's action (--done) or compensation (--compensated) was
                                      done by hand (admin); recorded in the log with who, when and why;
                                      refused for a step that is not stuck
`;

export async function sagaCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const run: Record<string, (c: SagaCaller, rest: string[], addrs: string[]) => Promise<void>> = {
    start,
    list,
    show,
    retry,
    resolve,
  };
  const f = sub === undefined ? undefined : run[sub];
  if (!f)
    throw new UsageError('usage: verdict saga service|start|list|show|retry|resolve ...; run verdict saga --help');
  const addrs = endpoints(args);
  const operator = flag(args, '--operator') ?? defaultOperator();
  const caller = new SagaCaller(addrs, clientCredentials(), operator);
  try {
    const work = f(caller, args, addrs);
    work.catch(() => {});
    await Promise.race([work, requireReachable(addrs).then(() => work)]);
  } catch (err) {
    if (!(err instanceof VerdictError)) throw err;
    process.stderr.write(`verdict: ${printable(err.message)}\n`);
    process.exitCode = EXIT_ERROR;
  } finally {
    caller.close();
  }
}

function idOf(rest: string[]): string {
  const id = rest.shift();
  if (id === undefined || id.startsWith('--'))
    throw new UsageError('name the saga: verdict saga show|retry|resolve ID');
  return id;
}

/** A text in a table cell: one line, at most 80 characters (--json prints it whole). */
function cell(text: string): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

function noMore(rest: string[]): void {
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
}

function stepIndex(v: string | undefined, what: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0)
    throw new UsageError(`${what} needs a step index (0, 1, ...), not ${JSON.stringify(v)}`);
  return n;
}

async function start(c: SagaCaller, rest: string[]): Promise<void> {
  const json = bool(rest, '--json');
  const id = flag(rest, '--id');
  const pivot = stepIndex(flag(rest, '--pivot'), '--pivot');
  const type = flag(rest, '--type');
  const labels: Record<string, string> = {};
  for (const l of flagAll(rest, '--label')) {
    const eq = l.indexOf('=');
    if (eq <= 0) throw new UsageError(`--label ${JSON.stringify(l)}: write NAME=VALUE`);
    const name = l.slice(0, eq);
    if (Object.hasOwn(labels, name)) throw new UsageError(`--label ${name} given more than once`);
    labels[name] = l.slice(eq + 1);
  }
  const steps = flagAll(rest, '--step').map((s) => {
    const m = /^([^:=]+):([^=]+)(?:=(.*))?$/s.exec(s);
    if (!m) throw new UsageError(`--step ${JSON.stringify(s)}: write SERVICE:NAME or SERVICE:NAME=INPUT`);
    return { service: m[1], name: m[2], input: m[3] ?? '' };
  });
  noMore(rest);
  if (steps.length === 0) throw new UsageError('a saga needs at least one --step SERVICE:NAME');
  const h = await c.start({ id, steps, pivot, type, labels });
  const { end, status } = await h.result();
  if (json) printJson(status);
  else print(`${end.toUpperCase()} ${h.id}`);
  if (end === 'compensated') process.exitCode = EXIT_ABORTED;
}

async function list(c: SagaCaller, rest: string[]): Promise<void> {
  const json = bool(rest, '--json');
  const stuck = bool(rest, '--stuck');
  const limitRaw = flag(rest, '--limit');
  const limit = limitRaw === undefined ? 1_000 : Number(limitRaw);
  if (!Number.isInteger(limit) || limit <= 0) throw new UsageError('--limit needs a positive integer');
  noMore(rest);
  const sagas = await c.list(stuck, limit);
  if (json) return printJson(sagas);
  if (sagas.length === 0) return print(stuck ? '(no saga is stuck)' : '(no sagas)');
  table([
    ['SAGA', 'TYPE', 'LABELS', 'STATE', 'STEPS', 'STUCK'],
    ...sagas.map((s) => [s.id, s.type ?? '', labelsText(s), s.state, s.steps.join(','), stuckText(s)]),
  ]);
}

function labelsText(s: SagaStatus): string {
  return Object.entries(s.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
}

function stuckText(s: SagaStatus): string {
  if (!s.stuck) return '';
  const d = s.stepDetails[s.stuck.step];
  const at = d ? ` at ${d.service}/${d.handler}` : '';
  return `step ${s.stuck.step} ${s.stuck.kind}${at}, ${s.stuck.attempts} attempts: ${s.stuck.lastError}`;
}

function attemptsText(a: SagaStepStatus['action']): string {
  return a === null ? '' : String(a.attempts);
}

async function show(c: SagaCaller, rest: string[], addrs: string[]): Promise<void> {
  const id = idOf(rest);
  const json = bool(rest, '--json');
  noMore(rest);
  let s: SagaStatus;
  try {
    s = await c.status(id);
  } catch (err) {
    // Gone from the saga table (ended and evicted): the history of the node answering keeps it.
    if (!(err instanceof VerdictError && err.code === 'NOT_FOUND')) throw err;
    if (await showFromHistory(addrs, id, json, err)) return;
    throw err;
  }
  if (json) return printJson(s);
  print(`saga ${s.id}: ${s.state.toUpperCase()}${s.pivot === null ? '' : ` (pivot: step ${s.pivot})`}`);
  if (s.type !== null) print(`type: ${s.type}`);
  if (Object.keys(s.labels).length > 0) print(`labels: ${labelsText(s)}`);
  if (s.stuck) print(`stuck: ${stuckText(s)}`);
  table([
    ['STEP', 'SERVICE', 'HANDLER', 'INPUT', 'STATE', 'OUTPUT', 'ATTEMPTS', 'COMP ATTEMPTS', 'LAST ERROR'],
    ...s.stepDetails.map((d) => [
      String(d.step),
      d.service,
      d.handler,
      cell(d.input),
      d.state,
      cell(d.output),
      attemptsText(d.action),
      attemptsText(d.compensation),
      cell((d.compensation ?? d.action)?.lastError ?? ''),
    ]),
  ]);
  print('timeline:');
  for (const e of s.timeline) {
    const what = e.step === null ? e.what : `${e.what} step ${e.step} ${e.kind}`;
    const by = e.operator ? ` by ${e.operator}` : '';
    print(`  ${new Date(e.atMs).toISOString()}  #${e.index}  ${what}${by}${e.detail ? `: ${e.detail}` : ''}`);
  }
}

/**
 * `saga show` of a saga the table no longer keeps, from the history of the
 * first node that answers; false when that history has no record of it
 * either (or cannot be read: then the reason goes to stderr).
 */
async function showFromHistory(addrs: string[], id: string, json: boolean, notFound: VerdictError): Promise<boolean> {
  let page: HistoryPageWire;
  try {
    page = await readHistory(addrs, { sagaId: id, kind: 'saga' });
  } catch (err) {
    process.stderr.write(
      `verdict: ${printable(notFound.message)}; its history could not be read either: ${printable((err as Error).message)}\n`,
    );
    return false;
  }
  const g = page.records[0]?.saga;
  if (g === undefined || g === null) {
    for (const n of historyNotes(page)) process.stderr.write(`verdict: ${printable(n)}\n`);
    return false;
  }
  if (json) {
    printJson({ ...g, fromHistory: page.nodeId });
    return true;
  }
  printSagaHistory(g, page.nodeId);
  return true;
}

type HistorySagaWire = NonNullable<HistoryPageWire['records'][number]['saga']>;

/**
 * `saga show` of a saga read from a node's history: the same parts as the live one, each call's failures summed over
 * operator retries.
 */
function printSagaHistory(g: HistorySagaWire, nodeId: string): void {
  const iso = (ms: number): string => (ms > 0 ? new Date(ms).toISOString() : '-');
  print(
    `saga ${g.sagaId}: ${g.state.toUpperCase()}${g.pivot < 0 ? '' : ` (pivot: step ${g.pivot})`} — from node ${nodeId}'s history (the saga table no longer keeps it)`,
  );
  print(`started ${iso(g.startedAtMs)}, ended ${iso(g.endedAtMs)}`);
  if (g.type !== '') print(`type: ${g.type}`);
  const labels = Object.entries(g.labels).map(([k, v]) => `${k}=${v}`);
  if (labels.length > 0) print(`labels: ${labels.join(' ')}`);
  const callOf = (step: number, kind: string): HistorySagaWire['calls'][number] | undefined =>
    g.calls.find((x) => x.step === step && x.kind === kind);
  table([
    ['STEP', 'SERVICE', 'HANDLER', 'INPUT', 'STATE', 'OUTPUT', 'ATTEMPTS', 'COMP ATTEMPTS', 'LAST ERROR'],
    ...g.steps.map((d) => {
      const a = callOf(d.step, 'action');
      const k = callOf(d.step, 'compensate');
      return [
        String(d.step),
        d.service,
        d.name,
        cell(d.input),
        d.status,
        cell(d.output),
        a ? String(a.attemptsTotal) : '',
        k ? String(k.attemptsTotal) : '',
        cell((k ?? a)?.lastError ?? ''),
      ];
    }),
  ]);
  const failed = g.calls.filter((x) => x.attemptsTotal > 0);
  if (failed.length > 0) print('failed calls:');
  for (const x of failed)
    print(
      `  step ${x.step} ${x.kind}: ${x.attemptsTotal} failed attempts, first ${iso(x.firstFailureAtMs)}, last ${iso(x.lastFailureAtMs)}: ${cell(x.lastError)}`,
    );
  print('timeline:');
  for (const e of g.timeline) {
    const what = e.step < 0 ? e.what : `${e.what} step ${e.step} ${e.kind}`;
    const by = e.operator ? ` by ${e.operator}` : '';
    print(`  ${iso(e.atMs)}  #${e.index}  ${what}${by}${e.detail ? `: ${e.detail}` : ''}`);
  }
}

async function retry(c: SagaCaller, rest: string[]): Promise<void> {
  const id = idOf(rest);
  const json = bool(rest, '--json');
  const reason = flag(rest, '--reason') ?? '';
  noMore(rest);
  const s = await c.retry(id, reason);
  if (json) printJson(s);
  else print(`retrying ${s.id}: ${s.state}`);
}

async function resolve(c: SagaCaller, rest: string[]): Promise<void> {
  const id = idOf(rest);
  const json = bool(rest, '--json');
  const step = stepIndex(flag(rest, '--step'), '--step');
  const done = bool(rest, '--done');
  const compensated = bool(rest, '--compensated');
  const reason = flag(rest, '--reason');
  noMore(rest);
  if (step === undefined) throw new UsageError('saga resolve needs --step K');
  if (done === compensated) throw new UsageError('saga resolve needs exactly one of --done or --compensated');
  if (reason === undefined || reason.trim() === '')
    throw new UsageError('saga resolve needs --reason TEXT: it is recorded in the log with who asked and when');
  const s = await c.resolve(id, step, done ? 'done' : 'compensated', reason);
  if (json) printJson(s);
  else print(`resolved ${s.id} step ${step}: ${s.state}`);
}
