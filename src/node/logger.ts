import { pino, type Logger } from 'pino';

/** Structured JSON logs on stderr, so stdout stays free for command output. */
export function createLogger(level: string, bindings: Record<string, string> = {}): Logger {
  return pino({ level, base: { pid: process.pid, ...bindings } }, pino.destination(2));
}
