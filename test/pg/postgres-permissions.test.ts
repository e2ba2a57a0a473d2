// The PostgreSQL set-up of docs/postgres.md against a real PostgreSQL 15:
// a role that may not create tables in schema public (PostgreSQL 15's
// default for a database it does not own) is refused at start with a message
// naming the missing grant; each of the page's three remedies (the grant, a
// schema of its own, owning the database) lets the adapter create its tables.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresConfigError, PostgresResource } from '../../src/participant/postgres.ts';
import { sql, startPostgres, type PgServer } from './harness.ts';
import { docBlock, psql as psqlOn } from './doc-sql.ts';

let server: PgServer;
const ROLE = 'verdict';

beforeAll(async () => {
  // A server of our own: the test creates a role and looks at its rights.
  server = await startPostgres({ private: true, databases: ['owned_by_postgres', 'with_schema'] });
  // The role and databases exactly as docs/postgres.md makes them.
  await psqlOn(server, docBlock('CREATE ROLE verdict'));
  await sql(server.url('postgres'), `CREATE DATABASE owned_by_verdict OWNER ${ROLE}`);
});

afterAll(async () => {
  await server?.stop();
});

/** The URL of database db as the role `verdict` (the harness's server trusts local logins). */
function asRole(db: string): string {
  const u = new URL(server.url(db));
  u.username = ROLE;
  return u.toString();
}

const open = (db: string): Promise<PostgresResource> =>
  PostgresResource.open({ clusterId: 'c', participantId: 'shop', url: asRole(db), concurrency: 2 });

const tables = async (db: string): Promise<string[]> =>
  (
    await sql<{ t: string }>(
      server.url(db),
      "SELECT schemaname || '.' || tablename AS t FROM pg_tables WHERE tablename LIKE 'verdict\\_%' ORDER BY 1",
    )
  ).map((r) => r.t);

describe('postgres participant: the rights docs/postgres.md lists', () => {
  it("the page's SQL runs as written: role, databases owned by it, the example tables; the adapter then starts with no grant", async () => {
    await psqlOn(server, docBlock('CREATE TABLE orders'));
    expect(await sql(asRole('ledger'), 'SELECT id, balance_cents FROM accounts')).toEqual([
      { id: 'acct-9', balance_cents: '10000' },
    ]);
    for (const db of ['shop', 'ledger']) {
      const r = await open(db);
      await r.close();
      expect(await tables(db)).toEqual(['public.verdict_heuristics', 'public.verdict_markers']);
    }
    // The page's grants run too (harmless for an owner).
    await psqlOn(server, docBlock('GRANT CREATE ON SCHEMA public TO verdict'));
  });

  it('refuses a role without CREATE on schema public, naming the grant and the tables; GRANT CREATE ON SCHEMA public fixes it', async () => {
    const err = await open('owned_by_postgres').then(
      (r) => r.close().then(() => null),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PostgresConfigError);
    const message = (err as Error).message;
    expect(message).toMatch(/permission denied for schema public \(SQLSTATE 42501\)/);
    expect(message).toMatch(/verdict_markers and verdict_heuristics/);
    expect(message).toContain(
      'GRANT CREATE ON SCHEMA public TO verdict; (run it in database owned_by_postgres as its owner or a superuser',
    );
    expect(await tables('owned_by_postgres')).toEqual([]);

    await sql(server.url('owned_by_postgres'), `GRANT CREATE ON SCHEMA public TO ${ROLE}`);
    const r = await open('owned_by_postgres');
    await r.close();
    expect(await tables('owned_by_postgres')).toEqual(['public.verdict_heuristics', 'public.verdict_markers']);
  });

  it('a schema of its own (CREATE SCHEMA ... AUTHORIZATION, search_path) holds the adapter tables', async () => {
    await sql(server.url('with_schema'), `CREATE SCHEMA verdict AUTHORIZATION ${ROLE}`);
    await sql(
      server.url('with_schema'),
      `ALTER ROLE ${ROLE} IN DATABASE with_schema SET search_path = verdict, public`,
    );
    const r = await open('with_schema');
    await r.close();
    expect(await tables('with_schema')).toEqual(['verdict.verdict_heuristics', 'verdict.verdict_markers']);
  });

  it('a database the role owns needs no grant', async () => {
    const r = await open('owned_by_verdict');
    await r.close();
    expect(await tables('owned_by_verdict')).toEqual(['public.verdict_heuristics', 'public.verdict_markers']);
  });
});
