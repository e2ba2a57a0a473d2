// A real NATS server with JetStream for the outbox's tests and benchmark:
// `nats-server -js` on a free loopback port with its store in a temp folder.
// restart() stops it and starts it again on the same port and store (the
// broker restart of the fault tests); stop() ends it and deletes the folder.
// Every wait is bounded. No test-runner imports, so bench/ can use it.
//
//   VERDICT_NATS_BIN  the nats-server binary (default: nats-server on PATH,
//                     else /usr/sbin/nats-server; .ci/run installs it).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from './free-ports.ts';

const START_TIMEOUT_MS = 20_000;
const LOG_CHARS_MAX = 20_000;

export interface NatsServer {
  url: string;
  port: number;
  log(): string;
  /** SIGKILL (hard) or SIGTERM, then start again on the same port and store. */
  restart(opts?: { downMs?: number; hard?: boolean }): Promise<void>;
  /** Stops the server without deleting its store (start() brings it back). */
  halt(hard?: boolean): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

function binary(): string {
  const env = process.env.VERDICT_NATS_BIN;
  if (env !== undefined && env !== '') return env;
  for (const dir of (process.env.PATH ?? '').split(':'))
    if (dir !== '' && existsSync(join(dir, 'nats-server'))) return join(dir, 'nats-server');
  if (existsSync('/usr/sbin/nats-server')) return '/usr/sbin/nats-server';
  throw new Error(
    'nats-server not found: install it (apt-get install nats-server; .ci/run does it) or set VERDICT_NATS_BIN',
  );
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export async function startNats(): Promise<NatsServer> {
  const bin = binary();
  const root = await mkdtemp(join(tmpdir(), 'verdict-nats-'));
  const [port] = await freePorts(1);
  let child: ChildProcess | null = null;
  let output = '';
  const exitHook = (): void => void child?.kill('SIGKILL');
  process.on('exit', exitHook);

  const start = async (): Promise<void> => {
    const c = spawn(
      bin,
      ['-js', '-sd', join(root, 'store'), '-a', '127.0.0.1', '-p', String(port), '-n', `verdict-test-${port}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = c;
    const keep = (b: Buffer): void => {
      output = (output + b.toString()).slice(-LOG_CHARS_MAX);
    };
    c.stdout?.on('data', keep);
    c.stderr?.on('data', keep);
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (c.exitCode !== null) throw new Error(`nats-server exited during start-up (code ${c.exitCode}):\n${output}`);
      if (Date.now() > deadline)
        throw new Error(`nats-server did not accept connections within ${START_TIMEOUT_MS} ms:\n${output}`);
      if (/Server is ready/.test(output) && (await accepts(port))) return;
      await sleep(50);
    }
  };

  const halt = async (hard = false): Promise<void> => {
    const c = child;
    if (c === null || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill(hard ? 'SIGKILL' : 'SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(timer);
    output += '\n[halted]\n';
  };

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    log: () => output,
    start,
    halt,
    async restart(opts = {}) {
      await halt(opts.hard ?? false);
      await sleep(opts.downMs ?? 0);
      await start();
    },
    async stop() {
      await halt();
      process.off('exit', exitHook);
      await rm(root, { recursive: true, force: true });
    },
  };
}
