// Whether a log entry's bytes are a command the decision table can apply.
// Used at two edges: a follower refuses an append carrying anything else
// (src/transport/raft-edge.ts), and a node that finds such an entry in its
// own log stops naming the index instead of applying it (src/node/machine.ts).
// Either way DecisionTable.apply only ever sees well-formed commands, so it
// needs no checks of its own.

import { decodeCommand, isCommand, type Command } from './state.ts';

type Fields = Record<string, unknown>;
const isString = (v: unknown): v is string => typeof v === 'string';
const isTime = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isOutcome = (v: unknown): boolean => v === 'commit' || v === 'abort';
const isStringList = (v: unknown): boolean => Array.isArray(v) && v.every(isString);

/**
 * One check per command kind. Keyed by Command['t'], so a new kind of command
 * does not compile until it says here what a well-formed one looks like.
 */
const CHECKS: { [K in Command['t']]: (c: Fields) => string | null } = {
  register: (c) => (isString(c.id) && isString(c.endpoint) && isTime(c.atMs) ? null : 'register needs id, endpoint and atMs'),
  decide: (c) => {
    if (!isString(c.txnId) || !isOutcome(c.outcome) || !isString(c.reason) || !isStringList(c.participants) || !isTime(c.atMs)) return 'decide needs txnId, outcome, reason, participants and atMs';
    if (c.operator === undefined) return null;
    const op = c.operator as Fields | null;
    return op !== null && typeof op === 'object' && isString(op.operator) && isString(op.reason) && isTime(op.atMs) ? null : 'decide has a malformed operator act';
  },
  unregister: (c) => (isString(c.id) && isString(c.operator) && isTime(c.atMs) && isStringList(c.acked) ? null : 'unregister needs id, operator, atMs and a list of acked txnIds'),
  forget: (c) => (isStringList(c.txnIds) ? null : 'forget needs a list of txnIds'),
  heuristic: (c) =>
    isString(c.txnId) && isString(c.participantId) && isOutcome(c.outcome) && isString(c.gid) && isString(c.operator) && isString(c.reason) && isTime(c.atMs)
      ? null
      : 'heuristic needs txnId, participantId, outcome, gid, operator, reason and atMs',
};

/** The command in `data`, or why it is not one the decision table applies. Decodes once. */
export function checkedCommand(data: Uint8Array): { cmd: Command; problem: null } | { cmd: null; problem: string } {
  const no = (problem: string): { cmd: null; problem: string } => ({ cmd: null, problem });
  if (!isCommand(data)) return no(`unknown command tag ${data.byteLength === 0 ? '(empty)' : data[0]}`);
  let c: unknown;
  try {
    c = decodeCommand(data);
  } catch (err) {
    return no(`command does not decode: ${(err as Error).message}`);
  }
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return no('command is not an object');
  const t = (c as Fields).t;
  if (typeof t !== 'string' || !Object.hasOwn(CHECKS, t)) return no(`unknown command kind ${String(JSON.stringify(t)).slice(0, 40)}`);
  const problem = CHECKS[t as Command['t']](c as Fields);
  return problem === null ? { cmd: c as Command, problem: null } : no(problem);
}

/** Why `data` is not a command the decision table applies, or null when it is. */
export function commandProblem(data: Uint8Array): string | null {
  return checkedCommand(data).problem;
}
