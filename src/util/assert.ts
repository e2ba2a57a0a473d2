// The one assertion helper of the code base. An assertion guards this
// process's own logic: a failure is a bug in Verdict, never a refusal of
// someone else's input (inputs are validated at the edges first), so it
// throws and the process stops rather than carry on from a state it cannot
// explain. The simulator counts on that: a broken invariant is a loud crash
// its seed replays.

/** Thrown when an invariant is broken: a bug, never a user error. */
export class InvariantError extends Error {
  constructor(what: string) {
    super(`invariant violated: ${what}`);
    this.name = 'InvariantError';
  }
}

export function assert(cond: unknown, what: string): asserts cond {
  if (!cond) throw new InvariantError(what);
}
