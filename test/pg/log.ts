// A structured log that keeps its lines, so tests can assert on what an
// operator would see (level, fields, message).
import type { EngineLog } from '../../src/participant/types.ts';

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string;
}

export class MemoryLog implements EngineLog {
  readonly lines: LogLine[] = [];
  info(obj: object, msg: string): void {
    this.lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg });
  }
  warn(obj: object, msg: string): void {
    this.lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg });
  }
  error(obj: object, msg: string): void {
    this.lines.push({ level: 'error', obj: obj as Record<string, unknown>, msg });
  }
  /** pino's child(): the same sink. */
  child(): this {
    return this;
  }
  find(level: LogLine['level'], msg: RegExp): LogLine[] {
    return this.lines.filter((l) => l.level === level && msg.test(l.msg));
  }
}
