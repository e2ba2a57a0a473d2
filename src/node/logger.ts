import { pino, type DestinationStream, type Logger } from 'pino';

export type LogFormat = 'json' | 'pretty';

/**
 * JSON lines unless a person is watching: pretty when stderr is a terminal.
 * VERDICT_LOG_FORMAT=json|pretty overrides (`cluster up` sets it for its
 * children, whose stderr is a pipe to the launcher).
 */
export function logFormat(env: NodeJS.ProcessEnv = process.env, isTTY = process.stderr.isTTY === true): LogFormat {
  const f = env.VERDICT_LOG_FORMAT;
  if (f === 'json' || f === 'pretty') return f;
  return isTTY ? 'pretty' : 'json';
}

/**
 * Structured logs on stderr, so stdout stays free for command output; `json` into `destination` when given (a test).
 */
export function createLogger(
  level: string,
  bindings: Record<string, string> = {},
  format: LogFormat = logFormat(),
  destination?: DestinationStream,
): Logger {
  const opts = { level, base: { pid: process.pid, ...bindings } };
  if (format === 'json') return pino(opts, destination ?? pino.destination(2));
  return pino(
    opts,
    prettyDestination((s) => process.stderr.write(s), process.stderr.isTTY === true && !process.env.NO_COLOR),
  );
}

const LEVELS: Record<number, [string, string]> = {
  10: ['TRACE', '\x1b[90m'],
  20: ['DEBUG', '\x1b[36m'],
  30: ['INFO ', '\x1b[32m'],
  40: ['WARN ', '\x1b[33m'],
  50: ['ERROR', '\x1b[31m'],
  60: ['FATAL', '\x1b[35m'],
};

/** Fields every line has; the rest are printed as key=value after the message. */
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'node', 'participantId']);

/**
 * A tiny pino destination for terminals: `12:00:01.234 INFO  [n1 pid 4242] message key=value …`.
 * Identity fields (node, participant id) come first, so one transaction's
 * lines still read as a story; txnId and the rest follow as key=value.
 */
export function prettyDestination(write: (s: string) => void, color: boolean): DestinationStream {
  return {
    write(line: string): void {
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line) as Record<string, unknown>;
      } catch {
        write(line);
        return;
      }
      write(prettyLine(o, color) + '\n');
    },
  };
}

export function prettyLine(o: Record<string, unknown>, color = false): string {
  const [name, tint] = LEVELS[o.level as number] ?? [String(o.level).padEnd(5), ''];
  const time = typeof o.time === 'number' ? new Date(o.time).toISOString().slice(11, 23) : '';
  // The pid is what `kill` needs: the failure drill starts from a log line.
  const id = [o.node, o.participantId].filter((x) => typeof x === 'string' && x !== '').join('/');
  const who = [id, typeof o.pid === 'number' ? `pid ${o.pid}` : ''].filter((x) => x !== '').join(' ');
  const fields: string[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (HIDDEN.has(k) || v === undefined) continue;
    fields.push(`${k}=${formatValue(v)}`);
  }
  const level = color ? `${tint}${name}\x1b[0m` : name;
  return [time, level, who ? `[${who}]` : '', String(o.msg ?? ''), ...fields].filter((x) => x !== '').join(' ');
}

function formatValue(v: unknown): string {
  if (typeof v === 'string') return /^[^\s="]+$/.test(v) ? v : JSON.stringify(v);
  if (v !== null && typeof v === 'object' && 'message' in v && 'stack' in v)
    return JSON.stringify((v as { message: unknown }).message);
  return JSON.stringify(v);
}
