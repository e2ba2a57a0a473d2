// The conformance suite (checks.ts) against the Go SDK's database
// participants on a real PostgreSQL (test/pg/harness.ts): the PostgreSQL
// resource (sdk/go/participant/postgres) and TCC on PostgreSQL (sdk/go/tcc),
// each run by the driver sdk/go/internal/testproc/conformance, built offline
// from Debian's Go packages before the suite starts (test/process/go-procs.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type PgServer, startPostgres } from '../pg/harness.ts';
import { buildGoDrivers } from '../process/go-procs.ts';
import { describeTarget } from './suite.ts';
import { goPostgres, goTcc } from './targets.ts';

const BUILD_MS = 300_000;

let bin = '';
let pgServer: PgServer | null = null;
beforeAll(() => {
  bin = mkdtempSync(join(tmpdir(), 'verdict-go-conformance-'));
  buildGoDrivers(bin, ['conformance']);
}, BUILD_MS);
afterAll(async () => {
  await pgServer?.stop();
  if (bin !== '') rmSync(bin, { recursive: true, force: true });
});
const postgres = async (): Promise<PgServer> =>
  (pgServer ??= await startPostgres({ databases: ['conformance_go', 'conformance_go_tcc'] }));

let pg: PgServer;
describeTarget(
  'Go PostgreSQL',
  () => goPostgres(join(bin, 'conformance'), pg.url('conformance_go')),
  async () => void (pg = await postgres()),
);
describeTarget(
  'Go TCC (PostgreSQL)',
  () => goTcc(join(bin, 'conformance'), pg.url('conformance_go_tcc')),
  async () => void (pg = await postgres()),
);
