// `npm run test:busy`: the whole suite (test/run.mjs, with the same
// arguments) while two CPU-bound processes run beside it for its whole
// length, at the same priority: on this two-core machine the tests then get
// about half of the CPU they get on a quiet one. A test that passes here
// waits for what becomes true eventually instead of reading it once.
// The spinners are stopped on every path, and carry no test-run marker.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SPINNERS = 2;

const spin = 'let x = 0; for (;;) { x = (x * 31 + 7) % 1000003; }';
const spinners = Array.from({ length: SPINNERS }, () => spawn(process.execPath, ['-e', spin], { stdio: 'ignore' }));
const stop = () => {
  for (const s of spinners) s.kill('SIGKILL');
};
process.once('exit', stop);
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => process.exit(130));
console.log(
  `test:busy: ${SPINNERS} CPU-bound processes beside the suite (pids ${spinners.map((s) => s.pid).join(', ')})`,
);

const startedAtMs = Date.now();
const run = spawn(process.execPath, [join(ROOT, 'test', 'run.mjs'), ...process.argv.slice(2)], { stdio: 'inherit' });
run.once('exit', (status, signal) => {
  stop();
  console.log(
    `test:busy: the suite took ${Math.round((Date.now() - startedAtMs) / 1000)} s beside ${SPINNERS} CPU-bound processes`,
  );
  process.exit(status ?? (signal ? 1 : 0));
});
