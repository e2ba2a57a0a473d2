// Log lines about a transaction carry its trace id: a logger wrapped here
// adds `traceId` to every line whose fields name a `txnId` that has one, so
// an operator can go from a log line to the trace and back. Child loggers
// made from it do the same. A line without a txnId, or about a transaction
// without a trace, is written as it was.
import type { Logger } from 'pino';

const LEVELS: ReadonlySet<string> = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal']);

export function withTraceIds(log: Logger, traceIdOf: (txnId: string) => string | undefined): Logger {
  // One wrapper per method, made on first use: a log call costs a lookup, not a new function. The
  // wrapper reads the method at call time, as pino swaps its level methods when the level changes.
  const wrappers = new Map<PropertyKey, unknown>();
  return new Proxy(log, {
    get(target, prop) {
      const v: unknown = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      let w = wrappers.get(prop);
      if (w === undefined) {
        w =
          prop === 'child'
            ? (bindings: Record<string, unknown>, options?: object) =>
                withTraceIds(target.child(bindings, options), traceIdOf)
            : wrap(target, prop, traceIdOf);
        wrappers.set(prop, w);
      }
      return w;
    },
  });
}

function wrap(
  target: Logger,
  prop: PropertyKey,
  traceIdOf: (txnId: string) => string | undefined,
): (...args: unknown[]) => unknown {
  const call = (args: unknown[]): unknown =>
    (Reflect.get(target, prop, target) as (...a: unknown[]) => unknown).apply(target, args);
  if (typeof prop !== 'string' || !LEVELS.has(prop)) return (...args) => call(args);
  return (first, ...rest) => {
    if (first !== null && typeof first === 'object' && !(first instanceof Error)) {
      const fields = first as Record<string, unknown>;
      if (typeof fields.txnId === 'string' && fields.traceId === undefined) {
        const traceId = traceIdOf(fields.txnId);
        if (traceId !== undefined) return call([{ ...fields, traceId }, ...rest]);
      }
    }
    return call([first, ...rest]);
  };
}

/**
 * txnId → trace id, for a process that does not keep contexts otherwise (a participant); the oldest goes past `max`.
 */
export class TraceIds {
  private readonly ids = new Map<string, string>();

  constructor(private readonly max: number) {}

  note(txnId: string, traceId: string): void {
    this.ids.delete(txnId);
    this.ids.set(txnId, traceId);
    if (this.ids.size > this.max) this.ids.delete(this.ids.keys().next().value as string);
  }

  get(txnId: string): string | undefined {
    return this.ids.get(txnId);
  }

  drop(txnId: string): void {
    this.ids.delete(txnId);
  }

  get size(): number {
    return this.ids.size;
  }
}
