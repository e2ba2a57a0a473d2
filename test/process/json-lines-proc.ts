// A driver process of an SDK test (the Python and Go SDKs' drivers under
// sdk/python/tests/proc and sdk/go/internal/testproc) whose stdout is JSON
// lines, kept as they arrive. Each kind keeps its own set of running
// processes, so a test file stops what it started (SIGKILL) after each test.
import { spawn, type ChildProcess } from 'node:child_process';
import { ROOT, waitFor } from './harness.ts';

const WAIT_MS = 60_000;
/** How long a client driver may run before it is killed and the test fails. */
const CLIENT_RUN_MS = 120_000;

export type Event = Record<string, unknown> & { event?: string; txn_id?: string };

export class JsonLinesProc {
  readonly lines: Event[] = [];
  stderr = '';
  exited: Promise<number | null>;
  private readonly child: ChildProcess;

  constructor(command: string, args: string[], env: Record<string, string>, running: Set<JsonLinesProc>) {
    this.child = spawn(command, args, {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    running.add(this);
    let partial = '';
    this.child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      partial += d;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const l of parts) if (l.trim() !== '') this.lines.push(JSON.parse(l) as Event);
    });
    this.child.stderr?.setEncoding('utf8').on('data', (d: string) => (this.stderr = (this.stderr + d).slice(-8_000)));
    // 'close', not 'exit': at 'exit' the child's stdout may still hold its last lines, and a client's answers would be
    // read short.
    this.exited = new Promise((resolve) => this.child.once('close', (code) => (running.delete(this), resolve(code))));
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

/** SIGKILLs every process still running in `running`. */
export async function stopAll(running: Set<JsonLinesProc>): Promise<void> {
  await Promise.all([...running].map((p) => p.kill('SIGKILL')));
}

/** Waits for a client driver to end (bounded); its lines, one per op; throws with its stderr unless it exited 0. */
export async function clientLines(p: JsonLinesProc, who: string): Promise<Event[]> {
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    p.exited,
    new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), CLIENT_RUN_MS))),
  ]);
  clearTimeout(timer);
  if (code !== 0) {
    await p.kill('SIGKILL');
    throw new Error(`${who} ended with ${code}: ${p.stderr}`);
  }
  return p.lines;
}
