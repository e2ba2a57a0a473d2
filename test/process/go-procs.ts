// Go processes for the tests of the Go SDK (test/process/go-sdk.test.ts):
// the driver programs of sdk/go/internal/testproc, built offline with
// Debian's Go toolchain and packages (sdk/go/vendor.sh, -mod=vendor), whose
// stdout is JSON lines. Every process is tracked; stopGoProcs() SIGKILLs
// those still running (each test file calls it after each test and after all).
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './harness.ts';
import { clientLines, type Event, JsonLinesProc, stopAll } from './json-lines-proc.ts';

export const GO = '/usr/bin/go';
export const GO_SDK = join(ROOT, 'sdk', 'go');

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
 * `conformance` is the participant of test/conformance/go.test.ts. A name
 * with a slash is a package path in sdk/go (`cmd/verdict-pg-resolve`).
 */
export function buildGoDrivers(dir: string, drivers: string[] = ['participant', 'client']): void {
  goVendor();
  const packages = drivers.map((d) => (d.includes('/') ? `./${d}` : `./internal/testproc/${d}`));
  const r = spawnSync(GO, ['build', '-o', `${dir}/`, ...packages], {
    cwd: GO_SDK,
    encoding: 'utf8',
    env: goEnv(),
    timeout: 300_000,
  });
  if (r.status !== 0) throw new Error(`go build ended with ${r.status ?? r.signal}: ${r.stdout}${r.stderr}`);
}

export type { Event } from './json-lines-proc.ts';

const running = new Set<JsonLinesProc>();

/** A Go driver process whose stdout is JSON lines. */
export class GoProc extends JsonLinesProc {
  constructor(binary: string, args: string[], env: Record<string, string> = {}) {
    super(binary, args, env, running);
  }
}

export const stopGoProcs = (): Promise<void> => stopAll(running);

/** Runs the Go client driver over `ops` to its end; its results, one per op. */
export function goClient(
  binary: string,
  nodes: string[],
  ops: unknown[],
  tls?: string,
  callTimeoutMs = 60_000,
): Promise<Event[]> {
  const p = new GoProc(binary, [nodes.join(','), JSON.stringify(ops), ...(tls === undefined ? [] : [tls])], {
    VERDICT_TEST_CALL_TIMEOUT_MS: String(callTimeoutMs),
  });
  return clientLines(p, 'the Go client');
}
