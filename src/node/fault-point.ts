// A test's fault point: the real-process tests of parallel commit need the
// leader to die between the last YES and the explicit COMMIT, a moment a
// signal from outside cannot hit reliably. The node reads it from its own
// environment at start only, so no request, peer or participant can turn it
// on; unset (production), the engine has no fault point at all.
//
//   VERDICT_TEST_FAULT_POINT=crash-before-explicit-commit
//     the first time this node, as leader, answers a client COMMITTED by
//     parallel commit's implicit rule, it kills itself with SIGKILL shortly
//     after (long enough for the answer to leave); for that transaction and
//     every one implied COMMITTED in between, the explicit COMMIT is never
//     proposed, and a new leader must recover them (docs/protocol.md). Each
//     is logged ("test fault point", with its txnId).

import type { Logger } from 'pino';
import type { EngineIO } from '../commit/engine.ts';

export const FAULT_POINT_ENV = 'VERDICT_TEST_FAULT_POINT';

/** How long the answer gets to leave before the process kills itself. */
const ANSWER_FLUSH_MS = 300;

export class FaultPointError extends Error {
  constructor(value: string) {
    super(
      `${FAULT_POINT_ENV}=${JSON.stringify(value)} is not a fault point; the only one is crash-before-explicit-commit (for tests; unset it in production)`,
    );
    this.name = 'FaultPointError';
  }
}

/** The fault point the environment asks for, or undefined; an unknown value is refused with the reason. */
export function faultPointFromEnv(env: NodeJS.ProcessEnv, log: Logger): EngineIO['faultPoint'] {
  const value = env[FAULT_POINT_ENV];
  if (value === undefined || value === '') return undefined;
  if (value !== 'crash-before-explicit-commit') throw new FaultPointError(value);
  log.warn(
    { faultPoint: value },
    `test fault point armed by ${FAULT_POINT_ENV}: this node kills itself after its first implied COMMITTED`,
  );
  let fired = false;
  return (point, txnId) => {
    if (point !== 'before-explicit-commit') return 'go-on';
    // Every implied COMMITTED from the first one on halts: the process is dying.
    log.warn({ txnId, faultPoint: value }, 'test fault point: COMMITTED answered, the explicit COMMIT is not proposed');
    if (!fired) setTimeout(() => process.kill(process.pid, 'SIGKILL'), ANSWER_FLUSH_MS);
    fired = true;
    return 'halt';
  };
}
