// Whether a log entry's bytes are a command the decision table can apply.
// Used at two edges: a follower refuses an append carrying anything else
// (src/transport/raft-edge.ts), and a node that finds such an entry in its
// own log stops naming the index instead of applying it (src/node/machine.ts).
// Either way DecisionTable.apply only ever sees well-formed commands, so it
// needs no checks of its own.
//
// A Decide, Forget or Stage that fits a decision batch rides one
// (./decision-batch.ts); as a JSON entry of its own it is refused like any
// malformed entry. Only those the batch cannot carry (an operator's
// Decide, a list or string past the batch's bounds) are JSON entries.

import { sagaOwnerProblem, STEPS_MAX } from '../saga/state.ts';
import { batchable, TAG_DECISION_BATCH } from './decision-batch.ts';
import { decodeCommand, isCommand, RESOURCE_KIND, type Command } from './state.ts';
import { servesProblem } from '../domain/protocol.ts';

type Fields = Record<string, unknown>;
const isString = (v: unknown): v is string => typeof v === 'string';
const isTime = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isOutcome = (v: unknown): boolean => v === 'commit' || v === 'abort';
const isStringList = (v: unknown): boolean => Array.isArray(v) && v.every(isString);
const isStepIndex = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 0 && (v as number) < STEPS_MAX;
const isStepKind = (v: unknown): boolean => v === 'action' || v === 'compensate';
const isOperatorAct = (v: unknown): boolean => {
  const op = v as Fields | null;
  return op !== null && typeof op === 'object' && isString(op.operator) && isString(op.reason) && isTime(op.atMs);
};
const isStepDef = (v: unknown): boolean => {
  const s = v as Fields | null;
  return s !== null && typeof s === 'object' && isString(s.service) && isString(s.name) && isString(s.input);
};

/**
 * One check per command kind. Keyed by Command['t'], so a new kind of command
 * does not compile until it says here what a well-formed one looks like.
 */
const CHECKS: { [K in Command['t']]: (c: Fields) => string | null } = {
  register: (c) => {
    if (!(isString(c.id) && isString(c.endpoint) && isTime(c.atMs) && isString(c.kind) && RESOURCE_KIND.test(c.kind))) return 'register needs id, endpoint, atMs and a resource kind of [a-z0-9-]';
    // Absent from registrations logged before it existed.
    if (c.serves === undefined) return null;
    return isStringList(c.serves) ? servesProblem(c.serves as string[]) : 'register has a serves that is not a list of method names';
  },
  decide: (c) => {
    if (!isString(c.txnId) || !isOutcome(c.outcome) || !isString(c.reason) || !isStringList(c.participants) || !isTime(c.atMs)) return 'decide needs txnId, outcome, reason, participants and atMs';
    if (c.operator === undefined) return null;
    return isOperatorAct(c.operator) ? null : 'decide has a malformed operator act';
  },
  unregister: (c) => (isString(c.id) && isString(c.operator) && isTime(c.atMs) && isStringList(c.acked) ? null : 'unregister needs id, operator, atMs and a list of acked txnIds'),
  forget: (c) => (isStringList(c.txnIds) ? null : 'forget needs a list of txnIds'),
  stage: (c) => (isString(c.txnId) && c.txnId !== '' && isStringList(c.participants) && isTime(c.atMs) ? null : 'stage needs txnId, participants and atMs'),
  heuristic: (c) =>
    isString(c.txnId) && isString(c.participantId) && isOutcome(c.outcome) && isString(c.gid) && isString(c.operator) && isString(c.reason) && isTime(c.atMs)
      ? null
      : 'heuristic needs txnId, participantId, outcome, gid, operator, reason and atMs',
  // Sagas (src/saga/state.ts): the form here; what a saga's state allows is checked where it is applied.
  'saga.start': (c) =>
    isString(c.sagaId) &&
    Array.isArray(c.steps) &&
    c.steps.length <= STEPS_MAX &&
    c.steps.every(isStepDef) &&
    (c.pivot === null || isStepIndex(c.pivot)) &&
    isTime(c.atMs) &&
    (c.owner === undefined || sagaOwnerProblem(c.owner) === null)
      ? null
      : 'saga.start needs sagaId, at most 64 steps of service, name and input, pivot (a step index or null), atMs, and a starter of at most 256 printable characters when present',
  'saga.result': (c) => {
    if (
      !isString(c.sagaId) ||
      !isStepIndex(c.step) ||
      !isStepKind(c.kind) ||
      !['done', 'failed', 'abandoned'].includes(c.outcome as string) ||
      !isString(c.output) ||
      !isString(c.reason) ||
      !isTime(c.atMs)
    )
      return 'saga.result needs sagaId, step, kind, outcome (done, failed or abandoned), output, reason and atMs';
    return c.operator === undefined || isOperatorAct(c.operator) ? null : 'saga.result has a malformed operator act';
  },
  'saga.stuck': (c) =>
    isString(c.sagaId) && isStepIndex(c.step) && isStepKind(c.kind) && Number.isInteger(c.attempts) && (c.attempts as number) >= 0 && isString(c.lastError) && isTime(c.atMs)
      ? null
      : 'saga.stuck needs sagaId, step, kind, attempts, lastError and atMs',
  'saga.retry': (c) => (isString(c.sagaId) && isString(c.operator) && isString(c.reason) && isTime(c.atMs) ? null : 'saga.retry needs sagaId, operator, reason and atMs'),
  'saga.ended': (c) => (isStringList(c.sagaIds) ? null : 'saga.ended needs a list of sagaIds'),
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
  if (problem !== null) return no(problem);
  if (batchable(c as Command)) return no(`a ${t} that fits a decision batch rides one (tag 0x${TAG_DECISION_BATCH.toString(16).padStart(2, '0')}), not a JSON entry of its own`);
  return { cmd: c as Command, problem: null };
}

/** Why `data` is not a command the decision table applies, or null when it is. */
export function commandProblem(data: Uint8Array): string | null {
  return checkedCommand(data).problem;
}
