/** A node that cannot start, and why, in one line for the operator (the node command prints no stack for it). */
export class StartupError extends Error {
  constructor(what: string) {
    super(what);
    this.name = 'StartupError';
  }
}
