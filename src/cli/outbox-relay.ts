// `verdict outbox relay`: publishes a PostgreSQL outbox to NATS JetStream
// (docs/outbox.md), fenced by partition leases from the Verdict cluster.
// Runs until SIGTERM or SIGINT, then finishes its round, gives its leases
// back and exits 0. Refusals at start (missing tables, a CDC server or slot
// it cannot use) are one line and exit 1; so is a CDC slot found lost while
// it runs (the relay stops: nothing it could do would deliver those events).
import { hostname } from 'node:os';
import * as grpc from '@grpc/grpc-js';
import { CoordinatorConnection } from '../client/connection.ts';
import { createLogger } from '../node/logger.ts';
import { LEASE_HOLDER } from '../lease/state.ts';
import { LeaseKeeper } from '../outbox/lease-keeper.ts';
import { NatsSink, NatsSinkError } from '../outbox/nats-sink.ts';
import { RelayRunner, RelayStartError } from '../outbox/relay-runner.ts';
import { serveMetrics, MetricsListenError, type MetricsServer } from '../transport/ops.ts';
import { nodeChannelCredentials } from '../transport/tls-credentials.ts';
import { bool, CommandError, flag, UsageError } from './args.ts';
import { clientSecurity, loadClientTls } from './client-tls.ts';
import { endpoints } from './status.ts';

function count(args: string[], name: string, dflt: number, min: number, max: number): number {
  const v = flag(args, name);
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!(Number.isSafeInteger(n) && n >= min && n <= max))
    throw new UsageError(`${name} must be a whole number from ${min} to ${max}, not ${JSON.stringify(v)}`);
  return n;
}

export async function outboxRelayCommand(args: string[]): Promise<void> {
  const pgUrl = flag(args, '--pg-url');
  const sinkUrl = flag(args, '--sink');
  const stream = flag(args, '--stream') ?? 'VERDICT_OUTBOX';
  const subject = flag(args, '--subject') ?? 'verdict.outbox';
  const mode = flag(args, '--mode') ?? 'polling';
  const slot = flag(args, '--slot') ?? 'verdict_outbox';
  const allowUnboundedSlot = bool(args, '--allow-unbounded-slot');
  const partitions = count(args, '--partitions', 8, 1, 1024);
  const holder = flag(args, '--holder') ?? `${hostname().replace(/[^A-Za-z0-9_.:@-]/g, '-')}-${process.pid}`;
  const ttlMs = count(args, '--lease-ttl-ms', 6_000, 1_500, 300_000);
  const metricsListen = flag(args, '--metrics-listen');
  const warnLagMs = count(args, '--warn-lag-ms', 60_000, 0, 86_400_000);
  const warnBytes = count(args, '--warn-bytes', 1024 ** 3, 0, Number.MAX_SAFE_INTEGER);
  const idleMs = count(args, '--idle-ms', 20, 1, 60_000);
  const batchMax = count(args, '--batch', 500, 1, 10_000);
  const logLevel = flag(args, '--log-level') ?? 'info';
  // Before endpoints(): whether they are the local cluster's decides the default TLS.
  const tls = clientSecurity(args);
  const addrs = endpoints(args);
  if (args.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(args[0])}`);
  if (pgUrl === undefined) throw new UsageError('verdict outbox relay needs --pg-url postgres://USER@HOST:PORT/DB');
  if (sinkUrl === undefined)
    throw new UsageError('verdict outbox relay needs --sink nats://HOST:PORT (NATS with JetStream)');
  if (mode !== 'polling' && mode !== 'cdc')
    throw new UsageError(`--mode must be polling or cdc, not ${JSON.stringify(mode)}`);
  if (!/^[a-z0-9_]{1,63}$/.test(slot))
    throw new UsageError(`--slot ${JSON.stringify(slot)}: a replication slot name is 1–63 of a-z, 0-9 and _`);
  if (!LEASE_HOLDER.test(holder))
    throw new UsageError(
      `--holder ${JSON.stringify(holder)}: 1–128 of letters, digits and _.:@-, starting with a letter or digit`,
    );
  if (!['trace', 'debug', 'info', 'warn', 'error'].includes(logLevel))
    throw new UsageError(`--log-level must be trace, debug, info, warn or error`);
  let sink: NatsSink;
  try {
    sink = new NatsSink({ url: sinkUrl, stream, subject });
  } catch (err) {
    if (err instanceof NatsSinkError) throw new UsageError(`--sink/--stream/--subject: ${err.message}`);
    throw err;
  }
  const material = tls === null ? null : loadClientTls(tls);
  const credentials = material === null ? grpc.credentials.createInsecure() : nodeChannelCredentials(material);

  const log = createLogger(logLevel, { relay: holder });
  if (material === null)
    log.warn(
      { insecure: true },
      'insecure: calling the cluster in plaintext without TLS; anyone on the path can read and forge its answers (see docs/security.md)',
    );
  const conn = new CoordinatorConnection(addrs, { credentials, callTimeoutMs: 10_000 });
  // CDC reads one slot, so one relay publishes it at a time: one lease, the others stand by.
  const keeper = new LeaseKeeper({
    conn,
    prefix: mode === 'cdc' ? `outbox/${stream}/cdc/${slot}` : `outbox/${stream}`,
    partitions: mode === 'cdc' ? 1 : partitions,
    holder,
    ttlMs,
    balance: mode === 'polling',
    onChange: (partition, epoch, why) =>
      log.info({ partition, epoch, why }, epoch === null ? 'partition lease lost' : 'partition lease granted'),
  });
  const runner = new RelayRunner({
    relay: holder,
    pgUrl,
    sink,
    keeper,
    mode,
    partitions: mode === 'cdc' ? 1 : partitions,
    slot,
    allowUnboundedSlot,
    idleMs,
    batchMax,
    publishTimeoutMs: 5_000,
    warnLagMs,
    warnBytes,
    lagEveryMs: 1_000,
    log,
  });
  let metrics: MetricsServer | null = null;
  try {
    await runner.check();
    if (metricsListen !== undefined) metrics = await serveMetrics(metricsListen, runner.metrics.registry);
  } catch (err) {
    conn.close();
    await sink.close();
    if (err instanceof RelayStartError) throw new CommandError(`outbox relay: ${err.message}`);
    if (err instanceof MetricsListenError) throw new CommandError(`${err.message}; check --metrics-listen`);
    throw new CommandError(`outbox relay: cannot start: ${(err as Error).message}`);
  }
  runner.start();
  log.info(
    {
      mode,
      stream,
      subject,
      partitions: mode === 'cdc' ? 1 : partitions,
      metrics: metrics ? `http://${metrics.address}/metrics` : undefined,
    },
    'outbox relay started',
  );
  const failure = await new Promise<Error | null>((resolve) => {
    const stop = (signal: string): void => {
      log.info({ signal }, 'outbox relay stopping');
      resolve(null);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    void runner.failed.then(resolve);
  });
  await runner.stop();
  await metrics?.close();
  conn.close();
  if (failure !== null) throw new CommandError(`outbox relay: ${failure.message}`);
  log.info('outbox relay stopped');
}
