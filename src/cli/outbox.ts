// `verdict outbox init --pg-url URL [--inbox]`: creates the outbox tables (or,
// with --inbox, the inbox's) in that database; idempotent and versioned
// (docs/outbox.md).
import pg from 'pg';
import { bool, CommandError, flag, UsageError } from './args.ts';

export const OUTBOX_HELP = `  verdict outbox init --pg-url URL [--inbox]
                                      create the transactional outbox tables in that PostgreSQL database (or, with
                                      --inbox, the consumer's inbox tables); idempotent, see docs/outbox.md
`;

export async function outboxCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  if (sub !== 'init') throw new UsageError(`usage:\n${OUTBOX_HELP}`);
  const url = flag(args, '--pg-url');
  const inbox = bool(args, '--inbox');
  if (url === undefined) throw new UsageError('verdict outbox init needs --pg-url postgres://USER@HOST:PORT/DB');
  if (args.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(args[0])}`);
  const { initSchema } = await import('../outbox/schema.ts');
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await c.connect();
  } catch (err) {
    throw new CommandError(`cannot connect to PostgreSQL at --pg-url: ${(err as Error).message}`);
  }
  try {
    const which = inbox ? 'inbox' : 'outbox';
    const r = await initSchema(c, which);
    process.stdout.write(`${which} tables ${r.created ? 'created' : 'already present'} (schema version ${r.version})\n`);
  } catch (err) {
    throw new CommandError(`outbox init failed: ${(err as Error).message}`);
  } finally {
    await c.end().catch(() => {});
  }
}
