// Python processes for the tests of the Python SDK (test/process/python-sdk,
// test/pg/python-postgres): Debian's /usr/bin/python3 running the driver
// scripts of sdk/python/tests/proc, whose stdout is JSON lines. Every one is
// tracked; stopPythonProcs() SIGKILLs those still running (each test file
// calls it after each test and after all).
import { join } from 'node:path';
import { ROOT } from './harness.ts';
import { clientLines, type Event, JsonLinesProc, stopAll } from './json-lines-proc.ts';

export const PYTHON = '/usr/bin/python3';
const PROC = join(ROOT, 'sdk', 'python', 'tests', 'proc');

export type { Event } from './json-lines-proc.ts';

const running = new Set<JsonLinesProc>();

/** A Python process running a driver script of sdk/python/tests/proc, whose stdout is JSON lines. */
export class PythonProc extends JsonLinesProc {
  constructor(script: string, args: string[], env: Record<string, string> = {}) {
    super(PYTHON, [join(PROC, script), ...args], { PYTHONDONTWRITEBYTECODE: '1', ...env }, running);
  }
}

export const stopPythonProcs = (): Promise<void> => stopAll(running);

/** Runs the Python client over `ops` to its end; its results, one per op. */
export function pythonClient(nodes: string[], ops: unknown[], tls?: string, callTimeoutMs = 60_000): Promise<Event[]> {
  const p = new PythonProc('client.py', [nodes.join(','), JSON.stringify(ops), ...(tls === undefined ? [] : [tls])], {
    VERDICT_TEST_CALL_TIMEOUT_MS: String(callTimeoutMs),
  });
  return clientLines(p, 'the Python client');
}
