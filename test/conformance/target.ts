// What the conformance suite needs to know about a participant under test:
// how to run it as a process, what work to give it, and how to read what it
// committed. Nothing else about it: the suite talks to it over gRPC only,
// and kills it with SIGKILL.
//
// A target is one entry of this interface; docs/protocol.md ("Checking a
// participant in any language") shows one for a participant in another
// language, and test/conformance/targets.ts holds those of this repository.
import { spawn, type ChildProcess } from 'node:child_process';
import { ROOT } from '../process/harness.ts';

/** Where and as whom the participant under test runs; the same on every restart. */
export interface TargetEnv {
  clusterId: string;
  participantId: string;
  /** The cluster's endpoints (host:port) to register with and ask outcomes of. */
  nodes: string[];
  /** host:port to serve verdict.participant.Participant on, and the endpoint to register. */
  listen: string;
  /** A directory of its own for durable state; kept across restarts. */
  dataDir: string;
  /** A free host:port the target may serve an out-of-band read on (see Target.read); unused otherwise. */
  probe: string;
  /** Under TLS: the cluster CA, and this participant's certificate (CN = participant id, OU = cluster id) and key. */
  tls?: { ca: string; cert: string; key: string };
}

export interface Target {
  /** Shown in the test names. */
  name: string;
  /** The resource kind it registers with (RegisterParticipantRequest.resource_kind). */
  kind: string;
  /** The command line that runs it, and environment variables beside the test's own. */
  command(env: TargetEnv): { argv: string[]; env?: Record<string, string> };
  /** The payload of a PREPARE whose work writes `value` under `key`, visible through read() once committed. */
  write(key: string, value: string): Uint8Array;
  /** A payload whose work cannot be done: the participant must vote NO. Default: bytes that are not JSON. */
  refuse?(): Uint8Array;
  /**
   * The committed value under `key` in the participant's store, read out of band (a database query, a probe); null when
   * none.
   */
  read(env: TargetEnv, key: string): Promise<string | null>;
  /** Before the first start (a database to create, say), and after the last stop. */
  setup?(env: TargetEnv): Promise<void>;
  teardown?(): Promise<void>;
}

const TAIL_CHARS = 60_000;
const running = new Set<TargetProcess>();

/** One run of a target's command; its output is kept (the tail) for failure messages. */
export class TargetProcess {
  output = '';
  readonly exited: Promise<void>;
  private readonly child: ChildProcess;

  constructor(target: Target, env: TargetEnv) {
    const { argv, env: extra } = target.command(env);
    this.child = spawn(argv[0], argv.slice(1), {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...extra },
    });
    running.add(this);
    const keep = (d: Buffer): void => {
      this.output = (this.output + d.toString()).slice(-TAIL_CHARS);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        running.delete(this);
        this.output += `\n[exited: ${signal ?? code}]`;
        resolve();
      }),
    );
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** kill -9, and wait for the exit. */
  async kill(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** SIGKILLs every target process still running (each test file calls it after all). */
export async function killTargets(): Promise<void> {
  await Promise.all([...running].map((p) => p.kill()));
}

/** A local HTTP probe's answer to GET /value/<key>: 200 with the value, 404 for none. */
export async function readProbe(probe: string, key: string): Promise<string | null> {
  const res = await fetch(`http://${probe}/value/${encodeURIComponent(key)}`, { signal: AbortSignal.timeout(5_000) });
  if (res.status === 404) return null;
  if (res.status !== 200) throw new Error(`the probe at ${probe} answered ${res.status}`);
  return await res.text();
}

/**
 * A target described as data (a JSON file), for a participant outside this
 * repository: VERDICT_CONFORMANCE_TARGET=its-file.json (see
 * test/conformance/external.test.ts and docs/protocol.md).
 *
 *   name     shown in the test names
 *   kind     the resource kind it registers with
 *   command  argv; {participantId} {clusterId} {nodes} (comma-separated)
 *            {listen} {dataDir} {probe} are replaced
 *   tls      argv appended under TLS; {ca} {cert} {key} are replaced
 *   write    the payload of a PREPARE writing {key} = {value} (replaced,
 *            JSON-escaped without their quotes)
 *   refuse   a payload it must vote NO to (default: bytes that are not JSON)
 *   read     "probe": GET http://{probe}/value/<key> answers 200 with the
 *            committed value, 404 for none
 */
export interface TargetSpec {
  name: string;
  kind: string;
  command: string[];
  tls?: string[];
  write: string;
  refuse?: string;
  read: 'probe';
}

export function specTarget(spec: TargetSpec): Target {
  for (const k of ['name', 'kind', 'write'] as const)
    if (typeof spec[k] !== 'string') throw new Error(`the target's "${k}" must be a string`);
  if (!Array.isArray(spec.command) || spec.command.length === 0)
    throw new Error('the target\'s "command" must be a non-empty array of strings');
  if (spec.read !== 'probe') throw new Error('the target\'s "read" must be "probe"');
  const fill = (s: string, values: Record<string, string>): string =>
    s.replace(/\{(\w+)\}/g, (m, k: string) => values[k] ?? m);
  const escape = (s: string): string => JSON.stringify(s).slice(1, -1);
  return {
    name: spec.name,
    kind: spec.kind,
    command: (env) => {
      const values = {
        participantId: env.participantId,
        clusterId: env.clusterId,
        nodes: env.nodes.join(','),
        listen: env.listen,
        dataDir: env.dataDir,
        probe: env.probe,
        ...(env.tls ?? {}),
      };
      return { argv: [...spec.command, ...(env.tls ? (spec.tls ?? []) : [])].map((a) => fill(a, values)) };
    },
    write: (key, value) => Buffer.from(fill(spec.write, { key: escape(key), value: escape(value) })),
    ...(spec.refuse !== undefined ? { refuse: () => Buffer.from(spec.refuse as string) } : {}),
    read: (env, key) => readProbe(env.probe, key),
  };
}
