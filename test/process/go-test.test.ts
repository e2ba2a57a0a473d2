// The Go SDK's own checks (sdk/go) as part of `npm test`: `go vet ./...` is
// one test, and each Go test is one vitest test here, so the summary line
// counts them one by one and a failure is named by its package and name.
// The tests are listed when this file loads (go test -list), run once in
// beforeAll (go test -json), and each vitest test asserts its own result.
// Everything builds offline from Debian's packages (sdk/go/vendor.sh,
// -mod=vendor, GOPROXY=off). A listing that fails is one failing test,
// never a silent zero.
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { GO, GO_SDK, goEnv, goVendor } from './go-procs.ts';

/** `${package} ${Test}` of every Go test; or why they could not be listed. */
function list(): { ids: string[]; problem: string | null } {
  try {
    goVendor();
  } catch (err) {
    return { ids: [], problem: (err as Error).message };
  }
  const r = spawnSync(GO, ['test', '-list', '.*', './...'], {
    cwd: GO_SDK,
    encoding: 'utf8',
    env: goEnv(),
    timeout: 300_000,
  });
  const ids: string[] = [];
  let names: string[] = [];
  for (const line of (r.stdout ?? '').split('\n')) {
    if (/^Test\w*$/.test(line)) names.push(line);
    const done = /^ok\s+(\S+)/.exec(line);
    if (done !== null) {
      ids.push(...names.map((n) => `${done[1]} ${n}`));
      names = [];
    }
  }
  if (r.status !== 0 || ids.length === 0)
    return {
      ids,
      problem: `go test -list ended with ${r.status ?? r.signal}: ${(r.stdout ?? '').slice(-1_500)}${(r.stderr ?? '').slice(-1_500)}`,
    };
  return { ids, problem: null };
}

type Result = { state: 'pass' | 'fail' | 'skip'; output: string };

const { ids, problem } = list();
const results = new Map<string, Result>();
let runOutput = '';
let vet: { status: number | null; output: string } = { status: null, output: '' };

beforeAll(() => {
  const v = spawnSync(GO, ['vet', './...'], { cwd: GO_SDK, encoding: 'utf8', env: goEnv(), timeout: 300_000 });
  vet = { status: v.status, output: `${v.stdout ?? ''}${v.stderr ?? ''}`.slice(-3_000) };
  if (problem !== null) return;
  const r = spawnSync(GO, ['test', '-json', '-count=1', './...'], {
    cwd: GO_SDK,
    encoding: 'utf8',
    env: goEnv(),
    timeout: 400_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  runOutput = `${(r.stdout ?? '').slice(-3_000)}${(r.stderr ?? '').slice(-1_000)}`;
  const outputs = new Map<string, string>();
  for (const line of (r.stdout ?? '').split('\n')) {
    if (!line.startsWith('{')) continue;
    const e = JSON.parse(line) as { Action: string; Package: string; Test?: string; Output?: string };
    if (e.Test === undefined || e.Test.includes('/')) continue;
    const id = `${e.Package} ${e.Test}`;
    if (e.Action === 'output') outputs.set(id, ((outputs.get(id) ?? '') + (e.Output ?? '')).slice(-4_000));
    if (e.Action === 'pass' || e.Action === 'fail' || e.Action === 'skip')
      results.set(id, { state: e.Action, output: outputs.get(id) ?? '' });
  }
}, 500_000);

describe('sdk/go', () => {
  it('go vet ./... finds nothing', () => {
    expect(vet.output).toBe('');
    expect(vet.status).toBe(0);
  });
  it('lists the Go SDK tests', () => {
    expect(problem).toBeNull();
    expect(ids.length).toBeGreaterThan(0);
  });
  for (const id of ids) {
    it(id, () => {
      const r = results.get(id);
      if (r === undefined) throw new Error(`go test reported no result for ${id}; its output: ${runOutput}`);
      if (r.state === 'fail') throw new Error(`${id} failed:\n${r.output}`);
      expect(r.state).toBe('pass');
    });
  }
});
