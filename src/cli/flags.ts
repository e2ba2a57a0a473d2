// Which flags each command takes. main.ts checks a command line against this
// table before it runs anything, so a typo (`status --jsn`) is refused with
// the list of valid flags instead of being ignored. The commands themselves
// still parse their own flags (args.ts); this table only has to name them.
import { UsageError } from './args.ts';

/** Flags that take no value; every other flag takes the next argument as its value. */
const SWITCHES = new Set([
  '--json',
  '--commit',
  '--abort',
  '--force-unknown',
  '--in-flight',
  '--in-doubt',
  '--unacked',
  '--heuristic',
  '--help',
  '-h',
  '--force',
  '--insecure',
  '--stuck',
  '--done',
  '--compensated',
  '--inbox',
  '--allow-unbounded-slot',
  '--parallel-commit',
  '--classic-commit',
]);

/** TLS files, or --insecure for plaintext (client-tls.ts). */
const TLS = ['--ca', '--cert', '--key', '--insecure'];
/** Commands that talk to a node's RaftNode service. */
const NODE_CLIENT = ['--endpoints', '--timeout-ms', ...TLS];
/** Commands that go through the SDK (src/client). */
const SDK_CLIENT = ['--endpoints', '--timeout-ms', ...TLS];

/** `command` or `command subcommand` → its flags (besides --help). */
export const COMMAND_FLAGS: Readonly<Record<string, readonly string[]>> = {
  node: ['--config', '--set', '--insecure', '--parallel-commit', '--classic-commit'],
  'node repair': ['--config', '--set'],
  'cluster up': ['--nodes', '--base-port', '--data', '--tls', '--insecure'],
  'cluster init': ['--config', '--set'],
  status: ['--json', ...NODE_CLIENT],
  'leader transfer': ['--to', '--group', '--force', '--json', ...NODE_CLIENT],
  'member list': ['--group', '--json', ...NODE_CLIENT],
  'member add': ['--json', ...NODE_CLIENT],
  'member remove': ['--json', ...NODE_CLIENT],
  participant: [
    '--id',
    '--listen',
    '--data',
    '--cluster-id',
    '--endpoints',
    '--advertise',
    '--metrics-listen',
    '--log-level',
    '--resource',
    '--lock-wait-ms',
    '--pg-url',
    '--pg-concurrency',
    '--mysql-url',
    '--mysql-concurrency',
    ...TLS,
  ],
  'participant resolve': [
    '--commit',
    '--abort',
    '--reason',
    '--id',
    '--cluster-id',
    '--resource',
    '--pg-url',
    '--mysql-url',
    '--operator',
    '--json',
  ],
  'participant remove': ['--json', '--operator', '--force', '--reason', ...SDK_CLIENT],
  participants: ['--json', ...SDK_CLIENT],
  'txn commit': ['--participant', '--txn', '--txn-timeout-ms', '--await-acks-ms', '--json', ...SDK_CLIENT],
  'txn abort': ['--reason', '--json', ...SDK_CLIENT],
  'txn outcome': ['--json', ...SDK_CLIENT],
  'txn list': [
    '--in-flight',
    '--in-doubt',
    '--unacked',
    '--heuristic',
    '--since',
    '--until',
    '--participant',
    '--outcome',
    '--kind',
    '--limit',
    '--json',
    ...SDK_CLIENT,
  ],
  'txn show': ['--json', ...SDK_CLIENT],
  'txn resolve': ['--commit', '--abort', '--reason', '--operator', '--force-unknown', '--json', ...SDK_CLIENT],
  // Sagas (src/cli/saga.ts).
  'saga service': ['--id', '--listen', '--data', '--handler', '--cluster-id', '--endpoints', '--log-level', ...TLS],
  'saga start': ['--step', '--pivot', '--id', '--type', '--label', '--json', '--operator', ...SDK_CLIENT],
  'saga list': ['--stuck', '--limit', '--json', '--operator', ...SDK_CLIENT],
  'saga show': ['--json', '--operator', ...SDK_CLIENT],
  'saga retry': ['--reason', '--operator', '--json', ...SDK_CLIENT],
  'saga resolve': ['--step', '--done', '--compensated', '--reason', '--operator', '--json', ...SDK_CLIENT],
  'outbox init': ['--pg-url', '--inbox'],
  'outbox slots': ['--pg-url', '--warn-bytes', '--json'],
  'outbox relay': [
    '--pg-url',
    '--sink',
    '--stream',
    '--subject',
    '--mode',
    '--slot',
    '--allow-unbounded-slot',
    '--partitions',
    '--holder',
    '--lease-ttl-ms',
    '--metrics-listen',
    '--warn-lag-ms',
    '--warn-bytes',
    '--idle-ms',
    '--batch',
    '--log-level',
    '--endpoints',
    ...TLS,
  ],
  certs: [
    '--dir',
    '--cluster-id',
    '--nodes',
    '--base-port',
    '--participant',
    '--admin',
    '--client',
    '--days',
    '--force',
  ],
};

/** The key of COMMAND_FLAGS that argv names, or null for a command (or subcommand) this table does not know. */
export function commandOf(argv: readonly string[]): string | null {
  const [cmd, sub] = argv;
  if (cmd === undefined) return null;
  if (sub !== undefined && COMMAND_FLAGS[`${cmd} ${sub}`] !== undefined) return `${cmd} ${sub}`;
  return COMMAND_FLAGS[cmd] !== undefined ? cmd : null;
}

/**
 * Refuses a flag the command does not take, naming the valid ones (and the
 * nearest, when one is close). Values are skipped: after a flag that takes a
 * value, the next argument is that value, whatever it looks like.
 */
/** Flags that were renamed, with what to write now. */
const RENAMED: Readonly<Record<string, string>> = {
  '--timeout': '--timeout-ms N (whole milliseconds: --timeout 2s is --timeout-ms 2000)',
  '--call-timeout-ms': '--timeout-ms N, the one timeout of every client command',
};

export function checkFlags(argv: readonly string[]): void {
  const command = commandOf(argv);
  if (command === null) return;
  const valid = COMMAND_FLAGS[command];
  const words = command.split(' ').length;
  for (let i = words; i < argv.length; i++) {
    const a = argv[i];
    // A positional argument may start with one dash (a negative number); flags start with two.
    if (!a.startsWith('--') || a === '--help') continue;
    const name = a.includes('=') ? a.slice(0, a.indexOf('=')) : a;
    if (!valid.includes(name) && RENAMED[name] !== undefined && valid.includes('--timeout-ms'))
      throw new UsageError(`${name} is now ${RENAMED[name]}`);
    if (!valid.includes(name)) {
      const near = nearest(name, valid);
      throw new UsageError(
        `unknown flag "${name}" for verdict ${command}${near ? ` (did you mean ${near}?)` : ''}; valid flags: ${valid.length > 0 ? valid.join(', ') : '(none)'}, --help`,
      );
    }
    if (a.includes('=')) throw new UsageError(`write ${name} VALUE, not ${a}`);
    if (!SWITCHES.has(name)) i += 1;
  }
}

/** The valid flag within edit distance 2 of `name`, if any. */
function nearest(name: string, valid: readonly string[]): string | null {
  let best: string | null = null;
  let bestD = 3;
  for (const v of valid) {
    const d = editDistance(name, v);
    if (d < bestD) {
      best = v;
      bestD = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}
