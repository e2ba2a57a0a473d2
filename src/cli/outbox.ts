// `verdict outbox init --pg-url URL [--inbox]`: creates the outbox tables (or,
// with --inbox, the inbox's) in that database; idempotent and versioned
// (docs/outbox.md).
import pg from 'pg';
import { bool, CommandError, flag, UsageError } from './args.ts';

const OUTBOX_RELAY_HELP = `  verdict outbox relay --pg-url URL --sink nats://HOST:PORT [--stream NAME] [--subject SUBJECT]
                    [--mode polling|cdc] [--slot NAME] [--allow-unbounded-slot] [--partitions N]
                    [--holder ID] [--lease-ttl-ms MS] [--metrics-listen HOST:PORT] [--warn-lag-ms MS]
                    [--warn-bytes N] [--idle-ms MS] [--batch N] [--log-level LEVEL]
                    [--endpoints HOST:PORT,...] [--ca FILE --cert FILE --key FILE]
                                      publish the outbox to NATS JetStream until SIGTERM; partitions are leased
                                      from the cluster at --endpoints and split fairly among running relays;
                                      --metrics-listen serves the lag and counts at http://HOST:PORT/metrics
`;

export const OUTBOX_HELP = `  verdict outbox init --pg-url URL [--inbox]
                                      create the transactional outbox tables in that PostgreSQL database (or, with
                                      --inbox, the consumer's inbox tables); idempotent, see docs/outbox.md
  verdict outbox slots --pg-url URL [--warn-bytes N] [--json]
                                      every replication slot with active, wal_status and the WAL it retains; with
                                      --warn-bytes, a WARN line per slot above N bytes and exit code 1; a lost
                                      slot (wal_status = lost) always gets a WARN line and exit code 1
${OUTBOX_RELAY_HELP}`;

export async function outboxCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  if (sub === 'relay') return (await import('./outbox-relay.ts')).outboxRelayCommand(args);
  if (sub !== 'init' && sub !== 'slots') throw new UsageError(`usage:\n${OUTBOX_HELP}`);
  const url = flag(args, '--pg-url');
  const inbox = bool(args, '--inbox');
  const json = bool(args, '--json');
  const warnText = flag(args, '--warn-bytes');
  const warnBytes = warnText === undefined ? null : Number(warnText);
  if (warnBytes !== null && !(Number.isSafeInteger(warnBytes) && warnBytes >= 0))
    throw new UsageError(`--warn-bytes must be a whole number of bytes, not ${JSON.stringify(warnText)}`);
  if (url === undefined) throw new UsageError(`verdict outbox ${sub} needs --pg-url postgres://USER@HOST:PORT/DB`);
  if (args.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(args[0])}`);
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await c.connect();
  } catch (err) {
    throw new CommandError(`cannot connect to PostgreSQL at --pg-url: ${(err as Error).message}`);
  }
  if (sub === 'slots') {
    try {
      const { slots } = await import('../outbox/cdc-relay.ts');
      const all = await slots(c);
      if (json) process.stdout.write(`${JSON.stringify(all)}\n`);
      else {
        process.stdout.write('slot\tplugin\tactive\twal_status\tretained_bytes\n');
        for (const s of all)
          process.stdout.write(
            `${s.slot}\t${s.plugin ?? 'physical'}\t${s.active ? `yes (pid ${s.activePid})` : 'no'}\t${s.walStatus ?? '-'}\t${s.retainedBytes}\n`,
          );
      }
      // A lost slot retains nothing (its restart_lsn is gone) and is the worst case: its events can never be read.
      const lost = all.filter((s) => s.walStatus === 'lost');
      for (const s of lost)
        process.stderr.write(
          `WARN slot ${s.slot} is lost (wal_status = lost): PostgreSQL removed WAL it needed; what was written since cannot be read from it\n`,
        );
      const over = warnBytes === null ? [] : all.filter((s) => s.walStatus !== 'lost' && s.retainedBytes > warnBytes);
      for (const s of over)
        process.stderr.write(
          `WARN slot ${s.slot} retains ${s.retainedBytes} bytes of WAL, above --warn-bytes ${warnBytes}${s.active ? '' : ' and nobody reads it'}\n`,
        );
      if (over.length > 0 || lost.length > 0) process.exitCode = 1;
      return;
    } finally {
      await c.end().catch(() => {});
    }
  }
  const { initSchema } = await import('../outbox/schema.ts');
  try {
    const which = inbox ? 'inbox' : 'outbox';
    const r = await initSchema(c, which);
    process.stdout.write(
      `${which} tables ${r.created ? 'created' : 'already present'} (schema version ${r.version})\n`,
    );
  } catch (err) {
    throw new CommandError(`outbox init failed: ${(err as Error).message}`);
  } finally {
    await c.end().catch(() => {});
  }
}
