#!/usr/bin/env node
// The system components the test suite uses, checked before any test runs:
// `npm test` (test/run.mjs) and `.ci/run` both call this one script, so the
// list below is the only list.
//
// For each component that is missing:
//   - as root on a Debian-based machine (apt-get present), it is installed
//     from Debian's packages, with one line saying what and why;
//   - otherwise (not root, no apt-get, or VERDICT_TEST_NO_INSTALL=1) the
//     script prints one line per missing component with the exact command
//     that installs it, and exits 1 before any test starts.
// A test never skips itself because a component is missing: it would fail,
// so the run stops here instead, with the reason.
//
//   node scripts/test-deps.mjs           check, install what is missing
//   node scripts/test-deps.mjs --check   check only: list what is missing, exit 1 if anything is
//   node scripts/test-deps.mjs --list    print the list of components
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The first of `paths` that exists, or of `name` on PATH; null when none does. */
function findProgram(name, paths = []) {
  for (const p of paths) if (p !== '' && existsSync(p)) return p;
  for (const dir of (process.env.PATH ?? '').split(':'))
    if (dir !== '' && existsSync(join(dir, name))) return join(dir, name);
  return null;
}

/** Every path in `paths` exists: the first missing one, or null. */
function firstMissing(paths) {
  return paths.find((p) => !existsSync(p)) ?? null;
}

/**
 * The components. `missing()` returns null when the component is there, or
 * what was looked for; `packages` are Debian's; `why` names the tests.
 */
export const COMPONENTS = [
  {
    name: 'PostgreSQL 15 server',
    packages: ['postgresql-15'],
    why: 'the PostgreSQL participant, TCC, saga and outbox tests start their own PostgreSQL 15',
    missing: () => {
      const m = firstMissing([
        '/usr/lib/postgresql/15/bin/postgres',
        '/usr/lib/postgresql/15/bin/initdb',
        '/usr/lib/postgresql/15/bin/pg_ctl',
      ]);
      return m === null ? null : m;
    },
  },
  {
    name: 'MariaDB server',
    packages: ['mariadb-server'],
    why: 'the MySQL/MariaDB XA participant tests start their own MariaDB server',
    missing: () => firstMissing(['/usr/sbin/mariadbd', '/usr/bin/mariadb-install-db']),
  },
  {
    name: 'NATS server',
    packages: ['nats-server'],
    why: 'the outbox relay tests start their own NATS server with JetStream',
    missing: () => {
      const env = process.env.VERDICT_NATS_BIN ?? '';
      if (env !== '') return existsSync(env) ? null : env;
      return findProgram('nats-server', ['/usr/sbin/nats-server']) === null ? 'nats-server' : null;
    },
  },
  {
    name: 'Chromium',
    packages: ['chromium'],
    why: "the web console's browser tests drive Debian's chromium with playwright-core",
    missing: () => {
      const path = process.env.VERDICT_CHROMIUM ?? '/usr/bin/chromium';
      return existsSync(path) ? null : path;
    },
  },
  {
    name: 'openssl',
    packages: ['openssl'],
    why: 'the TLS tests make throwaway certificates with the openssl command',
    missing: () => (findProgram('openssl') === null ? 'openssl' : null),
  },
  {
    name: 'protoc with the gRPC Python plugin',
    packages: ['protobuf-compiler', 'protobuf-compiler-grpc'],
    why: 'test/unit/protoc.test.ts compiles every proto/ file with protoc, as a participant in another language does',
    missing: () => firstMissing(['/usr/bin/protoc', '/usr/bin/grpc_python_plugin']),
  },
  {
    name: 'Python 3 with gRPC, protobuf, psycopg2 and pytest',
    packages: ['python3-grpcio', 'python3-protobuf', 'python3-psycopg2', 'python3-pytest'],
    why: "the Python SDK's tests (sdk/python/tests, run by test/process/python-pytest.test.ts) and test/process/python-sdk.test.ts run Debian's /usr/bin/python3 with these modules",
    missing: () =>
      firstMissing([
        '/usr/bin/python3',
        '/usr/lib/python3/dist-packages/grpc/__init__.py',
        '/usr/lib/python3/dist-packages/google/protobuf/__init__.py',
        '/usr/lib/python3/dist-packages/psycopg2/__init__.py',
        '/usr/lib/python3/dist-packages/pytest/__init__.py',
      ]),
  },
  {
    name: 'Go with gRPC, protobuf and lib/pq',
    packages: [
      'golang-go',
      'golang-google-grpc-dev',
      'golang-github-golang-protobuf-1-5-dev',
      'golang-google-protobuf-dev',
      'golang-github-lib-pq-dev',
      'protoc-gen-go',
      'protoc-gen-go-grpc',
    ],
    why: "the Go SDK's go vet and go test (test/process/go-test.test.ts), test/process/go-sdk.test.ts and test/pg/go-postgres.test.ts build sdk/go offline from Debian's Go packages in /usr/share/gocode; its stub test runs protoc-gen-go and protoc-gen-go-grpc",
    missing: () =>
      firstMissing([
        '/usr/bin/go',
        '/usr/bin/protoc-gen-go',
        '/usr/bin/protoc-gen-go-grpc',
        '/usr/share/gocode/src/google.golang.org/grpc/go.mod',
        '/usr/share/gocode/src/google.golang.org/protobuf/go.mod',
        // protobuf 1.5 (on google.golang.org/protobuf); Debian's 1.3 lacks it and conflicts with it.
        '/usr/share/gocode/src/github.com/golang/protobuf/proto/registry.go',
        '/usr/share/gocode/src/github.com/lib/pq/go.mod',
      ]),
  },
  {
    name: 'promtool',
    packages: ['prometheus'],
    why: 'test/unit/deploy-alerts.test.ts checks and unit-tests the alert rules in deploy/prometheus/ with promtool',
    missing: () => (findProgram('promtool', ['/usr/bin/promtool']) === null ? 'promtool' : null),
  },
  {
    name: 'etcd',
    packages: ['etcd-server'],
    why: "the benchmark's etcd anchor is tested against a real three-member etcd",
    missing: () => (findProgram('etcd', ['/usr/bin/etcd', '/usr/local/bin/etcd']) === null ? 'etcd' : null),
  },
];

