// `verdict saga service`: a demo step service from the shell, so that
// `verdict saga start` has somewhere to run its steps (docs/sagas.md). It
// serves the handlers named by --handler with the memory inbox in --data:
// an action answers DONE with the output "SERVICE.NAME done", or FAILED when
// its input is "decline" (the way to see a saga compensate); a compensation
// answers DONE. Every effect is recorded once in the inbox's synced journal,
// however often the cluster calls. A real service is a small file on
// `verdict/saga` (docs/sagas.md shows one).
import { printable } from './terminal-text.ts';
import { createLogger } from '../node/logger.ts';
import {
  startStepService,
  StepServiceStartupError,
  type StepHandlers,
  type StepService,
} from '../saga/step-service.ts';
import type { StepHandler } from '../saga/inbox.ts';
import { flag, flagAll, UsageError } from './args.ts';
import { insecureArg, tlsArgs } from './client-tls.ts';
import { ID, ID_CHARS_MAX, ID_FORM } from '../domain/id.ts';
import { localServerTls } from './certs.ts';

export const SAGA_SERVICE_USAGE =
  'usage: verdict saga service --id ID --listen HOST:PORT --data DIR --handler NAME [--handler NAME ...] [--cluster-id local] [--endpoints HOST:PORT,...] [--log-level info] [--ca FILE --cert FILE --key FILE | --insecure]';

const DEFAULT_ENDPOINTS = '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003';
/** A demo handler's name. */
const NAME = /^[A-Za-z0-9._-]{1,64}$/;
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export interface SagaServiceArgs {
  id: string;
  listen: string;
  data: string;
  handlers: string[];
  clusterId: string;
  endpoints: string[];
  logLevel: string;
  tls: ReturnType<typeof tlsArgs>;
  insecure: boolean;
}

/** Parses the flags; every problem is a one-line UsageError. */
export function parseSagaServiceArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): SagaServiceArgs {
  const args = [...argv];
  const id = flag(args, '--id');
  const listen = flag(args, '--listen');
  const data = flag(args, '--data');
  const handlers = flagAll(args, '--handler');
  const clusterId = flag(args, '--cluster-id') ?? 'local';
  const endpointsText = flag(args, '--endpoints') ?? env.VERDICT_ENDPOINTS ?? DEFAULT_ENDPOINTS;
  const logLevel = flag(args, '--log-level') ?? 'info';
  const tls = tlsArgs(args, env);
  const insecure = insecureArg(args, env);
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"; ${SAGA_SERVICE_USAGE}`);
  if (id === undefined || listen === undefined || data === undefined || handlers.length === 0) {
    throw new UsageError(
      `verdict saga service needs --id, --listen, --data and at least one --handler; ${SAGA_SERVICE_USAGE}`,
    );
  }
  // A step service registers as a participant: its id follows the participant id rule.
  if (!ID.test(id)) throw new UsageError(`--id "${id}" must be 1–${ID_CHARS_MAX} ${ID_FORM}`);
  for (const h of handlers)
    if (!NAME.test(h)) throw new UsageError(`--handler "${h}" must be 1-64 letters, digits, '.', '_' or '-'`);
  if (!/^(.+):(\d{1,5})$/.test(listen))
    throw new UsageError(`--listen "${listen}" is not HOST:PORT (e.g. 127.0.0.1:7201)`);
  if (tls !== null && (tls.cert === undefined || tls.key === undefined))
    throw new UsageError('--ca needs --cert and --key too: a step service with TLS serves it with its own certificate');
  if (!LEVELS.includes(logLevel)) throw new UsageError(`--log-level must be one of ${LEVELS.join(', ')}`);
  const endpoints = endpointsText
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (endpoints.length === 0) throw new UsageError('--endpoints must name at least one HOST:PORT');
  return { id, listen, data, handlers: [...new Set(handlers)], clusterId, endpoints, logLevel, tls, insecure };
}

/** The demo handlers: `decline` as an action's input answers FAILED; everything else is DONE. */
export function demoHandlers(serviceId: string, names: readonly string[]): StepHandlers {
  const out: StepHandlers = {};
  for (const name of names) {
    const action: StepHandler = (req) =>
      req.input === 'decline'
        ? { status: 'failed', reason: `${serviceId}.${name} declined (input "decline")` }
        : { status: 'done', output: `${serviceId}.${name} done`, effect: `${name}:${req.sagaId}` };
    const compensate: StepHandler = (req) => ({
      status: 'done',
      output: `${serviceId}.${name} compensated`,
      effect: `undo ${name}:${req.sagaId}`,
    });
    out[name] = { action, compensate };
  }
  return out;
}

/** `verdict saga service ...`: starts the step service and keeps it running until SIGINT/SIGTERM. */
export async function sagaServiceCommand(argv: string[]): Promise<void> {
  const a = parseSagaServiceArgs(argv);
  const logger = createLogger(a.logLevel);
  const tls = a.tls ?? (a.insecure ? null : localServerTls(a.id, a.listen, a.clusterId, a.endpoints, logger));
  let s: StepService;
  try {
    s = await startStepService({
      clusterId: a.clusterId,
      serviceId: a.id,
      listen: a.listen,
      endpointsOfCluster: a.endpoints,
      dataDir: a.data,
      handlers: demoHandlers(a.id, a.handlers),
      logger,
      ...(tls !== null ? { tls } : {}),
      insecure: a.insecure,
    });
  } catch (err) {
    if (err instanceof StepServiceStartupError || (err instanceof Error && 'code' in err)) {
      process.stderr.write(`verdict: ${printable(err.message)}\n`);
      process.exit(1);
    }
    throw err;
  }
  s.registered.then(
    () => logger.info({ stepService: a.id, address: s.address, handlers: a.handlers }, 'step service registered'),
    (err: unknown) => logger.error({ err }, 'registration failed'),
  );
  let signals = 0;
  const onSignal = (): void => {
    if (++signals > 1) process.exit(130);
    void s.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
