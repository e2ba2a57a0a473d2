// Tiny flag parsing shared by the subcommands.

export class UsageError extends Error {}

/** A refusal that is not a usage mistake (the cluster is unreachable, a request was refused): one line, exit 1. */
export class CommandError extends Error {
  override name = 'CommandError';
}

/** Removes `name VALUE` from args and returns VALUE; a flag that takes one value refuses to be given twice. */
export function flag(args: string[], name: string): string | undefined {
  const v = take(args, name);
  if (v !== undefined && args.includes(name)) throw new UsageError(`${name} given more than once; it takes one value`);
  return v;
}

function take(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) throw new UsageError(`${name} needs a value`);
  args.splice(i, 2);
  return v;
}

/** Removes `name` from args and says whether it was there. */
export function bool(args: string[], name: string): boolean {
  const i = args.indexOf(name);
  if (i < 0) return false;
  args.splice(i, 1);
  return true;
}

/** Removes every `name VALUE` from args (a repeatable flag) and returns the values in order. */
export function flagAll(args: string[], name: string): string[] {
  const out: string[] = [];
  for (let v = take(args, name); v !== undefined; v = take(args, name)) out.push(v);
  return out;
}
