// The SQL of docs/postgres.md, read from the page, so the tests that run it
// and the page cannot drift apart.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { withClient, type PgServer } from './harness.ts';

/** The ```sql blocks of docs/postgres.md, so the page and this test cannot drift apart. */
export const DOC_SQL = [
  ...readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'postgres.md'), 'utf8').matchAll(
    /```sql\n([\s\S]*?)```/g,
  ),
].map((m) => m[1]);
export const docBlock = (containing: string): string => {
  const b = DOC_SQL.find((x) => x.includes(containing));
  if (b === undefined) throw new Error(`docs/postgres.md has no sql block with ${containing}`);
  return b;
};

/**
 * Runs a block as psql would: `\c DB [USER]` switches the connection (as the
 * superuser by default), every other statement runs on its own (CREATE
 * DATABASE may not share a transaction).
 */
export async function psql(server: PgServer, block: string, db = 'postgres'): Promise<void> {
  let url = server.url(db);
  for (const part of block.split(/^(\\c [^\n]*)$/m)) {
    const c = /^\\c (\S+)(?: (\S+))?$/.exec(part.trim());
    if (c !== null) {
      const u = new URL(server.url(c[1]));
      if (c[2] !== undefined) u.username = c[2];
      url = u.toString();
      continue;
    }
    const statements = part
      .split(/;\s*(?:--[^\n]*)?\n/)
      .map((x) => x.trim())
      .filter((x) => x !== '');
    await withClient(url, async (client) => {
      for (const st of statements) await client.query(st);
    });
  }
}
