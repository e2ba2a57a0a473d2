// cli.status_ms: how long `verdict status` takes against a running cluster,
// as a person runs it: a fresh (cold) process each time, from exec to exit,
// start-up included. The target for an idle machine is under 300 ms.
import { spawn } from 'node:child_process';
import { BIN, ROOT } from '../harness/procs.ts';

export interface CliTiming {
  runs: number;
  /** Wall-clock milliseconds from spawn to exit, each run a new process. */
  p50_ms: number;
  min_ms: number;
  max_ms: number;
}

const RUN_TIMEOUT_MS = 60_000;

function onceMs(bin: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    // The bench's clusters are plaintext: said in the environment, which a verdict from before --insecure ignores.
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, VERDICT_INSECURE: 'true' },
    });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (code !== 0) reject(new Error(`verdict ${args.join(' ')} exited ${code}: ${err.trim()}`));
      else resolve(ms);
    });
  });
}

/**
 * Runs `verdict status --endpoints ...` `runs` times, one after the other, each a cold process; `bin` is the verdict
 * command run.
 */
export async function measureCliStatus(endpoints: string[], runs: number, bin = BIN): Promise<CliTiming> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await onceMs(bin, ['status', '--endpoints', endpoints.join(',')]));
  const sorted = [...times].sort((a, b) => a - b);
  const round = (x: number): number => Math.round(x * 10) / 10;
  return {
    runs,
    p50_ms: round(sorted[Math.floor((sorted.length - 1) / 2)]),
    min_ms: round(sorted[0]),
    max_ms: round(sorted[sorted.length - 1]),
  };
}
