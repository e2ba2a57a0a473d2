// The saga commands on the log and the bounds of a saga's definition: what
// a saga.* command looks like, and the checks a command passes at the edge
// (src/commit/command-check.ts asks the saga table, which asks here) before
// the saga table (./state.ts) applies it. Every field of a definition is
// bounded (R9).

import { isOperatorAct, isString, isStringList, isTime } from '../commit/command-check.ts';
import type { OperatorAct } from '../commit/state.ts';
import { ID } from '../domain/id.ts';
import { sagaIdProblem } from '../domain/saga-id.ts';

export type StepKind = 'action' | 'compensate';

export interface SagaStepDef {
  /** The registered step service that serves this step (a participant id). */
  service: string;
  /** What the step service runs, by name (its handler). */
  name: string;
  /** Opaque to Verdict: the step's input, as the application wrote it. */
  input: string;
}

export type SagaCommand =
  // `owner` is absent in starts logged before starters were recorded.
  // `type` and `labels` are absent when the starter gave none (and in starts logged before they existed).
  | {
      t: 'saga.start';
      sagaId: string;
      steps: SagaStepDef[];
      pivot: number | null;
      atMs: number;
      owner?: string;
      type?: string;
      labels?: SagaLabels;
    }
  // One more call of the saga's current call failed transiently (an error, no answer, garbage):
  // the attempt count that abandonment and the stuck flag read, kept across leaders.
  | { t: 'saga.attempt'; sagaId: string; step: number; kind: StepKind; error: string; atMs: number }
  // An answer to the saga's current call: DONE, FAILED (a refusal, action only), or
  // ABANDONED (the orchestrator gave up on an action that kept erroring: it may
  // have run, so it is compensated too). `operator` is set by `verdict saga resolve`.
  | {
      t: 'saga.result';
      sagaId: string;
      step: number;
      kind: StepKind;
      outcome: 'done' | 'failed' | 'abandoned';
      output: string;
      reason: string;
      atMs: number;
      operator?: OperatorAct;
    }
  | { t: 'saga.stuck'; sagaId: string; step: number; kind: StepKind; attempts: number; lastError: string; atMs: number }
  | { t: 'saga.retry'; sagaId: string; operator: string; reason: string; atMs: number }
  | { t: 'saga.ended'; sagaIds: string[] };

export type SagaCommandKind = SagaCommand['t'];
export const SAGA_COMMAND_KINDS: readonly SagaCommandKind[] = [
  'saga.start',
  'saga.result',
  'saga.stuck',
  'saga.retry',
  'saga.ended',
  'saga.attempt',
];

/** Business labels a saga carries from its start (`order` → `ORD-7731`), for the person a stuck saga is shown to. */
export type SagaLabels = Record<string, string>;

export function isSagaCommand(c: { t: string }): c is SagaCommand {
  return c.t.startsWith('saga.');
}

/** Steps in one saga. */
export const STEPS_MAX = 64;
// The saga id rule is the domain's (src/domain/saga-id.ts).
export { SAGA_ID_BYTES_MAX } from '../domain/saga-id.ts';
/** One step's input, or one step's output or reason as a step service answers it. */
export const STEP_TEXT_BYTES_MAX = 64 * 1024;
/** All of one saga's inputs together, and all of its outputs together. */
export const SAGA_TEXT_BYTES_MAX = 256 * 1024;
/** A step's handler name: 1–128 printable ASCII characters (space included). */
export const STEP_NAME_CHARS_MAX = 128;
/** A step service id: a participant id (src/domain/id.ts). */
export const STEP_SERVICE = ID;
/** Who started a saga, as the node writes it. */
export const SAGA_OWNER_CHARS_MAX = 256;
/** A saga's type (`order-refund`): 1–64 letters, digits, '_', '.', ':' or '-'. It is a metric label, so it is short. */
export const SAGA_TYPE = /^[A-Za-z0-9_.:-]{1,64}$/;
export const SAGA_TYPE_CHARS_MAX = 64;
/** Labels per saga, a label's key (as a type), and a label's value in bytes (any text without control characters). */
export const SAGA_LABELS_MAX = 16;
export const SAGA_LABEL_KEY = /^[A-Za-z0-9_.:-]{1,64}$/;
export const SAGA_LABEL_VALUE_BYTES_MAX = 256;

const shown = (text: string): string =>
  text.length > 40 ? `${JSON.stringify(text.slice(0, 40))}… (${text.length} characters)` : JSON.stringify(text);
const printable = (text: string, min: number, max: number): boolean => {
  if (text.length < min || text.length > max) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
};

/** Why a saga definition cannot start, naming the saga and the step, or null. Every field is bounded (R9). */
export function sagaDefProblem(sagaId: string, steps: readonly SagaStepDef[], pivot: number | null): string | null {
  const badId = sagaIdProblem(sagaId);
  if (badId !== null) return badId;
  if (steps.length === 0) return `saga ${sagaId} has no steps`;
  if (steps.length > STEPS_MAX) return `saga ${sagaId} has ${steps.length} steps (limit ${STEPS_MAX})`;
  if (pivot !== null && (!Number.isInteger(pivot) || pivot < 0 || pivot >= steps.length))
    return `saga ${sagaId}: pivot ${pivot} is not one of its steps 0..${steps.length - 1}`;
  let inputs = 0;
  for (const [k, s] of steps.entries()) {
    if (s.service === '') return `saga ${sagaId} step ${k} names no step service`;
    if (!STEP_SERVICE.test(s.service))
      return `saga ${sagaId} step ${k}: step service ${shown(s.service)} is not a participant id (1–64 letters, digits, "_", "." or "-")`;
    if (s.name === '') return `saga ${sagaId} step ${k} has no name`;
    if (!printable(s.name, 1, STEP_NAME_CHARS_MAX))
      return `saga ${sagaId} step ${k}: name ${shown(s.name)} must be 1–${STEP_NAME_CHARS_MAX} printable ASCII characters`;
    const bytes = Buffer.byteLength(s.input);
    if (bytes > STEP_TEXT_BYTES_MAX)
      return `saga ${sagaId} step ${k}: input of ${bytes} bytes (limit ${STEP_TEXT_BYTES_MAX})`;
    inputs += bytes;
  }
  if (inputs > SAGA_TEXT_BYTES_MAX)
    return `saga ${sagaId}: its inputs hold ${inputs} bytes together (limit ${SAGA_TEXT_BYTES_MAX})`;
  return null;
}

