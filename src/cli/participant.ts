// `verdict participant`: run one participant process with the memory
// resource, its journal in --data, registered with the cluster at
// --endpoints. Ctrl-C (SIGINT) or SIGTERM stops it cleanly.
import { pino } from 'pino';
import { JournalCorruptError } from '../participant/journal.ts';
import { ParticipantStartupError, startParticipant, type ParticipantRuntime } from '../participant/runtime.ts';
import { flag, UsageError } from './args.ts';

export const PARTICIPANT_USAGE =
  'usage: verdict participant --id ID --listen HOST:PORT --data DIR [--cluster-id local] [--endpoints HOST:PORT,...] [--advertise HOST:PORT] [--log-level info]';

const DEFAULT_ENDPOINTS = '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003';
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export interface ParticipantArgs {
  id: string;
  listen: string;
  data: string;
  clusterId: string;
  endpoints: string[];
  advertise: string | undefined;
  logLevel: string;
}

/** Parses the flags; every problem is a one-line UsageError. */
export function parseParticipantArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ParticipantArgs {
  const args = [...argv];
  const id = flag(args, '--id');
  const listen = flag(args, '--listen');
  const data = flag(args, '--data');
  const clusterId = flag(args, '--cluster-id') ?? 'local';
  const endpointsText = flag(args, '--endpoints') ?? env.VERDICT_ENDPOINTS ?? DEFAULT_ENDPOINTS;
  const advertise = flag(args, '--advertise');
  const logLevel = flag(args, '--log-level') ?? 'info';
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"; ${PARTICIPANT_USAGE}`);
  if (id === undefined || listen === undefined || data === undefined) {
    throw new UsageError(`verdict participant needs --id, --listen and --data; ${PARTICIPANT_USAGE}`);
  }
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) throw new UsageError(`--id "${id}" must be 1-64 letters, digits, '.', '_' or '-'`);
  if (clusterId === '') throw new UsageError('--cluster-id must not be empty');
  for (const [name, v] of [['--listen', listen], ['--advertise', advertise]] as const) {
    if (v !== undefined && !isHostPort(v)) throw new UsageError(`${name} "${v}" is not HOST:PORT (e.g. 127.0.0.1:7101)`);
  }
  const endpoints = endpointsText.split(',').map((e) => e.trim()).filter((e) => e !== '');
  const badEndpoint = endpoints.find((e) => !isHostPort(e));
  if (endpoints.length === 0 || badEndpoint !== undefined) {
    throw new UsageError(`--endpoints must be HOST:PORT,...; "${badEndpoint ?? endpointsText}" is not`);
  }
  if (!LEVELS.includes(logLevel)) throw new UsageError(`--log-level must be one of ${LEVELS.join(', ')}`);
  return { id, listen, data, clusterId, endpoints, advertise, logLevel };
}

function isHostPort(s: string): boolean {
  const m = /^(.+):(\d{1,5})$/.exec(s);
  return m !== null && Number(m[2]) <= 65_535;
}

/** `verdict participant ...`: starts the participant and keeps it running until SIGINT/SIGTERM. */
export async function participantCommand(argv: string[]): Promise<void> {
  const a = parseParticipantArgs(argv);
  const logger = pino({ level: a.logLevel, base: { pid: process.pid } }, pino.destination(2));
  let p: ParticipantRuntime;
  try {
    p = await startParticipant({
      clusterId: a.clusterId,
      participantId: a.id,
      listen: a.listen,
      advertise: a.advertise,
      endpointsOfCluster: a.endpoints,
      dataDir: a.data,
      logger,
    });
  } catch (err) {
    // Refusals (another participant's data dir, a corrupt journal, an address in use) are one line, not a stack.
    if (err instanceof ParticipantStartupError || err instanceof JournalCorruptError || (err instanceof Error && 'code' in err)) {
      process.stderr.write(`verdict: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  let signals = 0;
  const onSignal = (signal: string): void => {
    // A second signal while stopping forces the exit.
    if (++signals > 1) process.exit(130);
    logger.info({ signal }, 'stopping');
    void p.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
}
