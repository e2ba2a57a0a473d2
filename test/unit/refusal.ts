// The message of the error a call refuses with, after checking the error's
// class: for tests that hold refusals to the words a user reads.
import { expect } from 'vitest';

export function refusalOf(kind: abstract new (...args: never[]) => Error, f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(kind);
    return (err as Error).message;
  }
  throw new Error(`expected a ${kind.name}`);
}
