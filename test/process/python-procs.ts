// Python processes for the tests of the Python SDK (test/process/python-sdk,
// test/pg/python-postgres): Debian's /usr/bin/python3 running the driver
// scripts of sdk/python/tests/proc, whose stdout is JSON lines. Every one is
// tracked; stopPythonProcs() SIGKILLs those still running (each test file
// calls it after each test and after all).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, waitFor } from './harness.ts';

export const PYTHON = '/usr/bin/python3';
const PROC = join(ROOT, 'sdk', 'python', 'tests', 'proc');
const WAIT_MS = 60_000;

export type Event = Record<string, unknown> & { event?: string; txn_id?: string };

/** A Python process whose stdout is JSON lines, kept as they arrive. */
export class PythonProc {
  readonly lines: Event[] = [];
  stderr = '';
  exited: Promise<number | null>;
  private readonly child: ChildProcess;

  constructor(script: string, args: string[], env: Record<string, string> = {}) {
    this.child = spawn(PYTHON, [join(PROC, script), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...env } });
    running.add(this);
    let partial = '';
    this.child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      partial += d;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const l of parts) if (l.trim() !== '') this.lines.push(JSON.parse(l) as Event);
    });
    this.child.stderr?.setEncoding('utf8').on('data', (d: string) => (this.stderr = (this.stderr + d).slice(-8_000)));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => (running.delete(this), resolve(code))));
  }

  /** The first line matching, waited for with a bound. */
  waitLine(what: string, match: (e: Event) => boolean, ms = WAIT_MS): Promise<Event> {
    return waitFor(
      what,
      ms,
      async () => this.lines.find(match),
      () => `lines: ${JSON.stringify(this.lines.slice(-10))}; stderr: ${this.stderr.slice(-2_000)}`,
    );
  }

  kill(signal: NodeJS.Signals): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}

const running = new Set<PythonProc>();
export const stopPythonProcs = async (): Promise<void> => {
  await Promise.all([...running].map((p) => p.kill('SIGKILL')));
};

/** Runs the Python client over `ops` to its end; its results, one per op. */
export async function pythonClient(nodes: string[], ops: unknown[], tls?: string, callTimeoutMs = 60_000): Promise<Event[]> {
  const p = new PythonProc('client.py', [nodes.join(','), JSON.stringify(ops), ...(tls === undefined ? [] : [tls])], { VERDICT_TEST_CALL_TIMEOUT_MS: String(callTimeoutMs) });
  const code = await Promise.race([p.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 120_000).unref())]);
  if (code !== 0) {
    await p.kill('SIGKILL');
    throw new Error(`the Python client ended with ${code}: ${p.stderr}`);
  }
  return p.lines;
}
