// Whether a log entry's bytes are a JSON command the decision table, or a
// product table riding the same entries (sagas: ./product-table.ts), can
// apply. Used at two edges: a follower refuses an append carrying anything
// else (src/transport/raft-edge.ts), and a node that finds such an entry in
// its own log stops naming the index instead of applying it
// (src/node/machine.ts). Either way DecisionTable.apply only ever sees
// well-formed commands, so it needs no checks of its own; a product's kinds
// are checked by its table's commandProblem.
//
// A Decide, Forget or Stage that fits a decision batch rides one
// (./decision-batch.ts); as a JSON entry of its own it is refused like any
// malformed entry. Only those the batch cannot carry (an operator's
// Decide, a list or string past the batch's bounds) are JSON entries.

import { batchable, TAG_DECISION_BATCH } from './decision-batch.ts';
import type { ProductTable } from './product-table.ts';
import { decodeCommand, isCommand, RESOURCE_KIND, type Command, type DecisionCommand } from './state.ts';
import { servesProblem } from '../domain/protocol.ts';

// The field checks every command's form is made of; product tables check theirs with them too.
type Fields = Readonly<Record<string, unknown>>;
export const isString = (v: unknown): v is string => typeof v === 'string';
export const isTime = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isOutcome = (v: unknown): boolean => v === 'commit' || v === 'abort';
export const isStringList = (v: unknown): boolean => Array.isArray(v) && v.every(isString);
/** An operator's act (./state.ts OperatorAct): who, why, when. */
export const isOperatorAct = (v: unknown): boolean => {
  const op = v as Fields | null;
  return op !== null && typeof op === 'object' && isString(op.operator) && isString(op.reason) && isTime(op.atMs);
};

/**
 * One check per decision table command kind. Keyed by DecisionCommand['t'],
 * so a new kind of command does not compile until it says here what a
 * well-formed one looks like. A product's kinds are checked by its table.
 */
const CHECKS: { [K in DecisionCommand['t']]: (c: Fields) => string | null } = {
  register: (c) => {
    if (!(isString(c.id) && isString(c.endpoint) && isTime(c.atMs) && isString(c.kind) && RESOURCE_KIND.test(c.kind)))
      return 'register needs id, endpoint, atMs and a resource kind of [a-z0-9-]';
    // Absent from registrations logged before it existed.
    if (c.serves === undefined) return null;
    return isStringList(c.serves)
      ? servesProblem(c.serves as string[])
      : 'register has a serves that is not a list of method names';
  },
  decide: (c) => {
    if (
      !isString(c.txnId) ||
      !isOutcome(c.outcome) ||
      !isString(c.reason) ||
      !isStringList(c.participants) ||
      !isTime(c.atMs)
    )
      return 'decide needs txnId, outcome, reason, participants and atMs';
    if (c.trace !== undefined) return 'decide carries a trace only in a decision batch';
    if (c.operator === undefined) return null;
    return isOperatorAct(c.operator) ? null : 'decide has a malformed operator act';
  },
  unregister: (c) =>
    isString(c.id) &&
    isString(c.operator) &&
    isTime(c.atMs) &&
    isStringList(c.acked) &&
    (c.force === undefined || c.force === true) &&
    (c.reason === undefined || isString(c.reason))
      ? null
      : 'unregister needs id, operator, atMs and a list of acked txnIds (force, when present, is true; reason a string)',
  forget: (c) => (isStringList(c.txnIds) ? null : 'forget needs a list of txnIds'),
  stage: (c) =>
    isString(c.txnId) && c.txnId !== '' && isStringList(c.participants) && isTime(c.atMs) && c.trace === undefined
      ? null
      : 'stage needs txnId, participants and atMs (and no trace: that rides a decision batch)',
  heuristic: (c) =>
    isString(c.txnId) &&
    isString(c.participantId) &&
    isOutcome(c.outcome) &&
    isString(c.gid) &&
    isString(c.operator) &&
    isString(c.reason) &&
    isTime(c.atMs)
      ? null
      : 'heuristic needs txnId, participantId, outcome, gid, operator, reason and atMs',
};

/**
 * The check for command kind `t`: the decision table's, or that of the product table that applies `t`; null for an
 * unknown kind.
 */
function checkOf(t: unknown, products: readonly ProductTable[]): ((c: Fields) => string | null) | null {
  if (typeof t !== 'string') return null;
  if (Object.hasOwn(CHECKS, t)) return CHECKS[t as DecisionCommand['t']];
  const product = products.find((p) => p.kinds.includes(t));
  return product ? (c) => product.commandProblem(c) : null;
}

/**
 * The command in `data`, or why it is not one the decision table or one of
 * `products` applies. Decodes once.
 */
export function checkedCommand(
  data: Uint8Array,
  products: readonly ProductTable[] = [],
): { cmd: Command; problem: null } | { cmd: null; problem: string } {
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
  const check = checkOf(t, products);
  if (check === null) return no(`unknown command kind ${String(JSON.stringify(t)).slice(0, 40)}`);
  const problem = check(c as Fields);
  if (problem !== null) return no(problem);
  if (batchable(c as Command))
    return no(
      `a ${t} that fits a decision batch rides one (tag 0x${TAG_DECISION_BATCH.toString(16).padStart(2, '0')}), not a JSON entry of its own`,
    );
  return { cmd: c as Command, problem: null };
}

/** Why `data` is not a command the decision table or one of `products` applies, or null when it is. */
export function commandProblem(data: Uint8Array, products: readonly ProductTable[] = []): string | null {
  return checkedCommand(data, products).problem;
}
