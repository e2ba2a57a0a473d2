// The CLI as scripts use it: `verdict --version` prints the package's
// version, and a reader that closes the pipe early (`verdict --help | head
// -c 1`) ends the command quietly with status 0, never an EPIPE trace.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { BIN, ROOT } from './harness.ts';

it('verdict --version prints the version of package.json', () => {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const r = spawnSync(process.execPath, [BIN, '--version'], { encoding: 'utf8', timeout: 60_000 });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  expect(r.stdout).toBe(`verdict ${version}\n`);
});

it('a closed pipe ends a command quietly with status 0', async () => {
  // The reader is gone before the command writes: its start-up takes far longer than this turn.
  const child = spawn(process.execPath, [BIN, '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const status = await new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  expect(stderr).toBe('');
  expect(status).toBe(0);
}, 60_000);
