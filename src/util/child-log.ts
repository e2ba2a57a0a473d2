// pino writes a child's bindings after its parent's without looking at them:
// `log.child({ node })` on a logger already bound to `node` gives JSON lines
// with the key twice (`"node":"n4",…,"node":"n4"`), which JSON parsers read
// differently (last wins, first wins, or an error). Every child logger is made
// here, binding only the keys its parent does not already carry. A logger
// given by an application need only have pino's level methods and child():
// one without bindings() is taken as binding nothing.
import type { Logger } from 'pino';

export function childLogger(log: Logger, bindings: Record<string, unknown>): Logger {
  const bound: Record<string, unknown> = typeof log.bindings === 'function' ? log.bindings() : {};
  const fresh: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(bindings)) if (!(k in bound) && k !== 'pid' && k !== 'hostname') fresh[k] = v;
  return log.child(fresh);
}