/** The components `missing()` reports, with what was looked for. */
export function missingComponents(components = COMPONENTS) {
  const out = [];
  for (const c of components) {
    const lookedFor = c.missing();
    if (lookedFor !== null) out.push({ ...c, lookedFor });
  }
  return out;
}

/** Why installing is not possible here, or null when it is. */
export function cannotInstall(env = process.env, uid = process.getuid?.(), hasApt = findProgram('apt-get') !== null) {
  if (env.VERDICT_TEST_NO_INSTALL === '1') return 'VERDICT_TEST_NO_INSTALL=1 turns installing off';
  if (!hasApt) return 'this machine has no apt-get';
  if (uid !== 0) return 'installing needs root';
  return null;
}

/** The one command that installs `packages`, as a user would type it. */
export function installCommand(packages, uid = process.getuid?.()) {
  return `${uid === 0 ? '' : 'sudo '}apt-get install -y ${packages.join(' ')}`;
}

function apt(args) {
  const r = spawnSync('apt-get', ['-o', 'DPkg::Lock::Timeout=600', ...args], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return r.status === 0;
}

function main(argv) {
  const say = (line) => console.log(`test-deps: ${line}`);
  if (argv.includes('--list')) {
    for (const c of COMPONENTS) say(`${c.name} (${c.packages.join(' ')}): ${c.why}`);
    return 0;
  }
  let missing = missingComponents();
  if (missing.length === 0) return 0;
  const why = argv.includes('--check') ? 'checking only (--check)' : cannotInstall();
  if (why !== null) {
    say(`${missing.length} component(s) the tests need are missing, and ${why}:`);
    for (const c of missing)
      say(`  ${c.name}: ${c.lookedFor} not found (${c.why}); install it with \`${installCommand(c.packages)}\``);
    say('no test was started.');
    return 1;
  }
  for (const c of missing)
    say(`installing ${c.packages.join(' ')} from Debian's packages: ${c.lookedFor} not found, and ${c.why}`);
  const packages = [...new Set(missing.flatMap((c) => c.packages))];
  if (!apt(['update', '-q']) || !apt(['install', '-y', '-q', ...packages])) {
    say(`apt-get failed; install by hand with \`${installCommand(packages)}\`. No test was started.`);
    return 1;
  }
  missing = missingComponents();
  if (missing.length > 0) {
    for (const c of missing)
      say(`  ${c.name}: still missing after installing ${c.packages.join(' ')} (${c.lookedFor} not found)`);
    return 1;
  }
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(main(process.argv.slice(2)));
