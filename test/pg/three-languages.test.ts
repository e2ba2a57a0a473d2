// One transaction, three languages: every transaction spans a TypeScript
// memory participant (`verdict participant`), a Python PostgreSQL participant
// (sdk/python) and a Go memory participant (sdk/go), all separate processes
// on three real nodes, and is begun by a Python client or a Go client. In
// each of four rounds both clients run transactions while one process is
// SIGKILLed and started again: the leader, then each participant.
//
// Afterwards: every client answer is the cluster's outcome; each committed
// transaction is in all three stores and each other one in none
// (all-or-nothing); nothing is left in pg_prepared_xacts.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { startParticipant } from '../../src/participant/runtime.ts';
import {
  BIN,
  Cluster,
  fileTempDir,
  freePorts,
  ROOT,
  sleep,
  tempDir,
  useProcessCleanup,
  waitFor,
} from '../process/harness.ts';
import { buildGoDrivers, GoProc, goClient, stopGoProcs } from '../process/go-procs.ts';
import { PythonProc, pythonClient, stopPythonProcs, type Event } from '../process/python-procs.ts';
import { preparedXacts, rollbackPrepared, sql, startPostgres, type PgServer } from './harness.ts';

const WAIT_MS = 90_000;
const PER_CLIENT = 5;

useProcessCleanup();
const stops: (() => Promise<unknown>)[] = [];
const stopAll = async (): Promise<void> => {
  for (const s of stops.splice(0).reverse()) await s();
  await stopPythonProcs();
  await stopGoProcs();
};
afterEach(stopAll);
afterAll(stopAll);

let server: PgServer;
let shop: string;
let goBin = '';

beforeAll(async () => {
  goBin = fileTempDir('verdict-go-bin-');
  buildGoDrivers(goBin);
  server = await startPostgres({ databases: ['shop'] });
  shop = server.url('shop');
  await sql(shop, 'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, amount int NOT NULL)');
}, 300_000);

afterAll(async () => {
  if (server === undefined) return;
  await rollbackPrepared(server, ['shop'], 'verdict:');
  await server.stop();
});