/**
 * Why a saga's type and labels cannot be taken, naming the saga and the label, or null. Bounded in size and count (R9).
 */
export function sagaTagsProblem(
  sagaId: string,
  type: string | undefined,
  labels: Readonly<Record<string, unknown>> | undefined,
): string | null {
  if (type !== undefined && !SAGA_TYPE.test(type))
    return `saga ${sagaId}: type ${shown(String(type))} must be 1–${SAGA_TYPE_CHARS_MAX} letters, digits, "_", ".", ":" or "-"`;
  if (labels === undefined) return null;
  if (labels === null || typeof labels !== 'object' || Array.isArray(labels))
    return `saga ${sagaId}: labels must be a map of names to texts`;
  const keys = Object.keys(labels);
  if (keys.length > SAGA_LABELS_MAX) return `saga ${sagaId} has ${keys.length} labels (limit ${SAGA_LABELS_MAX})`;
  for (const k of keys) {
    if (!SAGA_LABEL_KEY.test(k))
      return `saga ${sagaId}: label name ${shown(k)} must be 1–64 letters, digits, "_", ".", ":" or "-"`;
    const v = labels[k];
    if (typeof v !== 'string') return `saga ${sagaId}: label ${k} must be a text`;
    if (Buffer.byteLength(v) > SAGA_LABEL_VALUE_BYTES_MAX)
      return `saga ${sagaId}: label ${k} holds ${Buffer.byteLength(v)} bytes (limit ${SAGA_LABEL_VALUE_BYTES_MAX})`;
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
    if (/[\x00-\x1f\x7f]/.test(v))
      return `saga ${sagaId}: label ${k} holds a control character (a value is one line of text)`;
  }
  return null;
}

/** Why `owner` is not a starter the node could have written, or null. */
export function sagaOwnerProblem(owner: unknown): string | null {
  return typeof owner === 'string' && printable(owner, 0, SAGA_OWNER_CHARS_MAX)
    ? null
    : `a saga's starter must be at most ${SAGA_OWNER_CHARS_MAX} printable ASCII characters`;
}

type Fields = Readonly<Record<string, unknown>>;
const isStepIndex = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 0 && (v as number) < STEPS_MAX;
const isStepKind = (v: unknown): boolean => v === 'action' || v === 'compensate';
const isStepDef = (v: unknown): boolean => {
  const s = v as Fields | null;
  return s !== null && typeof s === 'object' && isString(s.service) && isString(s.name) && isString(s.input);
};

/**
 * One check per saga command kind, of its form, at the edge where the entry
 * enters the node (src/commit/command-check.ts); what a saga's state allows
 * is checked where the command is applied. Keyed by SagaCommandKind, so a new
 * kind does not compile until it says here what a well-formed one looks like.
 */
const CHECKS: { [K in SagaCommandKind]: (c: Fields) => string | null } = {
  'saga.start': (c) =>
    isString(c.sagaId) &&
    Array.isArray(c.steps) &&
    c.steps.length <= STEPS_MAX &&
    c.steps.every(isStepDef) &&
    (c.pivot === null || isStepIndex(c.pivot)) &&
    isTime(c.atMs) &&
    (c.owner === undefined || sagaOwnerProblem(c.owner) === null) &&
    (c.type === undefined || isString(c.type)) &&
    (c.labels === undefined || (c.labels !== null && typeof c.labels === 'object' && !Array.isArray(c.labels)))
      ? null
      : 'saga.start needs sagaId, at most 64 steps of service, name and input, pivot (a step index or null), atMs, a starter of at most 256 printable characters when present, and a type (a text) and labels (a map) when present',
  'saga.attempt': (c) =>
    isString(c.sagaId) && isStepIndex(c.step) && isStepKind(c.kind) && isString(c.error) && isTime(c.atMs)
      ? null
      : 'saga.attempt needs sagaId, step, kind, error and atMs',
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
    isString(c.sagaId) &&
    isStepIndex(c.step) &&
    isStepKind(c.kind) &&
    Number.isInteger(c.attempts) &&
    (c.attempts as number) >= 0 &&
    isString(c.lastError) &&
    isTime(c.atMs)
      ? null
      : 'saga.stuck needs sagaId, step, kind, attempts, lastError and atMs',
  'saga.retry': (c) =>
    isString(c.sagaId) && isString(c.operator) && isString(c.reason) && isTime(c.atMs)
      ? null
      : 'saga.retry needs sagaId, operator, reason and atMs',
  'saga.ended': (c) => (isStringList(c.sagaIds) ? null : 'saga.ended needs a list of sagaIds'),
};

/** Why a decoded saga command is not well formed, or null. */
export function sagaCommandProblem(c: Fields): string | null {
  const t = c.t as SagaCommandKind;
  return Object.hasOwn(CHECKS, t)
    ? CHECKS[t](c)
    : `unknown saga command kind ${String(JSON.stringify(c.t)).slice(0, 40)}`;
}
