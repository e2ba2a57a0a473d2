// The saga id rule, in one place: the saga table checks it when a saga
// starts, and every other edge that takes a saga id (the console, the CLI)
// checks it with the same function, so an id the cluster accepts is one
// every page and command can name. A "/" is in no saga id: a saga's history
// record is keyed `saga/<id>` beside transaction ids, which have no "/"
// either (./txn-id.ts).

/** A saga id: 1–128 printable ASCII characters without '/'. */
export const SAGA_ID_BYTES_MAX = 128;

/**
 * Saga ids in one EndSagas or SagaStates call at most (proto/saga.proto): the leader sends no more, a step service and
 * a node refuse more.
 */
export const SAGA_IDS_PER_CALL_MAX = 1_024;

const PRINTABLE = /^[\x21-\x7e]+$/;

/** Why `id` is not a saga id, or null when it is one. Never echoes more than a bounded prefix of the input. */
export function sagaIdProblem(id: string): string | null {
  if (id !== '' && id.length <= SAGA_ID_BYTES_MAX && PRINTABLE.test(id) && !id.includes('/')) return null;
  const shown = id.length > 40 ? `${JSON.stringify(id.slice(0, 40))}… (${id.length} characters)` : JSON.stringify(id);
  return `saga id ${shown} must be 1 to ${SAGA_ID_BYTES_MAX} printable ASCII characters without '/'`;
}
