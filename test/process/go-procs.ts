// Go processes for the tests of the Go SDK (test/process/go-sdk.test.ts):
// the driver programs of sdk/go/internal/testproc, built offline with
// Debian's Go toolchain and packages (sdk/go/vendor.sh, -mod=vendor), whose
// stdout is JSON lines. Every process is tracked; stopGoProcs() SIGKILLs
// those still running (each test file calls it after each test and after all).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, waitFor } from './harness.ts';

export const GO = '/usr/bin/go';
export const GO_SDK = join(ROOT, 'sdk', 'go');
const WAIT_MS = 60_000;

/**
 * The environment of every go command here: the module built from vendor/
 * (Debian's packages), nothing fetched (GOPROXY=off), the build cache kept
 * across runs in the temp directory.
 */
export function goEnv(): NodeJS.ProcessEnv {
  const cache = join(tmpdir(), 'verdict-go-cache');
  mkdirSync(cache, { recursive: true });
  return {
    ...process.env,
    GOFLAGS: '-mod=vendor',
    GOPROXY: 'off',
    GO111MODULE: 'on',
    GOWORK: 'off',
    GOTOOLCHAIN: 'local',
    GOCACHE: join(cache, 'build'),
    GOPATH: join(cache, 'gopath'),
  };
}

/** Runs `sh vendor.sh` in sdk/go: vendor/ from /usr/share/gocode; throws with its output when it fails. */
export function goVendor(): void {
  const r = spawnSync('sh', ['vendor.sh'], { cwd: GO_SDK, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`sdk/go/vendor.sh ended with ${r.status ?? r.signal}: ${r.stderr}`);
}

/**
 * Builds test drivers of sdk/go/internal/testproc into `dir`, each named as
 * its folder: by default `${dir}/participant` and `${dir}/client`;
 * `conformance` is the participant of test/conformance/go.test.ts.
 */
export function buildGoDrivers(dir: string, drivers: string[] = ['participant', 'client']): void {
  goVendor();
  const r = spawnSync(GO, ['build', '-o', `${dir}/`, ...drivers.map((d) => `./internal/testproc/${d}`)], { cwd: GO_SDK, encoding: 'utf8', env: goEnv(), timeout: 300_000 });
  if (r.status !== 0) throw new Error(`go build ended with ${r.status ?? r.signal}: ${r.stdout}${r.stderr}`);
}

export type Event = Record<string, unknown> & { event?: string; txn_id?: string };

/** A Go driver process whose stdout is JSON lines, kept as they arrive. */
export class GoProc {
  readonly lines: Event[] = [];
  stderr = '';
  exited: Promise<number | null>;
  private readonly child: ChildProcess;

  constructor(binary: string, args: string[], env: Record<string, string> = {}) {
    this.child = spawn(binary, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
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

const running = new Set<GoProc>();
export const stopGoProcs = async (): Promise<void> => {
  await Promise.all([...running].map((p) => p.kill('SIGKILL')));
};

/** Runs the Go client driver over `ops` to its end; its results, one per op. */
export async function goClient(binary: string, nodes: string[], ops: unknown[], tls?: string, callTimeoutMs = 60_000): Promise<Event[]> {
  const p = new GoProc(binary, [nodes.join(','), JSON.stringify(ops), ...(tls === undefined ? [] : [tls])], { VERDICT_TEST_CALL_TIMEOUT_MS: String(callTimeoutMs) });
  const code = await Promise.race([p.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 120_000).unref())]);
  if (code !== 0) {
    await p.kill('SIGKILL');
    throw new Error(`the Go client ended with ${code}: ${p.stderr}`);
  }
  return p.lines;
}
