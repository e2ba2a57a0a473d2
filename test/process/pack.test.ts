// A stranger installs Verdict: `npm pack` of this checkout, the tarball
// installed into a new project with its own package.json and tsconfig.json,
// a TypeScript file importing `verdict/client`, `verdict/participant` and
// `verdict/saga` type-checked there, a transaction and two sagas (one
// FINISHED, one COMPENSATED) run from that project against a
// cluster started by the installed package's own `verdict` binary, from a
// directory that is neither the package's nor the project's.
//
// The tarball is packed from a staging copy of the checkout, so its
// `prepare` build writes no dist/ that other tests are running.
import { spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileTempDir, freePorts, ROOT, tempDir, useProcessCleanup } from './harness.ts';

// Deletes the packed project's temp dir (83 MB with its node_modules) once the file ends.
useProcessCleanup();

/** Generous: npm, tsc and three node processes share two loaded cores. */
const STEP_MS = 240_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const running = new Set<ReturnType<typeof spawn>>();

/** Runs a command to completion within timeoutMs; never throws on a non-zero exit. */
function run(
  cmd: string,
  args: string[],
  o: { cwd: string; timeoutMs?: number; env?: NodeJS.ProcessEnv },
): Promise<Run> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd: o.cwd, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rej(new Error(`${cmd} ${args.join(' ')} did not finish within ${o.timeoutMs ?? STEP_MS} ms; stderr:\n${stderr}`));
    }, o.timeoutMs ?? STEP_MS);
    child.once('error', rej);
    child.once('close', (code) => {
      clearTimeout(timer);
      running.delete(child);
      res({ code, stdout, stderr });
    });
  });
}

function ok(r: Run, what: string): Run {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** Bare specifiers (packages) reachable from a module through static imports only. */
function staticPackages(entry: string): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    // Static `import ... from 'x'` and `export ... from 'x'`; `import('x')` is dynamic and skipped on purpose.
    for (const m of text.matchAll(
      /^\s*(?:import|export)\s[^;]*?from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm,
    )) {
      const spec = m[1] ?? m[2] ?? '';
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else if (!spec.startsWith('node:'))
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  };
  visit(entry);
  return packages;
}

/** The tarball `npm pack` makes of a staging copy of the checkout: packed once, for every project of this file. */
let packing: Promise<string> | null = null;
function packedTarball(): Promise<string> {
  packing ??= (async () => {
    const dir = fileTempDir('verdict-pack-');
    // Stage what `npm pack` needs to build and pack, with the checkout's node_modules.
    const stage = join(dir, 'stage');
    mkdirSync(stage);
    for (const f of [
      'package.json',
      'README.md',
      'LICENSE',
      'tsconfig.json',
      'tsconfig.build.json',
      'bin',
      'cjs',
      'proto',
      'cluster',
      'console',
      'scripts',
      'src',
      'docs',
      'examples',
    ]) {
      if (existsSync(join(ROOT, f))) cpSync(join(ROOT, f), join(stage, f), { recursive: true });
    }
    symlinkSync(join(ROOT, 'node_modules'), join(stage, 'node_modules'));
    const packed = ok(await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: stage }), 'npm pack');
    return join(
      dir,
      (JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as { filename: string }[])[0]!.filename,
    );
  })();
  return packing;
}

/** npm install in `cwd`, from npm's cache, which `npm ci` in the checkout filled (no registry is reachable here). */
async function npmInstall(cwd: string, args: string[] = []): Promise<Run> {
  return ok(
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...args], { cwd }),
    `npm install ${args.join(' ')} in ${cwd}`,
  );
}

/** What `verdict node` needs beside verdict's own dependencies (optional peers of the package; README, Install). */
const NODE_PACKAGES = ['level', 'pino', 'prom-client'];

interface Tree {
  bytes: number;
  /** Every installed package's name (nested copies once each). */
  packages: Set<string>;
  /** Package directories, one per installed copy. */
  copies: number;
  /** Files of a native addon or of its build. */
  native: string[];
  /** Packages that declare an install-time script. */
  scripted: string[];
}