/** `verdict participant` (the TypeScript memory resource) as its own process, its log in `dir`. */
class TsParticipant {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  constructor(
    readonly args: string[],
    readonly logFile: string,
  ) {}
  start(): void {
    const fd = openSync(this.logFile, 'a');
    const child = spawn(process.execPath, [BIN, 'participant', ...this.args], { cwd: ROOT, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }
  async kill(signal: NodeJS.Signals): Promise<void> {
    const c = this.child;
    if (c === null) return;
    if (c.exitCode === null && c.signalCode === null) c.kill(signal);
    await this.exited;
    this.child = null;
  }
}

describe('one transaction, three languages', () => {
  it('TypeScript, Python/PostgreSQL and Go participants, Python and Go clients, the leader and each participant SIGKILLed: all-or-nothing, nothing prepared left, every answer confirmed by the cluster', {
    timeout: 900_000,
  }, async () => {
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await c.waitForLeader();
    const nodes = c.nodes.map((n) => n.address);
    const dir = tempDir('verdict-3lang-');
    const [tsPort, pyPort, goPort] = await freePorts(3);

    const ts = new TsParticipant(
      [
        '--id',
        'tsmem',
        '--listen',
        `127.0.0.1:${tsPort}`,
        '--data',
        join(dir, 'tsmem'),
        '--cluster-id',
        c.clusterId,
        '--endpoints',
        nodes.join(','),
        '--insecure',
      ],
      join(dir, 'tsmem.log'),
    );
    ts.start();
    stops.push(() => ts.kill('SIGKILL'));
    const pyArgs = [
      '--id',
      'pyshop',
      '--cluster-id',
      c.clusterId,
      '--pg-url',
      shop,
      '--nodes',
      nodes.join(','),
      '--data-dir',
      join(dir, 'pyshop'),
      '--listen',
      `127.0.0.1:${pyPort}`,
      '--hold-file',
      join(dir, 'py-hold'),
    ];
    let py = new PythonProc('participant.py', pyArgs);
    const goArgs = [
      '--id',
      'gop',
      '--nodes',
      nodes.join(','),
      '--data-dir',
      join(dir, 'gop'),
      '--listen',
      `127.0.0.1:${goPort}`,
      '--hold-file',
      join(dir, 'go-hold'),
    ];
    let gop = new GoProc(join(goBin, 'participant'), goArgs);
    await py.waitLine('the Python participant registered', (e) => e.event === 'ready');
    await gop.waitLine('the Go participant registered', (e) => e.event === 'ready');

    const client = new VerdictClient({ endpoints: nodes, insecure: true, callTimeoutMs: 30_000 });
    stops.push(async () => client.close());
    await waitFor('all three participants registered', WAIT_MS, async () => {
      const ids = (await client.participants()).map((p) => p.participantId).sort();
      return ['gop', 'pyshop', 'tsmem'].every((id) => ids.includes(id)) ? true : undefined;
    });

    // Every transaction enlists all three; one in four carries a NULL amount, which PostgreSQL refuses: a NO vote.
    const ops = (lang: string, round: number) =>
      Array.from({ length: PER_CLIENT }, (_, i) => {
        const txn = `${lang}-${round}-${i}`;
        const amount = i % 4 === 3 ? 'NULL' : String(i + 1);
        return {
          op: 'commit',
          txn,
          enlist: {
            tsmem: { set: { [txn]: txn } },
            pyshop: { sql: [`INSERT INTO orders VALUES ('${txn}', ${amount})`] },
            gop: { set: { [txn]: txn } },
          },
        };
      });

    const answers: Event[] = [];
    const victims = ['leader', 'pyshop', 'gop', 'tsmem'] as const;
    for (const [round, victim] of victims.entries()) {
      const running = Promise.all([
        pythonClient(nodes, ops('py', round)),
        goClient(join(goBin, 'client'), nodes, ops('go', round)),
      ]);
      await sleep(300);
      if (victim === 'leader') {
        const { node } = await c.waitForLeader();
        await node.kill('SIGKILL');
        await sleep(1_000);
        node.start();
      } else if (victim === 'pyshop') {
        await py.kill('SIGKILL');
        await sleep(1_000);
        py = new PythonProc('participant.py', pyArgs);
      } else if (victim === 'gop') {
        await gop.kill('SIGKILL');
        await sleep(1_000);
        gop = new GoProc(join(goBin, 'participant'), goArgs);
      } else {
        await ts.kill('SIGKILL');
        await sleep(1_000);
        ts.start();
      }
      const [pyAnswers, goAnswers] = await running;
      answers.push(...pyAnswers, ...goAnswers);
    }
    expect(answers).toHaveLength(victims.length * 2 * PER_CLIENT);

    // Every decision delivered and acknowledged: nothing in flight, nothing unacked.
    let pending = '';
    await waitFor(
      'every transaction decided and acknowledged by every participant',
      WAIT_MS,
      async () => {
        const open = [
          ...(await client.transactions({ inFlight: true })),
          ...(await client.transactions({ unacked: true })),
        ];
        pending = open.map((t) => t.txnId).join(', ');
        return open.length === 0 ? true : undefined;
      },
      () => `still open: ${pending}`,
    );

    // Every answer a client gave is the cluster's; a client that got no answer leaves the cluster's to be read.
    const outcome = new Map<string, string>();
    for (const a of answers) {
      const txn = String(a.txn);
      const cluster = (await client.outcome(txn)).outcome;
      if (a.outcome !== undefined) expect(cluster, `${txn}: the client was told ${a.outcome}`).toBe(a.outcome);
      outcome.set(txn, cluster);
    }
    const committed = [...outcome].filter(([, o]) => o === 'COMMITTED').map(([t]) => t);
    const notCommitted = [...outcome].filter(([, o]) => o !== 'COMMITTED').map(([t]) => t);
    expect(committed.length).toBeGreaterThan(0);
    expect(notCommitted.length).toBeGreaterThan(0);
    console.log(
      `three languages: ${committed.length} committed, ${notCommitted.length} not, ${answers.filter((a) => a.outcome === undefined).length} answered with an error`,
    );

    // PostgreSQL (Python participant): exactly the committed rows, nothing prepared.
    expect(await preparedXacts(shop, 'verdict:')).toEqual([]);
    const rows = (await sql<{ id: string }>(shop, 'SELECT id FROM orders ORDER BY id')).map((r) => r.id);
    expect(rows).toEqual([...committed].sort());

    // Go participant: its journal's values after a clean restart.
    await gop.kill('SIGTERM');
    gop = new GoProc(join(goBin, 'participant'), goArgs);
    const goValues = (await gop.waitLine('the Go participant back with its values', (e) => e.event === 'ready'))
      .values as Record<string, string>;
    expect(Object.keys(goValues).sort()).toEqual([...committed].sort());

    // TypeScript participant: its journal read back by the runtime on the same data directory.
    await ts.kill('SIGTERM');
    const [again] = await freePorts(1);
    const back = await startParticipant({
      clusterId: c.clusterId,
      participantId: 'tsmem',
      listen: `127.0.0.1:${again}`,
      endpointsOfCluster: nodes,
      dataDir: join(dir, 'tsmem'),
      logger: pino({ level: 'silent' }),
      insecure: true,
    });
    stops.push(() => back.stop());
    for (const t of committed) expect(back.resource.get(t), t).toBe(t);
    for (const t of notCommitted) expect(back.resource.get(t), t).toBeUndefined();
  });
});