/** What an install put in node_modules: file bytes (as `du --apparent-size` counts them), packages, native files. */
function measure(nodeModules: string): Tree {
  const tree: Tree = { bytes: 0, packages: new Set(), copies: 0, native: [], scripted: [] };
  for (const e of readdirSync(nodeModules, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const file = join(e.parentPath, e.name);
    tree.bytes += lstatSync(file).size;
    if (e.name.endsWith('.node') || e.name === 'binding.gyp') tree.native.push(file);
    // A package's own package.json: node_modules/NAME/package.json or node_modules/@SCOPE/NAME/package.json.
    if (e.name === 'package.json' && /(^|\/)node_modules\/(@[^/]+\/)?[^/@.][^/]*$/.test(e.parentPath)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as {
        name?: string;
        scripts?: Record<string, string>;
        gypfile?: boolean;
      };
      if (pkg.name === undefined) continue;
      tree.packages.add(pkg.name);
      tree.copies++;
      if (pkg.gypfile === true) tree.native.push(file);
      if (['preinstall', 'install', 'postinstall'].some((s) => pkg.scripts?.[s] !== undefined))
        tree.scripted.push(pkg.name);
    }
  }
  return tree;
}

const versionOf = (pkg: string): string =>
  (JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;

describe('a stranger installs the packed package', () => {
  const dir = tempDir('verdict-pack-');
  const app = join(dir, 'app');
  const elsewhere = join(dir, 'elsewhere');
  const nodes: ReturnType<typeof spawn>[] = [];
  let bin = '';
  let endpoints: string[] = [];
  let consoleAddress = '';

  beforeAll(async () => {
    const tarball = await packedTarball();

    mkdirSync(join(app, 'src'), { recursive: true });
    mkdirSync(join(app, 'cjs'));
    mkdirSync(elsewhere);
    writeFileSync(
      join(app, 'package.json'),
      `${JSON.stringify(
        {
          name: 'stranger-app',
          private: true,
          type: 'module',
          dependencies: {
            verdict: `file:${tarball}`,
            ...Object.fromEntries(NODE_PACKAGES.map((p) => [p, versionOf(p)])),
          },
          devDependencies: {
            typescript: versionOf('typescript'),
            '@types/node': versionOf('@types/node'),
            // With skipLibCheck: false tsc checks every declaration of verdict/participant and verdict/saga, which name
            // pg's and mysql2's types.
            ...Object.fromEntries(['pg', '@types/pg', 'mysql2'].map((p) => [p, versionOf(p)])),
          },
        },
        null,
        2,
      )}\n`,
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      `${JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] }, include: ['src'] }, null, 2)}\n`,
    );
    await npmInstall(app);
    bin = join(app, 'node_modules', '.bin', 'verdict');

    // A three-node cluster from the installed binary, run from an unrelated directory.
    const ports = await freePorts(4);
    endpoints = ports.slice(0, 3).map((p) => `127.0.0.1:${p}`);
    consoleAddress = `127.0.0.1:${ports[3]}`;
    const peers = Object.fromEntries(endpoints.map((e, i) => [`n${i + 1}`, e]));
    for (const [i, e] of endpoints.entries()) {
      const config = join(dir, `n${i + 1}.json`);
      // n1 serves metrics and the web console, whose page ships outside dist/.
      const metrics = i === 0 ? { metricsListen: consoleAddress } : {};
      writeFileSync(
        config,
        JSON.stringify({
          clusterId: 'pack',
          nodeId: `n${i + 1}`,
          listen: e,
          dataDir: `data-n${i + 1}`,
          peers,
          logLevel: 'warn',
          insecure: true,
          ...metrics,
        }),
      );
      // A new cluster is founded once, node by node, before the first start (docs/storage.md).
      ok(
        await run(bin, ['cluster', 'init', '--config', config], { cwd: elsewhere }),
        `verdict cluster init for n${i + 1}`,
      );
      const child = spawn(bin, ['node', '--config', config], { cwd: elsewhere, stdio: ['ignore', 'ignore', 'pipe'] });
      child.stderr.setEncoding('utf8').on('data', () => {});
      running.add(child);
      nodes.push(child);
    }
  }, 3 * STEP_MS);

  afterAll(async () => {
    // Gone before the file's cleanup deletes their data directories.
    await Promise.all(
      [...running].map((c) =>
        c.exitCode !== null || c.signalCode !== null
          ? undefined
          : new Promise((r) => c.once('exit', r).kill('SIGKILL')),
      ),
    );
  });

  it('ships dist/, proto/, the console and the binary, and no TypeScript source', () => {
    const pkg = join(app, 'node_modules', 'verdict');
    for (const f of [
      'dist/client/index.js',
      'dist/client/index.d.ts',
      'dist/participant/index.js',
      'dist/cli/main.js',
      'proto/coordinator.proto',
      'proto/participant.proto',
      'proto/raft.proto',
      'bin/verdict.mjs',
      // The web console's page, served by every node (src/console/api.ts finds it two levels above dist/console/).
      'dist/console/api.js',
      'console/index.html',
      'console/app.js',
      'console/style.css',
    ]) {
      expect(existsSync(join(pkg, f)), f).toBe(true);
    }
    expect(existsSync(join(pkg, 'src'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'tsx')), 'tsx is a development dependency only').toBe(false);
  });

  it('verdict/client pulls in no native module and not pg; verdict/participant not pg nor LevelDB; each driver only where it is used', () => {
    const dist = join(app, 'node_modules', 'verdict', 'dist');
    const client = [...staticPackages(join(dist, 'client', 'index.js'))].sort();
    expect(client).toEqual(['@grpc/grpc-js', '@grpc/proto-loader']);
    const participant = staticPackages(join(dist, 'participant', 'index.js'));
    for (const p of ['pg', 'level', 'classic-level']) expect(participant.has(p), p).toBe(false);
    expect(staticPackages(join(dist, 'participant', 'postgres-index.js')).has('pg')).toBe(true);
    // Each database participant loads its own driver only, the outbox the NATS client only for the NATS sink, `verdict
    // participant` neither driver.
    expect(staticPackages(join(dist, 'participant', 'resources', 'mysql', 'kit.js')).has('pg')).toBe(false);
    expect(staticPackages(join(dist, 'participant', 'postgres-kit.js')).has('mysql2')).toBe(false);
    expect(staticPackages(join(dist, 'outbox', 'index.js')).has('nats')).toBe(false);
    const cli = staticPackages(join(dist, 'cli', 'participant.js'));
    for (const p of ['pg', 'mysql2', 'level']) expect(cli.has(p), p).toBe(false);
  });

  it(
    'type-checks a TypeScript file that imports verdict/client, verdict/participant and verdict/saga',
    async () => {
      writeFileSync(
        join(app, 'src', 'shop.ts'),
        `import { VerdictClient, OutcomeUnknownError, type CommitResult } from 'verdict/client';
import { startParticipant, type ParticipantRuntime } from 'verdict/participant';
import { postgresSemanticLock, type SemanticLock, type StepHandlers } from 'verdict/saga';
import type { SagaSpec } from 'verdict/client';
import { pino } from 'pino';

// Sagas' types and the semantic lock resolve from the package too.
export const spec: SagaSpec = { steps: [{ service: 'flight', name: 'reserve' }], pivot: 0 };
export const handlers: StepHandlers = { reserve: { action: () => ({ status: 'done', output: '', effect: '' }), compensate: () => ({ status: 'done', output: '', effect: '' }) } };
export const seats = postgresSemanticLock('seats');
export type AnyLock = SemanticLock<unknown>;

export async function shop(endpoints: string[], dataDir: string): Promise<CommitResult> {
  const p: ParticipantRuntime = await startParticipant({ clusterId: 'pack', participantId: 'shop', listen: '127.0.0.1:0', endpointsOfCluster: endpoints, dataDir, logger: pino({ level: 'warn' }), insecure: true });
  await p.registered;
  const client = new VerdictClient({ insecure: true, endpoints });
  try {
    return await client.transaction({ timeoutMs: 5_000 }).enlist('shop', { set: { 'sku-1': '4' } }).commit();
  } catch (err) {
    if (err instanceof OutcomeUnknownError) throw new Error(\`ask again later: \${err.message}\`);
    throw err;
  } finally {
    client.close();
    await p.stop();
  }
}
// The declarations are real types, not any: a wrong call must not type-check.
// @ts-expect-error timeoutMs is a number
new VerdictClient({ insecure: true, endpoints: [] }).transaction({ timeoutMs: 'soon' });
`,
      );
      const tsc = join(app, 'node_modules', 'typescript', 'bin', 'tsc');
      const r = await run(process.execPath, [tsc, '-p', join(app, 'tsconfig.json')], { cwd: app });
      expect(r.stdout + r.stderr).toBe('');
      expect(r.code).toBe(0);
    },
    STEP_MS,
  );

  it(
    'runs a transaction from the new project against the cluster its verdict binary started',
    async () => {
      // `verdict status` from any directory finds the cluster.
      const deadline = Date.now() + STEP_MS / 2;
      let status: Run;
      for (;;) {
        status = await run(bin, ['status', '--json', '--insecure', '--endpoints', endpoints.join(',')], {
          cwd: elsewhere,
        });
        if (status.code === 0 && (JSON.parse(status.stdout) as { leader: string | null }).leader !== null) break;
        if (Date.now() > deadline) throw new Error(`no leader: ${status.stdout}${status.stderr}`);
        await new Promise((r) => setTimeout(r, 500));
      }
      writeFileSync(
        join(app, 'commit.mjs'),
        `import { VerdictClient } from 'verdict/client';
import { startParticipant } from 'verdict/participant';
import { pino } from 'pino';
const endpoints = process.argv[2].split(',');
const logger = pino({ level: 'warn' });
const started = [];
for (const id of ['shop', 'ledger']) {
  const p = await startParticipant({ clusterId: 'pack', participantId: id, listen: '127.0.0.1:0', endpointsOfCluster: endpoints, dataDir: 'data-' + id, logger, insecure: true });
  await p.registered;
  started.push(p);
}
const client = new VerdictClient({ insecure: true, endpoints });
const ok = await client.transaction({ timeoutMs: 10_000 }).enlist('shop', { set: { 'sku-1': '4' } }).enlist('ledger', { set: { 'acct-9': '-20' } }).commit();
const no = await client.transaction({ timeoutMs: 10_000 }).enlist('shop', { set: { 'sku-1': '3' } }).enlist('ledger', { fail: 'insufficient funds' }).commit();
const again = await client.outcome(ok.txnId);
// COMMITTED does not wait for the participants to apply the DECISION: wait for it here (up to 5 s).
for (let i = 0; i < 200 && started[0].resource.get('sku-1') !== '4'; i++) await new Promise((r) => setTimeout(r, 25));
console.log(JSON.stringify({ ok: ok.outcome, no: no.outcome, reason: no.reason, again: again.outcome, shop: started[0].resource.get('sku-1') }));
client.close();
for (const p of started) await p.stop();
`,
      );
      const r = ok(
        await run(process.execPath, ['commit.mjs', endpoints.join(',')], { cwd: app }),
        'the transaction script',
      );
      const got = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Record<string, string>;
      expect(got).toMatchObject({ ok: 'COMMITTED', no: 'ABORTED', again: 'COMMITTED', shop: '4' });
      expect(got.reason).toMatch(/insufficient funds/);
      // The installed node serves the console's page and its API.
      const page = await fetch(`http://${consoleAddress}/`);
      expect([page.status, await page.text()]).toEqual([
        200,
        expect.stringContaining('<title>Verdict console</title>'),
      ]);
      expect((await fetch(`http://${consoleAddress}/console/app.js`)).status).toBe(200);
      const cluster = (await (await fetch(`http://${consoleAddress}/api/cluster`)).json()) as {
        nodeId: string;
        leaderId: string;
      };
      expect(cluster.nodeId).toBe('n1');
      expect(cluster.leaderId).toMatch(/^n[123]$/);
    },
    STEP_MS,
  );

  it(
    'runs a saga to FINISHED and one to COMPENSATED with step services on verdict/saga',
    async () => {
      const [flightPort, paymentPort] = await freePorts(2);
      writeFileSync(
        join(app, 'saga.mjs'),
        `import { startStepService } from 'verdict/saga';
import { VerdictClient } from 'verdict/client';
import { pino } from 'pino';
const [endpointsText, flightPort, paymentPort] = process.argv.slice(2);
const endpointsOfCluster = endpointsText.split(',');
const common = { clusterId: 'pack', endpointsOfCluster, logger: pino({ level: 'warn' }), insecure: true };
const done = (output) => () => ({ status: 'done', output, effect: output });
const flight = await startStepService({ ...common, serviceId: 'flight', listen: '127.0.0.1:' + flightPort, dataDir: 'data-flight',
  handlers: { reserve: { action: done('seat 12A'), compensate: done('seat 12A released') } } });
const payment = await startStepService({ ...common, serviceId: 'payment', listen: '127.0.0.1:' + paymentPort, dataDir: 'data-payment',
  handlers: { charge: { action: (req) => (req.input === 'decline' ? { status: 'failed', reason: 'card declined' } : done('charged')(req)), compensate: done('') } } });
await Promise.all([flight.registered, payment.registered]);
const client = new VerdictClient({ insecure: true, endpoints: endpointsOfCluster });
const steps = (input) => [{ service: 'flight', name: 'reserve' }, { service: 'payment', name: 'charge', input }];
const ok = await (await client.saga({ steps: steps('card'), pivot: 1 })).result();
const no = await (await client.saga({ steps: steps('decline'), pivot: 1 })).result();
console.log(JSON.stringify({ ok: ok.end, okOutputs: ok.status.outputs, no: no.end, noSteps: no.status.steps }));
client.close();
await flight.stop();
await payment.stop();
`,
      );
      const r = ok(
        await run(process.execPath, ['saga.mjs', endpoints.join(','), String(flightPort), String(paymentPort)], {
          cwd: app,
        }),
        'the saga script',
      );
      const got = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
      expect(got).toEqual({
        ok: 'finished',
        okOutputs: ['seat 12A', 'charged'],
        no: 'compensated',
        noSteps: ['compensated', 'failed'],
      });
    },
    STEP_MS,
  );

  it(
    'verdict/client works from a CommonJS project (require) and an ES module (import)',
    async () => {
      writeFileSync(join(app, 'cjs', 'package.json'), '{ "type": "commonjs" }\n');
      writeFileSync(
        join(app, 'cjs', 'index.js'),
        "const { VerdictClient } = require('verdict/client');\nconsole.log(typeof VerdictClient);\n",
      );
      writeFileSync(
        join(app, 'esm.mjs'),
        "import { VerdictClient } from 'verdict/client';\nconsole.log(typeof VerdictClient);\n",
      );
      for (const file of [join(app, 'cjs', 'index.js'), join(app, 'esm.mjs')]) {
        const r = ok(await run(process.execPath, ['--no-warnings', file], { cwd: app }), file);
        expect(r.stdout.trim()).toBe('function');
      }
    },
    STEP_MS,
  );

  it('refuses require() on a Node that cannot load ES modules with a message saying what to write instead', () => {
    const requireEsm = createRequire(import.meta.url)(join(ROOT, 'cjs', 'require-esm.cjs')) as (
      load: () => unknown,
      entry: string,
      example: string,
    ) => unknown;
    const esmError = Object.assign(new Error('require() of ES Module'), { code: 'ERR_REQUIRE_ESM' });
    expect(() =>
      requireEsm(
        () => {
          throw esmError;
        },
        'verdict/client',
        'VerdictClient',
      ),
    ).toThrow(
      /verdict\/client is an ES module .*await import\('verdict\/client'\).*import \{ VerdictClient \} from 'verdict\/client'/,
    );
    const other = new Error('something else');
    expect(() =>
      requireEsm(
        () => {
          throw other;
        },
        'verdict/client',
        'VerdictClient',
      ),
    ).toThrow(other);
  });

  it(
    'refuses to run without proto/, naming the path it looked for',
    async () => {
      const proto = join(app, 'node_modules', 'verdict', 'proto');
      renameSync(proto, `${proto}.gone`);
      try {
        const r = await run(bin, ['member', 'list', '--insecure', '--endpoints', endpoints.join(',')], {
          cwd: elsewhere,
          timeoutMs: 60_000,
        });
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(`not found at ${join(proto, '')}`);
        expect(r.stderr).not.toMatch(/\n\s+at /);
        // `verdict status` reads no .proto file (it decodes Status by hand): it still answers.
        const st = await run(bin, ['status', '--insecure', '--endpoints', endpoints.join(',')], {
          cwd: elsewhere,
          timeoutMs: 60_000,
        });
        expect(st.code, st.stderr).toBe(0);
        expect(st.stdout).toMatch(/^leader: n\d/);
      } finally {
        renameSync(`${proto}.gone`, proto);
      }
    },
    STEP_MS,
  );
});

// What `npm install verdict` costs an application that only calls the
// cluster or runs a participant: the tarball alone in an empty project. The
// drivers (pg, mysql2, nats), LevelDB and the node's logger and metrics are
// optional peer dependencies, installed by the projects that use them.
describe('a client-only application installs the packed package alone', () => {
  const dir = tempDir('verdict-client-');
  const app = join(dir, 'app');
  let installed: Tree;

  beforeAll(async () => {
    const tarball = await packedTarball();
    mkdirSync(join(app, 'src'), { recursive: true });
    writeFileSync(
      join(app, 'package.json'),
      `${JSON.stringify({ name: 'client-app', private: true, type: 'module', dependencies: { verdict: `file:${tarball}` } }, null, 2)}\n`,
    );
    await npmInstall(app);
    installed = measure(join(app, 'node_modules'));
    // Reported for the README's install section.
    console.info(
      `client-only install: ${(installed.bytes / 1e6).toFixed(1)} MB of node_modules, ${installed.packages.size} packages`,
    );
    // The compiler for the type checks below, installed after the measure.
    await npmInstall(app, [
      '--save-dev',
      `typescript@${versionOf('typescript')}`,
      `@types/node@${versionOf('@types/node')}`,
    ]);
  }, 2 * STEP_MS);

  it('is at most 15 MB of node_modules, with no native module, no database driver and no install-time build', () => {
    expect(installed.bytes).toBeLessThanOrEqual(15_000_000);
    expect(installed.native).toEqual([]);
    for (const p of [
      'pg',
      'mysql2',
      'nats',
      'level',
      'classic-level',
      'prom-client',
      'pino',
      '@types/pg',
      'playwright-core',
    ])
      expect(installed.packages.has(p), p).toBe(false);
    // protobufjs 7 (under @grpc/proto-loader) declares a postinstall that checks its version; it builds nothing, and
    // npm 11 runs it only when approved.
    expect(installed.scripted.filter((p) => p !== 'protobufjs')).toEqual([]);
    expect(installed.packages.has('verdict')).toBe(true);
  });

  it.each(['node16', 'nodenext', 'bundler', 'node'])(
    'type-checks verdict/client under moduleResolution %s',
    async (resolution) => {
      const module = { node16: 'Node16', nodenext: 'NodeNext', bundler: 'ESNext', node: 'ESNext' }[resolution];
      writeFileSync(
        join(app, 'src', 'client.ts'),
        `import { VerdictClient, OutcomeUnknownError, type CommitResult } from 'verdict/client';

export async function order(endpoints: string[]): Promise<CommitResult> {
  const client = new VerdictClient({ insecure: true, endpoints });
  try {
    return await client.transaction({ timeoutMs: 5_000 }).enlist('shop', { set: { 'sku-1': '4' } }).commit();
  } catch (err) {
    if (err instanceof OutcomeUnknownError) throw new Error(\`ask again later: \${err.message}\`);
    throw err;
  } finally {
    client.close();
  }
}
// The declarations are real types, not any: a wrong call must not type-check.
// @ts-expect-error timeoutMs is a number
new VerdictClient({ insecure: true, endpoints: [] }).transaction({ timeoutMs: 'soon' });
`,
      );
      const config = join(app, `tsconfig.${resolution}.json`);
      writeFileSync(
        config,
        `${JSON.stringify({ compilerOptions: { target: 'ES2022', module, moduleResolution: resolution, strict: true, noEmit: true, skipLibCheck: false, types: ['node'] }, files: ['src/client.ts'] }, null, 2)}\n`,
      );
      const r = await run(process.execPath, [join(app, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', config], {
        cwd: app,
      });
      expect(r.stdout + r.stderr).toBe('');
      expect(r.code).toBe(0);
    },
    STEP_MS,
  );

  it(
    'type-checks a participant and a step service without pg, mysql2 and pino, under skipLibCheck (what tsc --init writes)',
    async () => {
      writeFileSync(
        join(app, 'src', 'participant.ts'),
        `import { startParticipant, MemoryResource, type ParticipantRuntime } from 'verdict/participant';
import { startStepService, type StepHandlers } from 'verdict/saga';

export const handlers: StepHandlers = { reserve: { action: () => ({ status: 'done', output: '', effect: '' }), compensate: () => ({ status: 'done', output: '', effect: '' }) } };
export type Started = ParticipantRuntime<MemoryResource>;
export const start = [startParticipant, startStepService];
`,
      );
      const config = join(app, 'tsconfig.participant.json');
      writeFileSync(
        config,
        `${JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] }, files: ['src/participant.ts'] }, null, 2)}\n`,
      );
      const r = await run(process.execPath, [join(app, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', config], {
        cwd: app,
      });
      expect(r.stdout + r.stderr).toBe('');
      expect(r.code).toBe(0);
    },
    STEP_MS,
  );

  it(
    'a participant on the PostgreSQL resource without pg installed is refused in one line naming pg',
    async () => {
      writeFileSync(
        join(app, 'participant.mjs'),
        `import { startParticipant } from 'verdict/participant';
// No pino either: startParticipant takes any logger with pino's methods.
const logger = { child: () => logger, trace() {}, debug() {}, info() {}, warn() {}, error() {}, fatal() {} };
try {
  await startParticipant({ clusterId: 'pack', participantId: 'shop', listen: '127.0.0.1:0', endpointsOfCluster: ['127.0.0.1:1'], dataDir: 'data-shop', logger, insecure: true, postgres: { url: 'postgres://127.0.0.1:1/shop' } });
  console.log(JSON.stringify({ started: true }));
} catch (err) {
  console.log(JSON.stringify({ name: err.name, message: err.message }));
}
`,
      );
      const r = ok(
        await run(process.execPath, ['participant.mjs'], { cwd: app, timeoutMs: 60_000 }),
        'the participant script',
      );
      const got = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { name: string; message: string };
      expect(got.name).toBe('ParticipantStartupError');
      expect(got.message).toBe(
        'the PostgreSQL resource needs the pg package, which is not installed: run `npm install pg` in your project',
      );
    },
    STEP_MS,
  );

  it(
    '`verdict node` without the node packages names all of them in one line',
    async () => {
      const r = await run(
        join(app, 'node_modules', '.bin', 'verdict'),
        ['node', '--config', join(dir, 'absent.json')],
        { cwd: dir, timeoutMs: 60_000 },
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        'verdict: `verdict node` needs the level, pino and prom-client packages, which are not installed: run `npm install level pino prom-client` in your project\n',
      );
    },
    STEP_MS,
  );
});
